package storage

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"strings"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// Column chunk object format, version 1: one immutable object holds a run
// of consecutive rows of one column. See docs/storage-format.md for the
// byte layout; in short:
//
//	header  56 fixed bytes (magic, version, flags, type, lengths), the
//	        tensor shape, one CRC32-C per block of stored data, the null
//	        bitmap, zero padding to a multiple of 8, header CRC32-C
//	data    values [pad offsets [pad shapes]], compressed as one unit or not
const (
	colChunkMagic   = "DLKC" // shared with the version-0 row-group chunks
	colChunkVersion = 1
	// colChunkFixedLen is the fixed part of the header, up to the shape.
	colChunkFixedLen = 56
	// colChunkHeaderLen is how many leading bytes of an object a reader
	// fetches to plan a byte-range read. It holds the whole header of
	// most chunks; colChunkHeaderSize says when it does not.
	colChunkHeaderLen = 4096
	// colChunkBlock is the checksum block length aimed at.
	colChunkBlock = 64 << 10
	// colChunkRowBlock is the one aimed at in an uncompressed chunk of
	// fixed-width values, which is read a row at a time by byte ranges
	// (an exact shuffle, a lookup by key): a block is a whole number of
	// rows, one row for rows over 8 kB, and a row read reads its
	// block. 64 kB blocks made a 12 kB image read 5 times its bytes.
	colChunkRowBlock = 16 << 10
	// maxColChunkRows and maxColChunkValues bound one chunk.
	maxColChunkRows   = math.MaxInt32
	maxColChunkValues = math.MaxInt32
	// maxColChunkRaw bounds the raw data: values, offsets and shapes of
	// up to 255-dimensional tensors.
	maxColChunkRaw = maxColChunkValues + 8 + 4*(maxColChunkRows+1) + 8 + 4*255*maxColChunkRows
)

// colChunkFlagNulls marks a chunk with a null bitmap.
const colChunkFlagNulls = 1

// Compression is how the data of a column chunk is compressed. The zero
// value is not a method.
type Compression uint8

// Compression methods. Their values are the codes stored in chunk headers.
const (
	CompressionNone Compression = iota + 1
	CompressionZstd
	CompressionLZ4
	CompressionS2
)

var compressionNames = [...]string{
	CompressionNone: "none", CompressionZstd: "zstd", CompressionLZ4: "lz4", CompressionS2: "s2",
}

// ParseCompression resolves a compression method name (none, zstd, lz4,
// s2; any case).
func ParseCompression(name string) (Compression, error) {
	l := strings.ToLower(name)
	for c, n := range compressionNames {
		if n != "" && n == l {
			return Compression(c), nil
		}
	}
	return 0, pgerror.Newf(pgerror.InvalidParameterValue, "invalid compression method %q", name)
}

// String returns the method's name.
func (c Compression) String() string {
	if c.valid() {
		return compressionNames[c]
	}
	return "invalid"
}

func (c Compression) valid() bool { return c >= CompressionNone && c <= CompressionS2 }

// colLayout is how a column's values are arranged in a chunk.
type colLayout uint8

const (
	layoutFixed  colLayout = iota + 1 // n × width bytes
	layoutVar                         // values + offsets
	layoutRagged                      // elements + offsets + shapes
)

// colShape is the physical description of a column type that a chunk
// header records and a reader must match.
type colShape struct {
	kind   byte
	layout colLayout
	dtype  byte
	ndims  int
	width  int // bytes per row for layoutFixed
	elem   int // tensor element size
}

// kindCode returns the format's code for a kind, 0 if it has none.
func kindCode(k types.Kind) byte {
	switch k {
	case types.Bool:
		return 1
	case types.Int2:
		return 2
	case types.Int4:
		return 3
	case types.Int8:
		return 4
	case types.Float4:
		return 5
	case types.Float8:
		return 6
	case types.Text:
		return 7
	case types.Varchar:
		return 8
	case types.Bytea:
		return 9
	case types.JSON:
		return 10
	case types.JSONB:
		return 11
	case types.Vector:
		return 12
	case types.Tensor:
		return 13
	case types.HalfVec:
		return 14
	case types.UUID:
		return 15
	case types.Date:
		return 16
	case types.Timestamp:
		return 17
	case types.TimestampTZ:
		return 18
	case types.Interval:
		return 19
	case types.Bpchar:
		return 20
	case types.Numeric:
		return 21
	}
	return 0
}

// physKind is the kind whose layout a column of kind k is stored in:
// dates as int4, timestamps as int8, every other kind as itself.
func physKind(k types.Kind) types.Kind {
	switch k {
	case types.Date:
		return types.Int4
	case types.Timestamp, types.TimestampTZ:
		return types.Int8
	}
	return k
}

// dtypeCode returns the format's code for a dtype, 0 if it has none.
func dtypeCode(d types.DType) byte {
	switch d {
	case types.DTBool:
		return 1
	case types.DTInt8:
		return 2
	case types.DTUint8:
		return 3
	case types.DTInt16:
		return 4
	case types.DTInt32:
		return 5
	case types.DTInt64:
		return 6
	case types.DTFloat16:
		return 7
	case types.DTBFloat16:
		return 8
	case types.DTFloat32:
		return 9
	case types.DTFloat64:
		return 10
	}
	return 0
}

