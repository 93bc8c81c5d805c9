package ivf

import (
	"math"

	"github.com/deeplaked/deeplaked/vector"
)

// rowDists stores in out[i] the internal distance between q and row i of
// data: the squared Euclidean distance for L2, -dot for InnerProduct and
// 1 - dot of unit vectors for Cosine. Smaller is nearer.
func rowDists(m Metric, q, data []float32, dim int, out []float32) {
	if m == L2 {
		vector.L2SqBatch(q, data, dim, out)
		return
	}
	vector.DotBatch(q, data, dim, out)
	if m == InnerProduct {
		for i, d := range out {
			out[i] = -d
		}
		return
	}
	for i, d := range out {
		out[i] = 1 - d
	}
}

// centroidDists stores in out[c] the distance that orders centroid c for q:
// the squared Euclidean distance under L2, -dot with the unit centroids
// otherwise (pgvector's support function 1 for each operator class).
func centroidDists(m Metric, q, centroids []float32, dim int, out []float32) {
	if m == L2 {
		vector.L2SqBatch(q, centroids, dim, out)
		return
	}
	vector.DotBatch(q, centroids, dim, out)
	for i, d := range out {
		out[i] = -d
	}
}

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
	s := sqNorm64(v)
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

func sqNorm64(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return s
}

func finite(v []float32) bool {
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}

var inf = math.Inf(1)
