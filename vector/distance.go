package vector

import "math"

// Dot returns the inner product a·b. It panics if len(a) != len(b).
func Dot(a, b []float32) float32 {
	checkLen(len(a), len(b))
	if useAVX2 {
		return dotAVX2(a, b)
	}
	return dotGeneric(a, b)
}

// L2Sq returns the squared Euclidean distance between a and b (pgvector's
// <-> is its square root). It panics if len(a) != len(b).
func L2Sq(a, b []float32) float32 {
	checkLen(len(a), len(b))
	if useAVX2 {
		return l2sqAVX2(a, b)
	}
	return l2sqGeneric(a, b)
}

// L1 returns the taxicab distance sum |a[i]-b[i]| (pgvector's <+>). It
// panics if len(a) != len(b).
func L1(a, b []float32) float32 {
	checkLen(len(a), len(b))
	if useAVX2 {
		return l1AVX2(a, b)
	}
	return l1Generic(a, b)
}

// Norm returns the Euclidean norm |a|.
func Norm(a []float32) float32 {
	return float32(math.Sqrt(float64(SquaredNorm(a))))
}

// SquaredNorm returns a·a, accumulated in float32 as pgvector accumulates the
// norms of cosine_distance.
func SquaredNorm(a []float32) float32 {
	if useAVX2 {
		return dotAVX2(a, a)
	}
	return dotGeneric(a, a)
}

// CosineDistance returns 1 - a·b/(|a||b|) as pgvector's cosine_distance
// computes it: the three sums in float32, the quotient in float64 with
// sqrt(|a|²|b|²), the similarity clamped to [-1, 1]. It is NaN when either
// norm is zero (0/0) or an input holds NaN. It panics if len(a) != len(b).
func CosineDistance(a, b []float32) float32 {
	checkLen(len(a), len(b))
	var ab, aa, bb float32
	if useAVX2 {
		ab, aa, bb = cosAVX2(a, b)
	} else {
		ab, aa, bb = cosGeneric(a, b)
	}
	return cosineFinish(ab, float64(aa)*float64(bb))
}

// cosineFinish turns a·b and |a|²|b|² into the clamped cosine distance. NB:
// the comparisons are false for NaN, so NaN passes through; the assembly
// batch kernel does the same with MINSD/MAXSD operand order.
func cosineFinish(ab float32, nn float64) float32 {
	sim := float64(ab) / math.Sqrt(nn)
	if sim > 1 {
		sim = 1
	} else if sim < -1 {
		sim = -1
	}
	return float32(1 - sim)
}

func checkLen(a, b int) {
	if a != b {
		panic("vector: length mismatch")
	}
}