// shapeOf returns the chunk layout of type t; ok is false for types a
// chunk cannot hold.
func shapeOf(t types.Type) (s colShape, ok bool) {
	s.kind = kindCode(t.Kind)
	switch t.Kind {
	case types.Bool:
		s.layout, s.width = layoutFixed, 1
	case types.Int2:
		s.layout, s.width = layoutFixed, 2
	case types.Int4, types.Float4, types.Date:
		s.layout, s.width = layoutFixed, 4
	case types.Int8, types.Float8, types.Timestamp, types.TimestampTZ:
		s.layout, s.width = layoutFixed, 8
	case types.Text, types.Varchar, types.Bytea, types.JSON, types.JSONB, types.UUID, types.Interval, types.Bpchar, types.Numeric:
		s.layout = layoutVar
	case types.Vector, types.HalfVec:
		s.layout = layoutVar
		if t.Width > 0 {
			size := t.VectorElemSize()
			if t.Width > maxColChunkValues/size {
				return s, false
			}
			s.layout, s.width = layoutFixed, size*t.Width
		}
	case types.Tensor:
		s.dtype, s.elem, s.ndims = dtypeCode(t.DType), t.DType.Size(), len(t.Shape)
		if s.dtype == 0 || s.ndims == 0 || s.ndims > 255 {
			return s, false
		}
		s.layout = layoutRagged
		if !t.Ragged() {
			w := s.elem
			for _, d := range t.Shape {
				if d < 0 || (d > 0 && w > maxColChunkValues/d) {
					return s, false
				}
				w *= d
			}
			s.layout, s.width = layoutFixed, w
		}
	default:
		return s, false
	}
	return s, s.kind != 0
}

// colChunkHeader is a parsed chunk header. Its checksum and null bitmap
// slices alias the bytes it was parsed from, which must stay unchanged
// while it is in use.
type colChunkHeader struct {
	shape     colShape
	tshape    []int // the type's dims, for ragged shape checks
	comp      Compression
	headerLen int
	rows      int
	valuesLen int
	blockLen  int
	blocks    int
	rawLen    int
	storedLen int
	crcs      []byte // blocks × u32
	nulls     []byte // null bitmap, nil when the chunk has no NULLs
	phys      types.Phys
	kind      types.Kind
}

// Rows returns the chunk's row count.
func (h *colChunkHeader) Rows() int { return h.rows }

// Compression returns how the chunk's data is stored.
func (h *colChunkHeader) Compression() Compression { return h.comp }

// HasNulls reports whether the chunk holds any NULL.
func (h *colChunkHeader) HasNulls() bool { return h.nulls != nil }

// ObjectLen returns the length of the whole object.
func (h *colChunkHeader) ObjectLen() int64 { return int64(h.headerLen) + int64(h.storedLen) }

func (h *colChunkHeader) isNull(i int) bool {
	return h.nulls != nil && h.nulls[i>>3]&(1<<(i&7)) != 0
}

func align8(n int) int { return (n + 7) &^ 7 }

// rawLenOf returns the raw data length of a chunk.
func rawLenOf(layout colLayout, rows, valuesLen, ndims int) int {
	switch layout {
	case layoutFixed:
		return valuesLen
	case layoutVar:
		return align8(valuesLen) + 4*(rows+1)
	}
	return align8(valuesLen) + align8(4*(rows+1)) + 4*rows*ndims
}

// headerLenOf returns the header length of a chunk.
func headerLenOf(ndims, blocks, rows int, nulls bool) int {
	n := colChunkFixedLen + 4*ndims + 4*blocks
	if nulls {
		n += (rows + 7) / 8
	}
	return align8(n + 4)
}

