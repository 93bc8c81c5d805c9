package vector

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// Float16 values (pgvector's halfvec, IEEE 754 binary16) are passed as their
// bits in a uint16. Distances over them accumulate in float32, as pgvector's
// halfvec functions do. On amd64 with AVX2, FMA and F16C the kernels convert
// in registers (VCVTPH2PS) as they read; elsewhere they convert a block at a
// time into stack buffers and run the float32 kernels.

// halfAsm reports whether the F16C assembly runs.
func halfAsm() bool { return useAVX2 && useF16C }

// Float16ToFloat32 returns the float32 value of the binary16 bits h. Every
// binary16 value, subnormals, infinities and NaN included, is exactly
// representable in float32.
func Float16ToFloat32(h uint16) float32 {
	// Move exponent and mantissa into place and rebias the exponent; the
	// rare classes get a second step. Small enough to be inlined into the
	// conversion loops.
	const expMask = 0x7c00 << 13
	o := uint32(h&0x7fff) << 13
	e := o & expMask
	o += (127 - 15) << 23
	if e == expMask { // Inf or NaN: finish the exponent, quiet a NaN
		o += (128 - 16) << 23
		if o&0x7fffff != 0 {
			o |= 0x400000
		}
	} else if e == 0 { // zero or subnormal: 2^-14 * (1 + m/1024) - 2^-14, exact
		o = math.Float32bits(math.Float32frombits(o+1<<23) - 1.0/(1<<14))
	}
	return math.Float32frombits(o | uint32(h&0x8000)<<16)
}

// Float32ToFloat16 returns the binary16 bits nearest to f, ties to even, as
// pgvector's halfvec input does: values beyond the binary16 range become
// infinities, values below half its smallest subnormal become (signed) zero,
// and NaN stays a (quiet) NaN.
func Float32ToFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 112 // binary16 biased exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal result: the 24-bit significand shifted so that one unit
		// is 2^-24.
		shift := uint32(14 - e)
		if shift > 24 {
			return sign
		}
		m := mant | 0x800000
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to infinity: correct rounding
	}
	return sign | uint16(h)
}

// Float16sToFloat32s converts src into dst[:len(src)]. It panics if dst is
// shorter than src.
func Float16sToFloat32s(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	if halfAsm() {
		f16toF32AVX2(dst, src)
		return
	}
	for i, h := range src {
		dst[i] = Float16ToFloat32(h)
	}
}

// Float32sToFloat16s converts src into dst[:len(src)], rounding as
// Float32ToFloat16. It panics if dst is shorter than src.
func Float32sToFloat16s(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	if halfAsm() {
		f32toF16AVX2(dst, src)
		return
	}
	for i, f := range src {
		dst[i] = Float32ToFloat16(f)
	}
}

