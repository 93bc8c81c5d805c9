package exec

import (
	"encoding/binary"
	"math"

	"github.com/deeplaked/deeplaked/types"
)

// appendBinaryRow appends row i in binary COPY format: an int16 field
// count, then per field an int32 length (-1 for NULL) and the value in its
// type's binary send form. The forms are the ones binaryReader decodes.
func (c *CopyTo) appendBinaryRow(dst []byte, cols []*types.Vec, i int) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(cols)))
	for _, v := range cols {
		if v.Nulls[i] {
			dst = append(dst, 0xff, 0xff, 0xff, 0xff)
			continue
		}
		lp := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		dst = c.appendSend(dst, v, i)
		binary.BigEndian.PutUint32(dst[lp:], uint32(len(dst)-lp-4))
	}
	return dst
}

// appendSend appends the binary send form of row i of v, which is not
// NULL: integers and floats big-endian, bool one byte, text, varchar, json
// and bytea their bytes, jsonb a version byte 1 and its text, vector
// pgvector's form, tensors PostgreSQL's array form.
func (c *CopyTo) appendSend(dst []byte, v *types.Vec, i int) []byte {
	switch v.Type.Kind {
	case types.Bool:
		if v.Bools[i] {
			return append(dst, 1)
		}
		return append(dst, 0)
	case types.Int2:
		return binary.BigEndian.AppendUint16(dst, uint16(v.Ints[i]))
	case types.Int4:
		return binary.BigEndian.AppendUint32(dst, uint32(v.Ints[i]))
	case types.Int8:
		return binary.BigEndian.AppendUint64(dst, uint64(v.Ints[i]))
	case types.Float4:
		return binary.BigEndian.AppendUint32(dst, float4Bits(v.Floats[i]))
	case types.Float8:
		return binary.BigEndian.AppendUint64(dst, float8Bits(v.Floats[i]))
	case types.JSONB:
		return append(append(dst, 1), v.Bytes.Get(i)...)
	case types.Vector:
		return appendVectorSend(dst, v.Bytes.Get(i))
	case types.Tensor:
		return c.appendTensorSend(dst, v.Type, v.Bytes.Get(i))
	}
	// text, varchar, json, bytea, unknown: the bytes themselves.
	return append(dst, v.Bytes.Get(i)...)
}

// appendVectorSend appends pgvector's binary form of the vector value val
// (little-endian float32s): int16 dimensions, int16 0, big-endian float4s.
func appendVectorSend(dst, val []byte) []byte {
	dim := len(val) / 4
	dst = binary.BigEndian.AppendUint16(dst, uint16(dim))
	dst = append(dst, 0, 0)
	for k := 0; k < dim; k++ {
		dst = binary.BigEndian.AppendUint32(dst, binary.LittleEndian.Uint32(val[4*k:]))
	}
	return dst
}

// appendTensorSend appends the tensor value val of type t in PostgreSQL's
// binary array form (array_send): int32 ndim, int32 has-null flag (0), the
// element type's OID, per dimension an int32 length and lower bound 1,
// then each element as an int32 length and its send form, in the SQL
// element type clients see for the dtype (smallint for uint8, real for
// float16...). A tensor without elements is the empty array (ndim 0).
// Corrupt bytes whose length disagrees with the dims go out as a flat
// array of the whole elements present, as the text form does.
func (c *CopyTo) appendTensorSend(dst []byte, t types.Type, val []byte) []byte {
	dims, data := types.TensorDims(t, val, c.dims)
	c.dims = dims
	dt := t.DType
	elem := dt.SQLType()
	sz := dt.Size()
	total := 1
	for _, d := range dims {
		total *= d
	}
	if sz == 0 || total*sz != len(data) {
		if sz > 0 {
			total = len(data) / sz
		} else {
			total = 0
		}
		dims = append(dims[:0], total)
	}
	if total == 0 {
		dims = dims[:0]
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(dims)))
	dst = binary.BigEndian.AppendUint32(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, elem.OID())
	for _, d := range dims {
		dst = binary.BigEndian.AppendUint32(dst, uint32(d))
		dst = binary.BigEndian.AppendUint32(dst, 1)
	}
	esz := uint32(elem.Size())
	for k := 0; k < total; k++ {
		dst = binary.BigEndian.AppendUint32(dst, esz)
		switch elem.Kind {
		case types.Bool:
			dst = append(dst, data[k])
		case types.Int2:
			dst = binary.BigEndian.AppendUint16(dst, uint16(types.ElemInt(dt, data, k)))
		case types.Int4:
			dst = binary.BigEndian.AppendUint32(dst, uint32(types.ElemInt(dt, data, k)))
		case types.Int8:
			dst = binary.BigEndian.AppendUint64(dst, uint64(types.ElemInt(dt, data, k)))
		case types.Float4:
			dst = binary.BigEndian.AppendUint32(dst, float4Bits(types.ElemFloat(dt, data, k)))
		default:
			dst = binary.BigEndian.AppendUint64(dst, float8Bits(types.ElemFloat(dt, data, k)))
		}
	}
	return dst
}

// float4Bits and float8Bits return the IEEE bits PostgreSQL sends for f,
// with its one NaN (the C library's NAN) whatever NaN f holds.
func float4Bits(f float64) uint32 {
	if f != f {
		return 0x7fc00000
	}
	return math.Float32bits(float32(f))
}

func float8Bits(f float64) uint64 {
	if f != f {
		return 0x7ff8000000000000
	}
	return math.Float64bits(f)
}