// colChunkHeaderSize returns the header length of the chunk object that
// b, at least its first colChunkFixedLen bytes, begins.
func colChunkHeaderSize(b []byte) (int, error) {
	if len(b) < colChunkFixedLen {
		return 0, corruptionf("column chunk: %d bytes is too short for a header", len(b))
	}
	if string(b[:4]) != colChunkMagic {
		return 0, corruptionf("column chunk: bad magic %q", b[:4])
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != colChunkVersion {
		return 0, corruptionf("column chunk: format version %d, want %d", v, colChunkVersion)
	}
	n := binary.LittleEndian.Uint32(b[16:])
	if n < colChunkFixedLen+4 || n%8 != 0 || n > math.MaxInt32 {
		return 0, corruptionf("column chunk: bad header length %d", n)
	}
	return int(n), nil
}

// parseColChunkHeader verifies and parses the header at the start of b
// (at least colChunkHeaderSize bytes) of a chunk of a column of type typ.
func parseColChunkHeader(b []byte, typ types.Type) (colChunkHeader, error) {
	var h colChunkHeader
	hl, err := colChunkHeaderSize(b)
	if err != nil {
		return h, err
	}
	if len(b) < hl {
		return h, corruptionf("column chunk: header of %d bytes truncated to %d", hl, len(b))
	}
	if got, want := crc32.Checksum(b[:hl-4], crc32c), binary.LittleEndian.Uint32(b[hl-4:]); got != want {
		return h, corruptionf("column chunk: header checksum mismatch (computed %08x, stored %08x)", got, want)
	}
	want, ok := shapeOf(typ)
	if !ok {
		return h, pgerror.AssertionFailedf("storage: column chunks cannot hold type %s", typ)
	}
	flags := binary.LittleEndian.Uint16(b[6:])
	got := colShape{kind: b[8], layout: colLayout(b[9]), dtype: b[10], ndims: int(b[11]),
		width: int(binary.LittleEndian.Uint32(b[24:])), elem: want.elem}
	if got != want {
		return h, corruptionf("column chunk: stored layout (kind %d, layout %d, dtype %d, %d dims, width %d) does not match type %s",
			got.kind, got.layout, got.dtype, got.ndims, got.width, typ)
	}
	if flags&^colChunkFlagNulls != 0 || b[13]|b[14]|b[15] != 0 {
		return h, corruptionf("column chunk: unknown flags %#x", flags)
	}
	h = colChunkHeader{
		shape:     got,
		tshape:    typ.Shape,
		comp:      Compression(b[12]),
		headerLen: hl,
		rows:      int(binary.LittleEndian.Uint32(b[20:])),
		valuesLen: int(binary.LittleEndian.Uint32(b[28:])),
		blockLen:  int(binary.LittleEndian.Uint32(b[32:])),
		blocks:    int(binary.LittleEndian.Uint32(b[36:])),
		phys:      typ.Phys(),
		kind:      typ.Kind,
	}
	raw, stored := binary.LittleEndian.Uint64(b[40:]), binary.LittleEndian.Uint64(b[48:])
	switch {
	case !h.comp.valid():
		return h, corruptionf("column chunk: unknown compression %d", b[12])
	case h.rows > maxColChunkRows || h.valuesLen > maxColChunkValues:
		return h, corruptionf("column chunk: %d rows, %d value bytes exceed the format's limits", h.rows, h.valuesLen)
	case got.layout == layoutFixed && h.valuesLen != h.rows*got.width:
		return h, corruptionf("column chunk: %d value bytes for %d rows of width %d", h.valuesLen, h.rows, got.width)
	case raw != uint64(rawLenOf(got.layout, h.rows, h.valuesLen, got.ndims)):
		return h, corruptionf("column chunk: raw length %d disagrees with its sections", raw)
	case stored > maxColChunkRaw+(maxColChunkRaw>>4) || (h.comp == CompressionNone && stored != raw):
		return h, corruptionf("column chunk: stored length %d, raw length %d", stored, raw)
	case h.blockLen == 0 || h.blocks != int((stored+uint64(h.blockLen)-1)/uint64(h.blockLen)):
		return h, corruptionf("column chunk: %d blocks of %d bytes for %d stored bytes", h.blocks, h.blockLen, stored)
	case h.comp == CompressionNone && got.layout == layoutFixed && got.width > 0 && h.blockLen%got.width != 0:
		return h, corruptionf("column chunk: block length %d is not a whole number of %d-byte rows", h.blockLen, got.width)
	case hl != headerLenOf(got.ndims, h.blocks, h.rows, flags&colChunkFlagNulls != 0):
		return h, corruptionf("column chunk: header length %d disagrees with its contents", hl)
	}
	h.rawLen, h.storedLen = int(raw), int(stored)
	p := colChunkFixedLen
	for k := range got.ndims {
		d := binary.LittleEndian.Uint32(b[p+4*k:])
		if d != uint32(typ.Shape[k]) {
			return h, corruptionf("column chunk: stored dimension %d is %d, type %s", k+1, int32(d), typ)
		}
	}
	p += 4 * got.ndims
	h.crcs = b[p : p+4*h.blocks]
	p += 4 * h.blocks
	if flags&colChunkFlagNulls != 0 {
		n := (h.rows + 7) / 8
		h.nulls = b[p : p+n]
		if r := h.rows & 7; r != 0 && h.nulls[n-1]>>r != 0 {
			return h, corruptionf("column chunk: null bitmap has bits past the last row")
		}
		p += n
	}
	if !allZero(b[p : hl-4]) {
		return h, corruptionf("column chunk: nonzero header padding")
	}
	return h, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// verifyBlocks checks the stored data against the header's block CRCs.
func (h *colChunkHeader) verifyBlocks(stored []byte) error {
	for k := 0; k < h.blocks; k++ {
		blk := stored[k*h.blockLen : min(len(stored), (k+1)*h.blockLen)]
		if crc32.Checksum(blk, crc32c) != binary.LittleEndian.Uint32(h.crcs[4*k:]) {
			return corruptionf("column chunk: checksum mismatch in data block %d", k)
		}
	}
	return nil
}

// chunkVerifier checks a column chunk's checksums while the chunk is read
// (a GetInto progress function): the header once it has arrived, then
// each data block as soon as it is whole, while it is still in the CPU's
// caches.
type chunkVerifier struct {
	typ    types.Type
	h      colChunkHeader
	parsed bool
	// next is the next data block to check.
	next int
}

func (v *chunkVerifier) progress(read []byte) error {
	if !v.parsed {
		if len(read) < colChunkFixedLen {
			return nil
		}
		hl, err := colChunkHeaderSize(read)
		if err != nil {
			return err
		}
		if len(read) < hl {
			return nil
		}
		if v.h, err = parseColChunkHeader(read, v.typ); err != nil {
			return err
		}
		v.parsed = true
	}
	stored := read[v.h.headerLen:]
	for v.next < v.h.blocks {
		lo := v.next * v.h.blockLen
		hi := min(lo+v.h.blockLen, v.h.storedLen)
		if hi > len(stored) {
			break
		}
		if crc32.Checksum(stored[lo:hi], crc32c) != binary.LittleEndian.Uint32(v.h.crcs[4*v.next:]) {
			return corruptionf("column chunk: checksum mismatch in data block %d", v.next)
		}
		v.next++
	}
	return nil
}

// verified reports whether every data block was checked.
func (v *chunkVerifier) verified() bool { return v.parsed && v.next == v.h.blocks }

// rowRange returns which bytes of the object hold row i's value, with the
// checksum block(s) around it, for an uncompressed fixed-width chunk. ok is
// false when the chunk is not byte-range readable or i is out of range.
func (h *colChunkHeader) rowRange(i int) (off, n int64, ok bool) {
	if h.comp != CompressionNone || h.shape.layout != layoutFixed || i < 0 || i >= h.rows {
		return 0, 0, false
	}
	if h.shape.width == 0 {
		return int64(h.headerLen), 0, true
	}
	start := i / (h.blockLen / h.shape.width) * h.blockLen
	return int64(h.headerLen + start), int64(min(h.blockLen, h.storedLen-start)), true
}

// decodeRow verifies b, the bytes at rowRange(i), against their checksum
// and appends row i (or NULL) to out.
func (h *colChunkHeader) decodeRow(i int, b []byte, out *types.Vec) error {
	off, n, ok := h.rowRange(i)
	if !ok {
		return pgerror.AssertionFailedf("storage: row %d of a column chunk is not byte-range readable", i)
	}
	if int64(len(b)) != n {
		return corruptionf("column chunk: row %d read %d bytes, want %d", i, len(b), n)
	}
	if err := checkOut(out, h.phys); err != nil {
		return err
	}
	w := h.shape.width
	if w > 0 {
		k := int(off-int64(h.headerLen)) / h.blockLen
		if crc32.Checksum(b, crc32c) != binary.LittleEndian.Uint32(h.crcs[4*k:]) {
			return corruptionf("column chunk: checksum mismatch in data block %d", k)
		}
	}
	if h.isNull(i) {
		out.AppendNull()
		return nil
	}
	at := 0
	if w > 0 {
		at = i % (h.blockLen / w) * w
	}
	return appendFixed(out, h.kind, b[at:at+w], w)
}

// checkOut makes sure out can take rows of physical layout p.
func checkOut(out *types.Vec, p types.Phys) error {
	if out.Type.Phys() != p {
		return pgerror.AssertionFailedf("storage: decoding a %v column chunk into a %s vector", p, out.Type)
	}
	if p == types.PhysBytes && len(out.Bytes.Offsets) == 0 {
		out.Bytes.Offsets = append(out.Bytes.Offsets, 0)
	}
	return nil
}

// appendFixed appends one non-NULL fixed-width value.
func appendFixed(out *types.Vec, kind types.Kind, val []byte, w int) error {
	switch physKind(kind) {
	case types.Bool:
		if val[0] > 1 {
			return corruptionf("column chunk: bool byte %d", val[0])
		}
		out.AppendBool(val[0] == 1)
	case types.Int2:
		out.AppendInt(int64(int16(binary.LittleEndian.Uint16(val))))
	case types.Int4:
		out.AppendInt(int64(int32(binary.LittleEndian.Uint32(val))))
	case types.Int8:
		out.AppendInt(int64(binary.LittleEndian.Uint64(val)))
	case types.Float4:
		out.AppendFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(val))))
	case types.Float8:
		out.AppendFloat(math.Float64frombits(binary.LittleEndian.Uint64(val)))
	default:
		if len(out.Bytes.Data)+w > math.MaxInt32 {
			return vecFull()
		}
		out.AppendBytes(val)
	}
	return nil
}

