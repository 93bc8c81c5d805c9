package vector

import "math"

// Portable kernels: the fallback on CPUs without AVX2+FMA and on other
// architectures, and the reference the assembly is tested against. Four
// independent accumulators let the CPU overlap the additions; the re-slicing
// to length 4 removes the bounds checks from the loop body.

func dotGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		x, y := a[i:i+4:i+4], b[i:i+4:i+4]
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		s2 += x[2] * y[2]
		s3 += x[3] * y[3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func l2sqGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		x, y := a[i:i+4:i+4], b[i:i+4:i+4]
		d0, d1, d2, d3 := x[0]-y[0], x[1]-y[1], x[2]-y[2], x[3]-y[3]
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

// abs32 clears the sign bit: no branch to mispredict on random signs.
func abs32(x float32) float32 {
	return math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
}

func l1Generic(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		x, y := a[i:i+4:i+4], b[i:i+4:i+4]
		s0 += abs32(x[0] - y[0])
		s1 += abs32(x[1] - y[1])
		s2 += abs32(x[2] - y[2])
		s3 += abs32(x[3] - y[3])
	}
	for ; i < len(a); i++ {
		s0 += abs32(a[i] - b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// cosGeneric returns a·b, a·a and b·b in one pass, as pgvector's
// VectorCosineSimilarity accumulates them.
func cosGeneric(a, b []float32) (ab, aa, bb float32) {
	b = b[:len(a)]
	var d0, d1, p0, p1, q0, q1 float32
	i := 0
	for ; i+2 <= len(a); i += 2 {
		x, y := a[i:i+2:i+2], b[i:i+2:i+2]
		d0 += x[0] * y[0]
		d1 += x[1] * y[1]
		p0 += x[0] * x[0]
		p1 += x[1] * x[1]
		q0 += y[0] * y[0]
		q1 += y[1] * y[1]
	}
	if i < len(a) {
		d0 += a[i] * b[i]
		p0 += a[i] * a[i]
		q0 += b[i] * b[i]
	}
	return d0 + d1, p0 + p1, q0 + q1
}

func sumGeneric(a []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		x := a[i : i+4 : i+4]
		s0 += x[0]
		s1 += x[1]
		s2 += x[2]
		s3 += x[3]
	}
	for ; i < len(a); i++ {
		s0 += a[i]
	}
	return (s0 + s1) + (s2 + s3)
}
