package storage

import (
	"bytes"
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/types"
)

func TestFetchRowsByteRange(t *testing.T) {
	ds, err := NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	// A local store reads the ranges into one reused buffer.
	for name, store := range map[string]ObjectStore{"mem": NewMemStore(), "dir": ds} {
		t.Run(name, func(t *testing.T) { testFetchRowsByteRange(t, store) })
	}
}

func testFetchRowsByteRange(t *testing.T, store ObjectStore) {
	// Chunks of any size are read by byte ranges here.
	db, err := Open(Options{InMemory: true, Store: store, FlushRows: 1 << 30, WholeChunkFetch: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	desc := intTable("f", 1<<20)
	desc.Columns[2].Compression = "none"
	tbl := createTable(t, db, desc)
	txn := db.Begin()
	if err := txn.Insert(tbl, intRows(0, 20000)); err != nil { // spills into a fragment
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, intRows(20000, 10)) // buffered rows
	_, ids := scanAll(t, db, nil, tbl, nil)
	// Delete one row; it must not come back.
	txn = db.Begin()
	deleteIDs(t, txn, tbl, func(id int64) bool { return id == 777 })
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	want := []uint64{ids[19999], ids[5], ids[12345], ids[777], ids[20003]}
	before := db.Stats().RangeBytes.Load()
	txn = db.Begin()
	defer txn.Rollback()
	b, got, err := txn.FetchRows(tbl, []int{0, 2}, want)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || b.Len() != 4 {
		t.Fatalf("fetched %d rows (%v), want 4", len(got), got)
	}
	expect := []int64{19999, 5, 12345, 20003}
	rows := intRows(0, 20010)
	for i, id := range expect {
		if b.Cols[0].Ints[i] != id {
			t.Fatalf("row %d: id %d, want %d", i, b.Cols[0].Ints[i], id)
		}
		if !bytes.Equal(b.Cols[1].Bytes.Get(i), rows.Cols[2].Bytes.Get(int(id))) {
			t.Fatalf("row %d: tensor differs", id)
		}
	}
	// Three tensors from an uncompressed 1 MiB-target column: headers and
	// one 64 KiB block each, far less than the chunks.
	if read := db.Stats().RangeBytes.Load() - before; read == 0 || read > 3*(64<<10+4096) {
		t.Fatalf("byte-range reads fetched %d bytes", read)
	}
	// Three rows of one checksum block: the block, read once; the
	// chunk's header was read by the fetch of row 5, and the database
	// keeps it.
	reads := db.Stats().RangeReads.Load()
	if _, got, err := txn.FetchRows(tbl, []int{2}, []uint64{ids[100], ids[101], ids[102]}); err != nil || len(got) != 3 {
		t.Fatalf("rows 100 to 102: %v, %v", got, err)
	}
	if n := db.Stats().RangeReads.Load() - reads; n != 1 {
		t.Fatalf("rows 100 to 102: %d range reads, want 1", n)
	}
	// Without the header cache, a RowFetcher keeps headers and the last
	// block between calls: the next row of the block costs no read, one
	// of another chunk a header and a block, and back in the first chunk
	// only the block.
	db.headers.clear()
	rf, err := txn.NewRowFetcher(tbl, []int{2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	var dst *types.Batch
	for k, c := range []struct {
		id    int
		reads int64
	}{{100, 2}, {101, 0}, {12345, 2}, {102, 1}} {
		reads := db.Stats().RangeReads.Load()
		b, got, err := rf.Fetch([]uint64{ids[c.id]}, dst)
		if err != nil || len(got) != 1 || !bytes.Equal(b.Cols[0].Bytes.Get(0), rows.Cols[2].Bytes.Get(c.id)) {
			t.Fatalf("fetch %d (row %d): %v, %v", k, c.id, got, err)
		}
		dst = b
		if n := db.Stats().RangeReads.Load() - reads; n != c.reads {
			t.Fatalf("fetch %d (row %d): %d range reads, want %d", k, c.id, n, c.reads)
		}
	}
}

// TestFetchRowsWholeChunksWhileRoom fetches rows from tensor chunks of
// about 300 KiB through a cache of 1.25 MiB (an entry may take a quarter):
// the first chunk is read whole into the cache, later ones, which no
// longer fit, by byte ranges, and every row fetched is right.
func TestFetchRowsWholeChunksWhileRoom(t *testing.T) {
	db, err := Open(Options{InMemory: true, FlushRows: 1 << 30, ChunkCacheBytes: 1280 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	desc := intTable("w", 300<<10)
	desc.Columns[2].Compression = "none"
	tbl := createTable(t, db, desc)
	insert(t, db, tbl, intRows(0, 10000)) // about 2.5 MB of tensors: 9 chunks
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, ids := scanAll(t, db, nil, tbl, nil)
	rows := intRows(0, 10000)
	txn := db.Begin()
	defer txn.Rollback()
	for _, i := range []int{10, 20, 1500, 3000, 4500, 6000, 7500, 9000, 15} {
		b, _, err := txn.FetchRows(tbl, []int{2}, []uint64{ids[i]})
		if err != nil || b.Len() != 1 {
			t.Fatalf("row %d: %v", i, err)
		}
		if !bytes.Equal(b.Cols[0].Bytes.Get(0), rows.Cols[2].Bytes.Get(i)) {
			t.Fatalf("row %d: tensor differs", i)
		}
	}
	if db.Stats().ChunkCacheHits.Load() == 0 {
		t.Fatal("no fetch was answered by the cache: the first chunk was not read whole")
	}
	if db.Stats().RangeReads.Load() == 0 {
		t.Fatal("no byte-range read: chunks that no longer fit the cache were read whole")
	}
}

// TestFetchRowsAsOf fetches, as an older version has them, rows of a
// fragment and buffered rows deleted since: they are found as of that
// version and not in the current one, and the txn's own pending rows and
// deletes are not seen as of a version.
func TestFetchRowsAsOf(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, intTable("f", 0))
	insert(t, db, tbl, intRows(0, 100))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, intRows(100, 10)) // buffered
	vs, err := db.Versions("f")
	if err != nil {
		t.Fatal(err)
	}
	v := vs[len(vs)-1].Version
	_, ids := scanAll(t, db, nil, tbl, []int{0})
	gone := []uint64{ids[7], ids[104]} // a fragment row, a buffered row
	deleteRows(t, db, tbl, gone)
	txn := db.Begin()
	defer txn.Rollback()
	if err := txn.Delete(tbl, []uint64{ids[3]}); err != nil { // the txn's own delete
		t.Fatal(err)
	}
	want := []uint64{ids[3], ids[7], ids[104]}
	rf, err := txn.NewRowFetcher(tbl, []int{0}, v)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	b, found, err := rf.Fetch(want, nil)
	if err != nil || len(found) != 3 || b.Cols[0].Ints[0] != 3 || b.Cols[0].Ints[1] != 7 || b.Cols[0].Ints[2] != 104 {
		t.Fatalf("as of version %d: found %v (%v), err %v", v, found, b.Cols[0].Ints, err)
	}
	if _, found, err := txn.FetchRows(tbl, []int{0}, want); err != nil || len(found) != 0 {
		t.Fatalf("now: found %v, err %v; want none", found, err)
	}
}

// TestFetchRowsDeletionChecks: a fetch of a few rows checks their own
// deletion markers, one point read each, instead of loading every marker
// of the table (a primary key lookup on a table with many deleted rows
// stays cheap); a RowFetcher that goes on to fetch many rows loads them
// all, once. Either way the deleted rows are left out, and a fetch as of
// a version before the deletions finds them.
func TestFetchRowsDeletionChecks(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, intTable("dc", 0))
	const n = 3 * pointCheckRows
	insert(t, db, tbl, intRows(0, n))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	vs, err := db.Versions("dc")
	if err != nil {
		t.Fatal(err)
	}
	before := vs[len(vs)-1].Version
	_, ids := scanAll(t, db, nil, tbl, []int{0})
	var gone []uint64
	for i := 0; i < n; i += 3 {
		gone = append(gone, ids[i])
	}
	deleteRows(t, db, tbl, gone)
	txn := db.Begin()
	defer txn.Rollback()
	loads := db.Stats().DeletionLoads.Load()
	for _, c := range []struct {
		id   uint64
		want int
	}{{ids[1], 1}, {ids[3], 0}, {ids[n-3], 0}, {ids[n-1], 1}} {
		_, found, err := txn.FetchRows(tbl, []int{0}, []uint64{c.id})
		if err != nil || len(found) != c.want {
			t.Fatalf("row %d: found %v, %v; want %d rows", c.id, found, err, c.want)
		}
	}
	if got := db.Stats().DeletionLoads.Load() - loads; got != 0 {
		t.Fatalf("4 single-row fetches loaded every deletion marker %d times", got)
	}
	for _, asOf := range []uint64{0, before} {
		rf, err := txn.NewRowFetcher(tbl, []int{0}, asOf)
		if err != nil {
			t.Fatal(err)
		}
		loads := db.Stats().DeletionLoads.Load()
		var got []int64
		for lo := 0; lo < n; lo += 1000 {
			b, _, err := rf.Fetch(ids[lo:min(n, lo+1000)], nil)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, b.Cols[0].Ints...)
		}
		rf.Close()
		want := n - len(gone)
		if asOf != 0 {
			want = n
		}
		if len(got) != want {
			t.Fatalf("as of %d: %d rows, want %d", asOf, len(got), want)
		}
		for _, v := range got {
			if asOf == 0 && v%3 == 0 {
				t.Fatalf("deleted row %d fetched", v)
			}
		}
		if l := db.Stats().DeletionLoads.Load() - loads; l != 1 {
			t.Fatalf("as of %d: %d rows fetched loaded the markers %d times, want once", asOf, n, l)
		}
	}
}

// concStore is a MemStore that says it serves concurrent reads (conc of
// them) and records how many of its reads were in flight at once; each
// read takes delay.
type concStore struct {
	*MemStore
	conc        atomic.Int32
	delay       atomic.Int64
	mu          sync.Mutex
	inflight    int
	maxInflight int
	reads       int
}

func (s *concStore) ReadConcurrency() int { return int(s.conc.Load()) }

func (s *concStore) enter() {
	s.mu.Lock()
	s.inflight++
	s.reads++
	s.maxInflight = max(s.maxInflight, s.inflight)
	s.mu.Unlock()
	time.Sleep(time.Duration(s.delay.Load()))
}

func (s *concStore) leave() {
	s.mu.Lock()
	s.inflight--
	s.mu.Unlock()
}

// peak returns the most reads in flight at once since the last call.
func (s *concStore) peak() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.maxInflight
	s.maxInflight = 0
	return p
}

func (s *concStore) Get(ctx context.Context, key string) ([]byte, error) {
	s.enter()
	defer s.leave()
	return s.MemStore.Get(ctx, key)
}

func (s *concStore) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	s.enter()
	defer s.leave()
	return s.MemStore.GetRange(ctx, key, off, n)
}

