package storage

import (
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

// TestOnAbort: the functions a txn was given run once when it rolls back
// or its Commit fails, never when it commits.
func TestOnAbort(t *testing.T) {
	db := openMem(t, 0)
	tbl := createTable(t, db, intTable("oa", 0))
	insert(t, db, tbl, intRows(0, 10))
	ran := map[string]int{}
	on := func(txn *Txn, name string) { txn.OnAbort(func() { ran[name]++ }) }

	ok := db.Begin()
	on(ok, "committed")
	if err := ok.Insert(tbl, intRows(10, 1)); err != nil {
		t.Fatal(err)
	}
	if err := ok.Commit(); err != nil {
		t.Fatal(err)
	}
	rb := db.Begin()
	on(rb, "rolled back")
	rb.Rollback()
	rb.Rollback()

	a, b := db.Begin(), db.Begin()
	on(a, "conflict")
	deleteIDs(t, a, tbl, func(id int64) bool { return id == 3 })
	deleteIDs(t, b, tbl, func(id int64) bool { return id == 3 })
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, a.Commit(), pgerror.SerializationFailure)
	a.Rollback()
	if ran["committed"] != 0 || ran["rolled back"] != 1 || ran["conflict"] != 1 {
		t.Fatalf("ran %v", ran)
	}
}

// TestDropTableID drops a table by name only while the name holds that
// table.
func TestDropTableID(t *testing.T) {
	db := openMem(t, 0)
	old := createTable(t, db, intTable("dt", 0))
	if _, err := db.DropTable("dt", false); err != nil {
		t.Fatal(err)
	}
	now := createTable(t, db, intTable("dt", 0))
	if dropped, err := db.DropTableID("dt", old.ID); dropped || err != nil {
		t.Fatalf("dropped the table made again: %v, %v", dropped, err)
	}
	if dropped, err := db.DropTableID("dt", now.ID); !dropped || err != nil {
		t.Fatalf("DropTableID of the table itself: %v, %v", dropped, err)
	}
	if _, err := db.Table("dt"); err == nil {
		t.Fatal("the table is still there")
	}
}
