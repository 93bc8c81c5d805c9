package exec

import (
	"encoding/binary"
	"io"
	"math"
	"unsafe"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// The tensor stream (FORMAT tensor, docs/tensor-stream.md): rows are
// gathered into batches of BATCH_SIZE rows, each batch assembled into
// per-column buffers that are reused from frame to frame, and written as
// one frame (one CopyData message).

// Frame constants of version 1.
const (
	tensorMagic      = "DLTF"
	tensorVersion    = 1
	tensorHeaderLen  = 32
	tensorAlign      = 64
	tensorKindFixed  = 0
	tensorKindRagged = 1
	tensorKindBytes  = 2
	tensorRaggedDim  = 0xFFFFFFFF
)

// Logical types of bytes columns.
const (
	tensorText    = 1
	tensorJSON    = 2
	tensorJSONB   = 3
	tensorBytea   = 4
	tensorVarchar = 5
)

var tensorZeros [tensorAlign]byte

// tensorCol is one column of the stream: how its values are laid out and
// the buffers of the batch being assembled.
type tensorCol struct {
	name  string
	typ   types.Type
	kind  uint8
	dtype types.DType
	// logical is the logical type of a bytes column.
	logical uint8
	// dims holds the descriptor's dims (tensorRaggedDim for a ragged one).
	dims []uint32
	// elems is the element count of a fixed column's row; size the byte
	// width of an element.
	elems, size int
	// text is set for a bytes column whose values are written in their
	// text form (types that have no bytes layout of their own).
	text bool
	// numeric is set for a numeric column, sent as float64s.
	numeric bool

	hasNull bool
	// nelems counts a ragged column's elements, nbytes a bytes column's
	// bytes, for the offsets buffer.
	nelems                         uint64
	valid, offsets, shapes, values []byte
	// borrow, when set, holds the values of the batch's last rows, which
	// follow those in values: a run of fixed-width values taken from a
	// query batch without a copy, valid until the query's next batch
	// (see unborrow).
	borrow []byte
	// rows, for a fixed column of vectors or tensors fed from a rowStore
	// (addSlot), holds the batch's values row by row instead of values:
	// the slots' own buffers, taken rather than copied, and zeroRow for a
	// NULL. A stream feeds its frames either from a rowStore or from the
	// query's batches, never both.
	rows    [][]byte
	zeroRow []byte
	// extents, for a hollow column (tensorFrames.extentOf), says where
	// the values of the batch's last rows are stored, to be read straight
	// into the frame; they follow those in values and borrow. extLen is
	// their length in bytes.
	extents []storage.Extent
	extLen  int
	// room, for a ragged or bytes column, is what its frame's values may
	// still take (nil: no limit).
	room *frameRoom
	// scratch holds a ragged value's dims or a value's text form.
	dimScratch []int
	scratch    []byte
}

// newTensorCol describes a column of type t.
func newTensorCol(name string, t types.Type) *tensorCol {
	c := &tensorCol{name: name, typ: t, kind: tensorKindFixed}
	switch t.Kind {
	case types.Bool:
		c.dtype = types.DTBool
	case types.Int2:
		c.dtype = types.DTInt16
	case types.Int4:
		c.dtype = types.DTInt32
	case types.Int8, types.Oid, types.RegClass, types.RegType, types.RegNamespace, types.RegProc:
		c.dtype = types.DTInt64
	case types.Float4:
		c.dtype = types.DTFloat32
	case types.Float8:
		c.dtype = types.DTFloat64
	case types.Numeric:
		// A numeric trains as a float64, the nearest one.
		c.dtype, c.numeric = types.DTFloat64, true
	case types.Vector, types.HalfVec:
		c.dtype = types.DTFloat32
		if t.Kind == types.HalfVec {
			c.dtype = types.DTFloat16
		}
		if t.Width > 0 {
			c.dims = []uint32{uint32(t.Width)}
		} else {
			c.kind = tensorKindRagged
			c.dims = []uint32{tensorRaggedDim}
		}
	case types.Tensor:
		c.dtype = t.DType
		for _, d := range t.Shape {
			if d == types.Ragged {
				c.kind = tensorKindRagged
				c.dims = append(c.dims, tensorRaggedDim)
			} else {
				c.dims = append(c.dims, uint32(d))
			}
		}
	default:
		c.kind = tensorKindBytes
		switch t.Kind {
		case types.JSON:
			c.logical = tensorJSON
		case types.JSONB:
			c.logical = tensorJSONB
		case types.Bytea:
			c.logical = tensorBytea
		case types.Varchar:
			c.logical = tensorVarchar
		case types.Text:
			c.logical = tensorText
		default:
			c.logical, c.text = tensorText, true
		}
		return c
	}
	c.size = c.dtype.Size()
	c.elems = 1
	for _, d := range c.dims {
		c.elems *= int(d)
	}
	return c
}

// reset empties the column's buffers for the next batch.
func (c *tensorCol) reset() {
	c.hasNull = false
	c.nelems = 0
	c.valid = c.valid[:0]
	c.offsets = c.offsets[:0]
	c.shapes = c.shapes[:0]
	c.values = c.values[:0]
	c.borrow = nil
	clear(c.extents)
	c.extents = c.extents[:0]
	c.extLen = 0
	if c.kind != tensorKindFixed {
		c.offsets = binary.LittleEndian.AppendUint64(c.offsets, 0)
	}
}

// add appends row r's value: null, or b, n, f or bs as the column's
// physical type says.
func (c *tensorCol) add(r int, null, b bool, n int64, f float64, bs []byte) {
	if c.borrow != nil {
		c.values = append(c.values, c.borrow...)
		c.borrow = nil
	}
	if r%8 == 0 {
		c.valid = append(c.valid, 0)
	}
	if null {
		c.hasNull = true
	} else {
		c.valid[r/8] |= 1 << (r % 8)
	}
	switch c.kind {
	case tensorKindBytes:
		if !null && c.room.take(c, len(bs), r) {
			c.values = append(c.values, bs...)
		}
		c.offsets = binary.LittleEndian.AppendUint64(c.offsets, uint64(len(c.values)))
	case tensorKindRagged:
		if !null {
			var data []byte
			if c.typ.IsVector() {
				data = bs
				c.shapes = binary.LittleEndian.AppendUint32(c.shapes, uint32(len(bs)/c.size))
			} else {
				c.dimScratch, data = types.TensorDims(c.typ, bs, c.dimScratch)
				for _, d := range c.dimScratch {
					c.shapes = binary.LittleEndian.AppendUint32(c.shapes, uint32(d))
				}
			}
			n := len(data) / c.size
			if c.room.take(c, n*c.size, r) {
				c.values = append(c.values, data[:n*c.size]...)
				c.nelems += uint64(n)
			}
		} else {
			for range c.dims {
				c.shapes = binary.LittleEndian.AppendUint32(c.shapes, 0)
			}
		}
		c.offsets = binary.LittleEndian.AppendUint64(c.offsets, c.nelems)
	default:
		c.addFixed(null, b, n, f, bs)
	}
}

// addFixed appends a fixed column's value, zeros for NULL.
func (c *tensorCol) addFixed(null, b bool, n int64, f float64, bs []byte) {
	width := c.elems * c.size
	if null {
		c.values = appendZeros(c.values, width)
		return
	}
	le := binary.LittleEndian
	switch c.typ.Kind {
	case types.Vector, types.HalfVec, types.Tensor:
		if len(bs) > width {
			bs = bs[:width]
		}
		c.values = append(c.values, bs...)
		c.values = appendZeros(c.values, width-len(bs))
	case types.Bool:
		v := byte(0)
		if b {
			v = 1
		}
		c.values = append(c.values, v)
	case types.Float4:
		c.values = le.AppendUint32(c.values, math.Float32bits(float32(f)))
	case types.Float8, types.Numeric:
		c.values = le.AppendUint64(c.values, math.Float64bits(f))
	default:
		switch c.dtype {
		case types.DTInt16:
			c.values = le.AppendUint16(c.values, uint16(n))
		case types.DTInt32:
			c.values = le.AppendUint32(c.values, uint32(n))
		default:
			c.values = le.AppendUint64(c.values, uint64(n))
		}
	}
}

// appendZeros appends n zero bytes.
func appendZeros(dst []byte, n int) []byte {
	for n > len(tensorZeros) {
		dst = append(dst, tensorZeros[:]...)
		n -= len(tensorZeros)
	}
	return append(dst, tensorZeros[:n]...)
}

// tensorFrames assembles the rows of a batch and writes them as a frame.
type tensorFrames struct {
	cols  []*tensorCol
	rows  int
	frame []byte
	// iov holds the pieces of a frame for a BuffersWriter.
	iov [][]byte
	// spare holds the buffers of written frames' rows (tensorCol.rows),
	// for the slots that gave theirs up.
	spare [][]byte
	// extentOf, when set, tells the extent of a hollow window of the
	// query's scan; readExtent reads one (see tensor_extent.go).
	// room bounds the values of its ragged and bytes columns (see
	// limitFrames; nil: no limit).
	room       *frameRoom
	extentOf   func(*types.Vec) (storage.Extent, bool)
	readExtent func(e storage.Extent, dst []byte, scratch *[]byte) error
	// rowExtent, when set, tells the extent of row i of a column of an
	// exact shuffle's fetched rows whose value was not fetched.
	rowExtent func(v *types.Vec, i int) (storage.Extent, bool)
	extentFill
	// source is the source block the first frame carries (streamSource),
	// nil once written or when there is none.
	source []byte
}

// tensorFlagSource marks a header that ends with a source block.
const tensorFlagSource = 1

// streamSource returns the source block of a stream of version v of a
// table (commit id and branch, "" when none): version u64, then the commit
// id and the branch, each a u16 length and its bytes.
func streamSource(v uint64, commit, branch string) []byte {
	le := binary.LittleEndian
	b := le.AppendUint64(nil, v)
	b = le.AppendUint16(b, uint16(len(commit)))
	b = append(b, commit...)
	b = le.AppendUint16(b, uint16(len(branch)))
	return append(b, branch...)
}

// A BuffersWriter writes the concatenation of bufs as one message (one
// CopyData), as a vectored write where it can: a frame's column buffers
// then go to the socket without being copied into one.
type BuffersWriter interface {
	WriteBuffers(bufs [][]byte) error
}

func newTensorFrames(cols []plan.Column) *tensorFrames {
	f := &tensorFrames{}
	for _, c := range cols {
		f.cols = append(f.cols, newTensorCol(c.Name, c.Type))
	}
	f.reset()
	return f
}

func (f *tensorFrames) reset() {
	f.rows = 0
	if f.room != nil {
		f.room.left = f.room.full
	}
	for _, c := range f.cols {
		for _, p := range c.rows {
			if len(p) > 0 && unsafe.SliceData(p) != unsafe.SliceData(c.zeroRow) {
				f.spare = append(f.spare, p[:0])
			}
		}
		clear(c.rows)
		c.rows = c.rows[:0]
		c.reset()
	}
}

// addRow appends row i of cols; a value rowExtent knows is taken as its
// extent.
func (f *tensorFrames) addRow(cols []*types.Vec, i int) error {
	if f.rowExtent == nil {
		for j, c := range f.cols {
			c.addVec(cols[j], i, f.rows)
		}
		f.rows++
		return f.overLimit()
	}
	// First read the extents that a value of this row follows, so that a
	// failed read leaves the frame as it was.
	for j, c := range f.cols {
		if len(c.extents) > 0 {
			if _, ok := f.rowExtent(cols[j], i); !ok {
				if err := f.materialize(c); err != nil {
					return err
				}
			}
		}
	}
	for j, c := range f.cols {
		if c.fixedBytes() {
			if e, ok := f.rowExtent(cols[j], i); ok {
				c.addExtent(e, f.rows)
				continue
			}
		}
		c.addVec(cols[j], i, f.rows)
	}
	f.rows++
	return f.overLimit()
}

// fixedBytes reports whether c is a fixed-width column of vectors or
// tensors, whose values are their bytes in the frame.
func (c *tensorCol) fixedBytes() bool {
	return c.kind == tensorKindFixed && c.typ.Phys() == types.PhysBytes && !c.numeric
}

// addVec appends row i of v as the frame's row r.
func (c *tensorCol) addVec(v *types.Vec, i, r int) {
	if v.Nulls[i] {
		c.add(r, true, false, 0, 0, nil)
		return
	}
	if c.numeric {
		c.add(r, false, false, 0, types.NumericToFloat(v.Bytes.Get(i)), nil)
		return
	}
	if c.text {
		// Sent as text whatever its physical layout (uuid, dates and
		// times, the catalog types).
		c.scratch = types.AppendText(c.scratch[:0], v, i)
		c.add(r, false, false, 0, 0, c.scratch)
		return
	}
	switch v.Type.Phys() {
	case types.PhysBool:
		c.add(r, false, v.Bools[i], 0, 0, nil)
	case types.PhysInt:
		c.add(r, false, false, v.Ints[i], 0, nil)
	case types.PhysFloat:
		c.add(r, false, false, 0, v.Floats[i], nil)
	default:
		c.add(r, false, false, 0, 0, v.Bytes.Get(i))
	}
}

// addRange appends rows [i, j) of cols. A fixed column of vectors or
// tensors whose values in the range are back to back, none NULL, takes
// them as one run (borrowed: see tensorCol.borrow), and a hollow window
// as their extent (see extentOf).
func (f *tensorFrames) addRange(cols []*types.Vec, i, j int) error {
	for k, c := range f.cols {
		v := cols[k]
		fixedBytes := c.fixedBytes()
		if fixedBytes && f.extentOf != nil {
			if e, ok := f.extentOf(v); ok {
				c.addExtent(e.Slice(i, j), f.rows)
				continue
			}
			if j > i && int(v.Bytes.Offsets[j]) > len(v.Bytes.Data) {
				// A hollow window that reached the stream under another
				// name: its bytes are not there to read.
				return pgerror.AssertionFailedf("tensor stream: column %q has no bytes for its rows", c.name)
			}
		}
		if len(c.extents) > 0 {
			// Values that are not an extent follow extents: read those
			// first, to keep the rows in order.
			if err := f.materialize(c); err != nil {
				return err
			}
		}
		if fixedBytes && c.addRun(v, i, j, f.rows) {
			continue
		}
		for r := i; r < j; r++ {
			c.addVec(v, r, f.rows+r-i)
		}
	}
	f.rows += j - i
	return f.overLimit()
}

// addRun appends rows [i, j) of v, a fixed-width column, as the frame's
// rows from r on, if every one is a non-NULL value of the column's width.
func (c *tensorCol) addRun(v *types.Vec, i, j, r int) bool {
	width := int32(c.elems * c.size)
	offs := v.Bytes.Offsets
	for k := i; k < j; k++ {
		if v.Nulls[k] || offs[k+1]-offs[k] != width {
			return false
		}
	}
	n := j - i
	for b := r / 8; b < (r+n+7)/8; b++ {
		if b == len(c.valid) {
			c.valid = append(c.valid, 0)
		}
	}
	for k := r; k < r+n; k++ {
		c.valid[k/8] |= 1 << (k % 8)
	}
	if c.borrow != nil {
		c.values = append(c.values, c.borrow...)
	}
	c.borrow = v.Bytes.Data[offs[i]:offs[j]:offs[j]]
	return true
}

// unborrow copies borrowed values into the columns' own buffers: the rows
// of the frame being assembled then outlive the query batch they came from.
func (f *tensorFrames) unborrow() {
	for _, c := range f.cols {
		if c.borrow != nil {
			c.values = append(c.values, c.borrow...)
			c.borrow = nil
		}
	}
}

// addSlot appends slot s of the row store st.
// A fixed column of vectors or tensors takes the slot's buffer (the slot
// gets a spare one) instead of copying its value, or its extent.
func (f *tensorFrames) addSlot(st *rowStore, s int) error {
	for j, c := range f.cols {
		sc := &st.cols[j]
		if c.numeric {
			x := 0.0
			if !sc.nulls[s] {
				x = types.NumericToFloat(sc.bytes[s])
			}
			c.add(f.rows, sc.nulls[s], false, 0, x, nil)
			continue
		}
		if c.fixedBytes() {
			if sc.exts != nil && sc.exts[s].Rows > 0 {
				e := sc.exts[s]
				c.addExtent(e, f.rows)
				continue
			}
			if len(c.extents) > 0 {
				if err := f.materialize(c); err != nil {
					return err
				}
			}
			old := cap(sc.bytes[s])
			sc.bytes[s] = f.takeRow(c, sc.nulls[s], sc.bytes[s])
			st.held += int64(cap(sc.bytes[s]) - old)
			continue
		}
		c.add(f.rows, sc.nulls[s], sc.bools[s], sc.ints[s], sc.floats[s], sc.bytes[s])
	}
	f.rows++
	return f.overLimit()
}

// takeRow appends a row to a fixed column of vectors or tensors in rows
// form: bs itself, when it is a value of the column's width, or a padded
// copy. It returns the buffer the row's slot is to hold from now on.
func (f *tensorFrames) takeRow(c *tensorCol, null bool, bs []byte) []byte {
	r := f.rows
	if r%8 == 0 {
		c.valid = append(c.valid, 0)
	}
	width := c.elems * c.size
	if null {
		c.hasNull = true
		if len(c.zeroRow) != width {
			c.zeroRow = make([]byte, width)
		}
		c.rows = append(c.rows, c.zeroRow)
		return bs
	}
	c.valid[r/8] |= 1 << (r % 8)
	if len(bs) != width {
		p := f.spareBuf()
		p = append(p, bs[:min(len(bs), width)]...)
		c.rows = append(c.rows, appendZeros(p, width-len(p)))
		return bs
	}
	c.rows = append(c.rows, bs)
	return f.spareBuf()
}

// spareBuf returns an empty buffer from those of written frames' rows.
func (f *tensorFrames) spareBuf() []byte {
	n := len(f.spare)
	if n == 0 {
		return nil
	}
	b := f.spare[n-1]
	f.spare[n-1] = nil
	f.spare = f.spare[:n-1]
	return b
}

// write writes the assembled rows as frame batch and empties the buffers.
func (f *tensorFrames) write(w io.Writer, batch uint64) error {
	le := binary.LittleEndian
	hl := tensorHeaderLen
	for _, c := range f.cols {
		hl += 2 + len(c.name) + 4 + 4*len(c.dims) + 4*16
	}
	hflags := uint16(0)
	if f.source != nil {
		hl += len(f.source)
		hflags |= tensorFlagSource
	}
	pos := alignUp(hl)
	fr := f.frame[:0]
	fr = append(fr, tensorMagic...)
	fr = le.AppendUint16(fr, tensorVersion)
	fr = le.AppendUint16(fr, hflags)
	fr = le.AppendUint32(fr, uint32(hl))
	fr = le.AppendUint32(fr, uint32(len(f.cols)))
	fr = le.AppendUint64(fr, batch)
	fr = le.AppendUint32(fr, uint32(f.rows))
	fr = le.AppendUint32(fr, 0)
	// Lay out the buffers after the header.
	for _, c := range f.cols {
		fr = le.AppendUint16(fr, uint16(len(c.name)))
		fr = append(fr, c.name...)
		dtype := uint8(c.dtype)
		if c.kind == tensorKindBytes {
			dtype = c.logical
		}
		flags := uint8(0)
		if c.hasNull {
			flags = 1
		}
		fr = append(fr, c.kind, dtype, uint8(len(c.dims)), flags)
		for _, d := range c.dims {
			fr = le.AppendUint32(fr, d)
		}
		for k, b := range c.buffers() {
			off, n := 0, 0
			if b != nil {
				off, n = pos, len(b)
				if k == 3 {
					n += c.extraLen()
				}
				pos = alignUp(pos + n)
			}
			fr = le.AppendUint64(fr, uint64(off))
			fr = le.AppendUint64(fr, uint64(n))
		}
	}
	if f.source != nil {
		fr = append(fr, f.source...)
		f.source = nil
	}
	fr = appendZeros(fr, alignUp(len(fr))-len(fr))
	var err error
	if f.hasExtents() {
		// Values to read from storage: straight into the frame where the
		// writer places it, or into the columns' buffers first.
		f.frame = fr
		if done, err := f.writeExtents(w, pos); done || err != nil {
			f.reset()
			return err
		}
	}
	if bw, ok := w.(BuffersWriter); ok {
		// The header, then each buffer and its padding as they are.
		f.frame = fr
		iov := append(f.iov[:0], fr)
		for _, c := range f.cols {
			for k, b := range c.buffers() {
				if b == nil {
					continue
				}
				n := len(b)
				iov = append(iov, b)
				if k == 3 {
					if c.borrow != nil {
						iov = append(iov, c.borrow)
					}
					iov = append(iov, c.rows...)
					n += c.extraLen()
				}
				if pad := alignUp(n) - n; pad > 0 {
					iov = append(iov, tensorZeros[:pad])
				}
			}
		}
		err = bw.WriteBuffers(iov)
		clear(iov)
		f.iov = iov[:0]
	} else {
		for _, c := range f.cols {
			for k, b := range c.buffers() {
				if b != nil {
					fr = append(fr, b...)
					if k == 3 {
						fr = append(fr, c.borrow...)
						for _, p := range c.rows {
							fr = append(fr, p...)
						}
					}
					fr = appendZeros(fr, alignUp(len(fr))-len(fr))
				}
			}
		}
		f.frame = fr
		_, err = w.Write(fr)
	}
	f.reset()
	return err
}

// extraLen is the length of the values kept outside values: borrowed,
// in rows, or stored (extents).
func (c *tensorCol) extraLen() int {
	n := len(c.borrow) + c.extLen
	for _, p := range c.rows {
		n += len(p)
	}
	return n
}

// buffers returns the column's validity, offsets, shapes and values
// buffers, nil for an absent one.
func (c *tensorCol) buffers() [4][]byte {
	var b [4][]byte
	if c.hasNull {
		b[0] = c.valid
	}
	if c.kind != tensorKindFixed {
		b[1] = c.offsets
	}
	if c.kind == tensorKindRagged {
		b[2] = nonNil(c.shapes)
	}
	b[3] = nonNil(c.values)
	return b
}

// nonNil returns b, or an empty non-nil slice: a present buffer may be
// empty (a batch of empty values).
func nonNil(b []byte) []byte {
	if b == nil {
		return tensorZeros[:0]
	}
	return b
}

func alignUp(n int) int { return (n + tensorAlign - 1) &^ (tensorAlign - 1) }

// shrink drops buffers grown past the bound a CopyTo keeps.
func (f *tensorFrames) shrink() {
	if cap(f.frame) > maxKeptCopyBuffer {
		f.frame = nil
	}
	for _, c := range f.cols {
		if cap(c.values) > maxKeptCopyBuffer {
			c.values = nil
		}
	}
}
