// Package types is the value and type system every layer shares: SQL types
// with their PostgreSQL OIDs, tensor dtypes and shapes, and the typed column
// vectors (Vec, Batch) that operators, storage and the wire exchange.
package types

import (
	"strconv"
	"strings"
)

// Kind is the logical SQL type of a value.
type Kind uint8

// Kinds. Unknown is the type of an untyped literal or NULL before binding.
const (
	Unknown Kind = iota + 1
	Bool
	Int2
	Int4
	Int8
	Float4
	Float8
	Text
	Varchar
	Bytea
	JSON
	JSONB
	Vector
	Tensor
	// Oid and the reg* types are PostgreSQL's object identifiers, held as
	// integers; a reg* value prints as the object's name (the binder turns
	// it into text through the catalog).
	Oid
	RegClass
	RegType
	RegNamespace
	RegProc
	// Name is PostgreSQL's 63-byte identifier type; Char is "char", the
	// one-byte type of catalog codes such as relkind. Both hold text.
	Name
	Char
	// Void is the result type of functions that return nothing
	// (pg_sleep); its only text form is empty.
	Void
	// HalfVec is pgvector's halfvec: a vector of IEEE half-precision
	// elements, held as little-endian binary16. (Kinds are stored in
	// table descriptors: new ones go last.)
	HalfVec
	// UUID is held in its canonical text form (36 bytes, lower-case hex
	// and hyphens), whose byte order is the order of the 16 bytes.
	UUID
	// Date, Timestamp and TimestampTZ are held as PostgreSQL holds them
	// (datetime.go): days or microseconds since 2000-01-01, in Ints.
	Date
	Timestamp
	TimestampTZ
	// Interval is held in 16 bytes (interval.go): months, days and
	// microseconds.
	Interval
	// Bpchar is character(n): held padded with spaces to n characters
	// (Width), as PostgreSQL holds it; its cast to text drops the
	// trailing spaces.
	Bpchar
	// Numeric is PostgreSQL's exact numeric (numeric.go), held in Bytes;
	// Width is its declared precision (0: unconstrained) and Scale its
	// declared scale.
	Numeric
)

// Phys is how a Kind is held in a Vec.
type Phys uint8

// Physical layouts.
const (
	PhysBool Phys = iota + 1
	PhysInt
	PhysFloat
	PhysBytes
)

// Type is a complete SQL type: a Kind plus its modifiers.
type Type struct {
	Kind Kind
	// Width is the varchar length limit or the vector dimension; 0 means unbounded.
	Width int
	// DType is the element type of a Tensor.
	DType DType
	// Shape holds a Tensor's dimensions; Ragged marks a dynamic one.
	Shape []int
	// Scale is a numeric's declared scale (with Width its precision).
	Scale int `json:",omitempty"`
}

// Ragged marks a tensor dimension whose size varies by row.
const Ragged = -1

// Common types.
var (
	TypUnknown = Type{Kind: Unknown}
	TypBool    = Type{Kind: Bool}
	TypInt2    = Type{Kind: Int2}
	TypInt4    = Type{Kind: Int4}
	TypInt8    = Type{Kind: Int8}
	TypFloat4  = Type{Kind: Float4}
	TypFloat8  = Type{Kind: Float8}
	TypText    = Type{Kind: Text}
	TypBytea   = Type{Kind: Bytea}
	TypJSON    = Type{Kind: JSON}
	TypJSONB   = Type{Kind: JSONB}
	TypVoid    = Type{Kind: Void}
	// TypNumeric is unconstrained numeric.
	TypNumeric = Type{Kind: Numeric}
)

// VectorOf returns vector(dim).
func VectorOf(dim int) Type { return Type{Kind: Vector, Width: dim} }

// HalfVecOf returns halfvec(dim).
func HalfVecOf(dim int) Type { return Type{Kind: HalfVec, Width: dim} }

// IsVector reports whether t is vector or halfvec.
func (t Type) IsVector() bool { return t.Kind == Vector || t.Kind == HalfVec }

// VectorElemSize is the bytes per element of a vector or halfvec value.
func (t Type) VectorElemSize() int {
	if t.Kind == HalfVec {
		return 2
	}
	return 4
}

// TensorOf returns a tensor type with the given dtype and shape.
func TensorOf(dt DType, shape ...int) Type { return Type{Kind: Tensor, DType: dt, Shape: shape} }

