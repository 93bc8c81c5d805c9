package storage

import (
	"context"
	"testing"
)

// TestVacuumFlushes: VACUUM moves a table's buffered rows into fragments,
// so the table's row groups are fragments' only and stay put.
func TestVacuumFlushes(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, intTable("vf", 1<<20))
	insert(t, db, tbl, intRows(0, 3000))
	insert(t, db, tbl, intRows(3000, 10))
	groups := func() []RowGroup {
		txn := db.Begin()
		defer txn.Rollback()
		gs, err := txn.RowGroups(tbl)
		if err != nil {
			t.Fatal(err)
		}
		return gs
	}
	if has, err := hasBufferedRows(db.kv, tbl); err != nil || !has {
		t.Fatalf("buffered rows before VACUUM: %v, %v", has, err)
	}
	if _, err := db.Vacuum(context.Background(), "vf"); err != nil {
		t.Fatal(err)
	}
	if has, err := hasBufferedRows(db.kv, tbl); err != nil || has {
		t.Fatalf("buffered rows after VACUUM: %v, %v", has, err)
	}
	var rows int64
	for _, g := range groups() {
		if g.Kind == GroupFragment {
			rows += g.End - g.Start
		}
	}
	if rows != 3010 || countRows(t, db, nil, tbl) != 3010 {
		t.Fatalf("%d rows in fragment groups, %d in the table", rows, countRows(t, db, nil, tbl))
	}
	// Nothing left to flush: a second VACUUM keeps the groups.
	before := groups()
	if _, err := db.Vacuum(context.Background(), "vf"); err != nil {
		t.Fatal(err)
	}
	if after := groups(); len(after) != len(before) || after[0] != before[0] {
		t.Fatalf("groups %v, then %v", before, after)
	}
}
