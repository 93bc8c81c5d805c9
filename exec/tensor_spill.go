package exec

import (
	"bufio"
	"encoding/binary"
	"math"
	"os"
	"slices"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// spillRows holds the rows of an exact shuffle in a temporary file, each
// row's values encoded one after the other (appendSlot); only each row's
// offset stays in memory, 8 bytes a row.
type spillRows struct {
	f    *os.File
	w    *bufio.Writer
	offs []int64
	size int64
	buf  []byte
}

func newSpillRows(f *os.File) *spillRows {
	return &spillRows{f: f, w: bufio.NewWriterSize(f, 1<<20)}
}

// add appends slot s of st.
func (sp *spillRows) add(st *rowStore, s int, f *tensorFrames) error {
	for j := range st.cols {
		if e := st.cols[j].exts; e != nil && e[s].Rows > 0 {
			return pgerror.AssertionFailedf("tensor stream: a stored value's extent in a spilled shuffle")
		}
	}
	if err := checkShuffleIDs(len(sp.offs) + 1); err != nil {
		return err
	}
	sp.buf = st.appendSlot(sp.buf[:0], s, f)
	sp.offs = append(sp.offs, sp.size)
	sp.size += int64(len(sp.buf))
	if _, err := sp.w.Write(sp.buf); err != nil {
		return pgerror.Newf(pgerror.IOError, "could not write to a temporary file of the shuffle: %v", err)
	}
	return nil
}

// finish writes out what add buffered; read works from then on.
func (sp *spillRows) finish() error {
	if err := sp.w.Flush(); err != nil {
		return pgerror.Newf(pgerror.IOError, "could not write to a temporary file of the shuffle: %v", err)
	}
	return nil
}

// read decodes row r into slot 0 of st, which must have one.
func (sp *spillRows) read(r int, st *rowStore, f *tensorFrames) error {
	end := sp.size
	if r+1 < len(sp.offs) {
		end = sp.offs[r+1]
	}
	n := int(end - sp.offs[r])
	sp.buf = slices.Grow(sp.buf[:0], n)[:n]
	if _, err := sp.f.ReadAt(sp.buf, sp.offs[r]); err != nil {
		return pgerror.Newf(pgerror.IOError, "could not read a temporary file of the shuffle: %v", err)
	}
	st.decodeSlot(0, sp.buf, f)
	return nil
}

func (sp *spillRows) close() { sp.f.Close() }

// slotPhys is how a row store holds column c's values: a column sent as
// text holds its text form (rowStore.set), whatever its physical type.
func slotPhys(c *tensorCol) types.Phys {
	if c.text {
		return types.PhysBytes
	}
	return c.typ.Phys()
}

// appendSlot appends slot s's values to dst: for each column a null flag
// byte, then unless null the value, by the column's physical type: a
// byte, 8 little-endian bytes, or a uvarint length and the bytes.
func (st *rowStore) appendSlot(dst []byte, s int, f *tensorFrames) []byte {
	for j := range st.cols {
		c := &st.cols[j]
		if c.nulls[s] {
			dst = append(dst, 1)
			continue
		}
		dst = append(dst, 0)
		switch slotPhys(f.cols[j]) {
		case types.PhysBool:
			b := byte(0)
			if c.bools[s] {
				b = 1
			}
			dst = append(dst, b)
		case types.PhysInt:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(c.ints[s]))
		case types.PhysFloat:
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(c.floats[s]))
		default:
			dst = binary.AppendUvarint(dst, uint64(len(c.bytes[s])))
			dst = append(dst, c.bytes[s]...)
		}
	}
	return dst
}

// decodeSlot sets slot s (s < st.n) from p, as appendSlot wrote it.
func (st *rowStore) decodeSlot(s int, p []byte, f *tensorFrames) {
	for j := range st.cols {
		c := &st.cols[j]
		c.nulls[s] = p[0] == 1
		p = p[1:]
		c.bytes[s] = c.bytes[s][:0]
		if c.exts != nil {
			c.exts[s] = storage.Extent{}
		}
		if c.nulls[s] {
			continue
		}
		switch slotPhys(f.cols[j]) {
		case types.PhysBool:
			c.bools[s] = p[0] == 1
			p = p[1:]
		case types.PhysInt:
			c.ints[s] = int64(binary.LittleEndian.Uint64(p))
			p = p[8:]
		case types.PhysFloat:
			c.floats[s] = math.Float64frombits(binary.LittleEndian.Uint64(p))
			p = p[8:]
		default:
			n, k := binary.Uvarint(p)
			c.bytes[s] = append(c.bytes[s], p[k:k+int(n)]...)
			p = p[k+int(n):]
		}
	}
}

// keep takes row i of cols into an exact shuffle's rows: the store, until
// it holds more than spillAt (Env.spillBudget) and a temporary file can be
// had;
// then the store's rows and every row after go to the file.
func (ts *tensorStream) keep(cols []*types.Vec, i int) error {
	if ts.spill != nil {
		if err := ts.scratch.set(0, cols, i, ts.frames); err != nil { // slot 0 exists
			return err
		}
		return ts.spill.add(ts.scratch, 0, ts.frames)
	}
	if err := ts.store.set(ts.store.n, cols, i, ts.frames); err != nil {
		return err
	}
	if ts.store.size <= ts.spillAt || ts.tempFile == nil {
		return nil
	}
	f, err := ts.tempFile()
	if err != nil {
		return pgerror.Newf(pgerror.IOError, "could not create a temporary file for the shuffle: %v", err)
	}
	ts.spill = newSpillRows(f)
	for s := range ts.store.n {
		if err := ts.spill.add(ts.store, s, ts.frames); err != nil {
			return err
		}
	}
	ts.store = nil
	ts.scratch = newRowStore(len(cols))
	ts.scratch.addSlot()
	return nil
}

// drainSpill sends the rows of the file in a uniformly random order: the
// draws and swaps of finish's Fisher-Yates over the store, made on the
// rows' numbers, so the order is the one the rows in memory would get.
// Rows that START_BATCH skips are not read.
func (ts *tensorStream) drainSpill() error {
	sp := ts.spill
	if err := sp.finish(); err != nil {
		return err
	}
	perm := make([]int, len(sp.offs))
	for i := range perm {
		perm[i] = i
	}
	for k := len(perm) - 1; k >= 0; k-- {
		s := ts.rng.IntN(k + 1)
		perm[s], perm[k] = perm[k], perm[s]
		if ts.skip > 0 {
			ts.skip--
			continue
		}
		if err := sp.read(perm[k], ts.scratch, ts.frames); err != nil {
			return err
		}
		if err := ts.frames.addSlot(ts.scratch, 0); err != nil {
			return err
		}
		if err := ts.maybeFlush(); err != nil {
			return err
		}
	}
	return nil
}
