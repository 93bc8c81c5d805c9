package storage

import (
	"context"
	"sync"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

// TestNamedVersionsSurviveVacuum: a commit and a tag name versions that
// VACUUM keeps, with the rows they read, while it expires the unnamed
// ones (no retention at all here); refs resolve by id, prefix, tag name,
// version number and time.
func TestNamedVersionsSurviveVacuum(t *testing.T) {
	db, err := Open(Options{InMemory: true, FlushRows: 1 << 30, VersionRetention: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 100))
	txn := db.Begin()
	id, err := txn.CommitVersion(tbl, "first hundred", "alice")
	txn.Rollback()
	if err != nil || len(id) != 12 {
		t.Fatalf("commit id %q, %v", id, err)
	}
	_, ids := scanNow(t, db, tbl, []int{0})
	deleteRows(t, db, tbl, ids[:40])
	insert(t, db, tbl, wideRows(tbl, 100, 10))
	txn = db.Begin()
	if _, err := txn.Tag(tbl, "seventy", ""); err != nil {
		t.Fatal(err)
	}
	_, err = txn.Tag(tbl, "seventy", "")
	wantCode(t, err, pgerror.DuplicateObject)
	if _, err := txn.Tag(tbl, "from-commit", id[:7]); err != nil {
		t.Fatal(err)
	}
	txn.Rollback()
	deleteRows(t, db, tbl, ids[40:90])
	if _, err := db.Vacuum(context.Background(), "w"); err != nil {
		t.Fatal(err)
	}
	count := func(ref string) int {
		t.Helper()
		txn := db.Begin()
		defer txn.Rollback()
		r, err := txn.ResolveRef(tbl, ref)
		if err != nil {
			t.Fatalf("resolving %q: %v", ref, err)
		}
		rows, _ := scanAllWith(t, db, txn, tbl, ScanOptions{Cols: []int{0}, AsOf: r.Version})
		return len(rows)
	}
	if n := count(id); n != 100 {
		t.Fatalf("commit %s reads %d rows after VACUUM, want 100", id, n)
	}
	if n := count("from-commit"); n != 100 {
		t.Fatalf("the tag of the commit reads %d rows, want 100", n)
	}
	if n := count("seventy"); n != 70 {
		t.Fatalf("tag seventy reads %d rows, want 70", n)
	}
	refs, err := db.Refs(tbl)
	if err != nil || len(refs) != 3 || refs[0].Kind != RefCommit || refs[0].Message != "first hundred" || refs[0].Author != "alice" {
		t.Fatalf("refs %+v, %v", refs, err)
	}
	txn = db.Begin()
	_, err = txn.ResolveRef(tbl, "nothing")
	txn.Rollback()
	wantCode(t, err, pgerror.UndefinedObject)
	if ok, err := db.DropTag(tbl, "seventy", false); !ok || err != nil {
		t.Fatal(ok, err)
	}
	_, err = db.DropTag(tbl, "seventy", false)
	wantCode(t, err, pgerror.UndefinedObject)
}

// TestCommitsNamedAtOnce: commits named at once at one version each
// follow the one named before, so the log reaches every one of them.
func TestCommitsNamedAtOnce(t *testing.T) {
	db, err := Open(Options{InMemory: true, FlushRows: 1 << 30, VersionRetention: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 10))
	const n = 16
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			txn := db.Begin()
			defer txn.Rollback()
			ids[i], errs[i] = txn.CommitVersion(tbl, "at once", "")
		})
	}
	wg.Wait()
	txn := db.Begin()
	defer txn.Rollback()
	log, err := txn.Log(tbl)
	if err != nil {
		t.Fatal(err)
	}
	reached := map[string]bool{}
	for _, r := range log {
		reached[r.Name] = true
	}
	for i, id := range ids {
		if errs[i] != nil || !reached[id] {
			t.Errorf("commit %d (%s, %v): not in the log of %d commits", i, id, errs[i], len(log))
		}
	}
}
