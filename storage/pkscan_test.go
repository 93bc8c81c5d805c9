package storage

import (
	"context"
	"slices"
	"testing"

	"github.com/deeplaked/deeplaked/types"
)

// pkScanIDs scans tbl for id = want through zone predicates, as exec
// passes a pushed-down filter, and returns the (id, v) rows it yields.
func pkScanIDs(t *testing.T, txn *Txn, tbl *TableDesc, want int64) [][2]int64 {
	t.Helper()
	val := types.NewVec(types.TypInt4, 1) // an int4 constant against a bigint key
	val.AppendInt(want)
	sc, err := txn.ScanWith(tbl, ScanOptions{Cols: []int{0, 1}, Preds: []ZonePred{{Col: 0, Op: ZoneEq, Val: val}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var out [][2]int64
	for {
		b, _, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			return out
		}
		for i := 0; i < b.Len(); i++ {
			out = append(out, [2]int64{b.Cols[0].Ints[i], b.Cols[1].Ints[i]})
		}
	}
}

func TestPrimaryKeyLookupScan(t *testing.T) {
	db := openMem(t, 100)
	tbl := createTable(t, db, &TableDesc{Name: "pk", Columns: []ColumnDesc{
		{Name: "id", Type: types.TypInt8, NotNull: true}, {Name: "v", Type: types.TypInt8}}, PrimaryKey: []int{0}})
	insert := func(txn *Txn, from, n int64) {
		b := types.NewBatch([]types.Type{types.TypInt8, types.TypInt8}, int(n))
		for i := from; i < from+n; i++ {
			b.Cols[0].AppendInt(i)
			b.Cols[1].AppendInt(i * 10)
		}
		if err := txn.Insert(tbl, b); err != nil {
			t.Fatal(err)
		}
	}
	txn := db.Begin()
	insert(txn, 0, 1000)
	// The txn's own rows, before commit.
	if got := pkScanIDs(t, txn, tbl, 7); len(got) != 1 || got[0] != [2]int64{7, 70} {
		t.Fatalf("own row 7: %v", got)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	// Flushed into a fragment.
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := db.Stats().PKLookups.Load()
	reader := db.Begin()
	defer reader.Rollback()
	for _, id := range []int64{0, 500, 999} {
		if got := pkScanIDs(t, reader, tbl, id); len(got) != 1 || got[0] != [2]int64{id, id * 10} {
			t.Fatalf("row %d: %v", id, got)
		}
	}
	if got := pkScanIDs(t, reader, tbl, 1000); len(got) != 0 {
		t.Fatalf("missing key: %v", got)
	}
	if n := db.Stats().PKLookups.Load() - before; n != 3 {
		t.Fatalf("%d primary key lookups, want 3 (a missing key finds no row to fetch)", n)
	}
	// The chunks those lookups decoded are cached: looking up again reads
	// no chunk object.
	read := db.Stats().ChunksRead.Load()
	for _, id := range []int64{1, 501, 998} {
		if got := pkScanIDs(t, reader, tbl, id); len(got) != 1 || got[0] != [2]int64{id, id * 10} {
			t.Fatalf("row %d again: %v", id, got)
		}
	}
	if n := db.Stats().ChunksRead.Load() - read; n != 0 {
		t.Fatalf("repeated lookups read %d chunk objects, want 0", n)
	}
	// A delete and a re-insert in another txn: the reader's snapshot still
	// sees the old row; the writer sees its own.
	w := db.Begin()
	sc, err := w.Scan(tbl, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	var rows *types.Batch
	for {
		b, bids, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		for i := 0; i < b.Len(); i++ {
			if b.Cols[0].Ints[i] == 500 {
				ids = append(ids, bids[i])
				rows = types.NewBatch([]types.Type{types.TypInt8, types.TypInt8}, 1)
				rows.Cols[0].AppendInt(500)
				rows.Cols[1].AppendInt(5000)
			}
		}
	}
	sc.Close()
	if err := w.DeleteRows(tbl, ids, rows); err != nil {
		t.Fatal(err)
	}
	if got := pkScanIDs(t, w, tbl, 500); len(got) != 0 {
		t.Fatalf("deleted own row: %v", got)
	}
	b := types.NewBatch([]types.Type{types.TypInt8, types.TypInt8}, 1)
	b.Cols[0].AppendInt(500)
	b.Cols[1].AppendInt(-1)
	if err := w.Insert(tbl, b); err != nil {
		t.Fatal(err)
	}
	if got := pkScanIDs(t, w, tbl, 500); len(got) != 1 || got[0][1] != -1 {
		t.Fatalf("re-inserted own row: %v", got)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := pkScanIDs(t, reader, tbl, 500); len(got) != 1 || got[0][1] != 5000 {
		t.Fatalf("reader's snapshot after the writer's commit: %v", got)
	}
	fresh := db.Begin()
	defer fresh.Rollback()
	if got := pkScanIDs(t, fresh, tbl, 500); len(got) != 1 || got[0][1] != -1 {
		t.Fatalf("a new snapshot: %v", got)
	}
}

// pkInScan scans tbl with `id IN (keys)` (NULL for a nil key) and returns
// its (id, v) rows and the chunk objects it read.
func pkInScan(t *testing.T, db *DB, txn *Txn, tbl *TableDesc, cols []int, keys []*int64) ([][2]int64, int, int64) {
	t.Helper()
	val := types.NewVec(types.TypInt4, len(keys))
	for _, k := range keys {
		if k == nil {
			val.AppendNull()
		} else {
			val.AppendInt(*k)
		}
	}
	read := db.Stats().ChunksRead.Load()
	sc, err := txn.ScanWith(tbl, ScanOptions{Cols: cols, Preds: []ZonePred{{Col: 0, Op: ZoneIn, Val: val, Row: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var out [][2]int64
	n := 0
	for {
		b, ids, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			return out, n, db.Stats().ChunksRead.Load() - read
		}
		if len(ids) != b.Len() {
			t.Fatalf("%d ids for %d rows", len(ids), b.Len())
		}
		n += b.Len()
		for i := 0; i < b.Len() && len(cols) == 2; i++ {
			out = append(out, [2]int64{b.Cols[0].Ints[i], b.Cols[1].Ints[i]})
		}
	}
}

// TestPrimaryKeyInListScan looks rows up by `key IN (...)`: each existing
// key's row once, whatever the duplicates, NULLs and missing keys in the
// list, in batches past types.BatchSize, deleted rows and the txn's own
// rows as the txn sees them, reading only the chunks of the rows found.
func TestPrimaryKeyInListScan(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, &TableDesc{Name: "pkin", Columns: []ColumnDesc{
		{Name: "id", Type: types.TypInt8, NotNull: true},
		{Name: "v", Type: types.TypInt8},
	}, PrimaryKey: []int{0}, Options: TableOptions{ChunkSize: 4096}})
	rows := func(from, n int64) *types.Batch {
		b := types.NewBatch([]types.Type{types.TypInt8, types.TypInt8}, int(n))
		for i := from; i < from+n; i++ {
			b.Cols[0].AppendInt(i)
			b.Cols[1].AppendInt(i * 10)
		}
		return b
	}
	insert(t, db, tbl, rows(0, 20000))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	key := func(k int64) *int64 { return &k }
	txn := db.Begin()
	defer txn.Rollback()
	if err := txn.Insert(tbl, rows(20000, 10)); err != nil { // own, unflushed
		t.Fatal(err)
	}
	deleteIDs(t, txn, tbl, func(id int64) bool { return id == 7 })

	list := []*int64{key(19999), key(5), key(5), nil, key(20005), key(7), key(-3), key(1 << 40), key(12345)}
	lookups := db.Stats().PKLookups.Load()
	got, _, read := pkInScan(t, db, txn, tbl, []int{0, 1}, list)
	slices.SortFunc(got, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	want := [][2]int64{{5, 50}, {12345, 123450}, {19999, 199990}, {20005, 200050}}
	if !slices.Equal(got, want) {
		t.Fatalf("IN list: %v, want %v", got, want)
	}
	if n := db.Stats().PKLookups.Load() - lookups; n != 1 {
		t.Fatalf("%d primary key lookups, want 1", n)
	}
	// Each row's chunks of id and v, and of the row ids: far fewer than
	// the table's.
	if read > 12 {
		t.Fatalf("the lookup read %d chunk objects", read)
	}
	if got, n, _ := pkInScan(t, db, txn, tbl, nil, list); n != 4 || got != nil {
		t.Fatalf("count(*) of the IN list: %d rows", n)
	}
	if got, n, _ := pkInScan(t, db, txn, tbl, []int{0, 1}, []*int64{nil, key(-1)}); n != 0 {
		t.Fatalf("no key found: %v", got)
	}

	// 2,500 keys, every other row: three batches.
	var many []*int64
	for k := int64(0); k < 5000; k += 2 {
		many = append(many, key(k))
	}
	got, n, _ := pkInScan(t, db, txn, tbl, []int{0, 1}, many)
	if n != 2500 {
		t.Fatalf("%d rows for 2,500 keys", n)
	}
	for i, r := range got {
		if r[0] != int64(2*i) || r[1] != r[0]*10 {
			t.Fatalf("row %d: %v", i, r)
		}
	}
}
