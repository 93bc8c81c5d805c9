package session

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// Parameter types clients declare that deeplaked keeps no values of. Their
// values arrive in the client's chosen format, are converted to their text
// form and then bind as a quoted literal would: psycopg sends a large
// Python int as numeric, a list as an array, and JDBC a String as varchar
// or a char as bpchar, whatever the column's type.
const (
	oidChar       = 18
	oidName       = 19
	oidOID        = 26
	oidBpchar     = 1042
	oidNumeric    = 1700
	oidVarcharArr = 1015
)

// arrayElem maps the array type OIDs parameters may carry to their element
// type OIDs.
var arrayElem = map[uint32]uint32{
	types.OIDBoolArray: types.OIDBool,
	types.OIDInt2Array: types.OIDInt2,
	types.OIDInt4Array: types.OIDInt4,
	types.OIDInt8Array: types.OIDInt8,
	types.OIDFloat4Arr: types.OIDFloat4,
	types.OIDFloat8Arr: types.OIDFloat8,
	types.OIDTextArray: types.OIDText,
	oidVarcharArr:      types.OIDVarchar,
	1231:               oidNumeric, // numeric[]
}

// foreignParamType reports whether oid is such a type.
func foreignParamType(oid uint32) bool {
	switch oid {
	case oidChar, oidName, oidOID, oidBpchar, oidNumeric:
		return true
	}
	_, ok := arrayElem[oid]
	return ok
}

// foreignText returns the text form of a value of the foreign type oid. An
// array bound to a vector is written in vector syntax ([1,2,3]), as
// pgvector's cast from real[] accepts it.
func foreignText(oid uint32, format int16, val []byte, target types.Type) ([]byte, error) {
	elem, isArray := arrayElem[oid]
	if format == 0 {
		if err := types.ValidUTF8(val); err != nil {
			return nil, err
		}
		if isArray && target.IsVector() && len(val) >= 2 && val[0] == '{' && val[len(val)-1] == '}' {
			out := append([]byte{'['}, val[1:len(val)-1]...)
			return append(out, ']'), nil
		}
		return val, nil
	}
	if isArray {
		return arrayText(val, elem, target.IsVector())
	}
	return scalarText(nil, oid, val)
}

var errBadBinary = pgerror.New(pgerror.InvalidBinaryRepresentation, "incorrect binary data format in bind parameter")

// scalarText appends the text form of one binary value of type oid.
func scalarText(dst []byte, oid uint32, b []byte) ([]byte, error) {
	be := binary.BigEndian
	switch oid {
	case oidChar, oidName, oidBpchar, types.OIDText, types.OIDVarchar:
		if err := types.ValidUTF8(b); err != nil {
			return nil, err
		}
		return append(dst, b...), nil
	case types.OIDBool:
		if len(b) != 1 {
			return nil, errBadBinary
		}
		if b[0] != 0 {
			return append(dst, 't'), nil
		}
		return append(dst, 'f'), nil
	case types.OIDInt2:
		if len(b) != 2 {
			return nil, errBadBinary
		}
		return strconv.AppendInt(dst, int64(int16(be.Uint16(b))), 10), nil
	case types.OIDInt4:
		if len(b) != 4 {
			return nil, errBadBinary
		}
		return strconv.AppendInt(dst, int64(int32(be.Uint32(b))), 10), nil
	case oidOID:
		if len(b) != 4 {
			return nil, errBadBinary
		}
		return strconv.AppendUint(dst, uint64(be.Uint32(b)), 10), nil
	case types.OIDInt8:
		if len(b) != 8 {
			return nil, errBadBinary
		}
		return strconv.AppendInt(dst, int64(be.Uint64(b)), 10), nil
	case types.OIDFloat4:
		if len(b) != 4 {
			return nil, errBadBinary
		}
		return types.AppendFloat4(dst, math.Float32frombits(be.Uint32(b))), nil
	case types.OIDFloat8:
		if len(b) != 8 {
			return nil, errBadBinary
		}
		return types.AppendFloat8(dst, math.Float64frombits(be.Uint64(b))), nil
	case oidNumeric:
		return numericText(dst, b)
	}
	return nil, pgerror.Newf(pgerror.FeatureNotSupported, "binary format for parameters of type OID %d is not supported", oid)
}

