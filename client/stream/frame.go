package stream

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"unsafe"
)

// Frame format constants (docs/tensor-stream.md).
const (
	// Version is the frame version this package reads.
	Version = 1
	// Align is the alignment of every buffer in a frame.
	Align      = 64
	headerSize = 32
	ragged     = 0xFFFFFFFF
	maxRows    = 1 << 20
)

var magic = []byte("DLTF")

// Kind is a column's layout in a frame.
type Kind uint8

// NB: the kinds are the wire codes, so the zero value is Fixed.
const (
	// Fixed columns hold rows × prod(dims) elements, row-major.
	Fixed Kind = 0
	// Ragged columns hold each row's elements back to back, with offsets
	// and per-row shapes.
	Ragged Kind = 1
	// BytesKind columns hold each row's bytes back to back, with offsets.
	BytesKind Kind = 2
)

// DType is the element type of a fixed or ragged column.
type DType uint8

// Element types, by their wire codes.
const (
	Bool DType = iota + 1
	Int8
	Uint8
	Int16
	Int32
	Int64
	Float16
	BFloat16
	Float32
	Float64
)

var dtypeNames = [...]string{"", "bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"}
var dtypeSizes = [...]int{0, 1, 1, 1, 2, 4, 8, 2, 2, 4, 8}

