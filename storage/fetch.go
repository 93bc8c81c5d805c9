package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"sort"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/types"
)

// FetchRows reads the rows with the given ids (in that order) from the
// txn's snapshot, for random access such as exact-permutation sampling.
// Ids of rows that don't exist or are deleted are left out; the returned
// ids say which rows the batch holds. From an uncompressed fixed-width
// chunk only the checksum block around the row is read (a byte-range
// read); other chunks are read whole.
func (txn *Txn) FetchRows(t *TableDesc, cols []int, ids []uint64) (*types.Batch, []uint64, error) {
	rf, err := txn.NewRowFetcher(t, cols, 0)
	if err != nil {
		return nil, nil, err
	}
	defer rf.Close()
	return rf.Fetch(ids, nil)
}

// RowFetcher reads rows by id, as FetchRows does, call after call: the
// deletions, the fragments and the txn's own writes it looks at are read
// once, when it is made, and the chunk headers and checksum blocks it reads
// are kept between calls. Close releases it.
type RowFetcher struct {
	txn *Txn
	t   *TableDesc
	// cols are the stored columns to read; rowID places _rowid among
	// them when it is asked, and stored is then the batch of dst's
	// stored columns.
	cols   []int
	rowID  *rowIDCols
	stored types.Batch
	// s holds the deleted ids (sorted) and the row decoder.
	s *Scanner
	// tt is the txn's own writes (nil as of a version); own and ownMem
	// its fragment being written, if any.
	tt     *txnTable
	frags  []*fragment
	own    *fragment
	ownMem []*types.Vec
	f      *fetcher
	found  []uint64
	key    []byte
	// hollow holds, by chunk key, the chunks Extents found readable
	// straight (nil for those that are not).
	hollow map[string]*hollowChunk
	// lookups counts the rows looked for among the buffered rows; past
	// bufferedCheckRows, noBuffered says whether the snapshot holds none
	// (checked once), and then no row is looked for there.
	lookups    int
	noBuffered bool
	// upTo is the last version whose deletions count. The deleted ids
	// are looked up one by one (a point read of each id's deletion
	// marker) until pointChecks reaches pointCheckRows; then all of them
	// are loaded into s.deleted (loaded), once.
	upTo        uint64
	loaded      bool
	pointChecks int
	// checked is set once checkSections has run.
	checked bool
}

// pointCheckRows is how many rows a RowFetcher checks for deletion one by
// one before it loads every deletion marker of the table: a primary key
// lookup reads one marker key, not all of them, while a stream of many
// rows reads them all once.
const pointCheckRows = 4096

// deleted reports whether row id is deleted as rf reads the table.
func (rf *RowFetcher) deleted(id uint64) (bool, error) {
	if tt := rf.tt; tt != nil {
		if _, ok := tt.deleted[id]; ok {
			return true, nil
		}
		if _, ok := tt.ownDel[id]; ok {
			return true, nil
		}
	}
	if !rf.loaded && rf.pointChecks >= pointCheckRows {
		if err := rf.s.loadDeleted(rf.txn.snap, rf.upTo); err != nil {
			return false, err
		}
		rf.loaded = true
	}
	if rf.loaded {
		d := rf.s.deleted
		i := sort.Search(len(d), func(i int) bool { return d[i] >= id })
		return i < len(d) && d[i] == id, nil
	}
	rf.pointChecks++
	rf.key = appendIDKey(rf.key[:0], rf.t.ID, tagDelete, id)
	v, closer, err := rf.txn.snap.Get(rf.key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, ioErrorf(err, "reading table %q", rf.t.Name)
	}
	defer closer.Close()
	x, n := binary.Uvarint(v)
	if n <= 0 {
		return false, corruptionf("table %q: bad deletion marker %x", rf.t.Name, rf.key)
	}
	return x <= rf.upTo, nil
}

