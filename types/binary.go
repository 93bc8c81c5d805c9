package types

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/deeplaked/deeplaked/pgerror"
)

// BinaryCodec converts values to and from PostgreSQL's binary send/receive
// forms, the per-value format of binary COPY and of the extended query
// protocol's binary parameters and results. It keeps scratch space between
// calls, so encoding and decoding do not allocate once it has grown; the
// zero value is ready to use. A BinaryCodec is used by one goroutine.
type BinaryCodec struct {
	dims  []int
	elems []byte
}

// AppendSend appends the binary send form of row i of v, which is not
// NULL: integers and floats big-endian, bool one byte, text, varchar, json
// and bytea their bytes, jsonb a version byte 1 and its text, vector
// pgvector's form, tensors PostgreSQL's array form.
func (c *BinaryCodec) AppendSend(dst []byte, v *Vec, i int) []byte {
	switch v.Type.Kind {
	case Bool:
		if v.Bools[i] {
			return append(dst, 1)
		}
		return append(dst, 0)
	case Int2:
		return binary.BigEndian.AppendUint16(dst, uint16(v.Ints[i]))
	case Int4, Oid, RegClass, RegType, RegNamespace, RegProc:
		return binary.BigEndian.AppendUint32(dst, uint32(v.Ints[i]))
	case Int8, Timestamp, TimestampTZ:
		return binary.BigEndian.AppendUint64(dst, uint64(v.Ints[i]))
	case Date:
		return binary.BigEndian.AppendUint32(dst, uint32(v.Ints[i]))
	case Float4:
		return binary.BigEndian.AppendUint32(dst, Float4Bits(v.Floats[i]))
	case Float8:
		return binary.BigEndian.AppendUint64(dst, Float8Bits(v.Floats[i]))
	case JSONB:
		return append(append(dst, 1), v.Bytes.Get(i)...)
	case UUID:
		return AppendUUIDBytes(dst, v.Bytes.Get(i))
	case Numeric:
		return AppendNumericBinary(dst, v.Bytes.Get(i))
	case Interval:
		// PostgreSQL's: microseconds, days, months.
		iv := IntervalOf(v.Bytes.Get(i))
		dst = binary.BigEndian.AppendUint64(dst, uint64(iv.Micros))
		dst = binary.BigEndian.AppendUint32(dst, uint32(iv.Days))
		return binary.BigEndian.AppendUint32(dst, uint32(iv.Months))
	case Vector:
		return appendVectorSend(dst, v.Bytes.Get(i))
	case HalfVec:
		return appendHalfVecSend(dst, v.Bytes.Get(i))
	case Tensor:
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

// appendHalfVecSend appends pgvector's binary form of the halfvec value
// val (little-endian halves): int16 dimensions, int16 0, big-endian
// halves.
func appendHalfVecSend(dst, val []byte) []byte {
	dim := len(val) / 2
	dst = binary.BigEndian.AppendUint16(dst, uint16(dim))
	dst = append(dst, 0, 0)
	for k := 0; k < dim; k++ {
		dst = binary.BigEndian.AppendUint16(dst, binary.LittleEndian.Uint16(val[2*k:]))
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
func (c *BinaryCodec) appendTensorSend(dst []byte, t Type, val []byte) []byte {
	dims, data := TensorDims(t, val, c.dims)
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
		case Bool:
			dst = append(dst, data[k])
		case Int2:
			dst = binary.BigEndian.AppendUint16(dst, uint16(ElemInt(dt, data, k)))
		case Int4:
			dst = binary.BigEndian.AppendUint32(dst, uint32(ElemInt(dt, data, k)))
		case Int8:
			dst = binary.BigEndian.AppendUint64(dst, uint64(ElemInt(dt, data, k)))
		case Float4:
			dst = binary.BigEndian.AppendUint32(dst, Float4Bits(ElemFloat(dt, data, k)))
		default:
			dst = binary.BigEndian.AppendUint64(dst, Float8Bits(ElemFloat(dt, data, k)))
		}
	}
	return dst
}

// Float4Bits and Float8Bits return the IEEE bits PostgreSQL sends for f,
// with its one NaN (the C library's NAN) whatever NaN f holds.
func Float4Bits(f float64) uint32 {
	if f != f {
		return 0x7fc00000
	}
	return math.Float32bits(float32(f))
}

// Float8Bits: see Float4Bits.
func Float8Bits(f float64) uint64 {
	if f != f {
		return 0x7ff8000000000000
	}
	return math.Float64bits(f)
}

// AppendParsedBytes parses the text form of a value into v, after checking
// that a value of a textual type is valid UTF-8 without NUL bytes.
func AppendParsedBytes(v *Vec, val []byte) error {
	if err := CheckEncoding(v.Type, val); err != nil {
		return err
	}
	// NB: AppendParsed copies what it keeps and builds error messages with
	// fmt, so it may see val's bytes as a string without copying them.
	return AppendParsed(v, unsafe.String(unsafe.SliceData(val), len(val)))
}

// CheckEncoding rejects a value of a textual type that is not valid UTF-8
// (an escape in COPY's text format, or a binary value, may make one).
func CheckEncoding(t Type, val []byte) error {
	switch t.Kind {
	case Text, Varchar, JSON, JSONB, Unknown:
		return ValidUTF8(val)
	}
	return nil
}

// ValidUTF8 rejects bytes that are not UTF-8 or hold a NUL, as PostgreSQL
// does for its UTF8 encoding, naming the first bad sequence (22021).
func ValidUTF8(val []byte) error {
	if utf8.Valid(val) && bytes.IndexByte(val, 0) < 0 {
		return nil
	}
	i := 0
	for i < len(val) {
		r, size := utf8.DecodeRune(val[i:])
		if r == utf8.RuneError && size <= 1 || r == 0 {
			break
		}
		i += size
	}
	bad := val[i:min(i+seqLen(val[i]), len(val))]
	var b strings.Builder
	for k, c := range bad {
		if k > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "0x%02x", c)
	}
	return pgerror.Newf(pgerror.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": %s", b.String())
}

// seqLen is the length of the UTF-8 sequence a lead byte announces.
func seqLen(c byte) int {
	switch {
	case c >= 0xf0 && c < 0xf8:
		return 4
	case c >= 0xe0:
		return 3
	case c >= 0xc0:
		return 2
	}
	return 1
}