func (d DType) String() string {
	if int(d) < len(dtypeNames) && d != 0 {
		return dtypeNames[d]
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Size is the size of one element in bytes.
func (d DType) Size() int {
	if int(d) < len(dtypeSizes) {
		return dtypeSizes[d]
	}
	return 0
}

// Logical is the SQL type of a bytes column.
type Logical uint8

// Logical types of bytes columns, by their wire codes.
const (
	Text Logical = iota + 1
	JSON
	JSONB
	Bytea
	Varchar
)

// Column is one column of a batch. Its slices point into the frame and are
// borrowed until the next call to Batches.Next.
type Column struct {
	Name string
	Kind Kind
	// DType is the element type (fixed and ragged columns).
	DType DType
	// Logical is the SQL type (bytes columns).
	Logical Logical
	// Dims is one row's shape; -1 marks a dimension that varies by row.
	Dims []int

	rows     int
	validity []byte
	offsets  []uint64
	shapes   []uint32
	values   []byte
	shape    []int
}

// Batch is one frame: a batch of rows, column by column.
type Batch struct {
	// Index counts batches of this shard's stream from 0 (START_BATCH
	// included).
	Index uint64
	// Rows is the number of rows in the batch.
	Rows    int
	Columns []Column
	// Source is set in the stream's first frame: the table version it
	// reads (nil in later frames, and for a query of several tables).
	Source *Source
}

// Source is what a stream of a table reads: the table's version, the
// commit naming it (VERSION 'id' reads it again) and its branch ("" for
// main).
type Source struct {
	Version uint64
	Commit  string
	Branch  string
}

// Column returns the column named name, or nil.
func (b *Batch) Column(name string) *Column {
	for i := range b.Columns {
		if b.Columns[i].Name == name {
			return &b.Columns[i]
		}
	}
	return nil
}

// ParseFrame parses frame into b, reusing b's memory. frame must start at a
// 64-byte aligned address (see AlignedCopy); b's slices alias frame.
func ParseFrame(frame []byte, b *Batch) error {
	if !littleEndian {
		return fmt.Errorf("stream: frames are little-endian; this host is not")
	}
	if len(frame) < headerSize {
		return fmt.Errorf("stream: frame of %d bytes is shorter than the header", len(frame))
	}
	if !bytes.Equal(frame[:4], magic) {
		return fmt.Errorf("stream: bad frame magic %q, want %q (is this FORMAT tensor?)", frame[:4], magic)
	}
	if v := binary.LittleEndian.Uint16(frame[4:]); v != Version {
		return fmt.Errorf("stream: frame version %d, this client reads version %d", v, Version)
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(frame)))%Align != 0 {
		return fmt.Errorf("stream: frame is not %d-byte aligned", Align)
	}
	hlen := binary.LittleEndian.Uint32(frame[8:])
	ncols := binary.LittleEndian.Uint32(frame[12:])
	if uint64(hlen) > uint64(len(frame)) || hlen < headerSize {
		return fmt.Errorf("stream: header length %d out of range (frame %d bytes)", hlen, len(frame))
	}
	b.Index = binary.LittleEndian.Uint64(frame[16:])
	rows := binary.LittleEndian.Uint32(frame[24:])
	if rows > maxRows {
		return fmt.Errorf("stream: %d rows in a batch, more than the %d a batch may hold", rows, maxRows)
	}
	b.Rows = int(rows)
	if uint64(ncols) > uint64(hlen) {
		return fmt.Errorf("stream: %d columns in a %d-byte header", ncols, hlen)
	}
	if cap(b.Columns) < int(ncols) {
		cols := make([]Column, ncols)
		copy(cols, b.Columns[:cap(b.Columns)])
		b.Columns = cols
	}
	b.Columns = b.Columns[:ncols]
	hdr := frame[:hlen]
	p := headerSize
	for i := range b.Columns {
		var err error
		if p, err = parseColumn(frame, hdr, p, b.Rows, &b.Columns[i]); err != nil {
			return fmt.Errorf("stream: column %d: %w", i, err)
		}
	}
	b.Source = nil
	if binary.LittleEndian.Uint16(frame[6:])&flagSource != 0 {
		src, err := parseSource(hdr[p:])
		if err != nil {
			return err
		}
		b.Source = src
	}
	return nil
}

// flagSource marks a header that ends with a source block.
const flagSource = 1

// parseSource parses a header's source block: version u64, then the
// commit id and the branch, each a u16 length and its bytes.
func parseSource(h []byte) (*Source, error) {
	if len(h) < 10 {
		return nil, errShortHeader
	}
	src := &Source{Version: binary.LittleEndian.Uint64(h)}
	h = h[8:]
	for _, dst := range []*string{&src.Commit, &src.Branch} {
		if len(h) < 2 {
			return nil, errShortHeader
		}
		n := int(binary.LittleEndian.Uint16(h))
		if len(h) < 2+n {
			return nil, errShortHeader
		}
		*dst = string(h[2 : 2+n])
		h = h[2+n:]
	}
	return src, nil
}

func parseColumn(frame, hdr []byte, p, rows int, c *Column) (int, error) {
	if p+2 > len(hdr) {
		return 0, errShortHeader
	}
	nlen := int(binary.LittleEndian.Uint16(hdr[p:]))
	p += 2
	if p+nlen+4 > len(hdr) {
		return 0, errShortHeader
	}
	name := hdr[p : p+nlen]
	if c.Name != string(name) { // NB: the comparison does not allocate
		c.Name = string(name)
	}
	p += nlen
	c.Kind = Kind(hdr[p])
	code := hdr[p+1]
	ndim := int(hdr[p+2])
	flags := hdr[p+3]
	p += 4
	if p+ndim*4+64 > len(hdr) {
		return 0, errShortHeader
	}
	c.rows = rows
	c.Dims = c.Dims[:0]
	elems := uint64(1)
	overflow := false
	varies := false
	for d := 0; d < ndim; d++ {
		v := binary.LittleEndian.Uint32(hdr[p+4*d:])
		if v == ragged {
			c.Dims = append(c.Dims, -1)
			varies = true
		} else {
			c.Dims = append(c.Dims, int(v))
			var hi uint64
			hi, elems = bits.Mul64(elems, uint64(v))
			overflow = overflow || hi != 0
		}
	}
	p += ndim * 4
	var bufs [4][]byte
	for k := range bufs {
		off := binary.LittleEndian.Uint64(hdr[p:])
		n := binary.LittleEndian.Uint64(hdr[p+8:])
		p += 16
		if n == 0 {
			continue
		}
		if off%Align != 0 || off > uint64(len(frame)) || n > uint64(len(frame))-off {
			return 0, fmt.Errorf("%q: buffer %d (offset %d, length %d) outside the %d-byte frame or misaligned", c.Name, k, off, n, len(frame))
		}
		bufs[k] = frame[off : off+n]
	}
	c.DType, c.Logical = 0, 0
	switch c.Kind {
	case Fixed, Ragged:
		c.DType = DType(code)
		if c.DType.Size() == 0 {
			return 0, fmt.Errorf("%q: unknown dtype %d", c.Name, code)
		}
		if c.Kind == Fixed && varies {
			return 0, fmt.Errorf("%q: fixed column with a ragged dimension", c.Name)
		}
	case BytesKind:
		if code < uint8(Text) || code > uint8(Varchar) {
			return 0, fmt.Errorf("%q: unknown logical type %d", c.Name, code)
		}
		c.Logical = Logical(code)
	default:
		return 0, fmt.Errorf("%q: unknown column kind %d", c.Name, c.Kind)
	}
	c.validity = nil
	if flags&1 != 0 {
		if len(bufs[0]) < (rows+7)/8 {
			return 0, fmt.Errorf("%q: validity of %d bytes for %d rows", c.Name, len(bufs[0]), rows)
		}
		c.validity = bufs[0]
	}
	c.values = bufs[3]
	c.offsets, c.shapes = nil, nil
	switch c.Kind {
	case Fixed:
		hi, want := bits.Mul64(elems, uint64(rows*c.DType.Size()))
		if overflow || hi != 0 || uint64(len(c.values)) != want {
			return 0, fmt.Errorf("%q: values of %d bytes, want %d", c.Name, len(c.values), want)
		}
	case Ragged, BytesKind:
		if len(bufs[1]) != (rows+1)*8 {
			return 0, fmt.Errorf("%q: offsets of %d bytes for %d rows", c.Name, len(bufs[1]), rows)
		}
		c.offsets = view[uint64](bufs[1])
		size := 1
		if c.Kind == Ragged {
			size = c.DType.Size()
		}
		if len(c.values)%size != 0 {
			return 0, fmt.Errorf("%q: values of %d bytes are not whole elements", c.Name, len(c.values))
		}
		n := uint64(len(c.values) / size)
		prev := uint64(0)
		for _, o := range c.offsets {
			if o < prev || o > n {
				return 0, fmt.Errorf("%q: offsets not ascending within the values", c.Name)
			}
			prev = o
		}
		if c.Kind == Ragged {
			if len(bufs[2]) != rows*ndim*4 {
				return 0, fmt.Errorf("%q: shapes of %d bytes for %d rows of %d dims", c.Name, len(bufs[2]), rows, ndim)
			}
			c.shapes = view[uint32](bufs[2])
		}
	}
	c.shape = append(c.shape[:0], rows)
	c.shape = append(c.shape, c.Dims...)
	return p, nil
}

var errShortHeader = fmt.Errorf("header ends inside a column descriptor")

var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// view wraps b as a []T. b must be aligned for T (frames keep every buffer
// 64-byte aligned in an aligned copy).
func view[T any](b []byte) []T {
	var zero T
	n := len(b) / int(unsafe.Sizeof(zero))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// alignedBuf returns n bytes of buf, grown if needed, starting at a 64-byte
// aligned address.
func alignedBuf(buf *[]byte, n int) []byte {
	if cap(*buf) < n+Align {
		*buf = make([]byte, n+n/4+Align)
	}
	b := (*buf)[:cap(*buf)]
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & (Align - 1))
	return b[off : off+n]
}

// AlignedCopy copies frame into buf, growing it if needed, and returns the
// copy, which starts at a 64-byte aligned address. Pass the returned buffer's
// backing store back on the next call through buf to reuse it.
func AlignedCopy(buf *[]byte, frame []byte) []byte {
	dst := alignedBuf(buf, len(frame))
	copy(dst, frame)
	return dst
}