func vecFull() error {
	return pgerror.New(pgerror.ProgramLimitExceeded, "column vector would exceed 2 GiB of values")
}

// chunkRawSize estimates the uncompressed encoded size of rows [from,to)
// of v, in O(1), so that callers can cut chunks at a byte target. It grows
// with to.
func chunkRawSize(typ types.Type, v *types.Vec, from, to int) int64 {
	n := int64(to - from)
	s, ok := shapeOf(typ)
	switch {
	case ok && s.layout == layoutFixed:
		return n * int64(s.width)
	case typ.Phys() != types.PhysBytes || len(v.Bytes.Offsets) <= to:
		return n * 8
	}
	return int64(v.Bytes.Offsets[to]-v.Bytes.Offsets[from]) + 4*(n+1)
}

// Reused compression state. The zstd encoder and decoder are safe for
// concurrent EncodeAll/DecodeAll and costly to create; lz4 compressors
// are not, so they are pooled.
var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
	lz4Pool  = sync.Pool{New: func() any { return new(lz4.Compressor) }}
	bufPool  sync.Pool // *[]byte scratch for raw and compressed data
)

// maxPooledBuf is the largest scratch buffer kept for reuse.
const maxPooledBuf = 64 << 20

func zstdCodecs() (*zstd.Encoder, *zstd.Decoder) {
	zstdOnce.Do(func() {
		var err error
		zstdEnc, err = zstd.NewWriter(nil, zstd.WithEncoderCRC(false), zstd.WithEncoderLevel(zstd.SpeedDefault))
		if err != nil {
			panic(err) // options are constant
		}
		zstdDec, err = zstd.NewReader(nil, zstd.WithDecodeAllCapLimit(true), zstd.WithDecoderConcurrency(0))
		if err != nil {
			panic(err)
		}
	})
	return zstdEnc, zstdDec
}

func getBuf(n int) *[]byte {
	p, _ := bufPool.Get().(*[]byte)
	if p == nil {
		p = new([]byte)
	}
	if cap(*p) < n {
		*p = make([]byte, n)
	}
	*p = (*p)[:n]
	return p
}

func putBuf(p *[]byte) {
	if cap(*p) <= maxPooledBuf {
		bufPool.Put(p)
	}
}

// compress returns raw compressed with c into dst (reusing its capacity);
// ok=false means it cannot be compressed (lz4: not by at least 1/8).
func compress(dst, raw []byte, c Compression) (out []byte, ok bool) {
	switch c {
	case CompressionZstd:
		enc, _ := zstdCodecs()
		return enc.EncodeAll(raw, dst[:0]), true
	case CompressionLZ4:
		// A destination shorter than the bound makes lz4 give up early on
		// data that would not shrink enough to be kept anyway.
		limit := len(raw) - len(raw)/8
		if cap(dst) < limit {
			dst = make([]byte, limit)
		}
		lc := lz4Pool.Get().(*lz4.Compressor)
		n, err := lc.CompressBlock(raw, dst[:limit])
		lz4Pool.Put(lc)
		if err != nil || n == 0 {
			return dst, false
		}
		return dst[:n], true
	case CompressionS2:
		bound := s2.MaxEncodedLen(len(raw))
		if bound < 0 {
			return dst, false
		}
		if cap(dst) < bound {
			dst = make([]byte, bound)
		}
		return s2.Encode(dst[:bound], raw), true
	}
	return dst, false
}