// float16BytesToFloat32s converts len(dst) little-endian binary16 values
// from src.
func float16BytesToFloat32s(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	if littleEndian && len(dst) <= blockLen {
		// memmove into an aligned buffer, then the (F16C) bulk conversion.
		var h [blockLen]uint16
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&h[0])), 2*len(dst)), src)
		Float16sToFloat32s(dst, h[:len(dst)])
		return
	}
	for i := range dst {
		dst[i] = Float16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

// DotHalf returns the inner product of two halfvecs. It panics if
// len(a) != len(b).
func DotHalf(a, b []uint16) float32 {
	if halfAsm() {
		checkLen(len(a), len(b))
		return dotHalfAVX2(a, b)
	}
	acc, _, _ := pairHalf(metricDot, a, b)
	return acc
}

// L2SqHalf returns the squared Euclidean distance between two halfvecs.
func L2SqHalf(a, b []uint16) float32 {
	if halfAsm() {
		checkLen(len(a), len(b))
		return l2sqHalfAVX2(a, b)
	}
	acc, _, _ := pairHalf(metricL2Sq, a, b)
	return acc
}

// L1Half returns the taxicab distance between two halfvecs.
func L1Half(a, b []uint16) float32 {
	if halfAsm() {
		checkLen(len(a), len(b))
		return l1HalfAVX2(a, b)
	}
	acc, _, _ := pairHalf(metricL1, a, b)
	return acc
}

// CosineDistanceHalf returns the cosine distance between two halfvecs, with
// CosineDistance's semantics.
func CosineDistanceHalf(a, b []uint16) float32 {
	var ab, aa, bb float32
	if halfAsm() {
		checkLen(len(a), len(b))
		ab, aa, bb = cosHalfAVX2(a, b)
	} else {
		ab, aa, bb = pairHalf(metricCosine, a, b)
	}
	return cosineFinish(ab, float64(aa)*float64(bb))
}

func pairHalf(m metric, a, b []uint16) (acc, aa, bb float32) {
	checkLen(len(a), len(b))
	var fa, fb [blockLen]float32
	for j := 0; j < len(a); j += blockLen {
		n := min(blockLen, len(a)-j)
		x, y := fa[:n], fb[:n]
		Float16sToFloat32s(x, a[j:j+n])
		Float16sToFloat32s(y, b[j:j+n])
		if m == metricCosine {
			var ab, sa, sb float32
			if useAVX2 {
				ab, sa, sb = cosAVX2(x, y)
			} else {
				ab, sa, sb = cosGeneric(x, y)
			}
			acc, aa, bb = acc+ab, aa+sa, bb+sb
			continue
		}
		acc, _ = accumulate(m, x, y, acc, 0)
	}
	return acc, aa, bb
}

// Batch kernels over halfvec rows: q is the query already converted to
// float32 (once per query, with Float16sToFloat32s), data holds len(out)
// rows of dim binary16 values, out[i] receives the distance to row i.

// DotBatchHalf is DotBatch over halfvec rows.
func DotBatchHalf(q []float32, data []uint16, dim int, out []float32) {
	batchHalf(metricDot, q, data, nil, dim, out)
}

// L2SqBatchHalf is L2SqBatch over halfvec rows.
func L2SqBatchHalf(q []float32, data []uint16, dim int, out []float32) {
	batchHalf(metricL2Sq, q, data, nil, dim, out)
}

// L1BatchHalf is L1Batch over halfvec rows.
func L1BatchHalf(q []float32, data []uint16, dim int, out []float32) {
	batchHalf(metricL1, q, data, nil, dim, out)
}

// CosineDistanceBatchHalf is CosineDistanceBatch over halfvec rows.
func CosineDistanceBatchHalf(q []float32, data []uint16, dim int, out []float32) {
	batchHalf(metricCosine, q, data, nil, dim, out)
}

// DotBatchHalfBytes is DotBatchHalf over the rows' little-endian bytes (no
// alignment needed).
func DotBatchHalfBytes(q []float32, data []byte, dim int, out []float32) {
	batchHalf(metricDot, q, nil, data, dim, out)
}

// L2SqBatchHalfBytes is L2SqBatchHalf over the rows' little-endian bytes.
func L2SqBatchHalfBytes(q []float32, data []byte, dim int, out []float32) {
	batchHalf(metricL2Sq, q, nil, data, dim, out)
}

// L1BatchHalfBytes is L1BatchHalf over the rows' little-endian bytes.
func L1BatchHalfBytes(q []float32, data []byte, dim int, out []float32) {
	batchHalf(metricL1, q, nil, data, dim, out)
}

// CosineDistanceBatchHalfBytes is CosineDistanceBatchHalf over the rows'
// little-endian bytes.
func CosineDistanceBatchHalfBytes(q []float32, data []byte, dim int, out []float32) {
	batchHalf(metricCosine, q, nil, data, dim, out)
}

// asUint16s views little-endian bytes in place as uint16 values when they
// are 2-byte aligned and the machine is little-endian.
func asUint16s(data []byte) ([]uint16, bool) {
	if !littleEndian {
		return nil, false
	}
	if len(data) < 2 {
		return []uint16{}, true
	}
	p := unsafe.Pointer(unsafe.SliceData(data))
	if uintptr(p)%2 != 0 {
		return nil, false
	}
	return unsafe.Slice((*uint16)(p), len(data)/2), true
}

// batchHalf reads rows from data, or from raw when data is nil.
func batchHalf(m metric, q []float32, data []uint16, raw []byte, dim int, out []float32) {
	if data != nil || raw == nil {
		checkBatch(q, len(data), dim, len(out))
	} else {
		checkBatch(q, len(raw)/2, dim, len(out))
		if h, ok := asUint16s(raw); ok {
			data, raw = h, nil
		}
	}
	var qq float64
	if m == metricCosine {
		qq = float64(SquaredNorm(q))
	}
	if raw == nil && halfAsm() {
		data = data[:dim*len(out)]
		switch m {
		case metricDot:
			dotBatchHalfAVX2(q, data, dim, out)
		case metricL2Sq:
			l2sqBatchHalfAVX2(q, data, dim, out)
		case metricL1:
			l1BatchHalfAVX2(q, data, dim, out)
		default:
			cosBatchHalfAVX2(q, data, dim, qq, out)
		}
		return
	}
	var buf [blockLen]float32
	for i := range out {
		var acc, bb float32
		for j := 0; j < dim; j += blockLen {
			n := min(blockLen, dim-j)
			b := buf[:n]
			off := i*dim + j
			if raw != nil {
				float16BytesToFloat32s(b, raw[2*off:])
			} else {
				Float16sToFloat32s(b, data[off:off+n])
			}
			acc, bb = accumulate(m, q[j:j+n], b, acc, bb)
		}
		out[i] = finish(m, acc, bb, qq)
	}
}
