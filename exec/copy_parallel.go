package exec

import (
	"bufio"
	"bytes"
	"io"
	"slices"
	"sync"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// Text and CSV rows are parsed in parallel. One goroutine reads the
// client's stream and cuts it into blocks of whole rows (copySplitter),
// workers parse blocks into batches, and the statement's goroutine inserts
// the batches in the order of the blocks: rows keep their input order, so
// row ids follow it, and the first error of the input is the one
// reported, with its line. A fixed number of blocks exists at once, so
// memory stays bounded however long the stream is; they are charged to
// the statement's memory account.

// copyBlock is a run of whole rows of the input and, once parsed, their
// batches.
type copyBlock struct {
	data []byte
	// plain is set when data holds no quote or backslash.
	plain bool
	// physical and logical count the lines before the block's first, as
	// textReader counts them.
	physical, logical int64
	// batches[:used] hold the block's rows, copyBatchRows to a batch but
	// the last; lines holds each row's line number.
	batches []*copyBatch
	used    int
	lines   []int64
	// err is the error that ends the input in this block: a row's, after
	// the rows before it, or the stream's.
	err error
	// held is what the block is charged at.
	held int64
	// ready receives once the block is parsed.
	ready chan struct{}
}

// copyBatch is a batch of the table's columns and its Vecs of the input
// fields, in field order.
type copyBatch struct {
	b      *types.Batch
	target []*types.Vec
}

// batch returns the block's i-th batch, empty.
func (blk *copyBlock) batch(cf *copyFrom, i int) *copyBatch {
	if i == len(blk.batches) {
		cb := &copyBatch{b: types.NewBatch(cf.n.Table.ColumnTypes(), copyBatchRows)}
		for _, c := range cf.n.Target {
			cb.target = append(cb.target, cb.b.Cols[c])
		}
		blk.batches = append(blk.batches, cb)
	}
	cb := blk.batches[i]
	cb.b.Reset()
	return cb
}

// size is the memory the block holds.
func (blk *copyBlock) size() int64 {
	n := int64(cap(blk.data)) + 8*int64(cap(blk.lines))
	for _, cb := range blk.batches {
		n += batchBytes(cb.b)
	}
	return n
}

// copyBatchKept is the most memory a batch of a block keeps for reuse:
// one that held long values gives its buffers up.
const copyBatchKept = 4 * copyBatchBytes

// copyPipe runs the goroutines of one COPY FROM in text or CSV format.
type copyPipe struct {
	cf *copyFrom
	sp *copySplitter

	// mu guards acct, which the splitter and the workers charge.
	mu   sync.Mutex
	acct *MemAccount

	free, work, ordered chan *copyBlock
	stop                chan struct{}
}

// runText executes COPY FROM in text or CSV format over br.
func (cf *copyFrom) runText(br *bufio.Reader) (int64, error) {
	head := newTextReader(cf, br)
	if err := head.readHeader(); err != nil {
		return 0, err
	}
	if head.done {
		return 0, nil
	}
	workers := max(cf.workers, 1)
	inFlight := 2*workers + 1
	p := &copyPipe{
		cf:      cf,
		sp:      &copySplitter{br: br, d: head, size: max(cf.blockSize, 1), physical: head.physical, logical: head.logical},
		acct:    cf.env.account("COPY FROM's blocks of input"),
		free:    make(chan *copyBlock, inFlight),
		work:    make(chan *copyBlock, inFlight),
		ordered: make(chan *copyBlock, inFlight),
		stop:    make(chan struct{}),
	}
	defer p.acct.Close()
	for range inFlight {
		p.free <- &copyBlock{ready: make(chan struct{}, 1)}
	}
	go p.split()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.parse()
		}()
	}
	// NB: after an error (or a panic) the blocks are still received, so
	// that the splitter, which may be waiting for the client, is done
	// with the stream before it is given back.
	defer func() {
		if r := recover(); r != nil {
			p.halt()
			for blk := range p.ordered {
				<-blk.ready
			}
			wg.Wait()
			panic(r)
		}
	}()
	var err error
	for blk := range p.ordered {
		<-blk.ready
		if err == nil {
			if err = p.insert(blk); err != nil {
				p.halt()
			}
		}
		p.recycle(blk)
	}
	wg.Wait()
	return cf.count, err
}

// halt stops the splitter and the workers; only the inserter calls it.
func (p *copyPipe) halt() {
	if !p.stopped() {
		close(p.stop)
	}
}

// insert inserts the rows of blk and returns its error.
func (p *copyPipe) insert(blk *copyBlock) error {
	for j := range blk.used {
		lo := j * copyBatchRows
		hi := min(lo+copyBatchRows, len(blk.lines))
		if err := p.cf.insertRows(blk.batches[j].b, blk.lines[lo:hi]); err != nil {
			return err
		}
	}
	return blk.err
}