// Phys returns the physical layout of t.
func (t Type) Phys() Phys {
	switch t.Kind {
	case Bool:
		return PhysBool
	case Int2, Int4, Int8, Oid, RegClass, RegType, RegNamespace, RegProc, Date, Timestamp, TimestampTZ:
		return PhysInt
	case Float4, Float8:
		return PhysFloat
	default:
		return PhysBytes
	}
}

// Equal reports whether t and u are the same type, modifiers included.
func (t Type) Equal(u Type) bool {
	if t.Kind != u.Kind || t.Width != u.Width || t.Scale != u.Scale || t.DType != u.DType || len(t.Shape) != len(u.Shape) {
		return false
	}
	for i := range t.Shape {
		if t.Shape[i] != u.Shape[i] {
			return false
		}
	}
	return true
}

// IsNumeric reports whether t is of the numeric category: an integer,
// floating-point or numeric scalar.
func (t Type) IsNumeric() bool {
	switch t.Kind {
	case Int2, Int4, Int8, Float4, Float8, Numeric, Oid, RegClass, RegType, RegNamespace, RegProc:
		return true
	}
	return false
}

// IsInteger reports whether t is an integer scalar.
func (t Type) IsInteger() bool {
	return t.Kind == Int2 || t.Kind == Int4 || t.Kind == Int8 || t.IsOID()
}

// IsOID reports whether t is oid or one of the reg* types.
func (t Type) IsOID() bool {
	switch t.Kind {
	case Oid, RegClass, RegType, RegNamespace, RegProc:
		return true
	}
	return false
}

// IsRegType reports whether t is one of the reg* types, whose values print
// as names.
func (t Type) IsRegType() bool { return t.IsOID() && t.Kind != Oid }

// IsTextual reports whether t is text or varchar.
func (t Type) IsTextual() bool {
	return t.Kind == Text || t.Kind == Varchar || t.Kind == Name || t.Kind == Char || t.Kind == Bpchar
}

// Ragged reports whether any tensor dimension is dynamic.
func (t Type) Ragged() bool {
	for _, d := range t.Shape {
		if d == Ragged {
			return true
		}
	}
	return false
}

// FixedElems returns the element count of a fixed-shape tensor, or -1 if ragged.
func (t Type) FixedElems() int {
	n := 1
	for _, d := range t.Shape {
		if d == Ragged {
			return -1
		}
		n *= d
	}
	return n
}

// ElemType returns the SQL scalar type of one tensor element as clients see
// it (uint8 → int2, float16 → float4, ...), or float4 for a vector.
func (t Type) ElemType() Type {
	if t.IsVector() {
		return TypFloat4
	}
	return t.DType.SQLType()
}

// String returns the type as SQL spells it (format_type style).
func (t Type) String() string {
	switch t.Kind {
	case Unknown:
		return "unknown"
	case Bool:
		return "boolean"
	case Int2:
		return "smallint"
	case Int4:
		return "integer"
	case Int8:
		return "bigint"
	case Float4:
		return "real"
	case Float8:
		return "double precision"
	case Text:
		return "text"
	case Varchar:
		if t.Width > 0 {
			return "character varying(" + strconv.Itoa(t.Width) + ")"
		}
		return "character varying"
	case Bytea:
		return "bytea"
	case JSON:
		return "json"
	case JSONB:
		return "jsonb"
	case UUID:
		return "uuid"
	case Date:
		return "date"
	case Timestamp:
		return "timestamp without time zone"
	case TimestampTZ:
		return "timestamp with time zone"
	case Interval:
		return "interval"
	case Numeric:
		if t.Width > 0 {
			return "numeric(" + strconv.Itoa(t.Width) + "," + strconv.Itoa(t.Scale) + ")"
		}
		return "numeric"
	case Bpchar:
		if t.Width > 0 {
			return "character(" + strconv.Itoa(t.Width) + ")"
		}
		return "bpchar"
	case Void:
		return "void"
	case Oid:
		return "oid"
	case RegClass:
		return "regclass"
	case RegType:
		return "regtype"
	case RegNamespace:
		return "regnamespace"
	case RegProc:
		return "regproc"
	case Name:
		return "name"
	case Char:
		return "\"char\""
	case Vector:
		if t.Width > 0 {
			return "vector(" + strconv.Itoa(t.Width) + ")"
		}
		return "vector"
	case HalfVec:
		if t.Width > 0 {
			return "halfvec(" + strconv.Itoa(t.Width) + ")"
		}
		return "halfvec"
	case Tensor:
		var b strings.Builder
		b.WriteString(t.DType.String())
		for _, d := range t.Shape {
			if d == Ragged {
				b.WriteString("[]")
			} else {
				b.WriteString("[" + strconv.Itoa(d) + "]")
			}
		}
		return b.String()
	}
	return "kind(" + strconv.Itoa(int(t.Kind)) + ")"
}