// decompress fills raw (exactly the raw length) from stored.
func decompress(raw, stored []byte, c Compression) error {
	switch c {
	case CompressionZstd:
		var fh zstd.Header
		if err := fh.Decode(stored); err != nil || (fh.HasFCS && fh.FrameContentSize != uint64(len(raw))) {
			return corruptionf("column chunk: zstd frame does not hold %d bytes", len(raw))
		}
		_, dec := zstdCodecs()
		out, err := dec.DecodeAll(stored, raw[:0:len(raw)])
		if err != nil || len(out) != len(raw) || (len(raw) > 0 && &out[0] != &raw[0]) {
			return corruptionf("column chunk: zstd: %v", err)
		}
	case CompressionLZ4:
		if len(raw) > 255*len(stored)+64 {
			return corruptionf("column chunk: lz4 block of %d bytes cannot hold %d", len(stored), len(raw))
		}
		n, err := lz4.UncompressBlock(stored, raw)
		if err != nil || n != len(raw) {
			return corruptionf("column chunk: lz4: %d of %d bytes (%v)", n, len(raw), err)
		}
	case CompressionS2:
		if n, err := s2.DecodedLen(stored); err != nil || n != len(raw) {
			return corruptionf("column chunk: s2 block does not hold %d bytes", len(raw))
		}
		out, err := s2.Decode(raw, stored)
		if err != nil || len(out) != len(raw) {
			return corruptionf("column chunk: s2: %v", err)
		}
	default:
		return corruptionf("column chunk: unknown compression %d", c)
	}
	return nil
}

// encodeColChunk appends to dst the chunk object holding rows [from,to) of
// v (whose Type is typ), compressed with comp, and returns it with the
// chunk's zone map. The zone map does not alias v.
func encodeColChunk(dst []byte, typ types.Type, v *types.Vec, from, to int, comp Compression) ([]byte, ZoneMap, error) {
	var zm ZoneMap
	s, ok := shapeOf(typ)
	switch {
	case !ok:
		return dst, zm, pgerror.AssertionFailedf("storage: column chunks cannot hold type %s", typ)
	case !comp.valid():
		return dst, zm, pgerror.AssertionFailedf("storage: invalid compression %d", comp)
	case v.Type.Phys() != typ.Phys() || from < 0 || from > to || to > v.Len():
		return dst, zm, pgerror.AssertionFailedf("storage: encoding rows [%d,%d) of a %d-row %s vector as %s", from, to, v.Len(), v.Type, typ)
	case to-from > maxColChunkRows:
		return dst, zm, pgerror.Newf(pgerror.ProgramLimitExceeded, "column chunk of %d rows exceeds %d", to-from, maxColChunkRows)
	}
	rows := to - from
	nulls := false
	for _, n := range v.Nulls[from:to] {
		if n {
			nulls = true
			break
		}
	}
	valuesLen := rows * s.width
	if s.layout != layoutFixed {
		if typ.Phys() != types.PhysBytes || len(v.Bytes.Offsets) <= to {
			return dst, zm, pgerror.AssertionFailedf("storage: %s vector without offsets", typ)
		}
		valuesLen = int(v.Bytes.Offsets[to] - v.Bytes.Offsets[from])
		if s.layout == layoutRagged {
			valuesLen -= 4 * s.ndims * (rows - nullCount(v.Nulls[from:to]))
		}
	}
	if valuesLen > maxColChunkValues || valuesLen < 0 {
		return dst, zm, pgerror.Newf(pgerror.ProgramLimitExceeded, "column chunk of %d value bytes exceeds %d", valuesLen, maxColChunkValues)
	}
	rawLen := rawLenOf(s.layout, rows, valuesLen, s.ndims)

	// Uncompressed, the raw data is built straight into dst after the
	// header. Compressed, it is built in scratch, then compressed; stored
	// is what follows the header then: compressed bytes, or the raw ones
	// when compression does not save 1/8.
	var stored []byte
	if comp != CompressionNone && rawLen > 0 {
		scratch := getBuf(rawLen)
		defer putBuf(scratch)
		raw, err := appendRaw((*scratch)[:0], typ, s, v, from, to, valuesLen)
		if err != nil {
			return dst, zm, err
		}
		cbuf := getBuf(0)
		defer putBuf(cbuf)
		c, ok := compress((*cbuf)[:0], raw, comp)
		*cbuf = c
		if stored = c; !ok || len(c) > len(raw)-len(raw)/8 {
			comp, stored = CompressionNone, raw
		}
	} else {
		comp = CompressionNone
	}
	blockLen := colChunkBlock
	if comp == CompressionNone && s.layout == layoutFixed && s.width > 0 {
		blockLen = max(1, colChunkRowBlock/s.width) * s.width
	}
	storedLen := rawLen
	if stored != nil {
		storedLen = len(stored)
	}
	var err error
	blocks := (storedLen + blockLen - 1) / blockLen
	hl := headerLenOf(s.ndims, blocks, rows, nulls)

	base := len(dst)
	dst = growBytes(dst, hl)
	h := dst[base : base+hl]
	clear(h)
	copy(h, colChunkMagic)
	binary.LittleEndian.PutUint16(h[4:], colChunkVersion)
	if nulls {
		binary.LittleEndian.PutUint16(h[6:], colChunkFlagNulls)
	}
	h[8], h[9], h[10], h[11], h[12] = s.kind, byte(s.layout), s.dtype, byte(s.ndims), byte(comp)
	binary.LittleEndian.PutUint32(h[16:], uint32(hl))
	binary.LittleEndian.PutUint32(h[20:], uint32(rows))
	binary.LittleEndian.PutUint32(h[24:], uint32(s.width))
	binary.LittleEndian.PutUint32(h[28:], uint32(valuesLen))
	binary.LittleEndian.PutUint32(h[32:], uint32(blockLen))
	binary.LittleEndian.PutUint32(h[36:], uint32(blocks))
	binary.LittleEndian.PutUint64(h[40:], uint64(rawLen))
	binary.LittleEndian.PutUint64(h[48:], uint64(storedLen))
	p := colChunkFixedLen
	for k := range s.ndims {
		binary.LittleEndian.PutUint32(h[p+4*k:], uint32(typ.Shape[k]))
	}
	p += 4 * s.ndims
	crcAt := p
	p += 4 * blocks
	if nulls {
		for i, n := range v.Nulls[from:to] {
			if n {
				h[p+(i>>3)] |= 1 << (i & 7)
			}
		}
	}
	if stored != nil {
		dst = append(dst, stored...)
	} else {
		dst, err = appendRaw(dst, typ, s, v, from, to, valuesLen)
		if err != nil {
			return dst[:base], zm, err
		}
	}
	data := dst[base+hl:]
	h = dst[base : base+hl]
	for k := range blocks {
		blk := data[k*blockLen : min(len(data), (k+1)*blockLen)]
		binary.LittleEndian.PutUint32(h[crcAt+4*k:], crc32.Checksum(blk, crc32c))
	}
	binary.LittleEndian.PutUint32(h[hl-4:], crc32.Checksum(h[:hl-4], crc32c))
	zm = computeZoneMap(typ, v, from, to)
	return dst, zm, nil
}

