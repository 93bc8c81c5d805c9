package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// viewKeys returns the sorted id column (the key) of view t as txn (or a
// fresh txn) reads it, at version asOf.
func viewKeys(t testing.TB, db *DB, tbl *TableDesc, asOf uint64) []int64 {
	t.Helper()
	txn := db.Begin()
	defer txn.Rollback()
	rows, _ := scanAllWith(t, db, txn, tbl, ScanOptions{Cols: []int{0}, AsOf: asOf})
	var out []int64
	for _, r := range rows {
		out = append(out, r[0].(int64))
	}
	slices.Sort(out)
	return out
}

// deleteKeys deletes the rows of view tbl whose id column holds keys, in
// one transaction.
func deleteKeys(t testing.TB, db *DB, tbl *TableDesc, keys ...int64) {
	t.Helper()
	txn := db.Begin()
	rows, rids := scanAll(t, db, txn, tbl, allColumns(len(tbl.Columns)))
	var ds []uint64
	for i, r := range rows {
		if slices.Contains(keys, r[0].(int64)) {
			ds = append(ds, rids[i])
		}
	}
	if len(ds) != len(keys) {
		t.Fatalf("deleting %v: found %d rows", keys, len(ds))
	}
	if err := txn.Delete(tbl, ds); err != nil {
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
}

func span(lo, hi int64, except ...int64) []int64 {
	var out []int64
	for i := lo; i < hi; i++ {
		if !slices.Contains(except, i) {
			out = append(out, i)
		}
	}
	return out
}

// TestBranchLayers: a branch reads its base as of the fork, plus its own
// writes, minus its own deletes; main's later writes stay out of it and
// its writes stay out of main; a branch of a branch stacks; primary keys
// are unique within each branch; all of it through flushes, compactions,
// VACUUM and a reopen.
func TestBranchLayers(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(Options{Dir: dir, FlushRows: 1 << 30, VersionRetention: -1})
	if err != nil {
		t.Fatal(err)
	}
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 100))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, wideRows(tbl, 100, 20)) // buffered

	txn := db.Begin()
	ref, err := txn.CreateBranch(tbl, "dev", "", "alice")
	txn.Rollback()
	if err != nil {
		t.Fatal(err)
	}
	if len(ref.Base) != 1 || ref.Base[0].Table != tbl.ID {
		t.Fatalf("branch record %+v", ref)
	}
	dev, err := db.postgres().Branch(tbl, "dev")
	if err != nil || dev.ID == tbl.ID || dev.Branch != "dev" {
		t.Fatalf("branch desc %+v, %v", dev, err)
	}
	if got := viewKeys(t, db, dev, 0); !slices.Equal(got, span(0, 120)) {
		t.Fatalf("new branch reads %v", got)
	}
	// Main moves on: deletes, inserts; the branch does not see them.
	_, ids := scanNow(t, db, tbl, []int{0})
	mainRows, _ := scanNow(t, db, tbl, []int{0})
	del := func(view *TableDesc, keys ...int64) { t.Helper(); deleteKeys(t, db, view, keys...) }
	_ = ids
	_ = mainRows
	del(tbl, 0, 1, 2, 110)
	insert(t, db, tbl, wideRows(tbl, 200, 5))
	// The branch deletes other rows, and one main deleted too, and
	// inserts keys main has (200) and a key it deleted on main (0 is
	// still its own: a duplicate there).
	del(dev, 5, 6, 115, 0)
	insert(t, db, dev, wideRows(dev, 300, 3))
	insert(t, db, dev, wideRows(dev, 200, 1))
	txn = db.Begin()
	err = txn.Insert(dev, wideRows(dev, 7, 1))
	wantCode(t, err, pgerror.UniqueViolation)
	txn.Rollback()
	insert(t, db, dev, wideRows(dev, 5, 1)) // deleted on the branch: free again
	wantMain := append(span(3, 120, 110), span(200, 205)...)
	wantDev := append(append(span(1, 120, 6, 115), span(200, 201)...), span(300, 303)...)
	check := func(when string) {
		t.Helper()
		if got := viewKeys(t, db, tbl, 0); !slices.Equal(got, wantMain) {
			t.Fatalf("%s: main reads %v\nwant %v", when, got, wantMain)
		}
		if got := viewKeys(t, db, dev, 0); !slices.Equal(got, wantDev) {
			t.Fatalf("%s: dev reads %v\nwant %v", when, got, wantDev)
		}
	}
	check("before flush")
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("after flush")
	if _, err := db.Vacuum(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	check("after vacuum")

	// A branch of the branch, from a commit of it.
	txn = db.Begin()
	c, err := txn.CommitVersion(dev, "dev work", "bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txn.CreateBranch(tbl, "feature", c, "bob"); err != nil {
		t.Fatal(err)
	}
	_, err = txn.CreateBranch(tbl, "feature", "", "bob")
	wantCode(t, err, pgerror.DuplicateObject)
	_, err = txn.Tag(tbl, "feature", "")
	wantCode(t, err, pgerror.DuplicateObject)
	txn.Rollback()
	feat, err := db.postgres().Branch(tbl, "feature")
	if err != nil || len(feat.Base) != 2 {
		t.Fatalf("feature %+v, %v", feat, err)
	}
	del(dev, 300)
	del(feat, 301, 10)
	insert(t, db, feat, wideRows(feat, 0, 1))
	wantDev = span(1, 120, 6, 115)
	wantDev = append(append(wantDev, 200), 301, 302)
	wantFeat := append(append(span(0, 120, 6, 10, 115), 200), 300, 302)
	check("after the sub-branch")
	if got := viewKeys(t, db, feat, 0); !slices.Equal(got, wantFeat) {
		t.Fatalf("feature reads %v\nwant %v", got, wantFeat)
	}
	_, err = db.DropBranch(tbl, "dev", false)
	wantCode(t, err, pgerror.DependentObjectsStillExist)

	// Everything survives a reopen.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(Options{Dir: dir, FlushRows: 1 << 30, VersionRetention: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl, _ = db.Table("w")
	dev, err = db.postgres().Branch(tbl, "dev")
	if err != nil {
		t.Fatal(err)
	}
	feat, _ = db.postgres().Branch(tbl, "feature")
	check("after reopen")
	if got := viewKeys(t, db, feat, 0); !slices.Equal(got, wantFeat) {
		t.Fatalf("feature reads %v after reopen\nwant %v", got, wantFeat)
	}
	txn = db.Begin()
	err = txn.Insert(feat, wideRows(feat, 11, 1))
	wantCode(t, err, pgerror.UniqueViolation)
	txn.Rollback()
	if ok, err := db.DropBranch(tbl, "feature", false); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := db.DropBranch(tbl, "dev", false); !ok || err != nil {
		t.Fatal(ok, err)
	}
	_, err = db.postgres().Branch(tbl, "dev")
	wantCode(t, err, pgerror.UndefinedObject)
	if got := viewKeys(t, db, tbl, 0); !slices.Equal(got, wantMain) {
		t.Fatalf("main reads %v after dropping its branches", got)
	}
}

