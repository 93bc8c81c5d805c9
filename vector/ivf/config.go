package ivf

import (
	"errors"
	"fmt"
)

// Metric is the distance an index orders by. Each matches a pgvector
// operator class; the values are hnsw.Metric's, so the storage layer maps
// one to the other by conversion.
type Metric uint8

const (
	// L2 is Euclidean distance (vector_l2_ops, operator <->).
	L2 Metric = iota + 1
	// InnerProduct is the negative inner product (vector_ip_ops, operator <#>),
	// so that smaller is nearer as for the other metrics.
	InnerProduct
	// Cosine is 1 - cos(a, b) (vector_cosine_ops, operator <=>). Vectors are
	// normalized on insert and at query time; zero vectors are not indexed.
	Cosine
)

// String returns the pgvector operator class of m.
func (m Metric) String() string {
	switch m {
	case L2:
		return "vector_l2_ops"
	case InnerProduct:
		return "vector_ip_ops"
	case Cosine:
		return "vector_cosine_ops"
	}
	return fmt.Sprintf("Metric(%d)", uint8(m))
}

// Result is one neighbour found by Search.
type Result struct {
	ID uint64
	// Distance is the value of the metric's SQL operator: Euclidean distance
	// (<->), negative inner product (<#>) or cosine distance (<=>).
	Distance float32
}

// pgvector's defaults and limits for the lists option and ivfflat.probes.
const (
	DefaultLists  = 100
	DefaultProbes = 1
	MinLists      = 1
	MaxLists      = 32768
	// MaxDim is the largest dimension of pgvector's vector type.
	MaxDim = 16000
	// maxIterations is pgvector's cap on k-means iterations.
	maxIterations = 500
)

// SampleSize returns the number of rows pgvector samples to train an index
// of the given number of lists: 50 per list, at least 10,000.
func SampleSize(lists int) int { return max(50*lists, 10000) }

// Config is the shape of an index. A zero Lists takes pgvector's default.
type Config struct {
	// Dim is the number of dimensions of every vector.
	Dim int
	// Lists is the number of k-means centroids, one inverted list each.
	Lists int
	// Metric is the distance the index orders by.
	Metric Metric
	// Seed makes training reproducible: the same sample and seed give the
	// same centroids, whatever the number of workers.
	Seed uint64
}

// Errors returned by the index. The caller maps them to SQLSTATEs
// (ErrDimension and ErrInvalidVector are 22000 data exceptions).
var (
	ErrConfig        = errors.New("ivf: invalid configuration")
	ErrDimension     = errors.New("ivf: vector has the wrong number of dimensions")
	ErrInvalidVector = errors.New("ivf: vector holds NaN or infinity")
	// ErrZeroVector is returned by Add under Cosine for a vector of norm 0,
	// which pgvector leaves out of the index; the caller skips the row.
	ErrZeroVector  = errors.New("ivf: zero vector has no cosine direction")
	ErrDuplicateID = errors.New("ivf: id already in the index")
	// ErrTrained is returned by Train on an index that already has centroids.
	ErrTrained = errors.New("ivf: index is already trained")
	// ErrEmptySample is returned by Train when the sample holds no row to
	// train on (none at all, or only zero vectors under Cosine).
	ErrEmptySample = errors.New("ivf: no rows to train on")
	// ErrCorrupt marks every error Read returns for malformed input.
	ErrCorrupt = errors.New("ivf: corrupt index data")
)

// withDefaults fills zero fields with pgvector's defaults and checks the
// result against pgvector's limits.
func (c Config) withDefaults() (Config, error) {
	if c.Lists == 0 {
		c.Lists = DefaultLists
	}
	switch {
	case c.Dim < 1 || c.Dim > MaxDim:
		return c, fmt.Errorf("%w: dimension %d outside 1..%d", ErrConfig, c.Dim, MaxDim)
	case c.Lists < MinLists || c.Lists > MaxLists:
		return c, fmt.Errorf("%w: lists %d outside %d..%d", ErrConfig, c.Lists, MinLists, MaxLists)
	case c.Metric < L2 || c.Metric > Cosine:
		return c, fmt.Errorf("%w: unknown metric %d", ErrConfig, c.Metric)
	}
	return c, nil
}
