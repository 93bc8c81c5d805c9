package vector

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// impls runs f once per kernel implementation available here: the assembly
// (when the CPU has AVX2+FMA) and the portable Go.
func impls(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	saved := useAVX2
	defer func() { useAVX2 = saved }()
	if saved {
		useAVX2 = true
		t.Run("avx2", f)
	}
	useAVX2 = false
	t.Run("generic", f)
}

// testLengths covers every tail (0..300) and a few large vectors.
func testLengths() []int {
	var ns []int
	for n := 0; n <= 300; n++ {
		ns = append(ns, n)
	}
	return append(ns, 1536, 4099, 16000)
}

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// reference sums in float64. scale is the sum of |terms|, the magnitude the
// rounding error of a float32 sum is relative to (a dot product may cancel
// to near zero, so the result itself is no scale).
func refDot(a, b []float32) (sum, scale float64) {
	for i := range a {
		p := float64(a[i]) * float64(b[i])
		sum += p
		scale += math.Abs(p)
	}
	return
}

func refL2Sq(a, b []float32) (float64, float64) {
	var s float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		s += d * d
	}
	return s, s
}

func refL1(a, b []float32) (float64, float64) {
	var s float64
	for i := range a {
		s += math.Abs(float64(a[i]) - float64(b[i]))
	}
	return s, s
}

func refCosine(a, b []float32) float64 {
	ab, _ := refDot(a, b)
	aa, _ := refDot(a, a)
	bb, _ := refDot(b, b)
	sim := ab / math.Sqrt(aa*bb)
	return 1 - math.Max(-1, math.Min(1, sim))
}

// relTol bounds float32 accumulation error relative to scale: far above
// what a correct kernel shows on random data (~1e-6 at n=16000) and far
// below the effect of dropping or doubling one element (~1/n >= 6e-5).
const relTol = 1e-5

func checkClose(t *testing.T, what string, n int, got float32, want, scale float64) {
	t.Helper()
	if math.IsNaN(want) {
		if !math.IsNaN(float64(got)) {
			t.Fatalf("%s n=%d: got %v, want NaN", what, n, got)
		}
		return
	}
	if d := math.Abs(float64(got) - want); d > relTol*scale+1e-30 {
		t.Fatalf("%s n=%d: got %v, want %v (diff %g, scale %g)", what, n, got, want, d, scale)
	}
}

func TestPairwise(t *testing.T) {
	impls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for _, n := range testLengths() {
			// Unaligned starts: the slices begin 0..3 elements into a buffer.
			off := n % 4
			a := randVec(r, n+off)[off:]
			b := randVec(r, n+3)[3:]
			want, scale := refDot(a, b)
			checkClose(t, "Dot", n, Dot(a, b), want, scale)
			want, scale = refL2Sq(a, b)
			checkClose(t, "L2Sq", n, L2Sq(a, b), want, scale)
			want, scale = refL1(a, b)
			checkClose(t, "L1", n, L1(a, b), want, scale)
			aa, _ := refDot(a, a)
			checkClose(t, "SquaredNorm", n, SquaredNorm(a), aa, aa)
			checkClose(t, "Norm", n, Norm(a), math.Sqrt(aa), math.Sqrt(aa))
			if n > 0 {
				// Cosine distance is not a sum: its error is relative to 1.
				checkClose(t, "CosineDistance", n, CosineDistance(a, b), refCosine(a, b), 1)
			}
		}
	})
}

func TestCosineSemantics(t *testing.T) {
	impls(t, func(t *testing.T) {
		zero := []float32{0, 0, 0}
		v := []float32{1, 2, 3}
		for _, c := range []struct {
			name string
			a, b []float32
			want float64
		}{
			{"zero norm", zero, v, math.NaN()},
			{"both zero", zero, zero, math.NaN()},
			{"empty", nil, nil, math.NaN()},
			{"NaN input", []float32{float32(math.NaN()), 1, 1}, v, math.NaN()},
			{"same", v, v, 0},
			{"opposite", v, []float32{-1, -2, -3}, 2},
			{"orthogonal", []float32{1, 0}, []float32{0, 5}, 1},
		} {
			got := CosineDistance(c.a, c.b)
			if math.IsNaN(c.want) {
				if !math.IsNaN(float64(got)) {
					t.Errorf("%s: got %v, want NaN", c.name, got)
				}
				continue
			}
			// Clamped: never below 0 or above 2, exact at the ends.
			if got != float32(c.want) {
				t.Errorf("%s: got %v, want %v", c.name, got, c.want)
			}
			dim := len(c.a)
			out := make([]float32, 2)
			CosineDistanceBatch(c.a, append(append([]float32{}, c.b...), c.b...), dim, out)
			if out[0] != got || out[1] != got {
				t.Errorf("%s: batch %v, pairwise %v", c.name, out, got)
			}
		}
		// Parallel vectors of any scale clamp to exactly 0.
		for n := 1; n < 100; n++ {
			a := randVec(rand.New(rand.NewPCG(uint64(n), 9)), n)
			b := make([]float32, n)
			for i := range a {
				b[i] = 3 * a[i]
			}
			if d := CosineDistance(a, b); d < 0 || d > 1e-6 {
				t.Fatalf("n=%d: parallel distance %v", n, d)
			}
		}
	})
}

func TestLengthMismatchPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"Dot":        func() { Dot(make([]float32, 3), make([]float32, 4)) },
		"L2Sq":       func() { L2Sq(make([]float32, 4), make([]float32, 3)) },
		"Batch q":    func() { L2SqBatch(make([]float32, 3), make([]float32, 8), 4, make([]float32, 2)) },
		"Batch rows": func() { DotBatch(make([]float32, 4), make([]float32, 7), 4, make([]float32, 2)) },
		"Bytes":      func() { L1BatchBytes(make([]float32, 4), make([]byte, 31), 4, make([]float32, 2)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

type batchFunc func(q, data []float32, dim int, out []float32)

var batches = []struct {
	name  string
	batch batchFunc
	bytes func(q []float32, data []byte, dim int, out []float32)
	pair  func(a, b []float32) float32
}{
	{"Dot", DotBatch, DotBatchBytes, Dot},
	{"L2Sq", L2SqBatch, L2SqBatchBytes, L2Sq},
	{"L1", L1Batch, L1BatchBytes, L1},
	{"Cosine", CosineDistanceBatch, CosineDistanceBatchBytes, CosineDistance},
}

func refFor(name string, a, b []float32) (float64, float64) {
	switch name {
	case "Dot":
		return refDot(a, b)
	case "L2Sq":
		return refL2Sq(a, b)
	case "L1":
		return refL1(a, b)
	}
	return refCosine(a, b), 1
}

func float32Bytes(v []float32, off int) []byte {
	b := make([]byte, off+4*len(v))[off:]
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func TestBatch(t *testing.T) {
	impls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		dims := []int{0, 1, 3, 7, 8, 9, 31, 32, 33, 100, 128, 300, 1536, 2000}
		for _, dim := range dims {
			rows := 1 + r.IntN(9)
			q := randVec(r, dim)
			data := randVec(r, rows*dim+dim) // one spare row: must be ignored
			out := make([]float32, rows+1)
			for _, k := range batches {
				for i := range out {
					out[i] = -1234
				}
				k.batch(q, data, dim, out[:rows])
				if out[rows] != -1234 {
					t.Fatalf("%s dim=%d: wrote past out", k.name, dim)
				}
				for i := 0; i < rows; i++ {
					row := data[i*dim : (i+1)*dim]
					if dim == 0 && k.name == "Cosine" {
						if !math.IsNaN(float64(out[i])) {
							t.Fatalf("Cosine dim=0: %v", out[i])
						}
						continue
					}
					want, scale := refFor(k.name, q, row)
					checkClose(t, k.name+"Batch", dim, out[i], want, scale)
					// The batch kernel agrees with the pairwise one closely.
					checkClose(t, k.name+"Batch vs pairwise", dim, out[i], float64(k.pair(q, row)), scale)
				}
				// Bytes: aligned (in place) and misaligned (decoded) input.
				for off := 0; off < 4; off++ {
					got := make([]float32, rows)
					k.bytes(q, float32Bytes(data[:rows*dim], off), dim, got)
					for i := range got {
						if dim == 0 && k.name == "Cosine" {
							continue
						}
						want, scale := refFor(k.name, q, data[i*dim:(i+1)*dim])
						checkClose(t, k.name+"BatchBytes", dim, got[i], want, scale)
					}
				}
			}
		}
	})
}

func TestAsFloat32s(t *testing.T) {
	raw := float32Bytes([]float32{1, 2, 3, 4}, 0)
	f, ok := AsFloat32s(raw)
	if !ok || len(f) != 4 || f[2] != 3 {
		t.Fatalf("aligned: %v %v", f, ok)
	}
	mis := float32Bytes([]float32{1, 2, 3}, 1)
	if _, ok := AsFloat32s(mis); ok {
		t.Fatalf("misaligned bytes viewed in place")
	}
}

func TestNoAllocs(t *testing.T) {
	impls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		const dim, rows = 300, 16
		q, data := randVec(r, dim), randVec(r, dim*rows)
		raw := float32Bytes(data, 0)
		mis := float32Bytes(data, 1)
		half := make([]uint16, len(data))
		Float32sToFloat16s(half, data)
		qh := make([]uint16, dim)
		Float32sToFloat16s(qh, q)
		out := make([]float32, rows)
		tk := NewTopK(10)
		res := make([]Neighbor, 0, 10)
		var sink float32
		for name, f := range map[string]func(){
			"pairwise": func() {
				sink += Dot(q, data[:dim]) + L2Sq(q, data[:dim]) + L1(q, data[:dim]) + CosineDistance(q, data[:dim]) + Norm(q)
			},
			"batch": func() {
				DotBatch(q, data, dim, out)
				L2SqBatch(q, data, dim, out)
				L1Batch(q, data, dim, out)
				CosineDistanceBatch(q, data, dim, out)
			},
			"bytes": func() {
				L2SqBatchBytes(q, raw, dim, out)
				CosineDistanceBatchBytes(q, mis, dim, out)
			},
			"half": func() {
				sink += DotHalf(qh, half[:dim]) + CosineDistanceHalf(qh, half[:dim])
				L2SqBatchHalf(q, half, dim, out)
				CosineDistanceBatchHalfBytes(q, raw[:2*len(half)], dim, out)
			},
			"topk": func() {
				tk.Reset(10)
				tk.PushBatch(out, 0)
				res = tk.AppendSorted(res[:0])
			},
		} {
			if n := testing.AllocsPerRun(20, f); n != 0 {
				t.Errorf("%s: %v allocations per run", name, n)
			}
		}
		_ = sink
	})
}
