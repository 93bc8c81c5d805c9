package storage

import (
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

// Once a txn spilled its rows into a fragment, its later inserts go into
// the fragment directly: it reads them, deletes some, finds their keys,
// and commits them in row id order.
func TestInsertAfterSpill(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, intTable("s", 64<<10))
	txn := db.Begin()
	for start := 0; start < 20000; start += 500 {
		if err := txn.Insert(tbl, intRows(start, 500)); err != nil {
			t.Fatal(err)
		}
	}
	if txn.tables[tbl.ID].w == nil {
		t.Fatal("20000 rows did not spill")
	}
	if n := countRows(t, db, txn, tbl); n != 20000 {
		t.Fatalf("the txn sees %d rows, want 20000", n)
	}
	deleted := deleteIDs(t, txn, tbl, func(id int64) bool { return id%7 == 0 })
	wantCode(t, txn.Insert(tbl, intRows(19998, 1)), pgerror.UniqueViolation)
	for start := 20000; start < 30000; start += 500 {
		if err := txn.Insert(tbl, intRows(start, 500)); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.Insert(tbl, intRows(7, 1)); err != nil { // deleted above
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	rows, ids := scanAll(t, db, nil, tbl, allColumns(3))
	if len(rows) != 30000-deleted+1 {
		t.Fatalf("%d rows, want %d", len(rows), 30000-deleted+1)
	}
	last := int64(-1)
	for i, r := range rows {
		id := r[0].(int64)
		if i > 0 && ids[i] <= ids[i-1] {
			t.Fatalf("row ids not ascending at %d", i)
		}
		if id == 7 && i == len(rows)-1 {
			continue
		}
		if id <= last || id%7 == 0 && id < 20000 || r[1].(int64) != id%1000 {
			t.Fatalf("row %d: %v after id %d", i, r[:2], last)
		}
		last = id
	}
}

func TestGrowTo(t *testing.T) {
	f := func(capacity, need, est, want int) {
		t.Helper()
		if got := cap(growTo(make([]int64, 0, capacity), need, est)); got < want || got > want+want/8+8 {
			t.Errorf("growTo(cap %d, %d, %d): cap %d, want %d", capacity, need, est, got, want)
		}
	}
	f(16, 10, 1<<20, 16)                  // room already
	f(1024, 1025, 1<<20, 2048)            // doubles while far from the chunk
	f(1<<17, 1<<17+1, 1<<20, 1<<20+1<<17) // an eighth of the way: the whole chunk at once
	f(1<<20, 1<<21, 1<<20, 1<<21)         // past the estimate: what is needed
}
