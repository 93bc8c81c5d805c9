package exec

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/storage"
)

// A tensor stream of a table through shared memory (SHARED_MEMORY), or a
// shuffled one, reads its fixed-width vector and tensor columns straight
// into the frames: the scan gives their rows as hollow windows
// (storage.ScanOptions.Hollow), the frame's columns (and a shuffle
// buffer's slots) keep the windows' extents, and when the writer has
// placed the frame in the shared area the extents are read into it
// there, by several goroutines at once (over the socket, into the
// columns' buffers first). The stored bytes are then copied once, from
// the file system's cache to the area, instead of two or three times.

// A FrameFiller can place a frame of n bytes in memory of its own and
// have fill write it there (wire's SHARED_MEMORY writer). It reports
// false, having called nothing, when the frame must be written with
// Write or WriteBuffers instead.
type FrameFiller interface {
	FillFrame(n int, fill func(dst []byte) error) (bool, error)
}

// extentSplit is the least a goroutine reading a frame's extents reads;
// extentPiece the most read at a time.
const (
	extentSplit = 512 << 10
	extentPiece = 256 << 10
)

// maxExtentWorkers bounds the goroutines reading one frame's extents.
const maxExtentWorkers = 4

// extentJob is an extent to read into dst.
type extentJob struct {
	e   storage.Extent
	dst []byte
}

// extentFill is the state of tensorFrames for reading extents, reused
// from frame to frame.
type extentFill struct {
	fillFn  func([]byte) error
	jobs    []extentJob
	pieces  []extentJob
	next    atomic.Int64
	failed  atomic.Bool
	scratch [][]byte
	errs    []error
	wg      sync.WaitGroup
}

// readHollow makes f read the extents it takes with read; extentOf then
// tells which windows are hollow.
func (f *tensorFrames) readHollow(read func(e storage.Extent, dst []byte, scratch *[]byte) error) {
	f.readExtent = read
	f.fillFn = f.fill
	w := max(2, min(runtime.GOMAXPROCS(0), maxExtentWorkers))
	f.scratch = make([][]byte, w)
	f.errs = make([]error, w)
}

// addExtent appends the rows of e, none NULL, as the frame's rows from r
// on.
func (c *tensorCol) addExtent(e storage.Extent, r int) {
	if e.Rows == 0 {
		return
	}
	for b := r / 8; b < (r+e.Rows+7)/8; b++ {
		if b == len(c.valid) {
			c.valid = append(c.valid, 0)
		}
	}
	for k := r; k < r+e.Rows; k++ {
		c.valid[k/8] |= 1 << (k % 8)
	}
	c.extLen += e.Len()
	if n := len(c.extents); n > 0 && c.extents[n-1].Next(e) {
		c.extents[n-1].Rows += e.Rows
		return
	}
	c.extents = append(c.extents, e)
}

func (f *tensorFrames) hasExtents() bool {
	for _, c := range f.cols {
		if len(c.extents) > 0 {
			return true
		}
	}
	return false
}

// materialize reads c's extents into its values, after the values it
// holds in borrow and rows, which join them first.
func (f *tensorFrames) materialize(c *tensorCol) error {
	c.values = append(c.values, c.borrow...)
	c.borrow = nil
	for _, p := range c.rows {
		c.values = append(c.values, p...)
		if len(p) > 0 && unsafe.SliceData(p) != unsafe.SliceData(c.zeroRow) {
			f.spare = append(f.spare, p[:0])
		}
	}
	clear(c.rows)
	c.rows = c.rows[:0]
	n := len(c.values)
	c.values = slices.Grow(c.values, c.extLen)[:n+c.extLen]
	jobs := f.jobs[:0]
	for _, e := range c.extents {
		jobs = append(jobs, extentJob{e, c.values[n : n+e.Len()]})
		n += e.Len()
	}
	f.jobs = jobs
	clear(c.extents)
	c.extents = c.extents[:0]
	c.extLen = 0
	return f.readJobs(jobs)
}

