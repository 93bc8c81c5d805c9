package vector

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// refHalf decodes binary16 bits by the definition, in float64.
func refHalf(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	mant := float64(h & 0x3ff)
	switch exp {
	case 0x1f:
		if mant != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	case 0:
		return sign * mant * math.Ldexp(1, -24)
	}
	return sign * (1 + mant/1024) * math.Ldexp(1, exp-15)
}

func TestFloat16ToFloat32Exhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		got := Float16ToFloat32(h)
		want := refHalf(h)
		if math.IsNaN(want) {
			if !math.IsNaN(float64(got)) {
				t.Fatalf("%#04x: got %v, want NaN", h, got)
			}
			if back := Float32ToFloat16(got); back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("%#04x: NaN round trip gave %#04x", h, back)
			}
			continue
		}
		if float64(got) != want || math.Signbit(float64(got)) != (h&0x8000 != 0) {
			t.Fatalf("%#04x: got %v, want %v", h, got, want)
		}
		if back := Float32ToFloat16(got); back != h {
			t.Fatalf("%#04x: round trip gave %#04x", h, back)
		}
	}
}

// nearestHalf is the reference rounding: the finite binary16 nearest to f,
// ties to the even bit pattern, infinity from 65520 up (where rounding to
// nearest with an unbounded exponent would leave the finite range).
func nearestHalf(f float32) uint16 {
	x := math.Abs(float64(f))
	var sign uint16
	if math.Signbit(float64(f)) {
		sign = 0x8000
	}
	if x >= 65520 {
		return sign | 0x7c00
	}
	lo, hi := 0, 0x7bff // largest h with refHalf(h) <= x
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if refHalf(uint16(mid)) <= x {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	h := uint16(lo)
	if h < 0x7bff {
		dl, dh := x-refHalf(h), refHalf(h+1)-x
		if dh < dl || (dh == dl && h&1 == 1) {
			h++
		}
	}
	return sign | h
}

func TestFloat32ToFloat16Rounding(t *testing.T) {
	cases := []float32{0, 1, -1, 65504, 65519.99, 65520, 1e6, -1e6,
		float32(math.Ldexp(1, -24)), float32(math.Ldexp(1, -25)),
		math.Nextafter32(float32(math.Ldexp(1, -25)), 1),
		float32(math.Ldexp(1.5, -24)), float32(math.Ldexp(2.5, -24)),
		float32(math.Ldexp(1, -14)), math.Nextafter32(float32(math.Ldexp(1, -14)), 0),
		1 + 1.0/2048, 1 + 3.0/2048, 1e-45, -1e-45}
	r := rand.New(rand.NewPCG(7, 8))
	for range 200000 {
		// Random bits with the exponent in and around binary16's range.
		e := 127 - 28 + r.IntN(46)
		bits := r.Uint32()&0x807fffff | uint32(e)<<23
		cases = append(cases, math.Float32frombits(bits))
	}
	for _, f := range cases {
		if got, want := Float32ToFloat16(f), nearestHalf(f); got != want {
			t.Fatalf("%g (%#08x): got %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
	if h := Float32ToFloat16(float32(math.Inf(-1))); h != 0xfc00 {
		t.Fatalf("-Inf: %#04x", h)
	}
	if h := Float32ToFloat16(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Fatalf("NaN: %#04x", h)
	}
}

func TestBulkConversion(t *testing.T) {
	src := []float32{1, -2.5, 0.1, 70000}
	h := make([]uint16, 5)
	Float32sToFloat16s(h, src)
	back := make([]float32, 4)
	Float16sToFloat32s(back, h[:4])
	for i, f := range src {
		if want := Float16ToFloat32(Float32ToFloat16(f)); back[i] != want {
			t.Fatalf("%d: %v, want %v", i, back[i], want)
		}
	}
	if h[4] != 0 {
		t.Fatalf("wrote past len(src)")
	}
}

func halfVec(r *rand.Rand, n int) ([]uint16, []float32) {
	h := make([]uint16, n)
	f := make([]float32, n)
	for i := range h {
		h[i] = Float32ToFloat16(float32(r.NormFloat64()))
		f[i] = Float16ToFloat32(h[i])
	}
	return h, f
}

func TestHalfKernels(t *testing.T) {
	impls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(9, 10))
		for _, n := range append(testLengths()[:80], 255, 256, 257, 511, 1000, 1536) {
			ha, a := halfVec(r, n)
			hb, b := halfVec(r, n)
			want, scale := refDot(a, b)
			checkClose(t, "DotHalf", n, DotHalf(ha, hb), want, scale)
			want, scale = refL2Sq(a, b)
			checkClose(t, "L2SqHalf", n, L2SqHalf(ha, hb), want, scale)
			want, scale = refL1(a, b)
			checkClose(t, "L1Half", n, L1Half(ha, hb), want, scale)
			if n > 0 {
				checkClose(t, "CosineDistanceHalf", n, CosineDistanceHalf(ha, hb), refCosine(a, b), 1)
			}
		}
		if !math.IsNaN(float64(CosineDistanceHalf([]uint16{0, 0}, []uint16{0x3c00, 0}))) {
			t.Fatal("cosine of a zero halfvec is not NaN")
		}
	})
}

func TestHalfBatch(t *testing.T) {
	type kernels struct {
		name  string
		batch func(q []float32, data []uint16, dim int, out []float32)
		bytes func(q []float32, data []byte, dim int, out []float32)
	}
	ks := []kernels{
		{"Dot", DotBatchHalf, DotBatchHalfBytes},
		{"L2Sq", L2SqBatchHalf, L2SqBatchHalfBytes},
		{"L1", L1BatchHalf, L1BatchHalfBytes},
		{"Cosine", CosineDistanceBatchHalf, CosineDistanceBatchHalfBytes},
	}
	impls(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		for _, dim := range []int{1, 5, 8, 16, 100, 255, 256, 257, 768, 1000} {
			rows := 1 + r.IntN(6)
			q := randVec(r, dim)
			hd, fd := halfVec(r, rows*dim)
			for _, k := range ks {
				out := make([]float32, rows)
				k.batch(q, hd, dim, out)
				for off := 0; off < 2; off++ {
					raw := make([]byte, off+2*len(hd))[off:]
					for i, h := range hd {
						binary.LittleEndian.PutUint16(raw[2*i:], h)
					}
					got := make([]float32, rows)
					k.bytes(q, raw, dim, got)
					for i := range out {
						want, scale := refFor(k.name, q, fd[i*dim:(i+1)*dim])
						checkClose(t, k.name+"BatchHalf", dim, out[i], want, scale)
						checkClose(t, k.name+"BatchHalfBytes", dim, got[i], want, scale)
					}
				}
			}
		}
	})
}

