package hnsw

import (
	"errors"
	"fmt"
	"math"
)

// Metric is the distance an index orders by. Each matches a pgvector
// operator class.
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
	// L1 is the taxicab distance (vector_l1_ops, operator <+>).
	L1
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
	case L1:
		return "vector_l1_ops"
	}
	return fmt.Sprintf("Metric(%d)", uint8(m))
}

// pgvector's defaults and limits for the index options and hnsw.ef_search.
const (
	DefaultM              = 16
	DefaultEfConstruction = 64
	DefaultEfSearch       = 40

	MinM              = 2
	MaxM              = 100
	MinEfConstruction = 4
	MaxEfConstruction = 1000
	MaxEfSearch       = 1000
	// MaxDim is the largest dimension of pgvector's vector type.
	MaxDim = 16000
)

// maxLevel caps node levels so that a level fits in a byte and a corrupt or
// unlucky draw cannot make a node with thousands of layers. With m = 2 a
// level above 32 has probability 2^-32 per node.
const maxLevel = 32

// Config is the shape of an index. Zero M and EfConstruction take pgvector's
// defaults.
type Config struct {
	// Dim is the number of dimensions of every vector.
	Dim int
	// M is the number of neighbours per node on layers above 0 (2*M on layer 0).
	M int
	// EfConstruction is the size of the candidate list while inserting.
	EfConstruction int
	// Metric is the distance the index orders by.
	Metric Metric
	// Seed makes node levels reproducible: a node's level depends only on
	// Seed and its id, so a sequential build of the same rows in the same
	// order gives the same graph.
	Seed uint64
}

// Errors returned by the index. The caller maps them to SQLSTATEs
// (ErrDimension and ErrInvalidVector are 22000 data exceptions).
var (
	ErrConfig        = errors.New("hnsw: invalid configuration")
	ErrDimension     = errors.New("hnsw: vector has the wrong number of dimensions")
	ErrInvalidVector = errors.New("hnsw: vector holds NaN or infinity")
	// ErrZeroVector is returned by Add under Cosine for a vector of norm 0,
	// which pgvector leaves out of the index; the caller skips the row.
	ErrZeroVector  = errors.New("hnsw: zero vector has no cosine direction")
	ErrDuplicateID = errors.New("hnsw: id already in the index")
	// ErrCorrupt marks every error Read returns for malformed input.
	ErrCorrupt = errors.New("hnsw: corrupt index data")
)

// withDefaults fills zero fields with pgvector's defaults and checks the
// result against pgvector's limits.
func (c Config) withDefaults() (Config, error) {
	if c.M == 0 {
		c.M = DefaultM
	}
	if c.EfConstruction == 0 {
		c.EfConstruction = DefaultEfConstruction
	}
	switch {
	case c.Dim < 1 || c.Dim > MaxDim:
		return c, fmt.Errorf("%w: dimension %d outside 1..%d", ErrConfig, c.Dim, MaxDim)
	case c.M < MinM || c.M > MaxM:
		return c, fmt.Errorf("%w: m %d outside %d..%d", ErrConfig, c.M, MinM, MaxM)
	case c.EfConstruction < MinEfConstruction || c.EfConstruction > MaxEfConstruction:
		return c, fmt.Errorf("%w: ef_construction %d outside %d..%d", ErrConfig, c.EfConstruction, MinEfConstruction, MaxEfConstruction)
	case c.EfConstruction < 2*c.M:
		return c, fmt.Errorf("%w: ef_construction must be greater than or equal to 2 * m", ErrConfig)
	case c.Metric < L2 || c.Metric > L1:
		return c, fmt.Errorf("%w: unknown metric %d", ErrConfig, c.Metric)
	}
	return c, nil
}

// levelFor draws the level of the node with the given id: floor(-ln(U)*mL)
// with U uniform in (0, 1] taken from a hash of the seed and the id, so the
// draw needs no shared random state and does not depend on insertion order.
func levelFor(seed, id uint64, ml float64) int {
	h := splitmix64(seed ^ splitmix64(id))
	u := float64(h>>11+1) / (1 << 53) // (0, 1]
	l := int(-math.Log(u) * ml)
	if l > maxLevel {
		l = maxLevel
	}
	return l
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
