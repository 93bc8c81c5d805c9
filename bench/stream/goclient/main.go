// Command goclient measures deeplaked's Go client (client/stream) reading
// the tensor stream of the benchmark table into typed slices, and prints
// one JSON line like the anchors (anchors.py): GB/s of image bytes,
// samples/s, time to the first batch and the process's peak memory.
//
//	goclient -dsn postgres://... -batch 256
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/client/stream"
)

// item is the bytes of one uint8[3][64][64] image.
const item = 3 * 64 * 64

func main() {
	dsn := flag.String("dsn", "", "deeplaked connection string")
	batch := flag.Int("batch", 256, "rows per batch")
	shuffle := flag.String("shuffle", "none", "none, buffer (SHUFFLE true) or exact (SHUFFLE 'exact')")
	shm := flag.Bool("shm", false, "SHARED_MEMORY (the dsn must name the server's Unix socket)")
	flag.Parse()
	opts := stream.Options{BatchSize: *batch, Seed: 1}
	name := "deeplaked, Go client (client/stream)"
	if *shm {
		opts.SharedMemory, name = stream.DefaultSharedMemory, name+", SHARED_MEMORY"
	}
	switch *shuffle {
	case "none":
	case "buffer":
		opts.Shuffle, name = true, name+", SHUFFLE true"
	case "exact":
		opts.ExactShuffle, name = true, name+", SHUFFLE 'exact'"
	default:
		fail(fmt.Errorf("-shuffle %q: want none, buffer or exact", *shuffle))
	}
	ctx := context.Background()
	conn, err := pgconn.Connect(ctx, *dsn)
	if err != nil {
		fail(err)
	}
	defer conn.Close(ctx)
	start := time.Now()
	s, err := stream.Stream(ctx, conn, "SELECT image, label FROM samples", opts)
	if err != nil {
		fail(err)
	}
	var first time.Duration
	rows, checksum := 0, 0
	for s.Next() {
		b := s.Batch()
		if first == 0 {
			first = time.Since(start)
		}
		img, lab := b.Column("image"), b.Column("label")
		if img == nil || lab == nil {
			fail(fmt.Errorf("batch %d lacks its columns", b.Index))
		}
		pix, labels := img.Uint8(), lab.Int32()
		if len(pix) != b.Rows*item || len(labels) != b.Rows {
			fail(fmt.Errorf("batch %d: %d image bytes and %d labels for %d rows", b.Index, len(pix), len(labels), b.Rows))
		}
		// Touch the data as a training step would start to.
		checksum += int(pix[len(pix)-1]) + int(labels[0])
		rows += b.Rows
	}
	if err := s.Err(); err != nil {
		fail(err)
	}
	wall := time.Since(start)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	_ = json.NewEncoder(os.Stdout).Encode(map[string]any{
		"name": name, "rows": rows, "bytes": rows * item, "seconds": wall.Seconds(),
		"gb_per_s": float64(rows*item) / wall.Seconds() / 1e9, "samples_per_s": float64(rows) / wall.Seconds(),
		"first_batch_ms": first.Seconds() * 1000, "peak_rss_mb": float64(ru.Maxrss) / 1024, "checksum": checksum,
	})
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "goclient:", err)
	os.Exit(1)
}
