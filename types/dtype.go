package types

import "strings"

// DType is the element type of a tensor.
type DType uint8

// Tensor element types. Names follow PyTorch/NumPy: int8 is 8-bit here.
const (
	DTBool DType = iota + 1
	DTInt8
	DTUint8
	DTInt16
	DTInt32
	DTInt64
	DTFloat16
	DTBFloat16
	DTFloat32
	DTFloat64
)

var dtypeNames = [...]string{
	DTBool: "bool", DTInt8: "int8", DTUint8: "uint8", DTInt16: "int16", DTInt32: "int32",
	DTInt64: "int64", DTFloat16: "float16", DTBFloat16: "bfloat16", DTFloat32: "float32",
	DTFloat64: "float64",
}

var dtypeSizes = [...]int{
	DTBool: 1, DTInt8: 1, DTUint8: 1, DTInt16: 2, DTInt32: 4, DTInt64: 8,
	DTFloat16: 2, DTBFloat16: 2, DTFloat32: 4, DTFloat64: 8,
}

// String returns the dtype's name.
func (d DType) String() string {
	if int(d) < len(dtypeNames) && dtypeNames[d] != "" {
		return dtypeNames[d]
	}
	return "invalid"
}

// Size returns the byte width of one element.
func (d DType) Size() int {
	if int(d) < len(dtypeSizes) {
		return dtypeSizes[d]
	}
	return 0
}

// IsFloat reports whether d is a floating-point dtype.
func (d DType) IsFloat() bool {
	return d == DTFloat16 || d == DTBFloat16 || d == DTFloat32 || d == DTFloat64
}

// DTypeByName resolves a dtype name (case-insensitive), including the
// PostgreSQL spellings that map onto dtypes. ok is false for unknown names.
func DTypeByName(name string) (DType, bool) {
	switch strings.ToLower(name) {
	case "bool", "boolean":
		return DTBool, true
	case "int8":
		return DTInt8, true
	case "uint8":
		return DTUint8, true
	case "int16", "int2", "smallint":
		return DTInt16, true
	case "int32", "int4", "int", "integer":
		return DTInt32, true
	case "int64", "bigint":
		return DTInt64, true
	case "float16", "half":
		return DTFloat16, true
	case "bfloat16":
		return DTBFloat16, true
	case "float32", "float4", "real":
		return DTFloat32, true
	case "float64", "float8", "double precision", "float":
		return DTFloat64, true
	}
	return 0, false
}

// DTypeOf returns the dtype that holds values of the scalar type t
// (bool, smallint, integer, bigint, real, double precision), the inverse
// of SQLType for those; ok is false for any other type.
func DTypeOf(t Type) (d DType, ok bool) {
	switch t.Kind {
	case Bool:
		return DTBool, true
	case Int2:
		return DTInt16, true
	case Int4:
		return DTInt32, true
	case Int8:
		return DTInt64, true
	case Float4:
		return DTFloat32, true
	case Float8:
		return DTFloat64, true
	}
	return 0, false
}

// SQLType returns the scalar SQL type of one element as clients see it.
func (d DType) SQLType() Type {
	switch d {
	case DTBool:
		return TypBool
	case DTInt8, DTUint8, DTInt16:
		return TypInt2
	case DTInt32:
		return TypInt4
	case DTInt64:
		return TypInt8
	case DTFloat16, DTBFloat16, DTFloat32:
		return TypFloat4
	default:
		return TypFloat8
	}
}

// ArrayOID returns the PostgreSQL array type OID tensors of d are sent as.
func (d DType) ArrayOID() uint32 {
	switch d.SQLType().Kind {
	case Bool:
		return OIDBoolArray
	case Int2:
		return OIDInt2Array
	case Int4:
		return OIDInt4Array
	case Int8:
		return OIDInt8Array
	case Float4:
		return OIDFloat4Arr
	}
	return OIDFloat8Arr
}

// MinMax returns the integer range of an integer dtype.
func (d DType) MinMax() (lo, hi int64) {
	switch d {
	case DTBool:
		return 0, 1
	case DTInt8:
		return -128, 127
	case DTUint8:
		return 0, 255
	case DTInt16:
		return -32768, 32767
	case DTInt32:
		return -2147483648, 2147483647
	}
	return -9223372036854775808, 9223372036854775807
}