func nullCount(nulls []bool) int {
	n := 0
	for _, b := range nulls {
		if b {
			n++
		}
	}
	return n
}

// growBytes extends b by n bytes (contents unspecified).
func growBytes(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n+len(b)/4)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// appendRaw appends the raw data sections of rows [from,to) of v.
func appendRaw(dst []byte, typ types.Type, s colShape, v *types.Vec, from, to, valuesLen int) ([]byte, error) {
	base := len(dst)
	switch s.layout {
	case layoutFixed:
		dst = growBytes(dst, valuesLen)
		vals := dst[base:]
		w := s.width
		switch physKind(typ.Kind) {
		case types.Bool:
			for i, b := range v.Bools[from:to] {
				vals[i] = 0
				if b && !v.Nulls[from+i] {
					vals[i] = 1
				}
			}
		case types.Int2:
			for i, x := range v.Ints[from:to] {
				binary.LittleEndian.PutUint16(vals[2*i:], uint16(x))
			}
		case types.Int4:
			for i, x := range v.Ints[from:to] {
				binary.LittleEndian.PutUint32(vals[4*i:], uint32(x))
			}
		case types.Int8:
			for i, x := range v.Ints[from:to] {
				binary.LittleEndian.PutUint64(vals[8*i:], uint64(x))
			}
		case types.Float4:
			for i, f := range v.Floats[from:to] {
				binary.LittleEndian.PutUint32(vals[4*i:], math.Float32bits(float32(f)))
			}
		case types.Float8:
			for i, f := range v.Floats[from:to] {
				binary.LittleEndian.PutUint64(vals[8*i:], math.Float64bits(f))
			}
		default:
			if !hasNulls(v.Nulls[from:to]) {
				o0, o1 := v.Bytes.Offsets[from], v.Bytes.Offsets[to]
				if int(o1-o0) != valuesLen {
					return dst[:base], badValue(typ, -1)
				}
				copy(vals, v.Bytes.Data[o0:o1])
				for i := from; i < to; i++ {
					if int(v.Bytes.Offsets[i+1]-v.Bytes.Offsets[i]) != w {
						return dst[:base], badValue(typ, i)
					}
				}
				break
			}
			for i := from; i < to; i++ {
				slot := vals[(i-from)*w : (i-from+1)*w]
				if v.Nulls[i] {
					clear(slot)
					continue
				}
				val := v.Bytes.Get(i)
				if len(val) != w {
					return dst[:base], badValue(typ, i)
				}
				copy(slot, val)
			}
		}
		// Zero NULL slots of scalar columns, whatever the Vec holds there.
		if typ.Phys() != types.PhysBytes && w > 1 {
			for i, n := range v.Nulls[from:to] {
				if n {
					clear(vals[i*w : (i+1)*w])
				}
			}
		}
		return dst, nil
	case layoutVar:
		o0 := v.Bytes.Offsets[from]
		dst = append(dst, v.Bytes.Data[o0:v.Bytes.Offsets[to]]...)
		dst = zeroPad8(dst, base)
		for i := from; i <= to; i++ {
			o := v.Bytes.Offsets[i] - o0
			if i > from && v.Nulls[i-1] && o != v.Bytes.Offsets[i-1]-o0 {
				return dst[:base], badValue(typ, i-1)
			}
			dst = binary.LittleEndian.AppendUint32(dst, uint32(o))
		}
		return dst, nil
	}
	// Ragged: element bytes, offsets, shapes.
	hdr := 4 * s.ndims
	for i := from; i < to; i++ {
		if v.Nulls[i] {
			continue
		}
		val := v.Bytes.Get(i)
		if !raggedValueOK(typ, val, s.elem) {
			return dst[:base], badValue(typ, i)
		}
		dst = append(dst, val[hdr:]...)
	}
	if len(dst)-base != valuesLen {
		return dst[:base], badValue(typ, -1)
	}
	dst = zeroPad8(dst, base)
	off := uint32(0)
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	for i := from; i < to; i++ {
		if !v.Nulls[i] {
			off += uint32(len(v.Bytes.Get(i)) - hdr)
		}
		dst = binary.LittleEndian.AppendUint32(dst, off)
	}
	dst = zeroPad8(dst, base)
	for i := from; i < to; i++ {
		if v.Nulls[i] {
			dst = append(dst, zeroDims[:hdr]...)
			continue
		}
		dst = append(dst, v.Bytes.Get(i)[:hdr]...)
	}
	return dst, nil
}

// zeroPad8 appends zero bytes until b extends a multiple of 8 past base.
func zeroPad8(b []byte, base int) []byte {
	n := len(b) - base
	return append(b, zeroDims[:align8(n)-n]...)
}

// zeroDims is the shape of a NULL ragged row.
var zeroDims [4 * 255]byte

