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
	// Stream is how a tensor stream (FORMAT tensor) reads its rows, as
	// the planner chose it; nil: the query's rows in order (ReadQuery).
	Stream *TensorStream
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

// TensorRead is how a tensor stream reads the rows it sends.
type TensorRead uint8

// Tensor stream reads.
const (
	// ReadQuery runs the query's operators and takes their rows in the
	// query's order: shards are dealt by row position, and a shuffle
	// holds the rows (or spills them).
	ReadQuery TensorRead = iota + 1
	// ReadRowGroups reads the table scan TensorStream.Scan row group by
	// row group: the groups shuffled with the seed, split among the
	// shards, skipped whole for START_BATCH and OFFSET; under a WHERE a
	// group's rows that pass are found first, and read by id when that
	// reads fewer bytes (late materialization).
	ReadRowGroups
	// ReadByRowID reads the ids of the rows of TensorStream.Scan,
	// permutes them (SHUFFLE 'exact') and reads the rows by id as they
	// are sent.
	ReadByRowID
)

// TensorStream is the planner's description of how a tensor stream reads
// its rows (docs/tensor-stream.md, "Order, shuffle and shards"); exec runs
// what it says.
type TensorStream struct {
	Read TensorRead
	// Scan is the table scan of a query that is a plain scan (a scan of
	// one table under a projection of expressions over each row alone,
	// RowWise): the CopyTo's query is then Scan, or a Project over it.
	// The stream's first frame names its table's version, and VERSION
	// reads it; ReadRowGroups and ReadByRowID read it. nil for other
	// queries.
	Scan *Scan
	// IDScan finds the ids of the rows the stream sends, for
	// ReadRowGroups and ReadByRowID: Scan narrowed to the columns its
	// filter reads, or Scan itself when the filter cannot be rewritten
	// onto them. Under a WHERE the passing rows of a group are found
	// with it first, and the group's other columns are read only for
	// them when that reads less (late materialization).
	IDScan *Scan
	// Hollow lists, for ReadRowGroups and ReadByRowID, the table columns
	// of Scan that the stream may read straight into its frames
	// (storage.ScanOptions.Hollow): fixed-width vectors and tensors that
	// the projection passes on as they are and uses in no expression.
	// (ReadQuery's scan names its own, Scan.Hollow.)
	Hollow []int
	// Limit and Offset are the count and offset of a LIMIT taken off the
	// query (nil: none), evaluated as the stream starts: the stream sends
	// the rows [Offset, Offset+Limit) of its order. An OFFSET is skipped
	// as START_BATCH's rows are, without reading them.
	Limit, Offset Expr
	// Global is set for a sharded stream whose LIMIT counts the rows of
	// all the shards: every shard draws the unsharded stream's
	// permutation and takes its rows of the LIMIT by position.
	Global bool
	// RandomOrder is set when the order is the query's ORDER BY random(),
	// streamed as SHUFFLE 'exact' of the same rows: without SEED the
	// permutation is drawn for the statement, as random() draws.
	RandomOrder bool
}