// TestBulkConversionMatchesScalar checks the bulk conversions (F16C
// assembly where available) bit for bit against the scalar functions: every
// binary16 value, and float32 bit patterns of every class (subnormal, NaN,
// overflow) at unaligned starts and all tail lengths.
func TestBulkConversionMatchesScalar(t *testing.T) {
	impls(t, func(t *testing.T) {
		all := make([]uint16, 1<<16)
		for i := range all {
			all[i] = uint16(i)
		}
		f := make([]float32, len(all))
		Float16sToFloat32s(f, all)
		for i, h := range all {
			if got, want := math.Float32bits(f[i]), math.Float32bits(Float16ToFloat32(h)); got != want {
				t.Fatalf("%#04x: bulk %#08x, scalar %#08x", h, got, want)
			}
		}
		r := rand.New(rand.NewPCG(15, 16))
		src := make([]float32, 5000)
		for i := range src {
			e := uint32(r.IntN(256))
			if r.IntN(2) == 0 {
				e = uint32(127 - 28 + r.IntN(46))
			}
			src[i] = math.Float32frombits(r.Uint32()&0x807fffff | e<<23)
		}
		dst := make([]uint16, len(src)+1)
		for _, off := range []int{0, 1, 3} {
			for _, n := range []int{0, 1, 7, 8, 9, 17, len(src) - off} {
				dst[n] = 0xabcd
				Float32sToFloat16s(dst[:n], src[off:off+n])
				for i := range n {
					if want := Float32ToFloat16(src[off+i]); dst[i] != want {
						t.Fatalf("%g (%#08x): bulk %#04x, scalar %#04x", src[off+i], math.Float32bits(src[off+i]), dst[i], want)
					}
				}
				if dst[n] != 0xabcd {
					t.Fatalf("n=%d: wrote past len(src)", n)
				}
			}
		}
	})
}
