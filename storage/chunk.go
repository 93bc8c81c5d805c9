package storage

import (
	"encoding/binary"
	"hash/crc32"
	"math"

	"github.com/deeplaked/deeplaked/types"
)

// Chunk object format, version 0 (all integers little-endian; see
// docs/storage.md):
//
//	header     magic "DLKC", version u16, flags u16, row count u32,
//	           column count u32, min row id u64, max row id u64   (32 bytes)
//	directory  per column: offset u64, length u64, phys u8, width u8, 6 zero bytes
//	row ids    row count × u64, strictly increasing
//	columns    each at its directory offset (8-aligned):
//	           null bitmap ceil(rows/8) bytes, zero-padded to 8, then values:
//	           bool   bitmap ceil(rows/8) bytes
//	           int    rows × width bytes (2, 4 or 8; two's complement)
//	           float  rows × width bytes (4: float32, 8: float64)
//	           bytes  (rows+1) × u32 offsets from 0, then the value bytes
//	footer     CRC32-C of every preceding byte, u32
//
// NULL slots hold zero values. Fixed-width columns are contiguous arrays a
// reader can hand out as they are.
const (
	chunkMagic      = "DLKC"
	chunkVersion    = 0
	chunkHeaderLen  = 32
	chunkDirEntLen  = 24
	chunkFooterLen  = 4
	bitmapAlignment = 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// colWidth returns the stored width of a fixed-width column value, or 0.
func colWidth(t types.Type) int {
	switch t.Kind {
	case types.Int2:
		return 2
	case types.Int4, types.Float4:
		return 4
	case types.Int8, types.Float8:
		return 8
	}
	return 0
}

func pad8(b []byte) []byte {
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return b
}

func appendBitmap(dst []byte, bits []bool) []byte {
	start := len(dst)
	for k := 0; k < (len(bits)+7)/8; k++ {
		dst = append(dst, 0)
	}
	for i, b := range bits {
		if b {
			dst[start+i/8] |= 1 << (i % 8)
		}
	}
	return dst
}

// appendChunk appends a version-0 chunk holding rowIDs and cols (one Vec
// per table column, all of len(rowIDs) rows) to dst.
func appendChunk(dst []byte, rowIDs []uint64, cols []*types.Vec) []byte {
	n := len(rowIDs)
	base := len(dst)
	dst = append(dst, chunkMagic...)
	dst = binary.LittleEndian.AppendUint16(dst, chunkVersion)
	dst = binary.LittleEndian.AppendUint16(dst, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(cols)))
	var lo, hi uint64
	if n > 0 {
		lo, hi = rowIDs[0], rowIDs[n-1]
	}
	dst = binary.LittleEndian.AppendUint64(dst, lo)
	dst = binary.LittleEndian.AppendUint64(dst, hi)
	dir := len(dst)
	dst = append(dst, make([]byte, chunkDirEntLen*len(cols))...)
	for _, id := range rowIDs {
		dst = binary.LittleEndian.AppendUint64(dst, id)
	}
	for c, v := range cols {
		start := len(dst)
		dst = pad8(appendBitmap(dst, v.Nulls))
		w := colWidth(v.Type)
		switch v.Type.Phys() {
		case types.PhysBool:
			dst = appendBitmap(dst, v.Bools)
		case types.PhysInt:
			for _, x := range v.Ints {
				switch w {
				case 2:
					dst = binary.LittleEndian.AppendUint16(dst, uint16(x))
				case 4:
					dst = binary.LittleEndian.AppendUint32(dst, uint32(x))
				default:
					dst = binary.LittleEndian.AppendUint64(dst, uint64(x))
				}
			}
		case types.PhysFloat:
			for _, f := range v.Floats {
				if w == 4 {
					dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(f)))
				} else {
					dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
				}
			}
		default:
			o0 := v.Bytes.Offsets[0]
			for _, o := range v.Bytes.Offsets[:n+1] {
				dst = binary.LittleEndian.AppendUint32(dst, uint32(o-o0))
			}
			dst = append(dst, v.Bytes.Data[o0:v.Bytes.Offsets[n]]...)
		}
		e := dst[dir+c*chunkDirEntLen:]
		binary.LittleEndian.PutUint64(e, uint64(start-base))
		binary.LittleEndian.PutUint64(e[8:], uint64(len(dst)-start))
		e[16] = byte(v.Type.Phys())
		e[17] = byte(w)
		dst = pad8(dst)
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[base:], castagnoli))
}

// chunk is a decoded chunk object. It is immutable and shared by readers.
type chunk struct {
	rowIDs []uint64
	cols   []*types.Vec
}

