package plan

import "github.com/deeplaked/deeplaked/storage"

// CopyFrom is COPY table [(cols)] FROM STDIN: rows decoded from the
// client's data stream fill the Target columns; every other column takes
// its Default.
type CopyFrom struct {
	Table *storage.TableDesc
	// Target holds the table ordinals of the input fields, in field order.
	Target []int
	// Defaults holds one expression per table column that is not a target
	// (nil for targets): its DEFAULT, the next serial value, or NULL.
	Defaults []Expr
	Options  CopyOptions
}

// Columns returns nothing: COPY FROM produces no rows.
func (n *CopyFrom) Columns() []Column { return nil }

// CopyTo is COPY table [(cols)] TO STDOUT or COPY (query) TO STDOUT: the
// rows of Query, written to the client in the Options' format.
type CopyTo struct {
	Query   Node
	Options CopyOptions
	// ForceQuote marks, per output column, the CSV values quoted even
	// when they need not be (FORCE_QUOTE); nil when none is.
	ForceQuote []bool
}

// Columns returns the columns of the copied rows.
func (n *CopyTo) Columns() []Column { return n.Query.Columns() }

// CopyFormat is the data format of a COPY stream.
type CopyFormat uint8

// DefaultSharedMemory is the area of SHARED_MEMORY true; the option takes
// MinSharedMemory to MaxSharedMemory bytes.
const (
	DefaultSharedMemory = 64 << 20
	MinSharedMemory     = 1 << 20
	MaxSharedMemory     = 4 << 30
)

// COPY formats.
const (
	// CopyText is PostgreSQL's text format: delimited fields, backslash
	// escapes, \N for NULL.
	CopyText CopyFormat = iota + 1
	// CopyCSV is comma-separated values with quoting.
	CopyCSV
	// CopyBinary is PostgreSQL's binary format (PGCOPY header, per-field
	// lengths, values in their binary send forms).
	CopyBinary
	// CopyTensor is the tensor stream: one frame of column buffers per
	// batch of rows (docs/tensor-stream.md). COPY TO only.
	CopyTensor
)

// CopyShuffle is the SHUFFLE option of the tensor stream.
type CopyShuffle uint8

// Shuffle modes.
const (
	// ShuffleNone keeps the query's order.
	ShuffleNone CopyShuffle = iota
	// ShuffleBuffer shuffles the order of the row groups, then passes the
	// rows through a shuffle buffer of ShuffleBuffer rows.
	ShuffleBuffer
	// ShuffleExact reads every row, then permutes them uniformly.
	ShuffleExact
)

// Tensor stream defaults and limits.
const (
	DefaultTensorBatch   = 256
	MaxTensorBatch       = 1 << 20
	DefaultShuffleBuffer = 16384
)

// CopyHeader says what COPY FROM does with the first line; for COPY TO,
// HeaderSkip writes a line of column names.
type CopyHeader uint8

// Header handling.
const (
	// HeaderNone: the first line is data.
	HeaderNone CopyHeader = iota + 1
	// HeaderSkip: the first line is skipped.
	HeaderSkip
	// HeaderMatch: the first line must name the target columns in order.
	HeaderMatch
)

// CopyOptions are the validated options of a COPY statement. Delimiter,
// Null, Quote and Escape apply to text and CSV; Quote and Escape to CSV only.
type CopyOptions struct {
	Format    CopyFormat
	Header    CopyHeader
	Delimiter byte
	Null      string
	Quote     byte
	Escape    byte
	// Tensor holds the options of FORMAT tensor; zero for other formats.
	Tensor TensorOptions
}

// TensorOptions are the options of the tensor stream (FORMAT tensor), as
// docs/tensor-stream.md describes them.
type TensorOptions struct {
	BatchSize int
	DropLast  bool
	Shuffle   CopyShuffle
	Seed      uint64
	// SeedSet is set when the statement names its SEED.
	SeedSet       bool
	ShuffleBuffer int
	// Rank and World select shard Rank of World (World ≥ 1).
	Rank, World int
	StartBatch  int64
	// Version reads the table as of that version (0: the snapshot).
	Version uint64
	// VersionRef, when VERSION is not a number, is the ref (a commit id,
	// a tag, a time) the stream resolves to Version as it starts.
	VersionRef string
	// Epoch names the snapshot the statements of one epoch share ("":
	// the statement's own).
	Epoch string
	// SharedMemory is the size of the area the frames are placed in
	// (docs/tensor-stream.md, Shared memory); 0 sends them through the
	// socket.
	SharedMemory int64
}
