package stream

import "fmt"

// Len is the number of rows.
func (c *Column) Len() int { return c.rows }

// Shape is the column's shape, [rows, dims...]; -1 marks a dimension that
// varies by row (see RowShape).
func (c *Column) Shape() []int { return c.shape }

// IsNull reports whether row i is NULL. A NULL row of a fixed column holds
// zeros; of a ragged or bytes column, an empty value.
func (c *Column) IsNull(i int) bool {
	if c.validity == nil {
		return false
	}
	return c.validity[i>>3]&(1<<(i&7)) == 0
}

// HasNulls reports whether the batch has a NULL in this column.
func (c *Column) HasNulls() bool { return c.validity != nil }

// RawValues returns the values buffer as bytes.
func (c *Column) RawValues() []byte { return c.values }

func (c *Column) elems(d DType) []byte {
	if c.Kind == BytesKind || c.DType != d {
		panic(fmt.Sprintf("stream: column %q is %s, not %s", c.Name, c.describe(), d))
	}
	return c.values
}

func (c *Column) describe() string {
	if c.Kind == BytesKind {
		return "a bytes column"
	}
	return c.DType.String()
}

// Bool returns a bool column's elements. It panics on another dtype, as do
// the other typed accessors.
func (c *Column) Bool() []bool { return view[bool](c.elems(Bool)) }

// Int8 returns an int8 column's elements.
func (c *Column) Int8() []int8 { return view[int8](c.elems(Int8)) }

// Uint8 returns a uint8 column's elements.
func (c *Column) Uint8() []uint8 { return c.elems(Uint8) }

// Int16 returns an int16 column's elements.
func (c *Column) Int16() []int16 { return view[int16](c.elems(Int16)) }

// Int32 returns an int32 column's elements.
func (c *Column) Int32() []int32 { return view[int32](c.elems(Int32)) }

// Int64 returns an int64 column's elements.
func (c *Column) Int64() []int64 { return view[int64](c.elems(Int64)) }

// Float32 returns a float32 column's elements (rows × prod(dims) for a fixed
// column, row-major).
func (c *Column) Float32() []float32 { return view[float32](c.elems(Float32)) }

// Float64 returns a float64 column's elements.
func (c *Column) Float64() []float64 { return view[float64](c.elems(Float64)) }

// Bits16 returns a float16 or bfloat16 column's elements as raw bits.
func (c *Column) Bits16() []uint16 {
	if c.Kind == BytesKind || (c.DType != Float16 && c.DType != BFloat16) {
		panic(fmt.Sprintf("stream: column %q is %s, not float16 or bfloat16", c.Name, c.describe()))
	}
	return view[uint16](c.values)
}

// Row returns the element range of row i of a ragged column: its elements are
// c.Float32()[lo:hi] (or the accessor of its dtype), its shape RowShape(i).
// For a bytes column it is the byte range of Bytes(i).
func (c *Column) Row(i int) (lo, hi int) {
	if c.offsets == nil {
		panic(fmt.Sprintf("stream: column %q is fixed; it has no row offsets", c.Name))
	}
	return int(c.offsets[i]), int(c.offsets[i+1])
}

// RowShape returns the shape of row i of a ragged column.
func (c *Column) RowShape(i int) []uint32 {
	if c.Kind != Ragged {
		panic(fmt.Sprintf("stream: column %q is not ragged", c.Name))
	}
	n := len(c.Dims)
	return c.shapes[i*n : (i+1)*n]
}

// Bytes returns row i of a bytes column.
func (c *Column) Bytes(i int) []byte {
	if c.Kind != BytesKind {
		panic(fmt.Sprintf("stream: column %q is %s, not a bytes column", c.Name, c.describe()))
	}
	return c.values[c.offsets[i]:c.offsets[i+1]]
}

// String returns row i of a bytes column as a string (a copy).
func (c *Column) String(i int) string { return string(c.Bytes(i)) }