// diffOf returns diff(a, b) as kind → sorted keys.
func diffOf(t testing.TB, db *DB, a, b *TableDesc) map[DiffKind][]int64 {
	t.Helper()
	txn := db.Begin()
	defer txn.Rollback()
	d, err := txn.Diff(a, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out := map[DiffKind][]int64{}
	for {
		batch, kinds, _, err := d.Next()
		if err != nil {
			t.Fatal(err)
		}
		if batch == nil {
			break
		}
		for i, k := range kinds {
			out[k] = append(out[k], batch.Cols[0].Ints[i])
		}
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}

// TestDiffViews: a diff between versions of one table, a branch and its
// base, and two sibling branches finds exactly the keys added, deleted
// and updated, and reads only what changed.
func TestDiffViews(t *testing.T) {
	db, err := Open(Options{InMemory: true, FlushRows: 1 << 30, VersionRetention: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 1000))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	txn := db.Begin()
	v1, _ := txn.readVersion(tbl)
	if _, err := txn.CreateBranch(tbl, "a", "", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.CreateBranch(tbl, "b", "", "x"); err != nil {
		t.Fatal(err)
	}
	txn.Rollback()
	a, _ := db.postgres().Branch(tbl, "a")
	b, _ := db.postgres().Branch(tbl, "b")
	del := func(view *TableDesc, keys ...int64) { t.Helper(); deleteKeys(t, db, view, keys...) }
	// main: deletes 1, 2; updates 3; adds 1000, 1001 (one then deleted)
	changed := func(b *types.Batch) *types.Batch { b.Cols[2].Ints[0]++; return b }
	del(tbl, 1, 2, 3)
	insert(t, db, tbl, changed(wideRows(tbl, 3, 1)))
	insert(t, db, tbl, wideRows(tbl, 1000, 2))
	del(tbl, 1001)
	// a: deletes 2, 5; updates 6; adds 2000
	del(a, 2, 5, 6)
	insert(t, db, a, changed(wideRows(a, 6, 1)))
	insert(t, db, a, wideRows(a, 2000, 1))
	// b: deletes 5; adds 2000 and 3000
	del(b, 5)
	insert(t, db, b, wideRows(b, 2000, 1))
	insert(t, db, b, wideRows(b, 3000, 1))

	old := *tbl
	old.AsOf = v1
	eq := func(got map[DiffKind][]int64, added, deleted, updated []int64) {
		t.Helper()
		if !slices.Equal(got[DiffAdded], added) || !slices.Equal(got[DiffDeleted], deleted) || !slices.Equal(got[DiffUpdated], updated) {
			t.Fatalf("diff %v, want added %v deleted %v updated %v", got, added, deleted, updated)
		}
	}
	eq(diffOf(t, db, &old, tbl), []int64{1000}, []int64{1, 2}, []int64{3})
	eq(diffOf(t, db, tbl, &old), []int64{1, 2}, []int64{1000}, []int64{3})
	eq(diffOf(t, db, &old, a), []int64{2000}, []int64{2, 5}, []int64{6})
	eq(diffOf(t, db, tbl, a), []int64{1, 2000}, []int64{5, 1000}, []int64{3, 6})
	eq(diffOf(t, db, a, b), []int64{2, 3000}, nil, []int64{6}) // 2000: the same values on both
	eq(diffOf(t, db, a, a), nil, nil, nil)

	// The diff of two close versions of a large table reads only the
	// chunks that changed.
	st := db.Stats()
	before := st.ChunksRead.Load()
	viewKeys(t, db, &old, 0)
	full := st.ChunksRead.Load() - before
	before = st.ChunksRead.Load()
	diffOf(t, db, &old, tbl)
	if n := st.ChunksRead.Load() - before; n != 0 || full == 0 {
		t.Fatalf("the diff read %d chunks (a scan %d)", n, full)
	}
}

// TestBranchesCopyNothing: ten branches of a table add no object and a
// few hundred bytes of catalog keys; writing to a branch writes objects
// of the branch only, sized by what was written.
func TestBranchesCopyNothing(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(Options{Dir: dir, FlushRows: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl := createTable(t, db, wideTable("w"))
	for i := 0; i < 20000; i += 5000 {
		insert(t, db, tbl, wideRows(tbl, i, 5000))
	}
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	objects := func() (n int, bytes int64, prefixes map[string]int64) {
		prefixes = map[string]int64{}
		err := filepath.Walk(filepath.Join(dir, "objects"), func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(filepath.Join(dir, "objects"), p)
			parts := strings.SplitN(rel, string(filepath.Separator), 3)
			prefixes[parts[0]+"/"+parts[1]] += fi.Size()
			n++
			bytes += fi.Size()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n, bytes, prefixes
	}
	catalog := func() (n int64) {
		it, err := db.kv.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		for it.First(); it.Valid(); it.Next() {
			n += int64(len(it.Key()) + len(it.Value()))
		}
		return n
	}
	n0, b0, _ := objects()
	c0 := catalog()
	txn := db.Begin()
	for i := range 10 {
		if _, err := txn.CreateBranch(tbl, fmt.Sprintf("b%d", i), "", "x"); err != nil {
			t.Fatal(err)
		}
	}
	txn.Rollback()
	n1, b1, _ := objects()
	c1 := catalog()
	t.Logf("table: %d objects, %d bytes; 10 branches: %d objects, %d bytes; catalog +%d bytes", n0, b0, n1-n0, b1-b0, c1-c0)
	if n1 != n0 || b1 != b0 || c1-c0 > 10*512 {
		t.Fatalf("10 branches of a %d-byte table added %d objects, %d bytes, and %d catalog bytes", b0, n1-n0, b1-b0, c1-c0)
	}
	// Writing to a branch: its own rows and markers, its own objects.
	b3, _ := db.postgres().Branch(tbl, "b3")
	insert(t, db, b3, wideRows(b3, 100000, 100))
	_, ids := scanNow(t, db, b3, []int{0})
	deleteRows(t, db, b3, ids[:50])
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, b2, prefixes := objects()
	own := prefixes["tables/"+fmt.Sprint(b3.ID)]
	if b2-b1 != own || own == 0 || own > b0/50 {
		t.Fatalf("writing 100 rows to a branch of a %d-byte table added %d bytes (%d of the branch's): %v", b0, b2-b1, own, prefixes)
	}
	if got := len(viewKeys(t, db, tbl, 0)); got != 20000 {
		t.Fatalf("main reads %d rows", got)
	}
	if got := len(viewKeys(t, db, b3, 0)); got != 20050 {
		t.Fatalf("the branch reads %d rows", got)
	}
	// Dropping the branch deletes its objects, and only its.
	if _, err := db.DropBranch(tbl, "b3", false); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool {
		db.Vacuum(context.Background(), "")
		_, b4, prefixes := objects()
		return prefixes["tables/"+fmt.Sprint(b3.ID)] == 0 && b4 <= b1
	})
	if got := len(viewKeys(t, db, tbl, 0)); got != 20000 {
		t.Fatalf("main reads %d rows after the branch was dropped", got)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for range 200 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met within 2s")
}

// TestBranchesAcrossServers: two servers of one location see each other's
// branches, commits and merges; writers on different branches, one on
// each server, commit concurrently without a conflict, and two deleting
// one row of one branch conflict as on any table.
func TestBranchesAcrossServers(t *testing.T) {
	a, b := twoServers(t)
	ta := tableOf(t, a, "w")
	insert(t, a, ta, wideRows(ta, 0, 100))
	txn := a.Begin()
	if _, err := txn.CreateBranch(ta, "dev", "", "a"); err != nil {
		t.Fatal(err)
	}
	txn.Rollback()
	refresh(t, b)
	tb := tableOf(t, b, "w")
	devB, err := b.postgres().Branch(tb, "dev")
	if err != nil {
		t.Fatalf("server b does not see the branch: %v", err)
	}
	devA, _ := a.postgres().Branch(ta, "dev")
	// Concurrent writers: a on main, b on dev, both deleting row 5 of
	// the base and inserting.
	_, ids := scanNow(t, a, ta, []int{0})
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 20 {
		wg.Go(func() {
			txn := a.Begin()
			if i == 0 {
				txn.Delete(ta, ids[5:6])
			}
			txn.Insert(ta, wideRows(ta, 1000+i, 1))
			errs <- txn.Commit()
		})
		wg.Go(func() {
			txn := b.Begin()
			if i == 0 {
				txn.Delete(devB, ids[5:6])
			}
			txn.Insert(devB, wideRows(devB, 2000+i, 1))
			errs <- txn.Commit()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("writers of two branches conflicted: %v", err)
		}
	}
	refresh(t, a, b)
	for _, db := range []*DB{a, b} {
		tbl := tableOf(t, db, "w")
		dev, _ := db.postgres().Branch(tbl, "dev")
		if got := len(viewKeys(t, db, tbl, 0)); got != 119 {
			t.Fatalf("main has %d rows", got)
		}
		if got := len(viewKeys(t, db, dev, 0)); got != 119 {
			t.Fatalf("dev has %d rows", got)
		}
	}
	// One branch, two servers, one row: the second deleter fails.
	t1, t2 := a.Begin(), b.Begin()
	if err := t1.Delete(devA, ids[6:7]); err != nil {
		t.Fatal(err)
	}
	if err := t2.Delete(devB, ids[6:7]); err != nil {
		t.Fatal(err)
	}
	if err := t1.Commit(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, t2.Commit(), pgerror.SerializationFailure)
	// A merge on b, seen by a.
	id, _, err := b.Merge(tb, devB, MergeFail, "b", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	refresh(t, a)
	txn = a.Begin()
	r, err := txn.ResolveRef(ta, id)
	txn.Rollback()
	if err != nil || len(r.Parents) != 2 {
		t.Fatalf("server a resolves the merge commit as %+v, %v", r, err)
	}
	if got := viewKeys(t, a, ta, 0); len(got) != 138 || slices.Contains(got, 5) || slices.Contains(got, 6) {
		t.Fatalf("main after the merge: %d rows", len(got))
	}
}

// TestBranchTimeTravel: a time resolves on a branch to its version then,
// or, before its first write, to its base as it forked.
func TestBranchTimeTravel(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 10))
	txn := db.Begin()
	if _, err := txn.CreateBranch(tbl, "dev", "", "x"); err != nil {
		t.Fatal(err)
	}
	txn.Rollback()
	insert(t, db, tbl, wideRows(tbl, 10, 5)) // main moves on
	time.Sleep(20 * time.Millisecond)
	beforeWrite := time.Now().UTC()
	time.Sleep(20 * time.Millisecond)
	dev, _ := db.postgres().Branch(tbl, "dev")
	insert(t, db, dev, wideRows(dev, 100, 3))
	time.Sleep(20 * time.Millisecond)
	afterWrite := time.Now().UTC()
	insert(t, db, dev, wideRows(dev, 200, 3))
	for _, c := range []struct {
		at   time.Time
		want int
	}{{beforeWrite, 10}, {afterWrite, 13}} {
		txn := db.Begin()
		v, err := txn.ResolveView(dev, c.at.Format("2006-01-02 15:04:05.999999999Z07:00"))
		txn.Rollback()
		if err != nil {
			t.Fatal(err)
		}
		if got := len(viewKeys(t, db, v.Desc, v.AsOf)); got != c.want || v.AsOf == 0 {
			t.Fatalf("dev at %v reads %d rows (as of %d), want %d", c.at, got, v.AsOf, c.want)
		}
	}
}