// NewRowFetcher returns a RowFetcher of columns cols of table t. With asOf
// not 0 the rows are read as version asOf of the table has them (the ids
// of a scan with ScanOptions.AsOf): rows deleted since are found, and the
// txn's own writes are not seen.
func (txn *Txn) NewRowFetcher(t *TableDesc, cols []int, asOf uint64) (*RowFetcher, error) {
	if err := txn.check(); err != nil {
		return nil, err
	}
	if asOf == 0 {
		asOf = t.AsOf
	}
	for _, c := range cols {
		if c < 0 || c > RowIDColumn(t) {
			return nil, assertf("fetch from %q: column %d out of range", t.Name, c)
		}
	}
	cols, rowID := splitRowID(t, cols)
	s := newScannerCap(txn.db, t, ScanOptions{Cols: cols}, 0)
	rf := &RowFetcher{txn: txn, t: t, cols: cols, rowID: rowID, s: s, upTo: math64(asOf),
		f: &fetcher{db: txn.db, t: t, cols: cols, headers: make(map[string]colChunkHeader),
			ra: readAhead{conc: readConcurrency(txn.db.store)}}}
	if tt := txn.tables[t.ID]; tt != nil && asOf == 0 {
		rf.tt = tt
		if tt.w != nil {
			var err error
			if rf.own, rf.ownMem, err = tt.w.view(); err != nil {
				s.Close()
				return nil, err
			}
		}
	}
	for _, lt := range viewTables(t) {
		fs, err := txn.liveFragments(lt)
		if err != nil {
			s.Close()
			return nil, err
		}
		rf.frags = append(rf.frags, fs...)
	}
	if len(t.Base) > 0 {
		// A branch's view: its deletions are its layers' and its own,
		// each up to its version, loaded at once. The ids asked are
		// those of a scan of the view: a layer's row it does not read
		// (committed after its version) is not asked for.
		if err := s.loadView(txn.snap, asOf); err != nil {
			s.Close()
			return nil, err
		}
		rf.loaded = true
	}
	rf.f.frags = rf.frags
	return rf, nil
}

// Close releases rf.
func (rf *RowFetcher) Close() { rf.s.Close() }

// Fetch reads the rows with the given ids, in that order, into dst (reset
// first; its columns have cols' types), or into a new batch when dst is
// nil. Ids of rows that don't exist or are deleted are left out; the
// returned ids, valid until the next Fetch, say which rows the batch holds.
// With _rowid among the columns, the batch returned is not dst but one
// over dst's other columns, valid until the next Fetch.
func (rf *RowFetcher) Fetch(ids []uint64, dst *types.Batch) (*types.Batch, []uint64, error) {
	r := rf.rowID
	if r == nil {
		return rf.fetch(ids, dst)
	}
	var stored *types.Batch
	if dst != nil {
		if len(dst.Cols) != r.n {
			return nil, nil, assertf("fetch from %q: %d columns to fill, %d asked", rf.t.Name, len(dst.Cols), r.n)
		}
		stored = &rf.stored
		stored.Cols = stored.Cols[:0]
		a := 0
		for j, v := range dst.Cols {
			if a < len(r.at) && r.at[a] == j {
				a++
				continue
			}
			stored.Cols = append(stored.Cols, v)
		}
	}
	b, found, err := rf.fetch(ids, stored)
	if err != nil {
		return nil, nil, err
	}
	return r.merge(b, found), found, nil
}

// fetch is Fetch of the stored columns.
func (rf *RowFetcher) fetch(ids []uint64, dst *types.Batch) (*types.Batch, []uint64, error) {
	if err := rf.txn.check(); err != nil {
		return nil, nil, err
	}
	t, s, tt := rf.t, rf.s, rf.tt
	if dst == nil {
		ts := make([]types.Type, len(rf.cols))
		for j, c := range rf.cols {
			ts[j] = t.Columns[c].Type
		}
		dst = types.NewBatch(ts, min(len(ids), types.BatchSize))
	} else if len(dst.Cols) != len(rf.cols) {
		return nil, nil, assertf("fetch from %q: %d columns to fill, %d asked", t.Name, len(dst.Cols), len(rf.cols))
	}
	dst.Reset()
	s.dec.Bind(rf.cols, dst)
	rf.f.out = dst
	if len(ids) > 1 {
		if err := rf.checkSections(); err != nil {
			return nil, nil, err
		}
	}
	found := rf.found[:0]
	for k, id := range ids {
		if rf.f.ra.conc > 1 && k%fetchWindow == 0 {
			if err := rf.prefetch(context.Background(), k, ids[k:min(k+fetchWindow, len(ids))]); err != nil {
				return nil, nil, err
			}
		}
		del, err := rf.deleted(id)
		if err != nil {
			return nil, nil, err
		}
		if del {
			continue
		}
		ok := false
		// The txn's own unspilled rows.
		if tt != nil {
			if i := sort.Search(len(tt.pendingIDs), func(i int) bool { return tt.pendingIDs[i] >= id }); i < len(tt.pendingIDs) && tt.pendingIDs[i] == id {
				for j, c := range rf.cols {
					dst.Cols[j].AppendFrom(tt.pending.Cols[c], i)
				}
				ok = true
			}
		}
		// A buffered row, when the snapshot has any (a flush moves rows
		// from the buffer into a fragment in one commit: a row is in one
		// or the other).
		if !ok && !rf.noBuffered {
			if rf.lookups++; rf.lookups == bufferedCheckRows {
				rf.checked = false
				if err := rf.checkSections(); err != nil {
					return nil, nil, err
				}
			}
		}
		if !ok && !rf.noBuffered {
			var err error
			if ok, err = rf.buffered(id); err != nil {
				return nil, nil, err
			}
		}
		// A row in a fragment: located by the prefetch, or here.
		if !ok {
			var x fragRow
			if ra := &rf.f.ra; ra.located {
				x = ra.rows[k-ra.from]
			} else if x, err = rf.where(id); err != nil {
				return nil, nil, err
			}
			if x.r >= 0 {
				if err := rf.f.readRow(x); err != nil {
					return nil, nil, err
				}
				ok = true
			}
		}
		if ok {
			found = append(found, id)
			if len(found) == 1 {
				reserveRows(dst, len(ids)-k)
			}
		}
	}
	rf.found = found
	dst.SetLen(len(found))
	return dst, found, nil
}

