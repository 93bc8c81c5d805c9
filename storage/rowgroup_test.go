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
// (chunks past the group's end are not loaded ahead), and a chunk that
// spans two groups (every chunk of the row ids, 32,768 rows each) is read
// once, by the first.
func TestGroupScanReadsItsChunks(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, intTable("g", 256<<10))
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
	cols := []int{2, hiddenRowID(len(tbl.Columns))}
	var total, all int64
	for _, col := range cols {
		all += int64(len(f.Cols[col]))
	}
	for k, g := range gs {
		if g.Kind != GroupFragment {
			continue
		}
		// The chunks of column 2 (the tensor) and of the row ids that
		// hold rows of the group, less those that hold rows of the group
		// before: they spanned that group's end, so its scan put them in
		// the chunk cache.
		want := int64(0)
		for _, col := range cols {
			for _, ck := range f.Cols[col] {
				if ck.Start < g.End && ck.Start+ck.Rows > g.Start && (k == 0 || ck.Start >= gs[k-1].End) {
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
		for i, r := range rows {
			// intRows writes the row number's two low bytes first.
			if v, id := r[0].(string), g.Start+int64(i); v[0] != byte(id) || v[1] != byte(id>>8) {
				t.Fatalf("group [%d, %d): row %d has the tensor of another", g.Start, g.End, id)
			}
		}
		total += got
	}
	// Each chunk read once, the row ids' (a chunk longer than a group)
	// included.
	if total != all || len(f.Cols[cols[1]]) >= len(gs)-1 {
		t.Fatalf("%d chunks read by the groups' scans, the fragment has %d (%d of row ids for %d groups)", total, all, len(f.Cols[cols[1]]), len(gs)-1)
	}
}