// recycle returns blk to the free blocks, without the buffers that long
// rows or values grew.
func (p *copyPipe) recycle(blk *copyBlock) {
	blk.err, blk.used = nil, 0
	dropped := false
	if cap(blk.data) > 2*p.sp.size+copyReadBuffer {
		blk.data, dropped = nil, true
	}
	for _, cb := range blk.batches {
		if batchBytes(cb.b) > copyBatchKept {
			blk.batches, dropped = nil, true
			break
		}
	}
	if dropped {
		_ = p.charge(blk) // it only shrinks
	}
	p.free <- blk
}

// charge records what blk holds now in the memory account.
func (p *copyPipe) charge(blk *copyBlock) error {
	n := blk.size()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.acct.Grow(n - blk.held); err != nil {
		return err
	}
	blk.held = n
	return nil
}

func (p *copyPipe) stopped() bool {
	select {
	case <-p.stop:
		return true
	default:
		return false
	}
}

// split cuts the stream into blocks until it ends, fails or the pipe
// stops, and hands each block to the workers and to the inserter.
func (p *copyPipe) split() {
	defer close(p.work)
	defer close(p.ordered)
	for !p.stopped() {
		var blk *copyBlock
		select {
		case blk = <-p.free:
		case <-p.stop:
			return
		}
		last, err := p.next(blk)
		blk.plain = !p.sp.special(blk.data)
		if err == nil {
			err = p.charge(blk)
		}
		if err != nil {
			blk.data, blk.used, blk.err = blk.data[:0], 0, err
			blk.ready <- struct{}{}
			p.ordered <- blk
			return
		}
		p.ordered <- blk
		p.work <- blk
		if last {
			return
		}
	}
}

// next is p.sp.next, with a panic turned into an error.
func (p *copyPipe) next(blk *copyBlock) (last bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			last, err = true, pgerror.AssertionFailedf("COPY: %v", r)
		}
	}()
	return p.sp.next(blk)
}

// parse parses the blocks handed to a worker.
func (p *copyPipe) parse() {
	w := newTextReader(p.cf, nil)
	for blk := range p.work {
		if !p.stopped() {
			p.parseBlock(w, blk)
			if err := p.charge(blk); err != nil && blk.err == nil {
				blk.err = err
			}
		}
		blk.ready <- struct{}{}
	}
}

// parseBlock parses blk's rows into its batches with d.
func (p *copyPipe) parseBlock(d *textReader, blk *copyBlock) {
	defer func() {
		if r := recover(); r != nil {
			blk.err = pgerror.AssertionFailedf("COPY: %v", r)
		}
	}()
	cf := p.cf
	blk.used, blk.lines = 0, blk.lines[:0]
	cb := blk.batch(cf, 0)
	d.reset(blk.data, blk.plain, blk.physical, blk.logical, cb.target)
	rows := 0
	for {
		if rows == copyBatchRows {
			blk.used++
			cb = blk.batch(cf, blk.used)
			d.target, rows = cb.target, 0
		}
		ok, err := d.readRow()
		if err != nil {
			// The rows before the bad one are inserted (one of them may
			// fail first); the bad one's fields read so far are not.
			for _, v := range cb.target {
				v.Truncate(rows)
			}
			blk.err = err
			break
		}
		if !ok {
			break
		}
		blk.lines = append(blk.lines, d.line)
		rows++
	}
	if rows > 0 {
		blk.used++
	}
}

// copySplitter cuts the client's stream into blocks of whole rows where
// textReader would end them: never inside a quoted CSV field or after an
// escaped newline in text. Where a block holds no byte that can quote or
// escape a newline (a quote, a backslash), every newline ends a row and
// the cut is found with a byte search; elsewhere the rows are scanned as
// textReader scans them. It counts the lines before each block so that
// its rows are numbered as PostgreSQL numbers them, and stops reading at
// an end-of-data marker, discarding the rest of the stream as PostgreSQL
// does.
type copySplitter struct {
	br *bufio.Reader
	// d holds the options; its scan decides where rows end.
	d *textReader
	// size is the least a block holds, the rest of the stream aside.
	size int
	// physical and logical count the lines before the next block.
	physical, logical int64
	// carry is the start of the next block, read with the last one.
	carry []byte
	// eof is set at the end of the stream, done after the last block;
	// err is returned after the block that precedes it.
	eof, done bool
	err       error
}

// cutState is where a search for a block's end resumes: a row start, and
// the lines before it.
type cutState struct {
	pos               int
	physical, logical int64
}

// mark is what ends a block besides a row end.
type mark int

