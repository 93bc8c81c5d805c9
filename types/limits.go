package types

import (
	"math"
	"math/bits"
	"strconv"

	"github.com/deeplaked/deeplaked/pgerror"
)

// MaxValueBytes is the largest value a field may hold: PostgreSQL's
// MaxAllocSize, 1 GB less one byte.
const MaxValueBytes = 1<<30 - 1

// MaxTensorDims bounds the dimensions of a tensor type (NumPy's limit
// before 2.0; PostgreSQL's arrays stop at 6).
const MaxTensorDims = 32

// RowBytes returns the bytes of one value of t when every value of t has
// the same size (a fixed-shape tensor, vector(n), halfvec(n)), saturated
// at math.MaxInt64 when the product overflows; fixed is false for other
// types. For a ragged tensor, min is the bytes of its fixed dimensions'
// elements: what a value with every ragged dimension 1 holds.
func (t Type) RowBytes() (n int64, fixed bool) {
	switch {
	case t.IsVector() && t.Width > 0:
		return int64(t.Width) * int64(t.VectorElemSize()), true
	case t.Kind != Tensor:
		return 0, false
	}
	n = int64(t.DType.Size())
	for _, d := range t.Shape {
		if d == Ragged {
			continue
		}
		n = mulSat(n, int64(d))
	}
	return n, !t.Ragged()
}

// mulSat returns a·b for non-negative a and b, or math.MaxInt64 when it
// overflows.
func mulSat(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// CheckDeclared refuses a tensor type whose values could not be held:
// more than MaxTensorDims dimensions, or fixed dimensions whose elements
// take more than MaxValueBytes a value (54000, as PostgreSQL refuses an
// array past its limits). Types are checked where they are written
// (CREATE TABLE, casts); a table declared before these limits keeps
// opening.
func CheckDeclared(t Type) error {
	if t.Kind != Tensor {
		return nil
	}
	if len(t.Shape) > MaxTensorDims {
		return pgerror.Newf(pgerror.ProgramLimitExceeded,
			"number of tensor dimensions (%d) exceeds the maximum allowed (%d)", len(t.Shape), MaxTensorDims)
	}
	n, fixed := t.RowBytes()
	if n <= MaxValueBytes {
		return nil
	}
	size := "more than 9223372036854775807 bytes"
	if n < math.MaxInt64 {
		size = strconv.FormatInt(n, 10) + " bytes"
	}
	if !fixed {
		return pgerror.Newf(pgerror.ProgramLimitExceeded,
			"tensor type %s is at least %s where it is not empty, over the 1 GB limit of a value", t, size)
	}
	return pgerror.Newf(pgerror.ProgramLimitExceeded, "tensor type %s is %s, over the 1 GB limit of a value", t, size)
}
