package storage

import (
	"context"
	"slices"
	"testing"
)

func TestRowGroups(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, intTable("g", 0))
	insert(t, db, tbl, intRows(0, 2*RowGroupRows+100))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, intRows(100000, 500))
	// Delete a few rows of the fragment and of the buffered rows.
	_, ids := scanAll(t, db, nil, tbl, []int{0})
	del := db.Begin()
	if err := del.Delete(tbl, []uint64{ids[5], ids[RowGroupRows+1], ids[len(ids)-1]}); err != nil {
		t.Fatal(err)
	}
	if err := del.Commit(); err != nil {
		t.Fatal(err)
	}
	txn := db.Begin()
	defer txn.Rollback()
	if err := txn.Insert(tbl, intRows(200000, 50)); err != nil {
		t.Fatal(err)
	}
	_, want := scanAll(t, db, txn, tbl, []int{0, 2})
	gs, err := txn.RowGroups(tbl)
	if err != nil {
		t.Fatal(err)
	}
	kinds := make([]RowGroupKind, 0, len(gs))
	for _, g := range gs {
		kinds = append(kinds, g.Kind)
	}
	if !slices.Equal(kinds, []RowGroupKind{GroupFragment, GroupFragment, GroupFragment, GroupBuffered, GroupOwn}) || gs[1].Start != RowGroupRows || gs[2].End != 2*RowGroupRows+100 {
		t.Fatalf("groups %+v", gs)
	}
	// Group by group, in order, the scans read what one scan reads.
	var got []uint64
	for _, g := range gs {
		sc, err := txn.ScanWith(tbl, ScanOptions{Cols: []int{0, 2}, Group: &g})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			b, bids, err := sc.Next()
			if err != nil {
				t.Fatal(err)
			}
			if b == nil {
				break
			}
			got = append(got, bids...)
			n += len(bids)
		}
		sc.Close()
		if g.Kind == GroupFragment && n > int(g.End-g.Start) || n == 0 {
			t.Errorf("group %+v read %d rows", g, n)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("groups read %d rows, the table has %d", len(got), len(want))
	}
}
