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
	l1Kernel   = vector.L1
)

// distFunc is an index's internal distance: smaller is nearer. It is the
// squared Euclidean distance for L2, -dot for InnerProduct, 1 - dot of
// normalized vectors for Cosine and the taxicab distance for L1.
type distFunc func(a, b []float32) float32

func distanceFor(m Metric) distFunc {
	switch m {
	case L2:
		return l2sqKernel
	case InnerProduct:
		return negDot
	case L1:
		return l1Kernel
	default:
		return cosineNormalized
	}
}

func negDot(a, b []float32) float32 { return -dotKernel(a, b) }

func cosineNormalized(a, b []float32) float32 { return 1 - dotKernel(a, b) }

// reported turns an internal distance into the value of the metric's SQL
// operator (<->, <#>, <=>).
func reported(m Metric, d float32) float32 {
	switch m {
	case L2:
		return float32(math.Sqrt(float64(d)))
	case Cosine:
		return min(max(d, 0), 2) // rounding can leave 1 - a·b just outside [0, 2]
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

// ipBuildDistance is the distance an InnerProduct graph is built with:
// Euclidean distance after the reduction of inner-product search to
// nearest-neighbour search (Bachrach et al., 2014). Each vector x gains a
// coordinate sqrt(Φ² - |x|²), Φ the largest norm in the index, so that all
// lie on a sphere of radius Φ; a query gains a 0. Then
// |q' - x'|² = |q|² + Φ² - 2 q·x, so walking the graph by -q·x, as searches
// do, is an exact nearest-neighbour walk in that space. A graph linked by -dot
// itself (as pgvector links it) is no metric graph: a vector is not its own
// nearest, and short vectors get no incoming links, so a filter that keeps
// only short vectors cannot reach them. Φ grows as vectors arrive; distances
// use its current value.
func (x *Index) ipBuildDistance(a, b []float32) float32 {
	phi2 := math.Float32frombits(x.maxSqNorm.Load())
	ea := float32(math.Sqrt(float64(max(0, phi2-dotKernel(a, a)))))
	eb := float32(math.Sqrt(float64(max(0, phi2-dotKernel(b, b)))))
	return l2sqKernel(a, b) + (ea-eb)*(ea-eb)
}

// noteNorm raises Φ² to v's squared norm if that is larger.
func (x *Index) noteNorm(v []float32) {
	n := dotKernel(v, v)
	for {
		old := x.maxSqNorm.Load()
		if n <= math.Float32frombits(old) || x.maxSqNorm.CompareAndSwap(old, math.Float32bits(n)) {
			return
		}
	}
}