// TestFetchRowsReadAhead fetches every row id of a table in a random
// order, in batches, from a store that serves concurrent reads: once with
// one read at a time and once reading ahead (prefetch). The batches must
// be identical, deleted rows, buffered rows and the txn's own rows
// included, and the reads ahead must overlap, bounded by the store's
// concurrency, without reading much more than one read at a time does.
func TestFetchRowsReadAhead(t *testing.T) {
	store := &concStore{MemStore: NewMemStore()}
	// Tensor chunks of about 300 KiB through a cache of 1.25 MiB: the
	// first are read whole, the others by byte ranges.
	db, err := Open(Options{InMemory: true, Store: store, FlushRows: 1 << 30, ChunkCacheBytes: 1280 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	desc := intTable("ra", 300<<10)
	desc.Columns[2].Compression = "none"
	tbl := createTable(t, db, desc)
	insert(t, db, tbl, intRows(0, 12000))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, intRows(12000, 3000))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, intRows(15000, 20)) // buffered
	_, before := scanAll(t, db, nil, tbl, nil)
	txn := db.Begin()
	deleteIDs(t, txn, tbl, func(id int64) bool { return id%97 == 5 })
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	txn = db.Begin()
	defer txn.Rollback()
	if err := txn.Insert(tbl, intRows(15020, 50)); err != nil { // the txn's own
		t.Fatal(err)
	}
	deleteIDs(t, txn, tbl, func(id int64) bool { return id%101 == 7 })
	_, ids := scanAll(t, db, txn, tbl, nil)
	if len(ids) < 14000 {
		t.Fatalf("%d rows", len(ids))
	}
	// Every row in a random order, with deleted and unknown ids.
	all := append(slices.Clone(before), 1<<40)
	for _, id := range ids {
		if !slices.Contains(before, id) {
			all = append(all, id) // the txn's own
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })

	cols := []int{0, 1, 2}
	fetch := func(conc int) (rows [][]any, reads int64) {
		store.conc.Store(int32(conc))
		rf, err := txn.NewRowFetcher(tbl, cols, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer rf.Close()
		before := db.Stats().RangeReads.Load()
		var dst *types.Batch
		for lo := 0; lo < len(all); lo += 1000 {
			b, got, err := rf.Fetch(all[lo:min(lo+1000, len(all))], dst)
			if err != nil {
				t.Fatal(err)
			}
			if b.Len() != len(got) {
				t.Fatalf("%d rows, %d ids", b.Len(), len(got))
			}
			rows = append(rows, rowsOf(b)...)
			dst = b
		}
		return rows, db.Stats().RangeReads.Load() - before
	}
	db.chunks.clear()
	store.peak() // the scan's concurrent reads
	one, oneReads := fetch(1)
	if p := store.peak(); p != 1 {
		t.Fatalf("one read at a time: %d in flight", p)
	}
	db.chunks.clear()
	ahead, aheadReads := fetch(8)
	if len(one) != len(ids) {
		t.Fatalf("fetched %d of %d rows", len(one), len(ids))
	}
	if !reflect.DeepEqual(one, ahead) {
		t.Fatal("reading ahead fetched other rows")
	}
	for _, r := range one {
		id := r[0].(int64)
		if id < 15020 && id%97 == 5 || id%101 == 7 || r[1].(int64) != id%1000 || r[2].(string)[:2] != string([]byte{byte(id), byte(id >> 8)}) {
			t.Fatalf("row %v", r[:2])
		}
	}
	t.Logf("range reads: %d one at a time, %d ahead", oneReads, aheadReads)
	if aheadReads > oneReads {
		t.Fatalf("reading ahead made %d range reads, one at a time %d", aheadReads, oneReads)
	}

	// With reads that take a while, the reads of a window overlap, up to
	// the store's concurrency.
	store.delay.Store(int64(time.Millisecond))
	defer store.delay.Store(0)
	store.peak()
	db.chunks.clear()
	store.conc.Store(8)
	rf, err := txn.NewRowFetcher(tbl, []int{2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	if _, got, err := rf.Fetch(all[:fetchWindow], nil); err != nil || len(got) < fetchWindow-5 {
		t.Fatalf("%d rows, %v", len(got), err)
	}
	if p := store.peak(); p < 4 || p > 8 {
		t.Fatalf("%d reads in flight at once, want 4 to 8", p)
	}
}

// clear empties the cache.
func (c *lruCache[V]) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.used = 0
	c.lru.Init()
	clear(c.byKey)
}

// TestFetchRowsRangesPastCache fetches rows of a tensor column twice the
// size of the chunk cache: its chunks, each of which would fit, are read
// by byte ranges from the first row on, not whole (they would only evict
// each other).
func TestFetchRowsRangesPastCache(t *testing.T) {
	db, err := Open(Options{InMemory: true, FlushRows: 1 << 30, ChunkCacheBytes: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	desc := intTable("big", 300<<10)
	desc.Columns[2].Compression = "none"
	tbl := createTable(t, db, desc)
	insert(t, db, tbl, intRows(0, 20000)) // 5 MB of tensors in 300 kB chunks
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, ids := scanAll(t, db, nil, tbl, nil)
	rows := intRows(0, 20000)
	txn := db.Begin()
	defer txn.Rollback()
	st := db.Stats()
	read, ranges := st.ChunksRead.Load(), st.RangeReads.Load()
	pick := []int{10, 2500, 5000, 7500, 10000, 12500, 15000, 17500, 19999}
	for _, i := range pick {
		b, _, err := txn.FetchRows(tbl, []int{2}, []uint64{ids[i]})
		if err != nil || b.Len() != 1 || !bytes.Equal(b.Cols[0].Bytes.Get(0), rows.Cols[2].Bytes.Get(i)) {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	// The row id chunks are read whole (small); no tensor chunk is.
	if n := st.ChunksRead.Load() - read; n > 2 {
		t.Fatalf("%d chunks read whole", n)
	}
	if n := st.RangeReads.Load() - ranges; n < int64(len(pick)) {
		t.Fatalf("%d range reads for %d rows", n, len(pick))
	}
}
