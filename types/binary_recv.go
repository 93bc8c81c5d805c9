package types

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"github.com/deeplaked/deeplaked/pgerror"
)

// Errors of a value whose length does not fit its type, as PostgreSQL's
// receive functions report them.
var (
	errShortValue = pgerror.New(pgerror.ProtocolViolation, "insufficient data left in message")
	errLongValue  = pgerror.New(pgerror.InvalidBinaryRepresentation, "incorrect binary data format")
)

// fixedSize checks that a value of a fixed-size type has n bytes.
func fixedSize(b []byte, n int) error {
	switch {
	case len(b) < n:
		return errShortValue
	case len(b) > n:
		return errLongValue
	}
	return nil
}

// AppendRecv decodes the binary send form of one value of v's type into v,
// with the checks of PostgreSQL's receive functions.
func (c *BinaryCodec) AppendRecv(v *Vec, b []byte) error {
	switch v.Type.Kind {
	case Bool:
		if err := fixedSize(b, 1); err != nil {
			return err
		}
		v.AppendBool(b[0] != 0)
	case Int2:
		if err := fixedSize(b, 2); err != nil {
			return err
		}
		v.AppendInt(int64(int16(binary.BigEndian.Uint16(b))))
	case Int4:
		if err := fixedSize(b, 4); err != nil {
			return err
		}
		v.AppendInt(int64(int32(binary.BigEndian.Uint32(b))))
	case Oid, RegClass, RegType, RegNamespace, RegProc:
		if err := fixedSize(b, 4); err != nil {
			return err
		}
		v.AppendInt(int64(binary.BigEndian.Uint32(b)))
	case Int8, Timestamp, TimestampTZ:
		if err := fixedSize(b, 8); err != nil {
			return err
		}
		n := int64(binary.BigEndian.Uint64(b))
		if v.Type.Kind != Int8 && !TimestampInRange(n) {
			return pgerror.New(pgerror.DatetimeFieldOverflow, "timestamp out of range")
		}
		v.AppendInt(n)
	case Date:
		if err := fixedSize(b, 4); err != nil {
			return err
		}
		n := int64(int32(binary.BigEndian.Uint32(b)))
		if !DateInRange(n) {
			return pgerror.New(pgerror.DatetimeFieldOverflow, "date out of range")
		}
		v.AppendInt(n)
	case Float4:
		if err := fixedSize(b, 4); err != nil {
			return err
		}
		v.AppendFloat(float64(math.Float32frombits(binary.BigEndian.Uint32(b))))
	case Float8:
		if err := fixedSize(b, 8); err != nil {
			return err
		}
		v.AppendFloat(math.Float64frombits(binary.BigEndian.Uint64(b)))
	case Bytea:
		v.AppendBytes(b)
	case JSONB:
		if len(b) == 0 {
			return errShortValue
		}
		if b[0] != 1 {
			return pgerror.Newf(pgerror.InvalidBinaryRepresentation, "unsupported jsonb version number %d", b[0])
		}
		return AppendParsedBytes(v, b[1:])
	case UUID:
		if err := fixedSize(b, 16); err != nil {
			return err
		}
		return v.appendEncoded(func(dst []byte) ([]byte, error) { return AppendUUIDText(dst, b), nil })
	case Interval:
		if err := fixedSize(b, 16); err != nil {
			return err
		}
		iv := IntervalValue{Micros: int64(binary.BigEndian.Uint64(b)), Days: int32(binary.BigEndian.Uint32(b[8:])), Months: int32(binary.BigEndian.Uint32(b[12:]))}
		v.AppendBytes(AppendInterval(nil, iv))
	case Numeric:
		return v.appendEncoded(func(dst []byte) ([]byte, error) {
			start := len(dst)
			dst, err := NumericFromBinary(dst, b)
			if err != nil || v.Type.Width == 0 {
				return dst, err
			}
			// numeric_recv applies the column's typmod, as numeric_in does.
			n, err := NumericApplyTypmod(dst, dst[start:], v.Type.Width, v.Type.Scale)
			return append(dst[:start], n[len(dst):]...), err
		})
	case Vector, HalfVec:
		return c.appendVectorRecv(v, b)
	case Tensor:
		return c.appendTensorRecv(v, b)
	default:
		// text, varchar and json send their text.
		return AppendParsedBytes(v, b)
	}
	return nil
}

