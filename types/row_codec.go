package types

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The row encoding (storage's buffered rows, a sort's runs on disk):
//
//	null bitmap   ceil(ncols/8) bytes, bit c set when column c is NULL
//	values        for each non-NULL column in order:
//	              bool   1 byte
//	              int    zigzag varint
//	              float  8 bytes little-endian IEEE 754
//	              bytes  uvarint length, then the bytes
//
// The reader supplies the column count and layouts.

// AppendRow appends the encoding of row i of b to dst.
func AppendRow(dst []byte, b *Batch, i int) []byte {
	n := len(b.Cols)
	start := len(dst)
	for k := 0; k < (n+7)/8; k++ {
		dst = append(dst, 0)
	}
	for c, v := range b.Cols {
		if v.Nulls[i] {
			dst[start+c/8] |= 1 << (c % 8)
			continue
		}
		switch v.Type.Phys() {
		case PhysBool:
			if v.Bools[i] {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		case PhysInt:
			dst = binary.AppendVarint(dst, v.Ints[i])
		case PhysFloat:
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v.Floats[i]))
		default:
			val := v.Bytes.Get(i)
			dst = binary.AppendUvarint(dst, uint64(len(val)))
			dst = append(dst, val...)
		}
	}
	return dst
}

// RowDecoder decodes rows of given column layouts into a chosen subset of
// the columns.
type RowDecoder struct {
	phys []Phys
	// out[c] is the output Vec of column c, or nil when not read.
	out []*Vec
}

// NewRowDecoder returns a decoder of rows of columns of types ts.
func NewRowDecoder(ts []Type) *RowDecoder {
	d := &RowDecoder{phys: make([]Phys, len(ts)), out: make([]*Vec, len(ts))}
	for c, t := range ts {
		d.phys[c] = t.Phys()
	}
	return d
}

// Bind points the decoder at the Vecs of b, which hold columns cols (nil:
// every column, in order).
func (d *RowDecoder) Bind(cols []int, b *Batch) {
	clear(d.out)
	if cols == nil {
		copy(d.out, b.Cols)
		return
	}
	for j, c := range cols {
		d.out[c] = b.Cols[j]
	}
}

// Decode appends the row in data to the bound Vecs. A malformed row is an
// error that says what is wrong with it.
func (d *RowDecoder) Decode(data []byte) error {
	n := len(d.phys)
	nb := (n + 7) / 8
	if len(data) < nb {
		return fmt.Errorf("%d bytes, want at least %d", len(data), nb)
	}
	bitmap, p := data[:nb], nb
	for c, ph := range d.phys {
		out := d.out[c]
		if bitmap[c/8]&(1<<(c%8)) != 0 {
			if out != nil {
				out.AppendNull()
			}
			continue
		}
		switch ph {
		case PhysBool:
			if p >= len(data) {
				return fmt.Errorf("truncated bool in column %d", c)
			}
			if out != nil {
				out.AppendBool(data[p] != 0)
			}
			p++
		case PhysInt:
			x, w := binary.Varint(data[p:])
			if w <= 0 {
				return fmt.Errorf("bad integer in column %d", c)
			}
			if out != nil {
				out.AppendInt(x)
			}
			p += w
		case PhysFloat:
			if len(data)-p < 8 {
				return fmt.Errorf("truncated float in column %d", c)
			}
			if out != nil {
				out.AppendFloat(math.Float64frombits(binary.LittleEndian.Uint64(data[p:])))
			}
			p += 8
		default:
			l, w := binary.Uvarint(data[p:])
			if w <= 0 || l > uint64(len(data)-p-w) {
				return fmt.Errorf("bad length in column %d", c)
			}
			p += w
			if out != nil {
				out.AppendBytes(data[p : p+int(l)])
			}
			p += int(l)
		}
	}
	if p != len(data) {
		return fmt.Errorf("%d trailing bytes", len(data)-p)
	}
	return nil
}