// buffered reads row id from the buffered rows into the batch bound to
// rf.s.dec, if it is one: of t's own table, or of a branch's layer at most
// as new as the layer's version.
func (rf *RowFetcher) buffered(id uint64) (bool, error) {
	t := rf.t
	for i := len(t.Base); i >= 0; i-- {
		table, upTo := t.ID, rf.upTo
		if i < len(t.Base) {
			table, upTo = t.Base[i].Table, t.Base[i].Version
		}
		rf.key = appendIDKey(rf.key[:0], table, tagRow, id)
		v, closer, err := rf.txn.snap.Get(rf.key)
		if errors.Is(err, pebble.ErrNotFound) {
			continue
		}
		if err != nil {
			return false, ioErrorf(err, "reading row %d of %q", id, t.Name)
		}
		x, n := binary.Uvarint(v)
		if n <= 0 {
			closer.Close()
			return false, corruptionf("table %q: bad buffered row %d", t.Name, id)
		}
		if x > upTo {
			closer.Close()
			return false, nil
		}
		err = decodeBuffered(rf.s.dec, v[n:])
		closer.Close()
		if err != nil {
			return false, inTable(err, "table %q, row %d", t.Name, id)
		}
		return true, nil
	}
	return false, nil
}

// reserveRows makes room in the bytes columns of b, which hold one row,
// for n rows (a batch's at most) of that row's sizes: a batch of large
// values (images) then grows once, not by doubling from its first row.
func reserveRows(b *types.Batch, n int) {
	n = min(n, types.BatchSize)
	for _, v := range b.Cols {
		if v.Type.Phys() == types.PhysBytes && v.Len() == 1 {
			v.Bytes.Data = slices.Grow(v.Bytes.Data, len(v.Bytes.Data)*(n-1))
		}
	}
}

// fetcher reads single rows out of fragments.
type fetcher struct {
	db      *DB
	t       *TableDesc
	cols    []int
	out     *types.Batch
	headers map[string]colChunkHeader
	// block holds the last byte range read: blockOff of object blockKey.
	block    []byte
	blockKey string
	blockOff int64
	// keys holds the object keys of the chunks read, built once each.
	keys map[chunkRef]string
	// ra reads ahead on stores that serve concurrent reads.
	ra readAhead
	// frags are the fragments read (for fitsCache); colFits caches
	// fitsCache by column.
	frags   []*fragment
	colFits map[int]bool
}

// chunkRef names a chunk of a fragment's stored column.
type chunkRef struct {
	frag uint64
	col  int
	seq  uint32
}

// key returns the object key of chunk seq of column col of fr.
func (f *fetcher) key(fr *fragment, col int, seq uint32) string {
	ref := chunkRef{fr.ID, col, seq}
	k, ok := f.keys[ref]
	if !ok {
		if f.keys == nil {
			f.keys = make(map[chunkRef]string)
		}
		k = fragChunkKey(fr.table(f.t.ID), fr.ID, col, seq)
		f.keys[ref] = k
	}
	return k
}