// PostgreSQL type OIDs.
const (
	OIDBool        uint32 = 16
	OIDBytea       uint32 = 17
	OIDInt8        uint32 = 20
	OIDInt2        uint32 = 21
	OIDInt4        uint32 = 23
	OIDText        uint32 = 25
	OIDJSON        uint32 = 114
	OIDFloat4      uint32 = 700
	OIDFloat8      uint32 = 701
	OIDUnknown     uint32 = 705
	OIDVoid        uint32 = 2278
	OIDBoolArray   uint32 = 1000
	OIDInt2Array   uint32 = 1005
	OIDInt4Array   uint32 = 1007
	OIDTextArray   uint32 = 1009
	OIDInt8Array   uint32 = 1016
	OIDFloat4Arr   uint32 = 1021
	OIDFloat8Arr   uint32 = 1022
	OIDVarchar     uint32 = 1043
	OIDJSONB       uint32 = 3802
	OIDUUID        uint32 = 2950
	OIDDate        uint32 = 1082
	OIDTimestamp   uint32 = 1114
	OIDTimestampTZ uint32 = 1184
	OIDInterval    uint32 = 1186
	OIDBpchar      uint32 = 1042
	OIDNumeric     uint32 = 1700
	OIDChar        uint32 = 18
	OIDName        uint32 = 19
	OIDRegProc     uint32 = 24
	OIDOid         uint32 = 26
	OIDRegClass    uint32 = 2205
	OIDRegType     uint32 = 2206
	OIDRegNsp      uint32 = 4089
	// OIDVector is deeplaked's fixed OID for pgvector's vector type (pgvector
	// assigns one at CREATE EXTENSION time; clients look it up by name).
	OIDVector uint32 = 16385
	// OIDHalfVec is deeplaked's fixed OID for pgvector's halfvec type.
	OIDHalfVec uint32 = 16390
)

// OID returns the PostgreSQL type OID clients see for t.
func (t Type) OID() uint32 {
	switch t.Kind {
	case Bool:
		return OIDBool
	case Int2:
		return OIDInt2
	case Int4:
		return OIDInt4
	case Int8:
		return OIDInt8
	case Float4:
		return OIDFloat4
	case Float8:
		return OIDFloat8
	case Text:
		return OIDText
	case Varchar:
		return OIDVarchar
	case Bytea:
		return OIDBytea
	case JSON:
		return OIDJSON
	case JSONB:
		return OIDJSONB
	case UUID:
		return OIDUUID
	case Date:
		return OIDDate
	case Timestamp:
		return OIDTimestamp
	case TimestampTZ:
		return OIDTimestampTZ
	case Interval:
		return OIDInterval
	case Bpchar:
		return OIDBpchar
	case Numeric:
		return OIDNumeric
	case Oid:
		return OIDOid
	case RegClass:
		return OIDRegClass
	case RegType:
		return OIDRegType
	case RegNamespace:
		return OIDRegNsp
	case RegProc:
		return OIDRegProc
	case Name:
		return OIDName
	case Char:
		return OIDChar
	case Vector:
		return OIDVector
	case HalfVec:
		return OIDHalfVec
	case Tensor:
		return t.DType.ArrayOID()
	case Void:
		return OIDVoid
	}
	return OIDText // unknown literals are sent as text, as PostgreSQL does
}

// Size returns the typlen clients see in RowDescription (-1 for varlena).
func (t Type) Size() int16 {
	switch t.Kind {
	case Bool:
		return 1
	case Int2:
		return 2
	case Int4, Float4, Oid, RegClass, RegType, RegNamespace, RegProc, Void:
		return 4
	case Char:
		return 1
	case Name:
		return 64
	case Int8, Float8, Timestamp, TimestampTZ:
		return 8
	case Date:
		return 4
	case UUID, Interval:
		return 16
	}
	return -1
}

// Typmod returns the type modifier clients see in RowDescription.
func (t Type) Typmod() int32 {
	switch t.Kind {
	case Varchar:
		if t.Width > 0 {
			return int32(t.Width) + 4
		}
	case Vector, HalfVec:
		if t.Width > 0 {
			return int32(t.Width)
		}
	case Numeric:
		if t.Width > 0 {
			return int32(t.Width<<16|t.Scale&0x7ff) + 4
		}
	}
	return -1
}
