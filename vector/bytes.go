package vector

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// Raw-bytes entry points take a chunk's bytes as they arrive from storage:
// little-endian float32 values, len(out) rows of dim values (4*dim bytes)
// back to back.
//
// Alignment: when data starts on a 4-byte boundary (chunk buffers are
// allocated as such, and a row of a vector column is 4*dim bytes) and the
// machine is little-endian, the bytes are read in place as []float32. Any
// other input is still accepted: it is decoded a block of values at a time
// into a buffer on the stack, which costs a copy but no allocation.

// blockLen is the number of values decoded at a time by the slow paths.
const blockLen = 256

var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// AsFloat32s returns data viewed in place as little-endian float32 values
// (len(data)/4 of them; trailing bytes are ignored) and true, or nil and
// false when that is not possible: data is not 4-byte aligned or the
// machine is big-endian. The view shares memory with data.
func AsFloat32s(data []byte) ([]float32, bool) {
	if !littleEndian {
		return nil, false
	}
	if len(data) < 4 {
		return []float32{}, true
	}
	p := unsafe.Pointer(unsafe.SliceData(data))
	if uintptr(p)%4 != 0 {
		return nil, false
	}
	return unsafe.Slice((*float32)(p), len(data)/4), true
}

// metric names a batch kernel for the slow paths.
type metric int

const (
	metricDot metric = iota + 1
	metricL2Sq
	metricL1
	metricCosine
)

// DotBatchBytes is DotBatch over the raw little-endian bytes of the rows.
func DotBatchBytes(q []float32, data []byte, dim int, out []float32) {
	batchBytes(metricDot, q, data, dim, out)
}

// L2SqBatchBytes is L2SqBatch over the raw little-endian bytes of the rows.
func L2SqBatchBytes(q []float32, data []byte, dim int, out []float32) {
	batchBytes(metricL2Sq, q, data, dim, out)
}

// L1BatchBytes is L1Batch over the raw little-endian bytes of the rows.
func L1BatchBytes(q []float32, data []byte, dim int, out []float32) {
	batchBytes(metricL1, q, data, dim, out)
}

// CosineDistanceBatchBytes is CosineDistanceBatch over the raw
// little-endian bytes of the rows.
func CosineDistanceBatchBytes(q []float32, data []byte, dim int, out []float32) {
	batchBytes(metricCosine, q, data, dim, out)
}

func batchBytes(m metric, q []float32, data []byte, dim int, out []float32) {
	checkBatch(q, len(data)/4, dim, len(out))
	if f, ok := AsFloat32s(data); ok {
		f = f[:dim*len(out)]
		switch m {
		case metricDot:
			DotBatch(q, f, dim, out)
		case metricL2Sq:
			L2SqBatch(q, f, dim, out)
		case metricL1:
			L1Batch(q, f, dim, out)
		default:
			CosineDistanceBatch(q, f, dim, out)
		}
		return
	}
	var buf [blockLen]float32 // NB: stays on the stack; copy and the kernels do not keep it
	var qq float64
	if m == metricCosine {
		qq = float64(SquaredNorm(q))
	}
	for i := range out {
		row := data[i*dim*4 : (i+1)*dim*4]
		var acc, bb float32
		for j := 0; j < dim; j += blockLen {
			n := min(blockLen, dim-j)
			b := buf[:n]
			decodeFloat32s(b, row[4*j:4*(j+n)])
			acc, bb = accumulate(m, q[j:j+n], b, acc, bb)
		}
		out[i] = finish(m, acc, bb, qq)
	}
}

// decodeFloat32s fills dst from the little-endian bytes src (4*len(dst) of
// them, any alignment). On a little-endian machine that is a memmove, which
// copies unaligned bytes at full speed.
func decodeFloat32s(dst []float32, src []byte) {
	if littleEndian {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), 4*len(dst)), src)
		return
	}
	src = src[:4*len(dst)]
	for k := range dst {
		dst[k] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*k:]))
	}
}

// accumulate adds one block's partial sums for metric m: acc collects the
// metric's sum, bb the row's squared norm (cosine only).
func accumulate(m metric, a, b []float32, acc, bb float32) (float32, float32) {
	switch m {
	case metricDot:
		return acc + Dot(a, b), bb
	case metricL2Sq:
		return acc + L2Sq(a, b), bb
	case metricL1:
		return acc + L1(a, b), bb
	default:
		var ab, sb float32
		if useAVX2 {
			ab, _, sb = cosAVX2(a, b)
		} else {
			ab, _, sb = cosGeneric(a, b)
		}
		return acc + ab, bb + sb
	}
}

func finish(m metric, acc, bb float32, qq float64) float32 {
	if m == metricCosine {
		return cosineFinish(acc, qq*float64(bb))
	}
	return acc
}