// numericText appends the text form of a binary numeric: int16 ndigits,
// int16 weight (of the first digit, in base 10000), uint16 sign, int16
// display scale, then ndigits base-10000 digits.
func numericText(dst []byte, b []byte) ([]byte, error) {
	be := binary.BigEndian
	if len(b) < 8 {
		return nil, errBadBinary
	}
	ndigits := int(int16(be.Uint16(b)))
	weight := int(int16(be.Uint16(b[2:])))
	sign := be.Uint16(b[4:])
	dscale := int(int16(be.Uint16(b[6:])))
	if ndigits < 0 || dscale < 0 || len(b) != 8+2*ndigits {
		return nil, errBadBinary
	}
	switch sign {
	case 0xC000:
		return append(dst, "NaN"...), nil
	case 0xD000:
		return append(dst, "Infinity"...), nil
	case 0xF000:
		return append(dst, "-Infinity"...), nil
	case 0x4000:
		dst = append(dst, '-')
	case 0:
	default:
		return nil, errBadBinary
	}
	digit := func(i int) int {
		if i < 0 || i >= ndigits {
			return 0
		}
		return int(be.Uint16(b[8+2*i:]))
	}
	// The integer part: base-10000 digits 0..weight.
	if weight < 0 {
		dst = append(dst, '0')
	} else {
		for i := 0; i <= weight; i++ {
			d := digit(i)
			if i == 0 {
				dst = strconv.AppendInt(dst, int64(d), 10)
			} else {
				dst = append(dst, byte('0'+d/1000), byte('0'+d/100%10), byte('0'+d/10%10), byte('0'+d%10))
			}
		}
	}
	if dscale > 0 {
		dst = append(dst, '.')
		for k := 0; k < dscale; k++ {
			// Decimal digit k after the point lives in base-10000 digit
			// weight+1+k/4.
			d := digit(weight + 1 + k/4)
			pow := [4]int{1000, 100, 10, 1}[k%4]
			dst = append(dst, byte('0'+d/pow%10))
		}
	}
	return dst, nil
}

// arrayText converts PostgreSQL's binary array form to its text form
// ({1,2,{3}} nesting by dimension), or to vector syntax for a vector.
func arrayText(b []byte, elemOID uint32, vector bool) ([]byte, error) {
	be := binary.BigEndian
	if len(b) < 12 {
		return nil, errBadBinary
	}
	ndim := int(int32(be.Uint32(b)))
	elem := be.Uint32(b[8:])
	if ndim < 0 || ndim > 6 || len(b) < 12+8*ndim {
		return nil, errBadBinary
	}
	if elem != elemOID {
		return nil, pgerror.Newf(pgerror.DatatypeMismatch, "binary data has array element type %d instead of expected %d", elem, elemOID)
	}
	dims := make([]int, ndim)
	total := 1
	for k := range dims {
		dims[k] = int(int32(be.Uint32(b[12+8*k:])))
		if dims[k] < 0 || dims[k] > len(b) {
			return nil, errBadBinary
		}
		total *= dims[k]
	}
	if ndim == 0 {
		total = 0
	}
	b = b[12+8*ndim:]
	open, close := byte('{'), byte('}')
	if vector {
		open, close = '[', ']'
	}
	var out []byte
	var err error
	var walk func(level int) error
	walk = func(level int) error {
		out = append(out, open)
		for i := 0; i < dims[level]; i++ {
			if i > 0 {
				out = append(out, ',')
			}
			if level+1 < ndim {
				if err := walk(level + 1); err != nil {
					return err
				}
				continue
			}
			if len(b) < 4 {
				return errBadBinary
			}
			n := int(int32(be.Uint32(b)))
			b = b[4:]
			if n == -1 {
				out = append(out, "NULL"...)
				continue
			}
			if n < 0 || n > len(b) {
				return errBadBinary
			}
			if elemOID == types.OIDText || elemOID == types.OIDVarchar {
				out = appendQuotedElem(out, b[:n])
				if err := types.ValidUTF8(b[:n]); err != nil {
					return err
				}
			} else if out, err = scalarText(out, elemOID, b[:n]); err != nil {
				return err
			}
			b = b[n:]
		}
		out = append(out, close)
		return nil
	}
	if total == 0 {
		return append(out, open, close), nil
	}
	if err := walk(0); err != nil {
		return nil, err
	}
	if len(b) != 0 {
		return nil, errBadBinary
	}
	return out, nil
}

// appendQuotedElem appends a text array element, double-quoted with
// backslash escapes.
func appendQuotedElem(dst, s []byte) []byte {
	dst = append(dst, '"')
	for _, c := range s {
		if c == '"' || c == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}
