package storage

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/types"
)

// Scanner reads a table's rows in row-id order from one consistent view:
// committed chunks, committed buffered rows and the txn's own writes, minus
// deleted rows.
type Scanner struct {
	db   *DB
	t    *TableDesc
	cols []int
	it   *pebble.Iterator

	out *types.Batch
	ids []uint64
	dec *rowDecoder

	// refs are the chunks not loaded yet, by minimum row id.
	refs []chunkRef
	// active are the loaded chunks with rows left.
	active []*chunkCursor
	// deleted holds the deleted row ids, ascending; delPos advances with
	// the scan.
	deleted []uint64
	delPos  int
	// bufID is the id of the buffered row the iterator is on, if bufOK.
	bufID uint64
	bufOK bool

	err    error
	closed bool
}

type chunkCursor struct {
	ck  *chunk
	pos int
}

// Scan returns a Scanner over table t that reads the column ordinals cols
// (possibly none, as for count(*)).
func (txn *Txn) Scan(t *TableDesc, cols []int) (*Scanner, error) {
	if err := txn.check(); err != nil {
		return nil, err
	}
	for _, c := range cols {
		if c < 0 || c >= len(t.Columns) {
			return nil, assertf("scan of %q: column %d out of range", t.Name, c)
		}
	}
	lo, hi := tableSpan(t.ID)
	it, err := txn.b.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, ioErrorf(err, "scanning %q", t.Name)
	}
	s := &Scanner{db: txn.db, t: t, cols: cols, it: it, dec: newRowDecoder(t)}
	ts := make([]types.Type, len(cols))
	for j, c := range cols {
		ts[j] = t.Columns[c].Type
	}
	s.out = types.NewBatch(ts, types.BatchSize)
	s.dec.bind(cols, s.out)
	if err := s.init(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// init reads the chunk refs and deletion markers and positions the
// iterator on the first buffered row, all through the one iterator.
func (s *Scanner) init() error {
	id := s.t.ID
	lo, hi := sectionSpan(id, tagChunk)
	for ok := s.it.SeekGE(lo); ok && string(s.it.Key()) < string(hi); ok = s.it.Next() {
		ref, err := decodeChunkRef(s.it.Value())
		if err != nil {
			return fmt.Errorf("table %q: %w", s.t.Name, err)
		}
		s.refs = append(s.refs, ref)
	}
	sort.Slice(s.refs, func(i, j int) bool { return s.refs[i].minRow < s.refs[j].minRow })
	lo, hi = sectionSpan(id, tagDelete)
	for ok := s.it.SeekGE(lo); ok && string(s.it.Key()) < string(hi); ok = s.it.Next() {
		rid, ok := idFromKey(s.it.Key())
		if !ok {
			return corruptionf("table %q: bad deletion key %x", s.t.Name, s.it.Key())
		}
		s.deleted = append(s.deleted, rid)
	}
	lo, _ = sectionSpan(id, tagRow)
	s.it.SeekGE(lo)
	s.advanceBuffered(false)
	return s.it.Error()
}

// advanceBuffered moves to the next buffered row (if next) and records its id.
func (s *Scanner) advanceBuffered(next bool) {
	if next {
		s.it.Next()
	}
	s.bufOK = false
	if !s.it.Valid() {
		return
	}
	k := s.it.Key()
	if len(k) < 10 || k[9] != tagRow {
		return
	}
	if id, ok := idFromKey(k); ok {
		s.bufID, s.bufOK = id, true
	} else {
		s.err = corruptionf("table %q: bad buffered row key %x", s.t.Name, k)
	}
}

// isDeleted reports whether row id is deleted. Ids must be asked in
// increasing order.
func (s *Scanner) isDeleted(id uint64) bool {
	for s.delPos < len(s.deleted) && s.deleted[s.delPos] < id {
		s.delPos++
	}
	return s.delPos < len(s.deleted) && s.deleted[s.delPos] == id
}

// Next returns the next batch of up to types.BatchSize rows and their row
// ids, or a nil batch at the end. The batch and the slice are reused: they
// are valid until the next call to Next.
func (s *Scanner) Next() (*types.Batch, []uint64, error) {
	if s.err != nil || s.closed {
		return nil, nil, s.err
	}
	s.out.Reset()
	s.ids = s.ids[:0]
	for len(s.ids) < types.BatchSize {
		// Find the source holding the smallest next row id, and the
		// smallest id any other source could produce.
		const none = math.MaxUint64
		best, bound := uint64(none), uint64(none)
		src := -3 // -1 buffered, -2 unloaded chunk, >= 0 active chunk
		consider := func(id uint64, which int) {
			if id < best {
				best, bound, src = id, best, which
			} else if id < bound {
				bound = id
			}
		}
		if s.bufOK {
			consider(s.bufID, -1)
		}
		if len(s.refs) > 0 {
			consider(s.refs[0].minRow, -2)
		}
		for i, a := range s.active {
			consider(a.ck.rowIDs[a.pos], i)
		}
		switch {
		case src == -3:
			return s.finish()
		case bound == best && src != -2:
			s.err = corruptionf("table %q: row %d stored twice", s.t.Name, best)
			return nil, nil, s.err
		case src == -2:
			ck, err := s.db.loadChunk(context.Background(), s.t, s.refs[0])
			if err != nil {
				s.err = err
				return nil, nil, err
			}
			s.refs = s.refs[1:]
			s.active = append(s.active, &chunkCursor{ck: ck})
		case src == -1:
			s.readBuffered(bound)
			if s.err != nil {
				return nil, nil, s.err
			}
		default:
			a := s.active[src]
			s.readChunk(a, bound)
			if a.pos == len(a.ck.rowIDs) {
				s.active = append(s.active[:src], s.active[src+1:]...)
			}
		}
	}
	return s.finish()
}

func (s *Scanner) finish() (*types.Batch, []uint64, error) {
	if err := s.it.Error(); err != nil && s.err == nil {
		s.err = ioErrorf(err, "scanning %q", s.t.Name)
	}
	if s.err != nil {
		return nil, nil, s.err
	}
	if len(s.ids) == 0 {
		return nil, nil, nil
	}
	if len(s.cols) == 0 {
		s.out.SetLen(len(s.ids))
	}
	return s.out, s.ids, nil
}

// readBuffered decodes buffered rows with ids below bound into the batch.
func (s *Scanner) readBuffered(bound uint64) {
	for s.bufOK && s.bufID < bound && len(s.ids) < types.BatchSize {
		if !s.isDeleted(s.bufID) {
			if err := s.dec.decode(s.it.Value()); err != nil {
				s.err = fmt.Errorf("table %q, row %d: %w", s.t.Name, s.bufID, err)
				return
			}
			s.ids = append(s.ids, s.bufID)
		}
		s.advanceBuffered(true)
	}
}

// readChunk copies rows of a with ids below bound into the batch, in runs
// between deleted rows.
func (s *Scanner) readChunk(a *chunkCursor, bound uint64) {
	ids := a.ck.rowIDs
	run := a.pos
	flush := func(end int) {
		if end > run {
			for j, c := range s.cols {
				appendRange(s.out.Cols[j], a.ck.cols[c], run, end)
			}
			s.ids = append(s.ids, ids[run:end]...)
		}
	}
	i := a.pos
	for ; i < len(ids) && ids[i] < bound && len(s.ids)+(i-run) < types.BatchSize; i++ {
		if s.isDeleted(ids[i]) {
			flush(i)
			run = i + 1
		}
	}
	flush(i)
	a.pos = i
}

// appendRange appends rows [i, j) of src to dst (same physical layout).
func appendRange(dst, src *types.Vec, i, j int) {
	dst.Nulls = append(dst.Nulls, src.Nulls[i:j]...)
	switch dst.Type.Phys() {
	case types.PhysBool:
		dst.Bools = append(dst.Bools, src.Bools[i:j]...)
	case types.PhysInt:
		dst.Ints = append(dst.Ints, src.Ints[i:j]...)
	case types.PhysFloat:
		dst.Floats = append(dst.Floats, src.Floats[i:j]...)
	default:
		if len(dst.Bytes.Offsets) == 0 {
			dst.Bytes.Offsets = append(dst.Bytes.Offsets, 0)
		}
		so := src.Bytes.Offsets
		base := dst.Bytes.Offsets[len(dst.Bytes.Offsets)-1] - so[i]
		dst.Bytes.Data = append(dst.Bytes.Data, src.Bytes.Data[so[i]:so[j]]...)
		for _, o := range so[i+1 : j+1] {
			dst.Bytes.Offsets = append(dst.Bytes.Offsets, o+base)
		}
	}
}

// Close releases the scanner's iterator. It is safe to call twice.
func (s *Scanner) Close() {
	if s.closed {
		return
	}
	s.closed = true
	if err := s.it.Close(); err != nil && s.err == nil {
		s.err = ioErrorf(err, "closing scan of %q", s.t.Name)
	}
}
