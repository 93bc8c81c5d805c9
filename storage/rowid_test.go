package storage

import (
	"context"
	"slices"
	"testing"

	"github.com/deeplaked/deeplaked/types"
)

// rowIDScan scans cols of tbl with preds and returns, per row, the id Next
// gave and the values of cols (ints).
func rowIDScan(t *testing.T, txn *Txn, tbl *TableDesc, opts ScanOptions) (ids []uint64, rows [][]int64) {
	t.Helper()
	sc, err := txn.ScanWith(tbl, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	for {
		b, bids, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			return ids, rows
		}
		if len(b.Cols) != len(opts.Cols) || b.Len() != len(bids) {
			t.Fatalf("batch of %d columns, %d rows for %d columns, %d ids", len(b.Cols), b.Len(), len(opts.Cols), len(bids))
		}
		for i, id := range bids {
			ids = append(ids, id)
			row := make([]int64, len(b.Cols))
			for j, v := range b.Cols {
				row[j] = v.Ints[i]
			}
			rows = append(rows, row)
		}
	}
}

// TestRowIDColumn reads the system column _rowid of a table without a
// primary key: in a scan (anywhere among the columns, alone, twice, from
// fragments, buffered rows and the txn's own), by equality and IN lists on
// it (read by id: deleted, missing and negative ids found nowhere, few
// chunks read), through a RowFetcher, pruned by zone maps on ranges, and
// weighed by StoredBytes.
func TestRowIDColumn(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, &TableDesc{Name: "nokey", Columns: []ColumnDesc{
		{Name: "v", Type: types.TypInt8},
		{Name: "w", Type: types.TypInt8},
	}, Options: TableOptions{ChunkSize: 4096}})
	rows := func(from, n int64) *types.Batch {
		b := types.NewBatch([]types.Type{types.TypInt8, types.TypInt8}, int(n))
		for i := from; i < from+n; i++ {
			b.Cols[0].AppendInt(i)
			b.Cols[1].AppendInt(-i)
		}
		return b
	}
	insert(t, db, tbl, rows(0, 20000))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, rows(20000, 5)) // buffered
	txn := db.Begin()
	defer txn.Rollback()
	if err := txn.Insert(tbl, rows(20005, 5)); err != nil { // own
		t.Fatal(err)
	}
	deleteIDs(t, txn, tbl, func(v int64) bool { return v == 7 })
	rc := RowIDColumn(tbl)

	ids, got := rowIDScan(t, txn, tbl, ScanOptions{Cols: []int{1, rc, 0, rc}})
	if len(ids) != 20009 {
		t.Fatalf("%d rows, want 20,009", len(ids))
	}
	byID := map[uint64]int64{}
	for i, id := range ids {
		r := got[i]
		if r[1] != int64(id) || r[3] != int64(id) || r[0] != -r[2] {
			t.Fatalf("row %d (id %d): %v", i, id, r)
		}
		byID[id] = r[2]
	}
	onlyIDs, only := rowIDScan(t, txn, tbl, ScanOptions{Cols: []int{rc}, Borrow: true})
	if !slices.Equal(onlyIDs, ids) || int64(onlyIDs[5]) != only[5][0] {
		t.Fatal("a scan of _rowid alone differs")
	}

	// Lookups by id: a fragment's, a buffered and an own row, a deleted
	// id, a missing one, a negative one, NULL and duplicates.
	var deleted uint64
	for id := ids[6]; ; id++ {
		if _, ok := byID[id]; !ok {
			deleted = id
			break
		}
	}
	want := []uint64{ids[0], ids[12345], ids[20003], ids[20008]}
	val := types.NewVec(types.TypInt8, 0)
	for _, id := range []uint64{ids[20008], ids[12345], ids[0], deleted, 1 << 50, ids[20003], ids[0]} {
		val.AppendInt(int64(id))
	}
	val.AppendInt(-5)
	val.AppendNull()
	read := db.Stats().ChunksRead.Load()
	lids, lrows := rowIDScan(t, txn, tbl, ScanOptions{Cols: []int{0, rc}, Preds: []ZonePred{{Col: rc, Op: ZoneIn, Val: val, Row: -1}}})
	if !slices.Equal(lids, want) {
		t.Fatalf("IN lookup found ids %v, want %v", lids, want)
	}
	for i, r := range lrows {
		if r[1] != int64(lids[i]) || r[0] != byID[lids[i]] {
			t.Fatalf("IN lookup row %d: %v", i, r)
		}
	}
	if n := db.Stats().ChunksRead.Load() - read; n > 8 {
		t.Fatalf("the lookup read %d chunk objects", n)
	}
	eq := types.NewVec(types.TypInt4, 0)
	eq.AppendInt(int64(ids[12345]))
	if lids, lrows := rowIDScan(t, txn, tbl, ScanOptions{Cols: []int{rc}, Preds: []ZonePred{{Col: rc, Op: ZoneEq, Val: eq, Row: 0}}}); len(lids) != 1 || lrows[0][0] != int64(ids[12345]) {
		t.Fatalf("= lookup: %v %v", lids, lrows)
	}
	if !PKLookup(tbl, []ZonePred{{Col: rc, Op: ZoneIn, Val: val, Row: -1}}) || PKLookup(tbl, []ZonePred{{Col: rc, Op: ZoneGt, Val: eq, Row: 0}}) {
		t.Fatal("PKLookup does not tell a lookup by _rowid")
	}

	// A range on _rowid prunes chunks by their zone maps.
	pruned := db.Stats().ChunksPruned.Load()
	gt := types.NewVec(types.TypInt8, 0)
	gt.AppendInt(int64(ids[19000]))
	rids, _ := rowIDScan(t, txn, tbl, ScanOptions{Cols: []int{0}, Preds: []ZonePred{{Col: rc, Op: ZoneGt, Val: gt, Row: 0}}})
	if db.Stats().ChunksPruned.Load() == pruned || len(rids) >= len(ids) || !slices.Contains(rids, ids[19001]) {
		t.Fatalf("a range on _rowid: %d rows, %d chunks pruned", len(rids), db.Stats().ChunksPruned.Load()-pruned)
	}

	// A RowFetcher, into a batch of its own and then into the one it gave.
	rf, err := txn.NewRowFetcher(tbl, []int{rc, 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	var b *types.Batch
	for range 2 {
		var found []uint64
		if b, found, err = rf.Fetch([]uint64{ids[20008], deleted, ids[3]}, b); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(found, []uint64{ids[20008], ids[3]}) || len(b.Cols) != 2 || b.Len() != 2 ||
			b.Cols[0].Ints[0] != int64(ids[20008]) || b.Cols[0].Ints[1] != int64(ids[3]) || b.Cols[1].Ints[1] != -byID[ids[3]] {
			t.Fatalf("fetch: %v, %+v", found, b.Cols)
		}
	}
	if _, err := txn.NewRowFetcher(tbl, []int{rc + 1}, 0); err == nil {
		t.Fatal("a fetcher of a column past _rowid")
	}

	sizes, err := txn.StoredBytes(tbl, []int{0, rc})
	if err != nil || sizes[1] <= 0 {
		t.Fatalf("stored bytes of _rowid: %v, %v", sizes, err)
	}
}
