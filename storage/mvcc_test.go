package storage

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// intTable is (id int8 primary key, v int4, t float32[64]): a narrow and a
// wide column, to see columns chunked independently.
func intTable(name string, chunkSize int64) *TableDesc {
	return &TableDesc{Name: name, Columns: []ColumnDesc{
		{Name: "id", Type: types.TypInt8, NotNull: true},
		{Name: "v", Type: types.TypInt4},
		{Name: "t", Type: types.TensorOf(types.DTFloat32, 64)},
	}, PrimaryKey: []int{0}, Options: TableOptions{ChunkSize: chunkSize}}
}

func intRows(start, n int) *types.Batch {
	b := types.NewBatch([]types.Type{types.TypInt8, types.TypInt4, types.TensorOf(types.DTFloat32, 64)}, n)
	tensor := make([]byte, 256)
	for i := start; i < start+n; i++ {
		b.Cols[0].AppendInt(int64(i))
		b.Cols[1].AppendInt(int64(i % 1000))
		tensor[0], tensor[1] = byte(i), byte(i>>8)
		b.Cols[2].AppendBytes(tensor)
	}
	b.SetLen(n)
	return b
}

func countRows(t testing.TB, db *DB, txn *Txn, tbl *TableDesc) int {
	t.Helper()
	rows, _ := scanAll(t, db, txn, tbl, nil)
	return len(rows)
}

func deleteIDs(t testing.TB, txn *Txn, tbl *TableDesc, want func(id int64) bool) int {
	t.Helper()
	sc, err := txn.Scan(tbl, allColumns(len(tbl.Columns)))
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	rows := types.NewBatch(tbl.ColumnTypes(), 0)
	for {
		b, bids, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		for i, id := range bids {
			if want(b.Cols[0].Ints[i]) {
				ids = append(ids, id)
				for c := range b.Cols {
					rows.Cols[c].AppendFrom(b.Cols[c], i)
				}
			}
		}
	}
	sc.Close()
	rows.SetLen(len(ids))
	if err := txn.DeleteRows(tbl, ids, rows); err != nil {
		t.Fatal(err)
	}
	return len(ids)
}

func TestSnapshotIsolation(t *testing.T) {
	db := openMem(t, 50)
	tbl := createTable(t, db, intTable("s", 0))
	insert(t, db, tbl, intRows(0, 100))
	reader := db.Begin()
	defer reader.Rollback()
	if n := countRows(t, db, reader, tbl); n != 100 {
		t.Fatalf("reader sees %d rows, want 100", n)
	}
	// Writers commit inserts, deletes and a flush meanwhile.
	insert(t, db, tbl, intRows(100, 100))
	w := db.Begin()
	deleteIDs(t, w, tbl, func(id int64) bool { return id < 30 })
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, db, reader, tbl); n != 100 {
		t.Fatalf("reader's snapshot changed: %d rows, want 100", n)
	}
	if n := countRows(t, db, nil, tbl); n != 170 {
		t.Fatalf("new txn sees %d rows, want 170", n)
	}
}

func TestConflictingDeleteIs40001(t *testing.T) {
	db := openMem(t, 0)
	tbl := createTable(t, db, intTable("c", 0))
	insert(t, db, tbl, intRows(0, 10))
	a, b := db.Begin(), db.Begin()
	deleteIDs(t, a, tbl, func(id int64) bool { return id == 3 })
	if err := a.Insert(tbl, intRows(100, 1)); err != nil {
		t.Fatal(err)
	}
	deleteIDs(t, b, tbl, func(id int64) bool { return id == 3 || id == 4 })
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, a.Commit(), pgerror.SerializationFailure)
	// Nothing of a's landed; b's deletes did.
	rows, _ := scanAll(t, db, nil, tbl, []int{0})
	if len(rows) != 8 {
		t.Fatalf("%d rows after the conflict, want 8", len(rows))
	}
	for _, r := range rows {
		if id := r[0].(int64); id == 3 || id == 4 || id == 100 {
			t.Fatalf("row %d visible", id)
		}
	}
	// Disjoint deletes from concurrent txns both commit.
	a, b = db.Begin(), db.Begin()
	deleteIDs(t, a, tbl, func(id int64) bool { return id == 5 })
	deleteIDs(t, b, tbl, func(id int64) bool { return id == 6 })
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, db, nil, tbl); n != 6 {
		t.Fatalf("%d rows, want 6", n)
	}
}

