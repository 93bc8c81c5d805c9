package hnsw

import (
	"math"

	"github.com/deeplaked/deeplaked/vector"
)

// The kernels every distance goes through (AVX2+FMA on amd64, portable Go
// elsewhere), kept as function values so that each is swapped in one place.
var (
	l2sqKernel = vector.L2Sq
	dotKernel  = vector.Dot
)

// distFunc is an index's internal distance: smaller is nearer. It is the
// squared Euclidean distance for L2, -dot for InnerProduct and 1 - dot of
// normalized vectors for Cosine.
type distFunc func(a, b []float32) float32

func distanceFor(m Metric) distFunc {
	switch m {
	case L2:
		return l2sqKernel
	case InnerProduct:
		return negDot
	default:
		return cosineNormalized
	}
}

func negDot(a, b []float32) float32 { return -dotKernel(a, b) }

func cosineNormalized(a, b []float32) float32 { return 1 - dotKernel(a, b) }

// reported turns an internal distance into the value of the metric's SQL
// operator (<->, <#>, <=>).
func reported(m Metric, d float32) float32 {
	if m == L2 {
		return float32(math.Sqrt(float64(d)))
	}
	return d
}

// normalize writes v/|v| into dst and reports whether v had a nonzero norm.
// The norm is accumulated in float64, as pgvector's vector_norm does.
func normalize(dst, v []float32) bool {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		copy(dst, v)
		return false
	}
	inv := 1 / math.Sqrt(s)
	for i, x := range v {
		dst[i] = float32(float64(x) * inv)
	}
	return true
}

func finite(v []float32) bool {
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}

// buildDistanceFor is the distance a graph is built with. Under InnerProduct
// it is Euclidean distance: -dot is no metric (a vector is not nearest to
// itself), and a graph linked by it leaves short vectors with no incoming
// links, unreachable by a search, so a filter that keeps only such vectors
// would find nothing. Searches still walk that graph by -dot.
func buildDistanceFor(m Metric) distFunc {
	if m == InnerProduct {
		return l2sqKernel
	}
	return distanceFor(m)
}