// appendVectorRecv decodes pgvector's binary form of a vector or halfvec:
// int16 dim, int16 unused (0), dim big-endian float4s or halves.
func (c *BinaryCodec) appendVectorRecv(v *Vec, b []byte) error {
	if len(b) < 4 {
		return errShortValue
	}
	name := vectorName(v.Type)
	dim := int(int16(binary.BigEndian.Uint16(b)))
	unused := int16(binary.BigEndian.Uint16(b[2:]))
	switch {
	case dim < 1:
		return pgerror.Newf(pgerror.DataException, "%s must have at least 1 dimension", name)
	case dim > MaxVectorDims:
		return pgerror.Newf(pgerror.ProgramLimitExceeded, "%s cannot have more than %d dimensions", name, MaxVectorDims)
	case v.Type.Width > 0 && dim != v.Type.Width:
		return pgerror.Newf(pgerror.DataException, "expected %d dimensions, not %d", v.Type.Width, dim)
	case unused != 0:
		return pgerror.Newf(pgerror.InvalidParameterValue, "expected unused to be 0, not %d", unused)
	}
	size := v.Type.VectorElemSize()
	if err := fixedSize(b[4:], size*dim); err != nil {
		return err
	}
	c.elems = c.elems[:0]
	for i := 0; i < dim; i++ {
		var f float64
		if size == 2 {
			h := binary.BigEndian.Uint16(b[4+2*i:])
			f = float64(Float16ToFloat32(h))
			c.elems = binary.LittleEndian.AppendUint16(c.elems, h)
		} else {
			bits := binary.BigEndian.Uint32(b[4+4*i:])
			f = float64(math.Float32frombits(bits))
			c.elems = binary.LittleEndian.AppendUint32(c.elems, bits)
		}
		if math.IsNaN(f) {
			return pgerror.Newf(pgerror.DataException, "NaN not allowed in %s", name)
		}
		if math.IsInf(f, 0) {
			return pgerror.Newf(pgerror.DataException, "infinite value not allowed in %s", name)
		}
	}
	v.AppendBytes(c.elems)
	return nil
}

// appendTensorRecv decodes PostgreSQL's binary array form into a tensor
// value: int32 ndim, int32 flags (1: may hold NULLs), the element type's
// OID, per dimension an int32 length and an int32 lower bound, then every
// element as an int32 length and its binary form. The element type must be
// the one clients see for the dtype (smallint for uint8, real for float16,
// ...); elements are range-checked into the dtype. An empty array (ndim 0)
// is a tensor whose dimensions are all 0.
func (c *BinaryCodec) appendTensorRecv(v *Vec, b []byte) error {
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
	dims := c.dims[:0]
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
	c.dims = dims
	if !shapeFits(t.Shape, dims) {
		return pgerror.Newf(pgerror.DataException, "tensor shape mismatch: expected %s, got %s", shapeText(t.Shape), shapeText(dims))
	}

	c.elems = c.elems[:0]
	if t.Ragged() {
		for _, n := range dims {
			c.elems = binary.LittleEndian.AppendUint32(c.elems, uint32(n))
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
		if c.elems, err = appendElemRecv(c.elems, t.DType, b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	if len(b) > 0 {
		return errLongValue
	}
	v.AppendBytes(c.elems)
	return nil
}

// appendElemRecv appends one element, in the binary form of the dtype's
// SQL element type, to dst as dtype dt.
func appendElemRecv(dst []byte, dt DType, b []byte) ([]byte, error) {
	switch dt {
	case DTBool:
		if b[0] != 0 {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	case DTFloat64:
		return AppendElemFloat(dst, dt, math.Float64frombits(binary.BigEndian.Uint64(b))), nil
	case DTFloat32, DTFloat16, DTBFloat16:
		f := math.Float32frombits(binary.BigEndian.Uint32(b))
		inf := math.IsInf(float64(f), 0)
		if dt == DTFloat16 && Float32ToFloat16(f)&0x7fff == 0x7c00 && !inf ||
			dt == DTBFloat16 && Float32ToBFloat16(f)&0x7fff == 0x7f80 && !inf {
			return dst, pgerror.Newf(pgerror.NumericValueOutOfRange, "\"%s\" is out of range for type %s",
				strconv.FormatFloat(float64(f), 'g', -1, 32), dt)
		}
		return AppendElemFloat(dst, dt, float64(f)), nil
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
	return AppendElemInt(dst, dt, n), nil
}

// shapeFits reports whether dims match shape: the same rank, and equal
// sizes where shape fixes them.
func shapeFits(shape, dims []int) bool {
	if len(shape) != len(dims) {
		return false
	}
	for k, want := range shape {
		if want != Ragged && dims[k] != want {
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
		if n != Ragged {
			b.WriteString(strconv.Itoa(n))
		}
		b.WriteByte(']')
	}
	return b.String()
}

// oidName names the scalar types whose OIDs an array may carry.
func oidName(oid uint32) string {
	for _, t := range []Type{TypBool, TypInt2, TypInt4, TypInt8, TypFloat4,
		TypFloat8, TypText, TypBytea, TypJSONB, TypJSON} {
		if t.OID() == oid {
			return t.String()
		}
	}
	return "unknown"
}