func TestVersionsAndTimeTravel(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, intTable("tt", 0))
	insert(t, db, tbl, intRows(0, 10)) // v1: 10 rows
	txn := db.Begin()
	deleteIDs(t, txn, tbl, func(id int64) bool { return id < 3 })
	if err := txn.Commit(); err != nil { // v2: 7 rows
		t.Fatal(err)
	}
	if err := db.Flush(context.Background()); err != nil { // v3: flushed, 7 rows
		t.Fatal(err)
	}
	insert(t, db, tbl, intRows(10, 5)) // v4: 12 rows
	txn = db.Begin()
	if err := txn.Insert(tbl, intRows(20, 40000)); err != nil { // spills: a fragment
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil { // v5: 40012 rows
		t.Fatal(err)
	}
	want := map[uint64]int{1: 10, 2: 7, 3: 7, 4: 12, 5: 40012}
	check := func(stage string) {
		t.Helper()
		for v, n := range want {
			txn := db.Begin()
			sc, err := txn.ScanWith(tbl, ScanOptions{AsOf: v})
			if err != nil {
				t.Fatalf("%s: version %d: %v", stage, v, err)
			}
			got := 0
			for {
				b, _, err := sc.Next()
				if err != nil {
					t.Fatal(err)
				}
				if b == nil {
					break
				}
				got += b.Len()
			}
			sc.Close()
			txn.Rollback()
			if got != n {
				t.Errorf("%s: version %d has %d rows, want %d", stage, v, got, n)
			}
		}
	}
	check("before compaction")
	vs, err := db.Versions("tt")
	if err != nil {
		t.Fatal(err)
	}
	ops := []string{}
	for _, v := range vs {
		ops = append(ops, v.Op)
	}
	if got := strings.Join(ops, ","); got != "write,write,flush,write,write" {
		t.Fatalf("version ops %s", got)
	}
	if vs[2].Manifest == "" || vs[4].Manifest == "" || vs[0].Manifest != "" {
		t.Fatalf("manifests: %+v", vs)
	}
	if _, err := db.Store().Get(context.Background(), vs[4].Manifest); err != nil {
		t.Fatal(err)
	}
	// Compaction keeps rows that retained versions still show.
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Compact(context.Background(), "tt"); err != nil {
		t.Fatal(err)
	}
	check("after compaction")
	txn = db.Begin()
	defer txn.Rollback()
	_, err = txn.ScanWith(tbl, ScanOptions{AsOf: 99})
	wantCode(t, err, pgerror.InvalidParameterValue)
}

