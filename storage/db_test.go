package storage

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

func TestRoundTripBufferAndChunks(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, wideTable("w"))
	want := rowsOf(wideRows(tbl, 0, 2500))
	insert(t, db, tbl, wideRows(tbl, 0, 1000))
	insert(t, db, tbl, wideRows(tbl, 1000, 1500))
	all := allColumns(len(tbl.Columns))

	check := func(stage string) {
		t.Helper()
		got, ids := scanAll(t, db, nil, tbl, all)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: rows differ (got %d rows, want %d)", stage, len(got), len(want))
		}
		for i := 1; i < len(ids); i++ {
			if ids[i] <= ids[i-1] {
				t.Fatalf("%s: row ids out of order at %d: %v", stage, i, ids[i-1:i+1])
			}
		}
		// A column subset in a different order.
		sub, _ := scanAll(t, db, nil, tbl, []int{6, 0})
		for i, r := range sub {
			if !reflect.DeepEqual(r, []any{want[i][6], want[i][0]}) {
				t.Fatalf("%s: subset row %d = %v", stage, i, r)
			}
		}
		// No columns, as for count(*).
		none, _ := scanAll(t, db, nil, tbl, nil)
		if len(none) != len(want) {
			t.Fatalf("%s: count scan saw %d rows, want %d", stage, len(none), len(want))
		}
	}
	check("buffered")
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	keys, _ := db.Store().List(context.Background(), "tables/")
	// One chunk per stored column (the table's, _rowid and _xmin) and
	// the flush version's manifest.
	if want := len(tbl.Columns) + 2 + 1; len(keys) != want {
		t.Fatalf("objects after flush: %d, want %d: %v", len(keys), want, keys)
	}
	check("chunked")
	insert(t, db, tbl, wideRows(tbl, 2500, 10))
	want = rowsOf(wideRows(tbl, 0, 2510))
	check("chunked + buffered")
}

func TestCatalog(t *testing.T) {
	db := openMem(t, 0)
	created, err := db.CreateTable(&TableDesc{Name: "a", Columns: []ColumnDesc{{Name: "x", Type: types.TypInt4}}}, false)
	if err != nil || !created {
		t.Fatal(created, err)
	}
	_, err = db.CreateTable(&TableDesc{Name: "a"}, false)
	pe := wantCode(t, err, pgerror.DuplicateTable)
	if pe.Message != `relation "a" already exists` {
		t.Fatal(pe.Message)
	}
	if created, err := db.CreateTable(&TableDesc{Name: "a"}, true); created || err != nil {
		t.Fatal(created, err)
	}
	createTable(t, db, &TableDesc{Name: "0b"})
	var names []string
	for _, d := range db.Tables() {
		names = append(names, d.Name)
	}
	if !reflect.DeepEqual(names, []string{"0b", "a"}) {
		t.Fatal(names)
	}
	_, err = db.Table("nope")
	if pe := wantCode(t, err, pgerror.UndefinedTable); pe.Message != `relation "nope" does not exist` {
		t.Fatal(pe.Message)
	}
	_, err = db.DropTable("nope", false)
	wantCode(t, err, pgerror.UndefinedTable)
	if dropped, err := db.DropTable("nope", true); dropped || err != nil {
		t.Fatal(dropped, err)
	}
	_, err = db.CreateTable(&TableDesc{Name: "c", Columns: []ColumnDesc{{Name: "x"}, {Name: "x"}}}, false)
	wantCode(t, err, pgerror.DuplicateColumn)
}

func TestDropTable(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 100))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, wideRows(tbl, 100, 5))
	txn := db.Begin() // writes into the table while it is dropped
	if err := txn.Insert(tbl, wideRows(tbl, 200, 1)); err != nil {
		t.Fatal(err)
	}
	if dropped, err := db.DropTable("w", false); !dropped || err != nil {
		t.Fatal(dropped, err)
	}
	wantCode(t, txn.Commit(), pgerror.UndefinedTable)
	// The objects waited for txn, open when the table was dropped.
	waitObjectsGone(t, db, "tables/")
	// A new table of the same name starts empty, with its own key space.
	tbl2 := createTable(t, db, wideTable("w"))
	if tbl2.ID == tbl.ID {
		t.Fatal("table id reused")
	}
	if rows, _ := scanAll(t, db, nil, tbl2, []int{0}); len(rows) != 0 {
		t.Fatalf("new table sees %d rows", len(rows))
	}
	insert(t, db, tbl2, wideRows(tbl2, 0, 5)) // no leftover key entries
}

