package exec

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// appendTensor decodes PostgreSQL's binary array form into a tensor value:
// int32 ndim, int32 flags (1: may hold NULLs), the element type's OID, per
// dimension an int32 length and an int32 lower bound, then every element
// as an int32 length and its binary form. The element type must be the
// one clients see for the dtype (smallint for uint8, real for float16,
// ...); elements are range-checked into the dtype. An empty array (ndim 0)
// is a tensor whose dimensions are all 0.
func (d *binaryReader) appendTensor(v *types.Vec, b []byte) error {
	t := v.Type
	if len(b) < 12 {
		return errShortValue
	}
	ndim := int32(binary.BigEndian.Uint32(b))
	flags := int32(binary.BigEndian.Uint32(b[4:]))
	oid := binary.BigEndian.Uint32(b[8:])
	b = b[12:]
	elemType := t.DType.SQLType()
	switch {
	case ndim < 0:
		return pgerror.Newf(pgerror.InvalidBinaryRepresentation, "invalid number of dimensions: %d", ndim)
	case flags != 0 && flags != 1:
		return pgerror.New(pgerror.InvalidBinaryRepresentation, "invalid array flags")
	case oid != elemType.OID():
		return pgerror.Newf(pgerror.DatatypeMismatch, "binary data has array element type %d (%s) instead of expected %d (%s)",
			oid, oidName(oid), elemType.OID(), elemType)
	case len(b) < 8*int(ndim):
		return errShortValue
	}

	// The dims, and their product bounded by what the bytes can hold
	// (every element takes at least its 4-byte length).
	dims := d.dims[:0]
	total, limit := 1, (len(b)-8*int(ndim))/4
	for k := 0; k < int(ndim); k++ {
		n := int32(binary.BigEndian.Uint32(b[8*k:]))
		if n < 0 {
			return pgerror.New(pgerror.InvalidBinaryRepresentation, "invalid array dimensions")
		}
		dims = append(dims, int(n))
		if total *= int(n); total > limit {
			return errShortValue
		}
	}
	b = b[8*ndim:]
	if ndim == 0 {
		total = 0
		for range t.Shape {
			dims = append(dims, 0)
		}
	}
	d.dims = dims
	if !shapeFits(t.Shape, dims) {
		return pgerror.Newf(pgerror.DataException, "tensor shape mismatch: expected %s, got %s", shapeText(t.Shape), shapeText(dims))
	}

	d.elems = d.elems[:0]
	if t.Ragged() {
		for _, n := range dims {
			d.elems = binary.LittleEndian.AppendUint32(d.elems, uint32(n))
		}
	}
	size := int(elemType.Size())
	for i := 1; i <= total; i++ {
		if len(b) < 4 {
			return errShortValue
		}
		n := int(int32(binary.BigEndian.Uint32(b)))
		b = b[4:]
		switch {
		case n == -1:
			return pgerror.New(pgerror.DataException, "tensor elements must not be null")
		case n != size:
			return pgerror.Newf(pgerror.InvalidBinaryRepresentation, "improper binary format in array element %d", i)
		case len(b) < n:
			return errShortValue
		}
		var err error
		if d.elems, err = appendElem(d.elems, t.DType, b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	if len(b) > 0 {
		return errLongValue
	}
	v.AppendBytes(d.elems)
	return nil
}

// appendElem appends one element, in the binary form of the dtype's SQL
// element type, to dst as dtype dt.
func appendElem(dst []byte, dt types.DType, b []byte) ([]byte, error) {
	switch dt {
	case types.DTBool:
		if b[0] != 0 {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	case types.DTFloat64:
		return types.AppendElemFloat(dst, dt, math.Float64frombits(binary.BigEndian.Uint64(b))), nil
	case types.DTFloat32, types.DTFloat16, types.DTBFloat16:
		f := math.Float32frombits(binary.BigEndian.Uint32(b))
		inf := math.IsInf(float64(f), 0)
		if dt == types.DTFloat16 && types.Float32ToFloat16(f)&0x7fff == 0x7c00 && !inf ||
			dt == types.DTBFloat16 && types.Float32ToBFloat16(f)&0x7fff == 0x7f80 && !inf {
			return dst, pgerror.Newf(pgerror.NumericValueOutOfRange, "\"%s\" is out of range for type %s",
				strconv.FormatFloat(float64(f), 'g', -1, 32), dt)
		}
		return types.AppendElemFloat(dst, dt, float64(f)), nil
	}
	var n int64
	switch len(b) {
	case 2:
		n = int64(int16(binary.BigEndian.Uint16(b)))
	case 4:
		n = int64(int32(binary.BigEndian.Uint32(b)))
	default:
		n = int64(binary.BigEndian.Uint64(b))
	}
	if lo, hi := dt.MinMax(); n < lo || n > hi {
		return dst, pgerror.Newf(pgerror.NumericValueOutOfRange, "value %d is out of range for type %s", n, dt)
	}
	return types.AppendElemInt(dst, dt, n), nil
}

// shapeFits reports whether dims match shape: the same rank, and equal
// sizes where shape fixes them.
func shapeFits(shape, dims []int) bool {
	if len(shape) != len(dims) {
		return false
	}
	for k, want := range shape {
		if want != types.Ragged && dims[k] != want {
			return false
		}
	}
	return true
}

// shapeText formats dims as [2][3], a ragged one as [].
func shapeText(dims []int) string {
	var b strings.Builder
	for _, n := range dims {
		b.WriteByte('[')
		if n != types.Ragged {
			b.WriteString(strconv.Itoa(n))
		}
		b.WriteByte(']')
	}
	return b.String()
}

// oidName names the scalar types whose OIDs an array may carry.
func oidName(oid uint32) string {
	for _, t := range []types.Type{types.TypBool, types.TypInt2, types.TypInt4, types.TypInt8, types.TypFloat4,
		types.TypFloat8, types.TypText, types.TypBytea, types.TypJSONB, types.TypJSON} {
		if t.OID() == oid {
			return t.String()
		}
	}
	return "unknown"
}
