package storage

import (
	"encoding/binary"
	"math"

	"github.com/deeplaked/deeplaked/types"
)

// Buffered row encoding, the value of a t<id>r<row id> key:
//
//	null bitmap   ceil(ncols/8) bytes, bit c set when column c is NULL
//	values        for each non-NULL column in order:
//	              bool   1 byte
//	              int    zigzag uvarint
//	              float  8 bytes little-endian IEEE 754
//	              bytes  uvarint length, then the bytes
//
// The table descriptor supplies the column count and layouts; tables have
// no ALTER, so the descriptor that wrote a row also reads it.

// appendRow appends the encoding of row i of b to dst.
func appendRow(dst []byte, b *types.Batch, i int) []byte {
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
		case types.PhysBool:
			if v.Bools[i] {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		case types.PhysInt:
			dst = binary.AppendVarint(dst, v.Ints[i])
		case types.PhysFloat:
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v.Floats[i]))
		default:
			val := v.Bytes.Get(i)
			dst = binary.AppendUvarint(dst, uint64(len(val)))
			dst = append(dst, val...)
		}
	}
	return dst
}

// rowDecoder decodes buffered rows of one table into a chosen subset of
// its columns.
type rowDecoder struct {
	phys []types.Phys
	// out[c] is the output Vec of table column c, or nil when not read.
	out []*types.Vec
}

func newRowDecoder(t *TableDesc) *rowDecoder {
	d := &rowDecoder{phys: make([]types.Phys, len(t.Columns)), out: make([]*types.Vec, len(t.Columns))}
	for c, col := range t.Columns {
		d.phys[c] = col.Type.Phys()
	}
	return d
}

// bind points the decoder at the Vecs of b, which hold columns cols.
func (d *rowDecoder) bind(cols []int, b *types.Batch) {
	clear(d.out)
	for j, c := range cols {
		d.out[c] = b.Cols[j]
	}
}

// decode appends the row in data to the bound Vecs.
func (d *rowDecoder) decode(data []byte) error {
	n := len(d.phys)
	nb := (n + 7) / 8
	if len(data) < nb {
		return corruptionf("buffered row: %d bytes, want at least %d", len(data), nb)
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
		case types.PhysBool:
			if p >= len(data) {
				return corruptionf("buffered row: truncated bool in column %d", c)
			}
			if out != nil {
				out.AppendBool(data[p] != 0)
			}
			p++
		case types.PhysInt:
			x, w := binary.Varint(data[p:])
			if w <= 0 {
				return corruptionf("buffered row: bad integer in column %d", c)
			}
			if out != nil {
				out.AppendInt(x)
			}
			p += w
		case types.PhysFloat:
			if len(data)-p < 8 {
				return corruptionf("buffered row: truncated float in column %d", c)
			}
			if out != nil {
				out.AppendFloat(math.Float64frombits(binary.LittleEndian.Uint64(data[p:])))
			}
			p += 8
		default:
			l, w := binary.Uvarint(data[p:])
			if w <= 0 || l > uint64(len(data)-p-w) {
				return corruptionf("buffered row: bad length in column %d", c)
			}
			p += w
			if out != nil {
				out.AppendBytes(data[p : p+int(l)])
			}
			p += int(l)
		}
	}
	if p != len(data) {
		return corruptionf("buffered row: %d trailing bytes", len(data)-p)
	}
	return nil
}
