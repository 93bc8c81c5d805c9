package hnsw

import "math"

// The kernels every distance goes through. They are function values so that
// faster implementations (SIMD kernels) replace them in one line each.
var (
	l2sqKernel = l2sqGo
	dotKernel  = dotGo
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

func l2sqGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		d0 := a[i] - b[i]
		d1 := a[i+1] - b[i+1]
		d2 := a[i+2] - b[i+2]
		d3 := a[i+3] - b[i+3]
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(a); i++ {
		d := a[i] - b[i]
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}

func dotGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
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
