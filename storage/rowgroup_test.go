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

// TestGroupScanReadsItsChunks reads each row group of a fragment of many
// chunks: a group's scan loads the chunks holding its rows and no others
// (chunks past the group's end are not loaded ahead).
func TestGroupScanReadsItsChunks(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, intTable("g", 64<<10))
	insert(t, db, tbl, intRows(0, 3*RowGroupRows))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	txn := db.Begin()
	defer txn.Rollback()
	gs, err := txn.RowGroups(tbl)
	if err != nil {
		t.Fatal(err)
	}
	frags, err := txn.liveFragments(tbl)
	if err != nil || len(frags) != 1 {
		t.Fatalf("%d fragments, %v", len(frags), err)
	}
	f := frags[0]
	for _, g := range gs {
		if g.Kind != GroupFragment {
			continue
		}
		// The chunks of column 2 (the tensor) and of the row ids that
		// hold rows of the group.
		want := int64(0)
		for _, col := range []int{2, hiddenRowID(len(tbl.Columns))} {
			for _, ck := range f.Cols[col] {
				if ck.Start < g.End && ck.Start+ck.Rows > g.Start {
					want++
				}
			}
		}
		before := db.Stats().ChunksRead.Load()
		rows, _ := scanAllWith(t, db, txn, tbl, ScanOptions{Cols: []int{2}, Group: &g})
		got := db.Stats().ChunksRead.Load() - before
		if len(rows) != int(g.End-g.Start) || got != want {
			t.Fatalf("group [%d, %d): %d rows, %d chunks read, want %d", g.Start, g.End, len(rows), got, want)
		}
	}
}