func hasNulls(nulls []bool) bool {
	for _, n := range nulls {
		if n {
			return true
		}
	}
	return false
}

func badValue(typ types.Type, row int) error {
	if row < 0 {
		return pgerror.AssertionFailedf("storage: %s values disagree with their offsets", typ)
	}
	return pgerror.AssertionFailedf("storage: row %d does not hold a valid %s value", row, typ)
}

// raggedValueOK reports whether val, a ragged tensor in its Vec encoding,
// has a dims header matching typ's fixed dims and exactly the element
// bytes its dims call for.
func raggedValueOK(typ types.Type, val []byte, elem int) bool {
	hdr := 4 * len(typ.Shape)
	if len(val) < hdr {
		return false
	}
	return dimsOK(typ.Shape, val[:hdr], len(val)-hdr, elem)
}

// dimsOK reports whether the u32 dims in hdr match the fixed dims of
// shape and describe exactly n bytes of elem-byte elements.
func dimsOK(shape []int, hdr []byte, n, elem int) bool {
	empty := false
	for k, want := range shape {
		d := int(binary.LittleEndian.Uint32(hdr[4*k:]))
		if want != types.Ragged && d != want {
			return false
		}
		empty = empty || d == 0
	}
	if empty {
		return n == 0
	}
	total := elem
	for k := range shape {
		d := int(binary.LittleEndian.Uint32(hdr[4*k:]))
		if total > n/d {
			return false
		}
		total *= d
	}
	return total == n
}

// decodeColChunk verifies the checksums, format version, type/layout and
// bounds of data and appends its rows to out (whose type is typ's). Every
// failure wraps ErrCorruption. In steady state it allocates nothing: out's
// capacity and a pooled scratch buffer are reused.
func decodeColChunk(data []byte, typ types.Type, out *types.Vec) error {
	_, err := decodeColChunkKeep(data, typ, out, false, false)
	return err
}

// decodeColChunkKeep is decodeColChunk that, with keep, may let an empty
// out keep data instead of copying from it: an uncompressed chunk of
// fixed-width values without NULLs. It reports whether out kept data,
// which then belongs to out. verified says a chunkVerifier checked the
// data blocks' checksums as data was read.
func decodeColChunkKeep(data []byte, typ types.Type, out *types.Vec, keep, verified bool) (bool, error) {
	h, err := parseColChunkHeader(data, typ)
	if err != nil {
		return false, err
	}
	if len(data) != h.headerLen+h.storedLen {
		return false, corruptionf("column chunk: object is %d bytes, header says %d", len(data), h.headerLen+h.storedLen)
	}
	stored := data[h.headerLen:]
	if !verified {
		if err := h.verifyBlocks(stored); err != nil {
			return false, err
		}
	}
	if err := checkOut(out, h.phys); err != nil {
		return false, err
	}
	if h.comp == CompressionNone {
		if keep && out.Len() == 0 && h.shape.layout == layoutFixed && h.phys == types.PhysBytes && h.nulls == nil &&
			len(stored) == h.rawLen && len(stored) <= math.MaxInt32 && cap(stored) <= len(stored)+len(stored)/4+4096 {
			// The values are stored as a Vec holds them: out takes them
			// where they lie.
			out.Bytes.Data = stored
			appendFixedOffsets(out, h.rows, h.shape.width, 0)
			return true, nil
		}
		return false, h.decodeRaw(stored, out)
	}
	// A fixed-width bytes column without NULLs decompresses straight into
	// out; everything else goes through scratch.
	if h.shape.layout == layoutFixed && h.phys == types.PhysBytes && h.nulls == nil {
		if len(out.Bytes.Data)+h.rawLen > math.MaxInt32 {
			return false, vecFull()
		}
		base := len(out.Bytes.Data)
		out.Bytes.Data = growBytes(out.Bytes.Data, h.rawLen)
		if err := decompress(out.Bytes.Data[base:], stored, h.comp); err != nil {
			out.Bytes.Data = out.Bytes.Data[:base]
			return false, err
		}
		appendFixedOffsets(out, h.rows, h.shape.width, base)
		return false, nil
	}
	buf := getBuf(h.rawLen)
	defer putBuf(buf)
	if err := decompress(*buf, stored, h.comp); err != nil {
		return false, err
	}
	return false, h.decodeRaw(*buf, out)
}

// appendFixedOffsets records n values of w bytes that were appended to
// out.Bytes.Data at base.
func appendFixedOffsets(out *types.Vec, n, w, base int) {
	b := len(out.Nulls)
	out.Nulls = grow(out.Nulls, n)[:b+n]
	clear(out.Nulls[b:])
	out.Bytes.Offsets = grow(out.Bytes.Offsets, n)
	for k := 1; k <= n; k++ {
		out.Bytes.Offsets = append(out.Bytes.Offsets, int32(base+k*w))
	}
}

