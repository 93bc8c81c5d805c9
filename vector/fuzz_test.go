package vector

import (
	"encoding/binary"
	"math"
	"testing"
)

// fuzzRef returns the float64 reference of metric name over a and b and
// whether a comparison is meaningful: inputs finite, and sums far from
// float32 overflow (where summation order decides between a number and
// Inf) and, for cosine, norms clear of the subnormal range.
func fuzzRef(name string, a, b []float32) (want, tol float64, ok bool) {
	var ab, aa, bb, l2, l1, sabs float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) {
			return 0, 0, false
		}
		d := float64(a[i] - b[i]) // the kernels subtract in float32
		ab += x * y
		sabs += math.Abs(x * y)
		aa += x * x
		bb += y * y
		l2 += d * d
		l1 += math.Abs(d)
	}
	if aa > 1e36 || bb > 1e36 || l2 > 1e36 || l1 > 1e36 {
		return 0, 0, false
	}
	const rel, abs = 1e-5, 1e-37
	switch name {
	case "Dot":
		return ab, rel*sabs + abs, true
	case "L2Sq":
		return l2, rel*l2 + abs, true
	case "L1":
		return l1, rel*l1 + abs, true
	}
	if aa == 0 || bb == 0 {
		return math.NaN(), 0, true
	}
	if aa < 1e-30 || bb < 1e-30 {
		return 0, 0, false
	}
	return 1 - math.Max(-1, math.Min(1, ab/math.Sqrt(aa*bb))), 1e-4, true
}

func decodeAll(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// FuzzBatchBytes feeds arbitrary bytes, at any alignment, to the raw-bytes
// batch kernels (float32 and halfvec rows) and checks each result against a
// float64 reference, on both implementations.
func FuzzBatchBytes(f *testing.F) {
	seed := make([]byte, 0, 400)
	for i := range 100 {
		seed = binary.LittleEndian.AppendUint32(seed, math.Float32bits(float32(i%7)-3))
	}
	f.Add(seed, uint8(9), uint8(1))
	f.Add(seed, uint8(31), uint8(0))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0x80, 0x3f}, uint8(0), uint8(3))
	halfKernels := map[string]func(q []float32, data []byte, dim int, out []float32){
		"Dot": DotBatchHalfBytes, "L2Sq": L2SqBatchHalfBytes, "L1": L1BatchHalfBytes, "Cosine": CosineDistanceBatchHalfBytes,
	}
	f.Fuzz(func(t *testing.T, raw []byte, dimSeed, off uint8) {
		dim := 1 + int(dimSeed%48)
		if len(raw) < 4*dim {
			return
		}
		q := decodeAll(raw[:4*dim])
		rest := raw[4*dim:]
		o := int(off % 4)
		data := make([]byte, o+len(rest))[o:]
		copy(data, rest)
		rows := min(len(data)/(4*dim), 64)
		hrows := min(len(data)/(2*dim), 64)
		impls(t, func(t *testing.T) {
			for _, k := range batches {
				out := make([]float32, rows)
				k.bytes(q, data, dim, out)
				for i, got := range out {
					row := decodeAll(data[4*dim*i : 4*dim*(i+1)])
					fuzzCompare(t, k.name, "BatchBytes", got, q, row)
					fuzzCompare(t, k.name, "pairwise", k.pair(q, row), q, row)
				}
				hout := make([]float32, hrows)
				halfKernels[k.name](q, data, dim, hout)
				row := make([]float32, dim)
				for i, got := range hout {
					float16BytesToFloat32s(row, data[2*dim*i:])
					fuzzCompare(t, k.name, "BatchHalfBytes", got, q, row)
				}
			}
		})
	})
}

func fuzzCompare(t *testing.T, name, what string, got float32, a, b []float32) {
	t.Helper()
	want, tol, ok := fuzzRef(name, a, b)
	if !ok {
		return
	}
	if math.IsNaN(want) {
		if !math.IsNaN(float64(got)) {
			t.Fatalf("%s %s: got %v, want NaN (a=%v b=%v)", name, what, got, a, b)
		}
		return
	}
	if d := math.Abs(float64(got) - want); !(d <= tol) {
		t.Fatalf("%s %s: got %v, want %v (tol %g) a=%v b=%v", name, what, got, want, tol, a, b)
	}
}
