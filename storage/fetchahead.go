package storage

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/deeplaked/deeplaked/types"
)

// A RowFetcher reads a row's values one after another, each maybe a read
// of the object store. On a store that serves several reads at once (S3,
// whose every read waits a round trip; a local disk, whose queue takes
// several), it first reads what the next fetchWindow rows need at the same
// time: their chunks' headers, the chunks it reads whole, then the
// checksum blocks of its byte-range reads. Fetch then finds them in place.
// An exact shuffle of an S3 table reads one block per row, so this is the
// difference between one round trip per row and one per window.

// fetchWindow is how many rows a RowFetcher reads ahead at once. Its
// blocks are held until the window's rows are fetched: about 2 MB for a
// column of 16 kB blocks, 8 MB for one written in 64 kB blocks.
const fetchWindow = 128

// concurrentReader is implemented by stores that serve several reads at
// once faster than one after another.
type concurrentReader interface {
	// ReadConcurrency is how many reads one reader should have in flight.
	ReadConcurrency() int
}

// readConcurrency is how many reads a RowFetcher has in flight on s: 1
// for stores that do not say.
func readConcurrency(s ObjectStore) int {
	if c, ok := s.(concurrentReader); ok {
		return max(c.ReadConcurrency(), 1)
	}
	return 1
}

// blockRef names the byte range at off of the chunk stored under key: a
// checksum block read for one of its rows.
type blockRef struct {
	key string
	off int64
}

// fragRow is row r of fragment fr (-1: none), whose unstored chunks are
// in mem.
type fragRow struct {
	fr  *fragment
	mem []*types.Vec
	r   int64
}

// chunkTask is the first prefetch step for one chunk: read it whole into
// the chunk cache, or read its header.
type chunkTask struct {
	key   string
	ck    fragChunk
	c     int
	whole bool
	h     colChunkHeader
	err   error
}

// blockTask is a checksum block to read.
type blockTask struct {
	ref blockRef
	n   int64
	err error
}

// readAhead holds a fetcher's prefetch state, reused window after window.
type readAhead struct {
	conc int
	// pre holds the index in bufs of each block read for the window, or
	// -1 for the one readOne took into fetcher.block.
	pre  map[blockRef]int
	bufs [][]byte
	// rows holds where the window's rows are, row from+i of the fetch
	// at i, once located.
	rows    []fragRow
	from    int
	located bool
	chunks  []chunkTask
	blocks  []blockTask
	seen    map[string]bool
}

// prefetch reads at once what the rows ids need from the object store
// (see fetchWindow). Fetch then reads the rows one by one as before: the
// blocks from ra.pre (taking each into f.block as it uses it), the headers
// and whole chunks from where they always are. The first failed read is
// returned.
func (rf *RowFetcher) prefetch(ctx context.Context, from int, ids []uint64) error {
	f, ra := rf.f, &rf.f.ra
	clear(ra.pre)
	if ra.pre == nil {
		ra.pre = make(map[blockRef]int)
		ra.seen = make(map[string]bool)
	}
	ra.rows, ra.from, ra.located = ra.rows[:0], from, false
	for _, id := range ids {
		x, err := rf.where(id)
		if err != nil {
			return err
		}
		ra.rows = append(ra.rows, x)
	}
	ra.located = true

	// The chunks: headers, and the chunks read whole.
	clear(ra.seen)
	ra.chunks = ra.chunks[:0]
	ra.eachStored(f, func(_ fragRow, c int, ck fragChunk, key string) {
		if _, ok := f.headers[key]; ok || ra.seen[key] || f.db.chunks.has(key) {
			return
		}
		ra.seen[key] = true
		whole := f.readsWhole(c, key, ck)
		if h, ok := f.db.headers.get(key); ok && !whole {
			f.headers[key] = h
			return
		}
		ra.chunks = append(ra.chunks, chunkTask{key: key, ck: ck, c: c, whole: whole})
	})
	ra.run(len(ra.chunks), func(i int) {
		t := &ra.chunks[i]
		typ := f.t.Columns[t.c].Type
		if t.whole {
			_, t.err = f.db.cachedChunk(ctx, f.t, t.key, typ, t.ck)
		} else {
			t.h, t.err = f.readHeader(ctx, t.key, typ)
		}
	})
	for i := range ra.chunks {
		t := &ra.chunks[i]
		if t.err != nil {
			return t.err
		}
		if !t.whole {
			f.headers[t.key] = t.h
			f.db.headers.put(t.key, t.h)
		}
	}

	// The checksum blocks of the rows in chunks read by ranges.
	ra.blocks = ra.blocks[:0]
	ra.eachStored(f, func(x fragRow, _ int, ck fragChunk, key string) {
		h, ok := f.headers[key]
		if !ok || f.db.chunks.has(key) {
			return
		}
		off, n, ok := h.rowRange(int(x.r - ck.Start))
		if !ok || n == 0 {
			return
		}
		ref := blockRef{key, off}
		if _, ok := ra.pre[ref]; ok || (key == f.blockKey && off == f.blockOff && int64(len(f.block)) == n) {
			return
		}
		ra.pre[ref] = len(ra.blocks)
		ra.blocks = append(ra.blocks, blockTask{ref: ref, n: n})
	})
	for len(ra.bufs) < len(ra.blocks) {
		ra.bufs = append(ra.bufs, nil)
	}
	rg, into := f.db.store.(rangeIntoGetter)
	ra.run(len(ra.blocks), func(i int) {
		t := &ra.blocks[i]
		var b []byte
		if into {
			b, t.err = rg.GetRangeInto(ctx, t.ref.key, t.ref.off, t.n, ra.bufs[i][:0])
		} else {
			b, t.err = f.db.store.GetRange(ctx, t.ref.key, t.ref.off, t.n)
		}
		if t.err != nil {
			t.err = ioErrorf(t.err, "reading table %q", f.t.Name)
			return
		}
		ra.bufs[i] = b
	})
	for i := range ra.blocks {
		t := &ra.blocks[i]
		if t.err != nil {
			return t.err
		}
		f.db.stats.RangeReads.Add(1)
		f.db.stats.RangeBytes.Add(t.n)
	}
	return nil
}

// eachStored calls fn for each stored chunk of each row of the window
// found in a fragment: the row, the column, the chunk and its object key.
func (ra *readAhead) eachStored(f *fetcher, fn func(x fragRow, c int, ck fragChunk, key string)) {
	for _, x := range ra.rows {
		if x.r < 0 {
			continue
		}
		for _, c := range f.cols {
			ck := x.fr.Cols[c][x.fr.chunkIndex(c, x.r)]
			if ck.Seq != memChunkSeq {
				fn(x, c, ck, f.key(x.fr, c, ck.Seq))
			}
		}
	}
}

// run calls fn(0), ..., fn(n-1), up to ra.conc of them at once.
func (ra *readAhead) run(n int, fn func(i int)) {
	workers := min(ra.conc, n)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		})
	}
	wg.Wait()
}