// decodeRaw appends the rows held in raw (rawLen bytes of data sections).
// It checks everything it relies on; out is left unchanged on error.
func (h *colChunkHeader) decodeRaw(raw []byte, out *types.Vec) error {
	if len(raw) != h.rawLen {
		return corruptionf("column chunk: %d raw bytes, want %d", len(raw), h.rawLen)
	}
	n := h.rows
	if h.shape.layout == layoutFixed {
		return h.decodeFixed(raw, out)
	}
	vals := raw[:h.valuesLen]
	offAt := align8(h.valuesLen)
	if !allZero(raw[h.valuesLen:offAt]) {
		return corruptionf("column chunk: nonzero padding after values")
	}
	offs := raw[offAt : offAt+4*(n+1)]
	// Check the offsets (and the NULL rows' emptiness) before appending.
	prev := uint32(0)
	for i := 0; i <= n; i++ {
		o := binary.LittleEndian.Uint32(offs[4*i:])
		if o < prev || (i == 0 && o != 0) || (i > 0 && h.isNull(i-1) && o != prev) {
			return corruptionf("column chunk: bad value offset %d at row %d", o, i)
		}
		prev = o
	}
	if int(prev) != h.valuesLen {
		return corruptionf("column chunk: offsets end at %d, values are %d bytes", prev, h.valuesLen)
	}
	base := len(out.Bytes.Data)
	if h.shape.layout == layoutVar {
		if base+h.valuesLen > math.MaxInt32 {
			return vecFull()
		}
		out.Bytes.Data = append(grow(out.Bytes.Data, len(vals)), vals...)
		out.Bytes.Offsets = grow(out.Bytes.Offsets, n)
		for i := 1; i <= n; i++ {
			out.Bytes.Offsets = append(out.Bytes.Offsets, int32(base+int(binary.LittleEndian.Uint32(offs[4*i:]))))
		}
		h.appendNulls(out)
		return nil
	}
	// Ragged tensors: check every shape, then rebuild each dims header.
	shAt := offAt + align8(4*(n+1))
	if !allZero(raw[offAt+4*(n+1) : shAt]) {
		return corruptionf("column chunk: nonzero padding after offsets")
	}
	hdr := 4 * h.shape.ndims
	shapes := raw[shAt:]
	for i := range n {
		sh := shapes[i*hdr : (i+1)*hdr]
		ln := int(binary.LittleEndian.Uint32(offs[4*i+4:]) - binary.LittleEndian.Uint32(offs[4*i:]))
		if h.isNull(i) {
			if !allZero(sh) {
				return corruptionf("column chunk: NULL row %d has a shape", i)
			}
			continue
		}
		if !dimsOK(h.tshape, sh, ln, h.shape.elem) {
			return corruptionf("column chunk: row %d shape disagrees with its %d element bytes", i, ln)
		}
	}
	if base+h.valuesLen+hdr*n > math.MaxInt32 {
		return vecFull()
	}
	out.Bytes.Data = growBytes(out.Bytes.Data, h.valuesLen+hdr*(n-h.nullRows()))
	d := base
	for i := range n {
		if !h.isNull(i) {
			d += copy(out.Bytes.Data[d:], shapes[i*hdr:(i+1)*hdr])
			o0, o1 := binary.LittleEndian.Uint32(offs[4*i:]), binary.LittleEndian.Uint32(offs[4*i+4:])
			d += copy(out.Bytes.Data[d:], vals[o0:o1])
		}
		out.Bytes.Offsets = append(out.Bytes.Offsets, int32(d))
	}
	h.appendNulls(out)
	return nil
}

func (h *colChunkHeader) nullRows() int {
	if h.nulls == nil {
		return 0
	}
	n := 0
	for _, b := range h.nulls {
		for ; b != 0; b &= b - 1 {
			n++
		}
	}
	return n
}

// appendNulls appends the chunk's NULL flags to out.Nulls.
func (h *colChunkHeader) appendNulls(out *types.Vec) {
	base := len(out.Nulls)
	out.Nulls = grow(out.Nulls, h.rows)[:base+h.rows]
	clear(out.Nulls[base:])
	if h.nulls != nil {
		nulls := out.Nulls[base:]
		for i := range nulls {
			nulls[i] = h.isNull(i)
		}
	}
}

// decodeFixed appends the rows of a fixed-width chunk.
func (h *colChunkHeader) decodeFixed(vals []byte, out *types.Vec) error {
	n, w := h.rows, h.shape.width
	switch physKind(h.kind) {
	case types.Bool:
		for _, b := range vals {
			if b > 1 {
				return corruptionf("column chunk: bool byte %d", b)
			}
		}
		for _, b := range vals {
			out.Bools = append(out.Bools, b == 1)
		}
	case types.Int2:
		out.Ints = grow(out.Ints, n)
		for i := range n {
			out.Ints = append(out.Ints, int64(int16(binary.LittleEndian.Uint16(vals[2*i:]))))
		}
	case types.Int4:
		out.Ints = grow(out.Ints, n)
		for i := range n {
			out.Ints = append(out.Ints, int64(int32(binary.LittleEndian.Uint32(vals[4*i:]))))
		}
	case types.Int8:
		out.Ints = grow(out.Ints, n)
		for i := range n {
			out.Ints = append(out.Ints, int64(binary.LittleEndian.Uint64(vals[8*i:])))
		}
	case types.Float4:
		out.Floats = grow(out.Floats, n)
		for i := range n {
			out.Floats = append(out.Floats, float64(math.Float32frombits(binary.LittleEndian.Uint32(vals[4*i:]))))
		}
	case types.Float8:
		out.Floats = grow(out.Floats, n)
		for i := range n {
			out.Floats = append(out.Floats, math.Float64frombits(binary.LittleEndian.Uint64(vals[8*i:])))
		}
	default:
		base := len(out.Bytes.Data)
		if h.nulls == nil {
			if base+len(vals) > math.MaxInt32 {
				return vecFull()
			}
			out.Bytes.Data = append(out.Bytes.Data, vals...)
			appendFixedOffsets(out, n, w, base)
			return nil
		}
		if base+(n-h.nullRows())*w > math.MaxInt32 {
			return vecFull()
		}
		out.Bytes.Offsets = grow(out.Bytes.Offsets, n)
		for i := range n {
			if !h.isNull(i) {
				out.Bytes.Data = append(out.Bytes.Data, vals[i*w:(i+1)*w]...)
			}
			out.Bytes.Offsets = append(out.Bytes.Offsets, int32(len(out.Bytes.Data)))
		}
	}
	h.appendNulls(out)
	return nil
}

// grow makes room for n more elements of s, growing by at least a quarter.
func grow[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	ns := make([]T, len(s), len(s)+n+len(s)/4)
	copy(ns, s)
	return ns
}