// decodeChunk verifies and decodes a chunk object written for table t.
// Every inconsistency is an error marked ErrCorruption.
func decodeChunk(data []byte, t *TableDesc) (*chunk, error) {
	if len(data) < chunkHeaderLen+chunkFooterLen {
		return nil, corruptionf("chunk: %d bytes is too short", len(data))
	}
	body := data[:len(data)-chunkFooterLen]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(data[len(body):]); got != want {
		return nil, corruptionf("chunk: checksum mismatch (computed %08x, stored %08x)", got, want)
	}
	if string(body[:4]) != chunkMagic {
		return nil, corruptionf("chunk: bad magic %q", body[:4])
	}
	if v := binary.LittleEndian.Uint16(body[4:]); v != chunkVersion {
		return nil, corruptionf("chunk: unknown format version %d", v)
	}
	n := int(binary.LittleEndian.Uint32(body[8:]))
	ncols := int(binary.LittleEndian.Uint32(body[12:]))
	lo, hi := binary.LittleEndian.Uint64(body[16:]), binary.LittleEndian.Uint64(body[24:])
	if ncols != len(t.Columns) {
		return nil, corruptionf("chunk: %d columns, table %q has %d", ncols, t.Name, len(t.Columns))
	}
	idsAt := chunkHeaderLen + ncols*chunkDirEntLen
	if n < 0 || idsAt > len(body) || n > (len(body)-idsAt)/8 {
		return nil, corruptionf("chunk: row count %d does not fit in %d bytes", n, len(body))
	}
	ck := &chunk{rowIDs: make([]uint64, n), cols: make([]*types.Vec, ncols)}
	for i := range ck.rowIDs {
		id := binary.LittleEndian.Uint64(body[idsAt+8*i:])
		if i > 0 && id <= ck.rowIDs[i-1] {
			return nil, corruptionf("chunk: row ids out of order at row %d", i)
		}
		ck.rowIDs[i] = id
	}
	if n > 0 && (ck.rowIDs[0] != lo || ck.rowIDs[n-1] != hi) {
		return nil, corruptionf("chunk: row id range [%d, %d] disagrees with header [%d, %d]", ck.rowIDs[0], ck.rowIDs[n-1], lo, hi)
	}
	for c := range ncols {
		e := body[chunkHeaderLen+c*chunkDirEntLen:]
		off, length := binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint64(e[8:])
		if off > uint64(len(body)) || length > uint64(len(body))-off {
			return nil, corruptionf("chunk: column %d section [%d, +%d) outside the object", c, off, length)
		}
		typ := t.Columns[c].Type
		if types.Phys(e[16]) != typ.Phys() || int(e[17]) != colWidth(typ) {
			return nil, corruptionf("chunk: column %d layout %d/%d does not match its type %s", c, e[16], e[17], typ)
		}
		v, err := decodeColumn(body[off:off+length], typ, n)
		if err != nil {
			return nil, corruptionf("chunk: column %d: %v", c, err)
		}
		ck.cols[c] = v
	}
	return ck, nil
}

type errString string

func (e errString) Error() string { return string(e) }

const errShort = errString("section too short")

func decodeColumn(sec []byte, typ types.Type, n int) (*types.Vec, error) {
	bm := (n + 7) / 8
	nullLen := (bm + bitmapAlignment - 1) / bitmapAlignment * bitmapAlignment
	if len(sec) < nullLen {
		return nil, errShort
	}
	v := types.NewVec(typ, n)
	v.Nulls = v.Nulls[:n]
	for i := range n {
		v.Nulls[i] = sec[i/8]&(1<<(i%8)) != 0
	}
	vals := sec[nullLen:]
	switch typ.Phys() {
	case types.PhysBool:
		if len(vals) != bm {
			return nil, errShort
		}
		v.Bools = v.Bools[:n]
		for i := range n {
			v.Bools[i] = vals[i/8]&(1<<(i%8)) != 0
		}
	case types.PhysInt:
		w := colWidth(typ)
		if len(vals) != n*w {
			return nil, errShort
		}
		v.Ints = v.Ints[:n]
		for i := range n {
			switch w {
			case 2:
				v.Ints[i] = int64(int16(binary.LittleEndian.Uint16(vals[2*i:])))
			case 4:
				v.Ints[i] = int64(int32(binary.LittleEndian.Uint32(vals[4*i:])))
			default:
				v.Ints[i] = int64(binary.LittleEndian.Uint64(vals[8*i:]))
			}
		}
	case types.PhysFloat:
		w := colWidth(typ)
		if len(vals) != n*w {
			return nil, errShort
		}
		v.Floats = v.Floats[:n]
		for i := range n {
			if w == 4 {
				v.Floats[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(vals[4*i:])))
			} else {
				v.Floats[i] = math.Float64frombits(binary.LittleEndian.Uint64(vals[8*i:]))
			}
		}
	default:
		if len(vals) < 4*(n+1) {
			return nil, errShort
		}
		data := vals[4*(n+1):]
		if len(data) > math.MaxInt32 {
			return nil, errString("value bytes too long")
		}
		v.Bytes.Offsets = v.Bytes.Offsets[:n+1]
		prev := uint32(0)
		for i := range n + 1 {
			o := binary.LittleEndian.Uint32(vals[4*i:])
			if o < prev || o > uint32(len(data)) || (i == 0 && o != 0) {
				return nil, errString("bad value offsets")
			}
			v.Bytes.Offsets[i] = int32(o)
			prev = o
		}
		if int(prev) != len(data) {
			return nil, errString("value bytes length disagrees with offsets")
		}
		v.Bytes.Data = append(v.Bytes.Data[:0], data...)
	}
	return v, nil
}