// locate returns the position of row id in fr, or -1 when fr does not
// hold it.
func (f *fetcher) locate(ctx context.Context, fr *fragment, mem []*types.Vec, id uint64) (int64, error) {
	rc := hiddenRowID(len(f.t.Columns))
	for ci, ck := range fr.Cols[rc] {
		var ids *types.Vec
		if ck.Seq == memChunkSeq {
			ids = mem[rc]
		} else {
			if ck.Zone.HasMinMax && (int64(id) < ck.Zone.MinInt || int64(id) > ck.Zone.MaxInt) {
				continue
			}
			var err error
			if ids, err = f.db.cachedChunk(ctx, f.t, f.key(fr, rc, ck.Seq), types.TypInt8, ck); err != nil {
				return -1, err
			}
		}
		xs := ids.Ints
		i := sort.Search(len(xs), func(i int) bool { return uint64(xs[i]) >= id })
		if i < len(xs) && uint64(xs[i]) == id {
			return fr.Cols[rc][ci].Start + int64(i), nil
		}
	}
	return -1, nil
}

// where returns where row id is among the fragments: the committed ones,
// then the txn's own. Its r is -1 when none holds it.
func (rf *RowFetcher) where(id uint64) (fragRow, error) {
	for k := 0; k <= len(rf.frags); k++ {
		fr, mem := rf.own, rf.ownMem
		if k < len(rf.frags) {
			fr, mem = rf.frags[k], nil
		}
		if fr == nil || id < fr.MinRow || id > fr.MaxRow {
			continue
		}
		r, err := rf.f.locate(context.Background(), fr, mem, id)
		if err != nil || r >= 0 {
			return fragRow{fr, mem, r}, err
		}
	}
	return fragRow{r: -1}, nil
}

// readRow appends the row at x to f.out.
func (f *fetcher) readRow(x fragRow) error {
	ctx := context.Background()
	for j, c := range f.cols {
		ck := x.fr.Cols[c][x.fr.chunkIndex(c, x.r)]
		dst := f.out.Cols[j]
		if ck.Seq == memChunkSeq {
			dst.AppendFrom(x.mem[c], int(x.r-ck.Start))
			continue
		}
		if err := f.readOne(ctx, x.fr, c, ck, int(x.r-ck.Start), dst); err != nil {
			return err
		}
	}
	return nil
}

// smallChunkFetch is the stored size up to which a chunk is read whole
// even when the cache is full.
const smallChunkFetch = 256 << 10

// readsWhole reports whether readOne reads chunk ck of column c (stored
// under key) whole into the chunk cache rather than by byte ranges: when
// its header has not been read, and it is small, or the cache has room for
// it and for half the column (fitsCache).
func (f *fetcher) readsWhole(c int, key string, ck fragChunk) bool {
	if _, ok := f.headers[key]; ok || ck.Size > f.db.opts.WholeChunkFetch {
		return false
	}
	return ck.Size <= smallChunkFetch || f.fitsCache(c) && f.db.chunks.room(ck.Size)
}

// fitsCache reports whether half of column c's stored chunks would fit
// the chunk cache. A larger column's chunks, read whole, would only evict
// each other, having served a few rows each: the first 256 MB an exact
// shuffle of a 2.4 GB table read went into whole chunks, and its first
// batch took 352 ms instead of 35.
func (f *fetcher) fitsCache(c int) bool {
	if f.colFits == nil {
		f.colFits = make(map[int]bool)
	}
	fits, ok := f.colFits[c]
	if !ok {
		var n int64
		for _, fr := range f.frags {
			for _, ck := range fr.Cols[c] {
				n += ck.Size
			}
		}
		fits = n/2 <= f.db.chunks.budget
		f.colFits[c] = fits
	}
	return fits
}

// readHeader reads and parses the header of the column chunk stored under
// key. It does not touch f's state, so that the prefetch may call it from
// several goroutines. Headers read are kept in f.headers, for the
// fetcher, and in the database's header cache, for the next ones.
func (f *fetcher) readHeader(ctx context.Context, key string, typ types.Type) (colChunkHeader, error) {
	return f.db.readChunkHeader(ctx, f.t, key, typ)
}

