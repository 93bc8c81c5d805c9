package exec

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"io"
	"os"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// spillMin is the least memory an operator that holds rows keeps them in
// before it writes them to a temporary file (a sort's sorted runs, an exact
// shuffle of a query's rows); a larger work_mem raises it (a variable for
// tests).
var spillMin int64 = 64 << 20

// spillBudget returns the memory an operator holds rows in before it
// spills: work_mem, or spillMin when that is larger (tensor rows are wide,
// and PostgreSQL's 4 MB default would send most of them to disk), and at
// most maxHeldBytes.
func (e *Env) spillBudget() int64 {
	b := spillMin
	if e.Setting != nil {
		if v, ok := e.Setting("work_mem"); ok {
			if kb, ok := types.MemorySettingKB(v); ok && kb<<10 > b {
				b = kb << 10
			}
		}
	}
	return min(b, maxHeldBytes)
}

// maxHeldBytes bounds the rows an operator holds in memory before it
// spills, whatever work_mem says: a column's values in one vector stay
// well within its 32-bit offsets.
const maxHeldBytes = 1 << 30

// heldBytes is about the memory b's rows take (by length: a batch emptied
// for reuse holds none).
func heldBytes(b *types.Batch) int64 {
	n := int64(b.Len()) * int64(len(b.Cols)) * 10
	for _, c := range b.Cols {
		n += int64(len(c.Bytes.Data))
	}
	return n
}

// sortRuns are the sorted runs of an external sort, one after the other in
// a temporary file (see writeRun).
type sortRuns struct {
	f    *os.File
	w    *bufio.Writer
	size int64
	// ends[i] is where run i ends (run 0 starts at 0).
	ends []int64
	// row holds a row's encoding.
	row []byte
}

// writeRun writes the rows of b in perm's order as the next run: each
// row's length, a uvarint, then the row (types.AppendRow).
func (r *sortRuns) writeRun(b *types.Batch, perm []int) error {
	var head [binary.MaxVarintLen64]byte
	for _, i := range perm {
		r.row = types.AppendRow(r.row[:0], b, i)
		n := binary.PutUvarint(head[:], uint64(len(r.row)))
		if _, err := r.w.Write(head[:n]); err != nil {
			return pgerror.Newf(pgerror.IOError, "could not write to a temporary file of the sort: %v", err)
		}
		if _, err := r.w.Write(r.row); err != nil {
			return pgerror.Newf(pgerror.IOError, "could not write to a temporary file of the sort: %v", err)
		}
		r.size += int64(n + len(r.row))
	}
	r.ends = append(r.ends, r.size)
	return nil
}

// runReader decodes the rows of one run, a block of them at a time, into
// cur; pos is the row of cur at the head of the run.
type runReader struct {
	r   *bufio.Reader
	dec *types.RowDecoder
	cur *types.Batch
	pos int
	// idx orders runs of equal rows: the earlier run's rows came first.
	idx int
	buf []byte
}

// runBlock is the number of rows a run reader decodes at once.
const runBlock = 64

// fill decodes up to runBlock rows into cur; it reports false at the
// run's end.
func (rr *runReader) fill() (bool, error) {
	rr.cur.Reset()
	rr.pos = 0
	n := 0
	for ; n < runBlock; n++ {
		ok, err := rr.readRow()
		if err != nil {
			return false, pgerror.Newf(pgerror.IOError, "could not read a temporary file of the sort: %v", err)
		}
		if !ok {
			break
		}
	}
	rr.cur.SetLen(n)
	return n > 0, nil
}

// readRow decodes one row into cur, or reports false at the run's end.
func (rr *runReader) readRow() (bool, error) {
	n, err := binary.ReadUvarint(rr.r)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if uint64(cap(rr.buf)) < n {
		rr.buf = make([]byte, n)
	}
	rr.buf = rr.buf[:n]
	if _, err := io.ReadFull(rr.r, rr.buf); err != nil {
		return false, err
	}
	return true, rr.dec.Decode(rr.buf)
}

// runHeap orders the runs by their head rows.
type runHeap struct {
	s    *sortOp
	runs []*runReader
}

func (h *runHeap) Len() int { return len(h.runs) }
func (h *runHeap) Less(a, b int) bool {
	x, y := h.runs[a], h.runs[b]
	if h.s.lessRows(x.cur, x.pos, y.cur, y.pos) {
		return true
	}
	if h.s.lessRows(y.cur, y.pos, x.cur, x.pos) {
		return false
	}
	return x.idx < y.idx
}
func (h *runHeap) Swap(a, b int) { h.runs[a], h.runs[b] = h.runs[b], h.runs[a] }
func (h *runHeap) Push(x any)    { h.runs = append(h.runs, x.(*runReader)) }
func (h *runHeap) Pop() any {
	r := h.runs[len(h.runs)-1]
	h.runs = h.runs[:len(h.runs)-1]
	return r
}

// spillRun sorts the rows held in s.all, writes them as a run and empties
// s.all; the first run creates the temporary file.
func (s *sortOp) spillRun() error {
	if s.runs == nil {
		f, err := s.tempFile()
		if err != nil {
			return pgerror.Newf(pgerror.IOError, "could not create a temporary file for the sort: %v", err)
		}
		s.runs = &sortRuns{f: f, w: bufio.NewWriterSize(f, 1<<20)}
	}
	if err := s.sortAll(); err != nil {
		return err
	}
	if err := s.runs.writeRun(s.all, s.perm); err != nil {
		return err
	}
	s.all.Reset()
	s.perm = s.perm[:0]
	return nil
}

// startMerge writes the last run and opens a reader on each.
func (s *sortOp) startMerge(ts []types.Type) error {
	if s.all.Len() > 0 {
		if err := s.spillRun(); err != nil {
			return err
		}
	}
	r := s.runs
	if err := r.w.Flush(); err != nil {
		return pgerror.Newf(pgerror.IOError, "could not write to a temporary file of the sort: %v", err)
	}
	s.all = nil
	s.merge = &runHeap{s: s}
	start := int64(0)
	for i, end := range r.ends {
		rr := &runReader{r: bufio.NewReaderSize(io.NewSectionReader(r.f, start, end-start), 256<<10),
			dec: types.NewRowDecoder(ts), cur: types.NewBatch(ts, runBlock), idx: i}
		rr.dec.Bind(nil, rr.cur)
		start = end
		ok, err := rr.fill()
		if err != nil {
			return err
		}
		if ok {
			s.merge.runs = append(s.merge.runs, rr)
		}
	}
	heap.Init(s.merge)
	return nil
}

// nextMerged fills s.out with the next rows of the merge.
func (s *sortOp) nextMerged() (*types.Batch, error) {
	if err := s.env.canceled(); err != nil {
		return nil, err
	}
	h := s.merge
	s.out.Reset()
	n, limit := int64(0), int64(types.BatchSize)
	if s.bounded {
		// The rows past the first keep are not emitted.
		limit = min(limit, s.keep-s.merged)
	}
	for ; n < limit && h.Len() > 0; n++ {
		rr := h.runs[0]
		for i, c := range s.out.Cols {
			c.AppendFrom(rr.cur.Cols[i], rr.pos)
		}
		if rr.pos++; rr.pos == rr.cur.Len() {
			ok, err := rr.fill()
			if err != nil {
				return nil, err
			}
			if !ok {
				heap.Pop(h)
				continue
			}
		}
		heap.Fix(h, 0)
	}
	if n == 0 {
		return nil, nil
	}
	s.merged += n
	s.out.SetLen(int(n))
	return s.out, nil
}