func TestLargeTxnSpillsColumnsIndependently(t *testing.T) {
	store := NewMemStore()
	db, err := Open(Options{InMemory: true, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl := createTable(t, db, intTable("big", 64<<10))
	ctx := context.Background()
	txn := db.Begin()
	for i := 0; i < 20; i++ {
		if err := txn.Insert(tbl, intRows(i*2000, 2000)); err != nil {
			t.Fatal(err)
		}
	}
	keys, _ := store.List(ctx, "tables/")
	if len(keys) == 0 {
		t.Fatal("a 10 MB transaction wrote nothing to the object store before commit")
	}
	if n := countRows(t, db, txn, tbl); n != 40000 {
		t.Fatalf("txn sees %d of its rows, want 40000", n)
	}
	if n := countRows(t, db, nil, tbl); n != 0 {
		t.Fatalf("uncommitted rows visible: %d", n)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, db, nil, tbl); n != 40000 {
		t.Fatalf("%d rows after commit, want 40000", n)
	}
	frags, err := db.liveFragments(db.kv, tbl)
	if err != nil || len(frags) != 1 {
		t.Fatalf("fragments %d, %v", len(frags), err)
	}
	f := frags[0]
	// 40000 × 256 bytes of tensors at a 64 KiB target: ~157 chunks; the
	// int4 column (160 KB) far fewer.
	if nt, nv := len(f.Cols[2]), len(f.Cols[1]); nt < 150 || nv > 4 || nv < 2 {
		t.Fatalf("chunks: tensor column %d, int4 column %d", nt, nv)
	}
	for _, ck := range f.Cols[2][:len(f.Cols[2])-1] {
		if ck.Rows*256 < 64<<10 || ck.Rows*256 >= 64<<10+256 {
			t.Fatalf("tensor chunk of %d rows misses the 64 KiB target", ck.Rows)
		}
	}
	// A rolled-back spill leaves nothing behind.
	before, _ := store.List(ctx, "tables/")
	txn = db.Begin()
	if err := txn.Insert(tbl, intRows(100000, 30000)); err != nil {
		t.Fatal(err)
	}
	txn.Rollback()
	after, _ := store.List(ctx, "tables/")
	if len(after) != len(before) {
		t.Fatalf("rollback left %d objects", len(after)-len(before))
	}
}

func TestCompactionAndVacuum(t *testing.T) {
	store := NewMemStore()
	db, err := Open(Options{InMemory: true, Store: store, FlushRows: 1 << 30, VersionRetention: -1, NoCompaction: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	tbl := createTable(t, db, intTable("cv", 0))
	for i := 0; i < 6; i++ {
		insert(t, db, tbl, intRows(i*100, 100))
		if err := db.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	txn := db.Begin()
	deleteIDs(t, txn, tbl, func(id int64) bool { return id%2 == 0 })
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	old := db.Begin() // a reader from before the compaction
	defer old.Rollback()
	if n := countRows(t, db, old, tbl); n != 300 {
		t.Fatalf("%d rows, want 300", n)
	}
	if n, err := db.Compact(ctx, "cv"); err != nil || n != 6 {
		t.Fatalf("compacted %d fragments, %v", n, err)
	}
	frags, _ := db.liveFragments(db.kv, tbl)
	if len(frags) != 1 {
		t.Fatalf("%d fragments after compaction", len(frags))
	}
	// The open reader pinned the horizon: deleted rows are still stored.
	if frags[0].Rows != 600 {
		t.Fatalf("compaction dropped rows an open reader may need: %d stored", frags[0].Rows)
	}
	st, err := db.Vacuum(ctx, "cv")
	if err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, db, old, tbl); n != 300 {
		t.Fatalf("old reader after vacuum: %d rows", n)
	}
	old.Rollback()
	st, err = db.Vacuum(ctx, "cv")
	if err != nil {
		t.Fatal(err)
	}
	frags, _ = db.liveFragments(db.kv, tbl)
	if len(frags) != 1 || frags[0].Rows != 300 {
		t.Fatalf("after vacuum: %d fragments, %d rows stored; %+v", len(frags), frags[0].Rows, st)
	}
	if n := countRows(t, db, nil, tbl); n != 300 {
		t.Fatalf("%d rows, want 300", n)
	}
	// Only the live fragment's chunks and the current manifest remain.
	keys, _ := store.List(ctx, "tables/")
	want := len(tbl.Columns) + 2 + 1
	if len(keys) != want {
		t.Fatalf("%d objects after vacuum, want %d: %v", len(keys), want, keys)
	}
	if vs, _ := db.Versions("cv"); len(vs) != 1 {
		t.Fatalf("versions retained: %d, want 1", len(vs))
	}
	// An orphan (a crashed write) is collected; a fragment being written
	// is not.
	orphan := fragChunkKey(tbl.ID, 999999, 0, 0)
	if err := store.Put(ctx, orphan, []byte("x")); err != nil {
		t.Fatal(err)
	}
	w := db.Begin()
	if err := w.Insert(tbl, intRows(10000, 20000)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Vacuum(ctx, "cv"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(ctx, orphan); !errors.Is(err, ErrNotFound) {
		t.Fatalf("orphan kept: %v", err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, db, nil, tbl); n != 20300 {
		t.Fatalf("%d rows, want 20300 (vacuum ate a running txn's fragment?)", n)
	}
}

func TestZoneMapPruning(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, intTable("z", 64<<10))
	txn := db.Begin()
	if err := txn.Insert(tbl, intRows(0, 50000)); err != nil {
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	val := types.NewVec(types.TypInt8, 1)
	val.AppendInt(49000)
	before := db.Stats().ChunksPruned.Load()
	txn = db.Begin()
	defer txn.Rollback()
	sc, err := txn.ScanWith(tbl, ScanOptions{Cols: []int{0, 2}, Preds: []ZonePred{{Col: 0, Op: ZoneGe, Val: val}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	got := 0
	for {
		b, _, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		for i := range b.Len() {
			if b.Cols[0].Ints[i] >= 49000 {
				got++
			}
		}
	}
	if got != 1000 {
		t.Fatalf("%d matching rows, want 1000", got)
	}
	if pruned := db.Stats().ChunksPruned.Load() - before; pruned < 2 {
		t.Fatalf("pruned %d chunks", pruned)
	}
}

func TestManifestLeftByCrashIsNotOverwritten(t *testing.T) {
	store := NewMemStore()
	db, err := Open(Options{InMemory: true, Store: store, FlushRows: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	tbl := createTable(t, db, intTable("m", 0))
	insert(t, db, tbl, intRows(0, 10)) // v1
	stale := manifestKey(tbl.ID, 2)
	if err := store.Put(ctx, stale, []byte("left by a crash")); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	vs, _ := db.Versions("m")
	if last := vs[len(vs)-1]; last.Version != 3 || last.Parent != 1 {
		t.Fatalf("flush version %+v, want 3 with parent 1", last)
	}
	data, _ := store.Get(ctx, stale)
	if string(data) != "left by a crash" {
		t.Fatal("a manifest was overwritten")
	}
	if n := countRows(t, db, nil, tbl); n != 10 {
		t.Fatalf("%d rows", n)
	}
	_ = time.Second
}

// TestHorizonWithManyCommits keeps a reader open across more commits than
// the in-memory version stamps hold, then compacts: rows the reader sees
// must survive.
func TestHorizonWithManyCommits(t *testing.T) {
	db, err := Open(Options{InMemory: true, FlushRows: 1 << 30, VersionRetention: -1, NoCompaction: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	tbl := createTable(t, db, intTable("h", 0))
	insert(t, db, tbl, intRows(0, 200))
	if err := db.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	reader := db.Begin()
	defer reader.Rollback()
	if n := countRows(t, db, reader, tbl); n != 200 {
		t.Fatal(n)
	}
	for i := 0; i < 150; i++ {
		txn := db.Begin()
		deleteIDs(t, txn, tbl, func(id int64) bool { return id == int64(i) })
		if err := txn.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Vacuum(ctx, "h"); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, db, reader, tbl); n != 200 {
		t.Fatalf("reader lost rows to compaction: %d, want 200", n)
	}
	if n := countRows(t, db, nil, tbl); n != 50 {
		t.Fatalf("%d rows, want 50", n)
	}
	reader.Rollback()
	if _, err := db.Vacuum(ctx, "h"); err != nil {
		t.Fatal(err)
	}
	frags, _ := db.liveFragments(db.kv, tbl)
	if len(frags) != 1 || frags[0].Rows != 50 {
		t.Fatalf("after the reader closed: %d fragments", len(frags))
	}
}