// readOne appends row i of chunk ck of column c to dst, with a byte-range
// read when the chunk allows one.
func (f *fetcher) readOne(ctx context.Context, fr *fragment, c int, ck fragChunk, i int, dst *types.Vec) error {
	key := f.key(fr, c, ck.Seq)
	typ := f.t.Columns[c].Type
	if v, ok := f.db.chunks.get(key); ok {
		f.db.stats.ChunkCacheHits.Add(1)
		dst.AppendFrom(v, i)
		return nil
	}
	h, ok := f.headers[key]
	if f.readsWhole(c, key, ck) {
		// A chunk is read and decoded whole, once, into the cache: the
		// next rows fetched from it (this query's and the next ones')
		// cost no read. A large one only while the cache has room: once
		// the table outgrows the cache, whole reads would only evict each
		// other, and byte ranges read less.
		v, err := f.db.cachedChunk(ctx, f.t, key, typ, ck)
		if err != nil {
			return err
		}
		dst.AppendFrom(v, i)
		return nil
	}
	if !ok {
		if h, ok = f.db.headers.get(key); !ok {
			var err error
			if h, err = f.readHeader(ctx, key, typ); err != nil {
				return err
			}
			f.db.headers.put(key, h)
		}
		f.headers[key] = h
	}
	if off, n, ok := h.rowRange(i); ok {
		// Rows fetched in storage order often share a block: it is read
		// once. A block the prefetch read becomes the last block read
		// (its entry -1), and the block that was the last one takes its
		// place among the window's blocks.
		b := f.block
		ref := blockRef{key, off}
		if k, ok := f.ra.pre[ref]; ok && k >= 0 && int64(len(f.ra.bufs[k])) == n {
			prev := blockRef{f.blockKey, f.blockOff}
			f.block, f.ra.bufs[k] = f.ra.bufs[k], f.block
			f.ra.pre[ref] = -1
			if j, ok := f.ra.pre[prev]; ok && j == -1 {
				f.ra.pre[prev] = k
			}
			f.blockKey, f.blockOff, b = key, off, f.block
		} else if f.blockKey != key || f.blockOff != off || int64(len(b)) != n {
			var err error
			if rg, ok := f.db.store.(rangeIntoGetter); ok {
				b, err = rg.GetRangeInto(ctx, key, off, n, f.block[:0])
			} else {
				b, err = f.db.store.GetRange(ctx, key, off, n)
			}
			if err != nil {
				f.blockKey = ""
				return ioErrorf(err, "reading table %q", f.t.Name)
			}
			f.block, f.blockKey, f.blockOff = b, key, off
			f.db.stats.RangeReads.Add(1)
			f.db.stats.RangeBytes.Add(int64(len(b)))
		}
		if err := h.decodeRow(i, b, dst); err != nil {
			return inTable(err, "table %q, object %s", f.t.Name, key)
		}
		return nil
	}
	v, err := f.db.cachedChunk(ctx, f.t, key, typ, ck)
	if err != nil {
		return err
	}
	dst.AppendFrom(v, i)
	return nil
}

// bufferedCheckRows is how many rows a RowFetcher looks for among the
// buffered rows (a Pebble read each) before it checks, once, whether the
// snapshot holds any: a stream of a fully flushed table then reads none,
// and a primary key lookup does not pay for the check. A Fetch of several
// rows checks at once (checkSections).
const bufferedCheckRows = 64

// checkSections finds out, once, whether the snapshot holds buffered rows
// and deletion markers of the table, one seek each: a Fetch of many rows
// of a flushed table without deletions then reads neither row by row.
func (rf *RowFetcher) checkSections() error {
	if rf.checked {
		return nil
	}
	rf.checked = true
	if !rf.noBuffered {
		has := false
		for _, lt := range viewTables(rf.t) {
			h, err := hasBufferedRows(rf.txn.snap, lt)
			if err != nil {
				return err
			}
			has = has || h
		}
		rf.noBuffered, rf.lookups = !has, bufferedCheckRows
	}
	if !rf.loaded {
		has, err := hasSection(rf.txn.snap, rf.t, tagDelete)
		if err != nil {
			return err
		}
		// Without markers no row is deleted, as of any version: the
		// (empty) set of deleted ids is as good as loaded.
		rf.loaded = !has
	}
	return nil
}

// hasBufferedRows reports whether r holds any buffered row of t.
func hasBufferedRows(r pebble.Reader, t *TableDesc) (bool, error) {
	return hasSection(r, t, tagRow)
}

// hasSection reports whether r holds any key of t's section tag.
func hasSection(r pebble.Reader, t *TableDesc, tag byte) (bool, error) {
	k, err := firstKey(r, t, tag)
	return k != nil, err
}

// firstKey returns the first key of t's section tag in r (a copy), or nil
// when the section is empty.
func firstKey(r pebble.Reader, t *TableDesc, tag byte) ([]byte, error) {
	lo, hi := sectionSpan(t.ID, tag)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, ioErrorf(err, "reading table %q", t.Name)
	}
	defer it.Close()
	if !it.First() {
		if err := it.Error(); err != nil {
			return nil, ioErrorf(err, "reading table %q", t.Name)
		}
		return nil, nil
	}
	return bytes.Clone(it.Key()), nil
}