// writeExtents writes the frame whose header is f.frame, n bytes in all,
// through a FrameFiller, reading the extents straight into it; it
// reports false when w took no frame that way, the extents then read
// into the columns' buffers for the frame to be written as any other.
func (f *tensorFrames) writeExtents(w any, n int) (bool, error) {
	if fw, ok := w.(FrameFiller); ok {
		if done, err := fw.FillFrame(n, f.fillFn); done || err != nil {
			return true, err
		}
	}
	for _, c := range f.cols {
		if len(c.extents) > 0 {
			if err := f.materialize(c); err != nil {
				return true, err
			}
		}
	}
	return false, nil
}

// fill writes the frame into dst: the header and buffers copied, the
// extents read.
func (f *tensorFrames) fill(dst []byte) error {
	p := copy(dst, f.frame)
	jobs := f.jobs[:0]
	for _, c := range f.cols {
		for k, b := range c.buffers() {
			if b == nil {
				continue
			}
			start := p
			p += copy(dst[p:], b)
			if k == 3 {
				p += copy(dst[p:], c.borrow)
				for _, r := range c.rows {
					p += copy(dst[p:], r)
				}
				for _, e := range c.extents {
					jobs = append(jobs, extentJob{e, dst[p : p+e.Len()]})
					p += e.Len()
				}
			}
			end := start + alignUp(p-start)
			clear(dst[p:end]) // the area holds earlier frames' bytes
			p = end
		}
	}
	f.jobs = jobs
	if p != len(dst) {
		return pgerror.AssertionFailedf("tensor frame of %d bytes laid out in %d", p, len(dst))
	}
	return f.readJobs(jobs)
}

// readJobs reads the extents of jobs: in pieces of up to extentPiece
// bytes that up to len(f.scratch) goroutines take in turn, so that one
// held up by other work leaves the rest to the others.
func (f *tensorFrames) readJobs(jobs []extentJob) error {
	total := 0
	for _, j := range jobs {
		total += len(j.dst)
	}
	workers := min(len(f.scratch), total/extentSplit)
	if workers <= 1 {
		return f.readPart(jobs, 0)
	}
	pieces := f.pieces[:0]
	for _, j := range jobs {
		e, dst := j.e, j.dst
		width := e.Width()
		br := e.BlockRows()
		per := max(1, extentPiece/width)
		for e.Rows > 0 {
			n := min(e.Rows, per)
			if end := e.Row + n; n < e.Rows && end%br != 0 && end-end%br > e.Row {
				// End the piece at a block's start: a block split
				// between two pieces would be read and checked twice.
				n = end - end%br - e.Row
			}
			pieces = append(pieces, extentJob{e.Slice(0, n), dst[:n*width]})
			e, dst = e.Slice(n, e.Rows), dst[n*width:]
		}
	}
	f.pieces = pieces
	f.next.Store(0)
	f.failed.Store(false)
	for w := 1; w < workers; w++ {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.errs[w] = f.takePieces(w)
		}()
	}
	f.errs[0] = f.takePieces(0)
	f.wg.Wait()
	clear(f.pieces)
	for w := range workers {
		if err := f.errs[w]; err != nil {
			clear(f.errs)
			return err
		}
	}
	return nil
}

// takePieces reads the pieces of f.pieces not yet taken, one at a time,
// with worker w's scratch buffer, until none is left or one fails (the
// others are then taken but not read).
func (f *tensorFrames) takePieces(w int) error {
	for {
		i := int(f.next.Add(1)) - 1
		if i >= len(f.pieces) {
			return nil
		}
		if f.failed.Load() {
			continue
		}
		j := f.pieces[i]
		if err := f.readExtent(j.e, j.dst, &f.scratch[w]); err != nil {
			f.failed.Store(true)
			return err
		}
	}
}

// readPart reads jobs with worker w's scratch buffer.
func (f *tensorFrames) readPart(jobs []extentJob, w int) error {
	for _, j := range jobs {
		if err := f.readExtent(j.e, j.dst, &f.scratch[w]); err != nil {
			return err
		}
	}
	return nil
}
