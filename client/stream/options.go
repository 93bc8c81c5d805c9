package stream

import (
	"fmt"
	"strconv"
	"strings"
)

// Options are the stream's COPY options (docs/tensor-stream.md). A zero field
// leaves the server's default.
type Options struct {
	// BatchSize is the number of rows per batch (server default 256).
	BatchSize int
	// Shuffle shuffles row groups, then rows through a buffer of
	// ShuffleBuffer rows.
	Shuffle bool
	// ExactShuffle asks for a uniform permutation of all rows
	// (SHUFFLE 'exact'); it implies Shuffle.
	ExactShuffle bool
	// Seed seeds the shuffle; the same seed, data and options give the same
	// order.
	Seed int64
	// ShuffleBuffer is the size of the shuffle buffer in rows.
	ShuffleBuffer int
	// Rank and World select shard Rank of World (World 0 means unsharded).
	Rank, World int
	// DropLast drops a final batch of fewer than BatchSize rows.
	DropLast bool
	// StartBatch skips the first StartBatch batches of this shard's order
	// (resuming an epoch).
	StartBatch int64
	// Version reads the table as of a version (empty: the current one).
	Version string
	// Epoch names the snapshot the shards of one epoch share (EPOCH): every
	// statement naming the same key reads the database as the first of them
	// did, so that ranks and workers that cannot pass each other a snapshot
	// identifier still partition one view of a table that is being written
	// to. Use a key new to each epoch of each run, such as
	// "<run id>:<epoch>". Empty: each statement reads its own snapshot.
	Epoch string
	// SharedMemory asks the server to place the frames in a memory area of
	// that many bytes it shares with this process (SHARED_MEMORY: 1 MiB to
	// 4 GiB; DefaultSharedMemory is a good size), instead of sending them
	// through the socket. It needs a connection over the server's Unix
	// socket, on the server's machine. A batch's columns are then views of
	// the area, borrowed until the next batch as always: a slice of a
	// batch used after the next call to Next or Close reads memory that is
	// no longer mapped, and the program crashes. 0: off.
	SharedMemory int64
}

// CopySQL returns the COPY statement that streams query with opts. query is
// a SELECT (or WITH, VALUES, TABLE) statement or a bare table name.
func CopySQL(query string, opts Options) (string, error) {
	q := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(query), ";"))
	if q == "" {
		return "", fmt.Errorf("stream: empty query")
	}
	var sb strings.Builder
	sb.WriteString("COPY ")
	if isStatement(q) {
		sb.WriteString("(" + q + ")")
	} else {
		sb.WriteString(q)
	}
	sb.WriteString(" TO STDOUT WITH (FORMAT tensor")
	if opts.BatchSize != 0 {
		if opts.BatchSize < 1 {
			return "", fmt.Errorf("stream: batch size %d is not positive", opts.BatchSize)
		}
		sb.WriteString(", BATCH_SIZE " + strconv.Itoa(opts.BatchSize))
	}
	switch {
	case opts.ExactShuffle:
		sb.WriteString(", SHUFFLE 'exact'")
	case opts.Shuffle:
		sb.WriteString(", SHUFFLE true")
	}
	if opts.Seed != 0 {
		sb.WriteString(", SEED " + strconv.FormatInt(opts.Seed, 10))
	}
	if opts.ShuffleBuffer != 0 {
		sb.WriteString(", SHUFFLE_BUFFER " + strconv.Itoa(opts.ShuffleBuffer))
	}
	if opts.World != 0 {
		if opts.Rank < 0 || opts.Rank >= opts.World {
			return "", fmt.Errorf("stream: shard %d/%d out of range", opts.Rank, opts.World)
		}
		sb.WriteString(fmt.Sprintf(", SHARD '%d/%d'", opts.Rank, opts.World))
	}
	if opts.DropLast {
		sb.WriteString(", DROP_LAST true")
	}
	if opts.StartBatch != 0 {
		sb.WriteString(", START_BATCH " + strconv.FormatInt(opts.StartBatch, 10))
	}
	if opts.Version != "" {
		sb.WriteString(", VERSION '" + strings.ReplaceAll(opts.Version, "'", "''") + "'")
	}
	if opts.Epoch != "" {
		sb.WriteString(", EPOCH '" + strings.ReplaceAll(opts.Epoch, "'", "''") + "'")
	}
	if opts.SharedMemory != 0 {
		if opts.SharedMemory < 1<<20 || opts.SharedMemory > 4<<30 {
			return "", fmt.Errorf("stream: shared memory area of %d bytes out of range (1 MiB to 4 GiB)", opts.SharedMemory)
		}
		sb.WriteString(", SHARED_MEMORY " + strconv.FormatInt(opts.SharedMemory, 10))
	}
	sb.WriteString(")")
	return sb.String(), nil
}

// isStatement reports whether q is a query rather than a table name.
func isStatement(q string) bool {
	if strings.HasPrefix(q, "(") {
		return true
	}
	word := q
	if i := strings.IndexAny(q, " \t\r\n("); i >= 0 {
		word = q[:i]
	}
	switch strings.ToUpper(word) {
	case "SELECT", "WITH", "VALUES", "TABLE":
		return true
	}
	return false
}