const (
	markNone mark = iota
	// markEnd: an end-of-data marker; the block holds it.
	markEnd
	// markBad: a corrupt end-of-data marker; the block holds its line,
	// whose reading fails.
	markBad
)

// next fills blk with the next block; last reports that none follows.
// An error is the stream's, or a row too long.
func (s *copySplitter) next(blk *copyBlock) (last bool, err error) {
	if s.err != nil || s.done {
		return true, s.err
	}
	data := append(blk.data[:0], s.carry...)
	s.carry = s.carry[:0]
	st := cutState{physical: s.physical, logical: s.logical}
	blk.physical, blk.logical = s.physical, s.logical
	want := s.size
	for {
		var rerr error
		data, rerr = s.fill(data, want)
		if rerr != nil {
			// The rows read before the failure go first.
			s.cut(data, len(data)+1, &st)
			if st.pos == 0 {
				blk.data = data[:0]
				return true, rerr
			}
			s.err = rerr
			blk.data = data[:st.pos]
			return false, nil
		}
		found, m := s.cut(data, s.size, &st)
		switch {
		case m != markNone:
			blk.data = data[:st.pos]
			s.done = true
			if m == markEnd {
				if _, err := io.Copy(io.Discard, s.br); err != nil {
					s.done, s.err = false, err
					return false, nil
				}
			}
			return true, nil
		case found:
			blk.data = data[:st.pos]
			s.carry = append(s.carry, data[st.pos:]...)
			s.physical, s.logical = st.physical, st.logical
			return false, nil
		case s.eof:
			blk.data = data
			s.done = true
			return true, nil
		case len(data)-st.pos > maxCopyRow:
			if st.pos == 0 {
				blk.data = data[:0]
				return true, rowTooLong()
			}
			s.err = rowTooLong()
			blk.data = data[:st.pos]
			return false, nil
		}
		// A row goes on past what was read: read as much again as it
		// holds so far, so that the rescans stay linear.
		want = len(data) + max(copyReadBuffer, len(data)-st.pos)
	}
}

// fill reads into data until it holds want bytes or the stream ends.
func (s *copySplitter) fill(data []byte, want int) ([]byte, error) {
	for len(data) < want && !s.eof {
		data = slices.Grow(data, want-len(data))
		n, err := s.br.Read(data[len(data):want])
		data = data[:len(data)+n]
		switch {
		case err == io.EOF:
			s.eof = true
		case err != nil:
			return data, err
		}
	}
	return data, nil
}

// cut looks in data, from the row start st, for the end of the first row
// that ends at or past min; found reports one, st is then at its end. If
// none, st is at the last row start seen. A marker ends the search.
func (s *copySplitter) cut(data []byte, min int, st *cutState) (found bool, m mark) {
	end := -1
	if from := max(st.pos, min-1); from < len(data) {
		if k := bytes.IndexByte(data[from:], '\n'); k >= 0 {
			end, found = from+k+1, true
		}
	}
	if end < 0 {
		k := bytes.LastIndexByte(data[st.pos:], '\n')
		if k < 0 {
			return false, markNone
		}
		end = st.pos + k + 1
	}
	if s.special(data[st.pos:end]) {
		return s.walk(data, min, st)
	}
	n := int64(bytes.Count(data[st.pos:end], []byte{'\n'}))
	st.pos, st.physical, st.logical = end, st.physical+n, st.logical+n
	return found, markNone
}

// special reports whether b holds a byte that can make a newline part of
// a row, or start an end-of-data marker.
func (s *copySplitter) special(b []byte) bool {
	if bytes.IndexByte(b, '\\') >= 0 {
		return true
	}
	return s.d.csv && bytes.IndexByte(b, s.d.opts.Quote) >= 0
}

// walk is cut scanning row by row, as textReader.readLine does.
func (s *copySplitter) walk(data []byte, min int, st *cutState) (found bool, m mark) {
	d := s.d
	for st.pos < len(data) {
		pos, lines := st.pos, int64(0)
		var sc lineScan
		for {
			k := bytes.IndexByte(data[pos:], '\n')
			if k < 0 {
				return false, markNone // the row goes on past data
			}
			end := pos + k + 1
			lines++
			if lines == 1 && d.csv {
				if l := string(data[pos:end]); l == "\\.\n" || l == "\\.\r\n" {
					st.pos = end
					return false, markEnd
				}
			}
			more, marker, err := d.scan(&sc, data[st.pos:end])
			pos = end
			switch {
			case err != nil:
				st.pos = end
				return false, markBad
			case marker >= 0:
				st.pos = end
				return false, markEnd
			}
			if !more {
				break
			}
		}
		st.pos, st.physical, st.logical = pos, st.physical+lines, st.logical+1
		if pos >= min {
			return true, markNone
		}
	}
	return false, markNone
}