// waitObjectsGone waits (up to a minute) until the store holds no object
// under prefix: a dropped table's objects are deleted in the background
// once the transactions open at the drop have ended.
func waitObjectsGone(t *testing.T, db *DB, prefix string) {
	t.Helper()
	var keys []string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var err error
		if keys, err = db.Store().List(context.Background(), prefix); err != nil {
			t.Fatal(err)
		}
		if len(keys) == 0 {
			return
		}
	}
	t.Fatalf("objects left: %v", keys)
}

// TestDropTableWhileRead drops a table that a transaction is reading: the
// transaction reads on from its snapshot, every row, while the table is
// gone for others; its objects are deleted once the transaction ends, or
// by the next Open after a Close that left it open.
func TestDropTableWhileRead(t *testing.T) {
	for _, restart := range []bool{false, true} {
		dir := t.TempDir()
		db, err := Open(Options{Dir: dir, FlushRows: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		tbl := createTable(t, db, wideTable("w"))
		for k := 0; k < 4; k++ {
			insert(t, db, tbl, wideRows(tbl, k*100, 100))
			if err := db.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		other := createTable(t, db, wideTable("other"))
		insert(t, db, other, wideRows(other, 0, 10))
		if err := db.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		reader := db.Begin()
		sc, err := reader.ScanWith(tbl, ScanOptions{Cols: []int{0, 8}})
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := sc.Next()
		if err != nil || b == nil {
			t.Fatal(b, err)
		}
		n := b.Len()
		if dropped, err := db.DropTable("w", false); !dropped || err != nil {
			t.Fatal(dropped, err)
		}
		if _, err := db.Table("w"); err == nil {
			t.Fatal("the dropped table is still there")
		}
		prefix := tableObjectPrefix(tbl.ID)
		if keys, _ := db.Store().List(context.Background(), prefix); len(keys) == 0 {
			t.Fatal("the objects of a table being read were deleted at once")
		}
		for {
			b, _, err := sc.Next()
			if err != nil {
				t.Fatalf("reading on after DROP TABLE: %v", err)
			}
			if b == nil {
				break
			}
			n += b.Len()
		}
		sc.Close()
		if n != 400 {
			t.Fatalf("read %d rows after the drop, want 400", n)
		}
		if restart {
			// A crash with the reader open (the directory copied as it
			// is, then opened): the next Open deletes them.
			crashed := t.TempDir()
			// (The log's upload writes files into the objects folder.)
			if err := db.SyncLog(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := os.CopyFS(crashed, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			reader.Rollback()
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if db, err = Open(Options{Dir: crashed, FlushRows: 1 << 30}); err != nil {
				t.Fatal(err)
			}
		} else {
			reader.Rollback()
		}
		waitObjectsGone(t, db, prefix)
		if rows, _ := scanAll(t, db, nil, other, []int{0}); len(rows) != 10 {
			t.Fatalf("the other table has %d rows, want 10", len(rows))
		}
		if keys, _ := db.Store().List(context.Background(), tableObjectPrefix(other.ID)); len(keys) == 0 {
			t.Fatal("the other table's objects were deleted")
		}
		db.Close()
	}
}

// TestDropTableImportedSnapshot drops a table while a transaction that
// exported its snapshot is open; a transaction that imports that
// snapshot after the drop reads the table to the end, also once the
// exporter has ended, and the objects go when it ends.
func TestDropTableImportedSnapshot(t *testing.T) {
	db, err := Open(Options{Dir: t.TempDir(), FlushRows: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 100))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	exporter := db.Begin()
	id, err := exporter.ExportSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.DropTable("w", false); err != nil {
		t.Fatal(err)
	}
	importer := db.Begin()
	if err := importer.ImportSnapshot(id); err != nil {
		t.Fatal(err)
	}
	exporter.Rollback()
	db.bg.Wait() // a deletion the exporter's end started would be done
	if rows, _ := scanAll(t, db, importer, tbl, []int{0, 8}); len(rows) != 100 {
		t.Fatalf("the importer read %d rows, want 100", len(rows))
	}
	importer.Rollback()
	waitObjectsGone(t, db, tableObjectPrefix(tbl.ID))
}

// TestDropTableRetried fails the deletion of a dropped table's objects
// once: they stay recorded, and VACUUM deletes them.
func TestDropTableRetried(t *testing.T) {
	fs := NewFaultStore(NewMemStore(), 1)
	db, err := Open(Options{InMemory: true, Store: fs, FlushRows: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 100))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	prefix := tableObjectPrefix(tbl.ID)
	fs.Inject(Fault{Ops: []ObjectOp{ObjectDelete}, Times: 1, Err: ErrInjected})
	if _, err := db.DropTable("w", false); err != nil {
		t.Fatal(err)
	}
	db.bg.Wait()
	if keys, _ := db.Store().List(context.Background(), prefix); len(keys) == 0 {
		t.Fatal("no object left by the failed deletion")
	}
	if left, _ := db.droppedLeft(); len(left) != 1 || left[0].id != tbl.ID {
		t.Fatalf("recorded dropped tables: %v", left)
	}
	if _, err := db.Vacuum(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	waitObjectsGone(t, db, prefix)
	if left, _ := db.droppedLeft(); len(left) != 0 {
		t.Fatalf("recorded dropped tables after VACUUM: %v", left)
	}
}

func TestPrimaryKey(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, wideTable("items"))
	insert(t, db, tbl, wideRows(tbl, 0, 10))

	// Against a committed row.
	txn := db.Begin()
	err := txn.Insert(tbl, wideRows(tbl, 5, 1))
	pe := wantCode(t, err, pgerror.UniqueViolation)
	if pe.Message != `duplicate key value violates unique constraint "items_pkey"` || pe.Detail != "Key (id)=(5) already exists." {
		t.Fatalf("%q / %q", pe.Message, pe.Detail)
	}
	txn.Rollback()

	// Against a row inserted earlier in the same txn, and within one batch.
	txn = db.Begin()
	if err := txn.Insert(tbl, wideRows(tbl, 20, 3)); err != nil {
		t.Fatal(err)
	}
	wantCode(t, txn.Insert(tbl, wideRows(tbl, 21, 1)), pgerror.UniqueViolation)
	txn.Rollback()
	b := wideRows(tbl, 30, 2)
	b.Cols[0].Ints[1] = 30
	txn = db.Begin()
	wantCode(t, txn.Insert(tbl, b), pgerror.UniqueViolation)
	txn.Rollback()

	// Concurrent txns: the second to commit loses.
	t1, t2 := db.Begin(), db.Begin()
	if err := t1.Insert(tbl, wideRows(tbl, 40, 1)); err != nil {
		t.Fatal(err)
	}
	if err := t2.Insert(tbl, wideRows(tbl, 40, 1)); err != nil {
		t.Fatal(err)
	}
	if err := t1.Commit(); err != nil {
		t.Fatal(err)
	}
	pe = wantCode(t, t2.Commit(), pgerror.UniqueViolation)
	if pe.Detail != "Key (id)=(40) already exists." {
		t.Fatal(pe.Detail)
	}
	if rows, _ := scanAll(t, db, nil, tbl, []int{0}); len(rows) != 11 {
		t.Fatalf("%d rows, want 11", len(rows))
	}

	// Delete + insert of the same key in one txn (UPDATE) works, for
	// buffered and chunked rows.
	for _, flush := range []bool{false, true} {
		if flush {
			if err := db.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		rows, ids := scanAll(t, db, nil, tbl, []int{0})
		txn = db.Begin()
		var del []uint64
		for i, r := range rows {
			if r[0] == int64(3) {
				del = append(del, ids[i])
			}
		}
		if err := txn.Delete(tbl, del); err != nil {
			t.Fatal(err)
		}
		if err := txn.Insert(tbl, wideRows(tbl, 3, 1)); err != nil {
			t.Fatal(err)
		}
		if err := txn.Commit(); err != nil {
			t.Fatal(err)
		}
		txn = db.Begin()
		wantCode(t, txn.Insert(tbl, wideRows(tbl, 3, 1)), pgerror.UniqueViolation)
		txn.Rollback()
	}
}

func TestPrimaryKeyComposite(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, &TableDesc{Name: "kv", Columns: []ColumnDesc{
		{Name: "k", Type: types.TypText}, {Name: "n", Type: types.TypFloat8}, {Name: "ok", Type: types.TypBool},
	}, PrimaryKey: []int{0, 1}})
	row := func(k string, n float64) *types.Batch {
		b := types.NewBatch(tbl.ColumnTypes(), 1)
		b.Cols[0].AppendString(k)
		b.Cols[1].AppendFloat(n)
		b.Cols[2].AppendBool(true)
		return b
	}
	// Distinct keys that a naive concatenation would confuse.
	for _, r := range []struct {
		k string
		n float64
	}{{"a", 1}, {"a\x00", 1}, {"", 1}, {"a", 2}, {"a", -1}} {
		insert(t, db, tbl, row(r.k, r.n))
	}
	txn := db.Begin()
	defer txn.Rollback()
	pe := wantCode(t, txn.Insert(tbl, row("a", 2)), pgerror.UniqueViolation)
	if pe.Detail != "Key (k, n)=(a, 2) already exists." {
		t.Fatal(pe.Detail)
	}
	// -0 equals 0.
	insert(t, db, tbl, row("z", 0))
	wantCode(t, txn.Insert(tbl, row("z", negZero())), pgerror.UniqueViolation)
}

func negZero() float64 {
	z := 0.0
	return -z
}

func TestDelete(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 50))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, wideRows(tbl, 50, 50))
	rows, ids := scanAll(t, db, nil, tbl, []int{0})
	// Delete every third row: both chunked (< 50) and buffered ones.
	var del []uint64
	var want [][]any
	for i := range rows {
		if i%3 == 0 {
			del = append(del, ids[i])
		} else {
			want = append(want, rows[i])
		}
	}
	txn := db.Begin()
	if err := txn.Delete(tbl, del); err != nil {
		t.Fatal(err)
	}
	if got, _ := scanAll(t, db, txn, tbl, []int{0}); !reflect.DeepEqual(got, want) {
		t.Fatalf("own deletes not visible: %d rows", len(got))
	}
	if got, _ := scanAll(t, db, nil, tbl, []int{0}); len(got) != 100 {
		t.Fatalf("uncommitted deletes visible: %d rows", len(got))
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, _ := scanAll(t, db, nil, tbl, []int{0}); !reflect.DeepEqual(got, want) {
		t.Fatalf("after commit: %d rows", len(got))
	}
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _ := scanAll(t, db, nil, tbl, []int{0}); !reflect.DeepEqual(got, want) {
		t.Fatalf("after flush: %d rows", len(got))
	}
	// Deleted keys are free again.
	insert(t, db, tbl, wideRows(tbl, 0, 1))
	insert(t, db, tbl, wideRows(tbl, 99, 1))
}

func TestRollback(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 5))
	_, ids := scanAll(t, db, nil, tbl, nil)
	txn := db.Begin()
	if err := txn.Insert(tbl, wideRows(tbl, 5, 5)); err != nil {
		t.Fatal(err)
	}
	if err := txn.Delete(tbl, ids[:2]); err != nil {
		t.Fatal(err)
	}
	if got, _ := scanAll(t, db, txn, tbl, nil); len(got) != 8 {
		t.Fatalf("txn sees %d rows, want 8", len(got))
	}
	txn.Rollback()
	txn.Rollback()
	if err := txn.Commit(); err == nil {
		t.Fatal("commit after rollback succeeded")
	}
	got, _ := scanAll(t, db, nil, tbl, allColumns(len(tbl.Columns)))
	if !reflect.DeepEqual(got, rowsOf(wideRows(tbl, 0, 5))) {
		t.Fatalf("rollback left %d rows", len(got))
	}
	insert(t, db, tbl, wideRows(tbl, 5, 5)) // keys were not kept
}

func TestRestart(t *testing.T) {
	dir := t.TempDir()
	open := func() *DB {
		db, err := Open(Options{Dir: dir, FlushRows: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := open()
	tbl := wideTable("w")
	tbl.Columns[3].Serial = true
	tbl.Columns[6].Default = "'x'"
	createTable(t, db, tbl)
	createTable(t, db, &TableDesc{Name: "empty"})
	var seqs []int64
	for range 3 {
		v, err := db.NextVal(tbl.ID, 3)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, v)
	}
	if !reflect.DeepEqual(seqs, []int64{1, 2, 3}) {
		t.Fatal(seqs)
	}
	insert(t, db, tbl, wideRows(tbl, 0, 300))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, wideRows(tbl, 300, 300))
	_, ids := scanAll(t, db, nil, tbl, nil)
	txn := db.Begin()
	if err := txn.Delete(tbl, []uint64{ids[1], ids[400]}); err != nil {
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	want, wantIDs := scanAll(t, db, nil, tbl, allColumns(len(tbl.Columns)))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = open()
	defer db.Close()
	got, err := db.Table("w")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, tbl) {
		t.Fatalf("descriptor changed:\n%+v\n%+v", got, tbl)
	}
	if names := len(db.Tables()); names != 2 {
		t.Fatalf("%d tables", names)
	}
	rows, rids := scanAll(t, db, nil, got, allColumns(len(tbl.Columns)))
	if !reflect.DeepEqual(rows, want) || !reflect.DeepEqual(rids, wantIDs) {
		t.Fatalf("rows after restart: %d, want %d", len(rows), len(want))
	}
	if v, err := db.NextVal(tbl.ID, 3); err != nil || v != 4 {
		t.Fatalf("nextval after a clean restart = %d, %v; want 4", v, err)
	}
	insert(t, db, got, wideRows(got, 1000, 1))
	_, rids = scanAll(t, db, nil, got, nil)
	if last := rids[len(rids)-1]; last <= wantIDs[len(wantIDs)-1] {
		t.Fatalf("row id %d reused (previous max %d)", last, wantIDs[len(wantIDs)-1])
	}
	txn = db.Begin()
	defer txn.Rollback()
	wantCode(t, txn.Insert(got, wideRows(got, 500, 1)), pgerror.UniqueViolation)
	if err := txn.Insert(got, wideRows(got, 1, 1)); err != nil { // deleted before restart
		t.Fatal(err)
	}
}

// TestScanDuringFlush checks that scans running while background flushes
// move rows into chunks see every committed row exactly once.
func TestScanDuringFlush(t *testing.T) {
	db := openMem(t, 64)
	tbl := createTable(t, db, &TableDesc{Name: "seq", Columns: []ColumnDesc{
		{Name: "n", Type: types.TypInt8}, {Name: "s", Type: types.TypText},
	}})
	const batches, per = 200, 25
	var mu sync.Mutex
	committed := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range batches {
			b := types.NewBatch(tbl.ColumnTypes(), per)
			for j := range per {
				b.Cols[0].AppendInt(int64(i*per + j))
				b.Cols[1].AppendString(strings.Repeat("x", j))
			}
			insert(t, db, tbl, b)
			mu.Lock()
			committed += per
			mu.Unlock()
			time.Sleep(100 * time.Microsecond) // let flushes interleave
		}
	}()
	check := func() int {
		mu.Lock()
		before := committed
		mu.Unlock()
		rows, _ := scanAll(t, db, nil, tbl, []int{0})
		if len(rows) < before {
			t.Fatalf("scan saw %d rows, %d were committed before it began", len(rows), before)
		}
		for i, r := range rows {
			if r[0] != int64(i) {
				t.Fatalf("row %d is %v: rows lost or doubled", i, r[0])
			}
		}
		return len(rows)
	}
	// Explicit flushes race with the background flusher as well.
	flushed := make(chan error, 1)
	go func() {
		for {
			select {
			case <-done:
				flushed <- nil
				return
			default:
			}
			if err := db.Flush(context.Background()); err != nil {
				flushed <- err
				return
			}
		}
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		check()
	}
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if n := check(); n != batches*per {
		t.Fatalf("%d rows, want %d", n, batches*per)
	}
	if keys, _ := db.Store().List(context.Background(), "tables/"); len(keys) < 2 {
		t.Fatalf("only %d chunks written", len(keys))
	}
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := check(); n != batches*per {
		t.Fatalf("after final flush: %d rows, want %d", n, batches*per)
	}
}

func TestCorruptChunk(t *testing.T) {
	store := NewMemStore()
	db, err := Open(Options{InMemory: true, Store: store, FlushRows: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 100))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	keys, _ := store.List(context.Background(), "tables/")
	store.Corrupt(keys[0], func(b []byte) []byte { b[100] ^= 0x40; return b })
	txn := db.Begin()
	defer txn.Rollback()
	sc, err := txn.Scan(tbl, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	_, _, err = sc.Next()
	if !errors.Is(err, ErrCorruption) || pgerror.GetCode(err) != pgerror.DataCorrupted {
		t.Fatalf("err = %v (code %s), want ErrCorruption / XX001", err, pgerror.GetCode(err))
	}
	if msg := pgerror.Convert(err).Message; !strings.Contains(msg, `table "w"`) {
		t.Fatalf("corruption error does not name the table: %q", msg)
	}
	if _, _, err2 := sc.Next(); err2 == nil {
		t.Fatal("scanner recovered from corruption")
	}
}

func TestNextValUnknownTable(t *testing.T) {
	db := openMem(t, 0)
	_, err := db.NextVal(42, 0)
	wantCode(t, err, pgerror.UndefinedTable)
}
