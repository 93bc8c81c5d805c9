package storage

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

func kvTable(name string) *TableDesc {
	return &TableDesc{Name: name, Columns: []ColumnDesc{
		{Name: "id", Type: types.TypInt8, NotNull: true}, {Name: "s", Type: types.TypText},
	}, PrimaryKey: []int{0}}
}

func kvRows(t *TableDesc, tag string, n int) *types.Batch {
	b := types.NewBatch(t.ColumnTypes(), n)
	for i := range n {
		b.Cols[0].AppendInt(int64(i))
		b.Cols[1].AppendString(fmt.Sprintf("%s%d", tag, i))
	}
	return b
}

// wantKV checks that table name of catalog c holds n rows tagged tag.
func wantKV(t *testing.T, c *Catalog, name, tag string, n int) {
	t.Helper()
	tbl, err := c.Table(name)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := scanAll(t, c.DB(), nil, tbl, []int{0, 1})
	if len(rows) != n {
		t.Fatalf("%s in database %d: %d rows, want %d", name, c.OID(), len(rows), n)
	}
	for _, r := range rows {
		if r[1] != fmt.Sprintf("%s%d", tag, r[0]) {
			t.Fatalf("%s in database %d: row %v, want tag %s", name, c.OID(), r, tag)
		}
	}
}

func tableNames(ts []*TableDesc) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func TestDatabasesHoldSeparateTables(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(Options{Dir: dir, FlushRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := db.Databases(); len(got) != 1 || got[0].Name != "postgres" || got[0].OID != PostgresOID {
		t.Fatalf("databases of a new directory: %+v", got)
	}
	d, err := db.CreateDatabase("other", "alice")
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.CreateDatabase("other", "bob")
	wantCode(t, err, pgerror.DuplicateDatabase)
	pg, oc := db.Catalog(PostgresOID), db.Catalog(d.OID)
	a, b := kvTable("t"), kvTable("t")
	if _, err := pg.CreateTable(a, false); err != nil {
		t.Fatal(err)
	}
	if _, err := oc.CreateTable(b, false); err != nil {
		t.Fatal(err)
	}
	_, err = oc.CreateTable(kvTable("t"), false)
	wantCode(t, err, pgerror.DuplicateTable)
	if a.ID == b.ID || a.Database != PostgresOID || b.Database != d.OID {
		t.Fatalf("tables %d in %d and %d in %d", a.ID, a.Database, b.ID, b.Database)
	}
	insert(t, db, a, kvRows(a, "pg", 30))
	insert(t, db, b, kvRows(b, "other", 5))
	if _, err := oc.CreateTable(kvTable("only_other"), false); err != nil {
		t.Fatal(err)
	}
	if _, err := pg.Table("only_other"); err == nil {
		t.Fatal("a table of database other is visible in postgres")
	}
	if got := tableNames(oc.Tables()); !slices.Equal(got, []string{"only_other", "t"}) {
		t.Fatalf("tables of other: %v", got)
	}
	if got := tableNames(pg.Tables()); !slices.Equal(got, []string{"t"}) {
		t.Fatalf("tables of postgres: %v", got)
	}
	// Background flushes work across databases.
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantKV(t, pg, "t", "pg", 30)
	wantKV(t, oc, "t", "other", 5)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = Open(Options{Dir: dir, FlushRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d2, err := db.LookupDatabase("other")
	if err != nil || d2.OID != d.OID || d2.Owner != "alice" {
		t.Fatalf("database other after reopening: %+v, %v", d2, err)
	}
	pg, oc = db.Catalog(PostgresOID), db.Catalog(d.OID)
	wantKV(t, pg, "t", "pg", 30)
	wantKV(t, oc, "t", "other", 5)
	// Dropping one leaves the other.
	if _, err := oc.DropTable("t", false); err != nil {
		t.Fatal(err)
	}
	wantKV(t, pg, "t", "pg", 30)
	if _, err := oc.Table("t"); err == nil {
		t.Fatal("dropped table still there")
	}
	_, err = db.LookupDatabase("nosuch")
	wantCode(t, err, pgerror.InvalidCatalogName)
}

func TestDropDatabase(t *testing.T) {
	db := openMem(t, 1<<30)
	ctx := context.Background()
	d, err := db.CreateDatabase("gone", "")
	if err != nil {
		t.Fatal(err)
	}
	c := db.Catalog(d.OID)
	var ids []uint64
	for _, name := range []string{"a", "b"} {
		tbl := kvTable(name)
		if _, err := c.CreateTable(tbl, false); err != nil {
			t.Fatal(err)
		}
		insert(t, db, tbl, kvRows(tbl, name, 20))
		ids = append(ids, tbl.ID)
	}
	keep := createTable(t, db, kvTable("a"))
	insert(t, db, keep, kvRows(keep, "keep", 7))
	if err := db.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if keys, _ := db.Store().List(ctx, tableObjectPrefix(id)); len(keys) == 0 {
			t.Fatalf("table %d has no objects before the drop", id)
		}
	}
	// A transaction open during the drop keeps the objects until it ends.
	reader := db.Begin()
	first, _ := c.Table("a")
	if rows, _ := scanAll(t, db, reader, first, []int{0}); len(rows) != 20 {
		t.Fatalf("%d rows", len(rows))
	}
	if dropped, err := db.DropDatabase("gone", false); err != nil || !dropped {
		t.Fatalf("DropDatabase = %v, %v", dropped, err)
	}
	if _, err := db.LookupDatabase("gone"); err == nil {
		t.Fatal("dropped database still there")
	}
	if got := c.Tables(); len(got) != 0 {
		t.Fatalf("tables of a dropped database: %v", tableNames(got))
	}
	_, err = c.CreateTable(kvTable("late"), false)
	wantCode(t, err, pgerror.InvalidCatalogName)
	if keys, _ := db.Store().List(ctx, tableObjectPrefix(ids[0])); len(keys) == 0 {
		t.Fatal("objects deleted under an open transaction")
	}
	reader.Rollback()
	waitFor(t, func() bool { // the objects of the dropped tables are deleted
		for _, id := range ids {
			if keys, _ := db.Store().List(ctx, tableObjectPrefix(id)); len(keys) > 0 {
				return false
			}
		}
		return true
	})
	wantKV(t, db.postgres(), "a", "keep", 7)
	dropped, err := db.DropDatabase("gone", true)
	if err != nil || dropped {
		t.Fatalf("DROP DATABASE IF EXISTS of a missing one = %v, %v", dropped, err)
	}
	_, err = db.DropDatabase("gone", false)
	wantCode(t, err, pgerror.InvalidCatalogName)
	// The name can be used again; its tables start empty.
	d2, err := db.CreateDatabase("gone", "")
	if err != nil || d2.OID == d.OID {
		t.Fatalf("database made again: %+v, %v", d2, err)
	}
	if got := db.Catalog(d2.OID).Tables(); len(got) != 0 {
		t.Fatalf("a new database has tables %v", tableNames(got))
	}
}

func TestRenameDatabaseKeepsTables(t *testing.T) {
	db := openMem(t, 1<<30)
	d, err := db.CreateDatabase("one", "")
	if err != nil {
		t.Fatal(err)
	}
	tbl := kvTable("t")
	if _, err := db.Catalog(d.OID).CreateTable(tbl, false); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, kvRows(tbl, "x", 3))
	wantCode(t, db.RenameDatabase("one", "postgres"), pgerror.DuplicateDatabase)
	wantCode(t, db.RenameDatabase("nosuch", "x"), pgerror.InvalidCatalogName)
	if err := db.RenameDatabase("one", "two"); err != nil {
		t.Fatal(err)
	}
	if err := db.SetDatabaseOwner("two", "carol"); err != nil {
		t.Fatal(err)
	}
	d2, err := db.LookupDatabase("two")
	if err != nil || d2.OID != d.OID || d2.Owner != "carol" {
		t.Fatalf("renamed database: %+v, %v", d2, err)
	}
	if _, err := db.LookupDatabase("one"); err == nil {
		t.Fatal("old name still there")
	}
	wantKV(t, db.Catalog(d2.OID), "t", "x", 3)
}

// TestMigrateLayout builds a catalog as deeplaked wrote it before there
// were databases (descriptors under m/table/<name>, no database records)
// and checks that Open moves its tables into postgres, rows and all, once.
func TestMigrateLayout(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(Options{Dir: dir, FlushRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	var descs []*TableDesc
	for _, name := range []string{"items", "more"} {
		tbl := createTable(t, db, kvTable(name))
		insert(t, db, tbl, kvRows(tbl, name, 25))
		descs = append(descs, tbl)
	}
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Rewrite the catalog in the old layout.
	b := db.kv.NewBatch()
	for _, tbl := range descs {
		old := *tbl
		old.Database = 0
		data, err := json.Marshal(&old)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "Database")
		data, _ = json.Marshal(m)
		must(t, b.Set(append(append([]byte(nil), legacyTablePrefix...), tbl.Name...), data, nil))
		must(t, b.Delete(descKey(PostgresOID, tbl.Name), nil))
	}
	must(t, b.Delete(databaseKey("postgres"), nil))
	must(t, b.Delete(layoutKey, nil))
	must(t, b.Commit(pebble.Sync))
	must(t, db.Close())

	for range 2 { // the second open finds nothing to migrate
		db, err = Open(Options{Dir: dir, FlushRows: 10, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if got := db.Databases(); len(got) != 1 || got[0].Name != "postgres" {
			t.Fatalf("databases after migration: %+v", got)
		}
		if got := tableNames(db.Tables()); !slices.Equal(got, []string{"items", "more"}) {
			t.Fatalf("tables of postgres after migration: %v", got)
		}
		for _, tbl := range descs {
			wantKV(t, db.postgres(), tbl.Name, tbl.Name, 25)
			got, _ := db.Table(tbl.Name)
			if got.ID != tbl.ID || got.Database != PostgresOID {
				t.Fatalf("migrated %s: id %d database %d", tbl.Name, got.ID, got.Database)
			}
		}
		it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: legacyTablePrefix, UpperBound: prefixEnd(legacyTablePrefix)})
		if err != nil {
			t.Fatal(err)
		}
		if it.First() {
			t.Fatalf("old key %q left", it.Key())
		}
		it.Close()
		// The migrated tables keep working: new rows, new tables, new ids.
		tbl, _ := db.Table("items")
		txn := db.Begin()
		err = txn.Insert(tbl, kvRows(tbl, "items", 1))
		txn.Rollback()
		wantCode(t, err, pgerror.UniqueViolation)
		must(t, db.Close())
	}
}

// TestMigrateLayoutKeepsDroppedPostgres checks that a database postgres
// dropped on purpose is not made again by the next Open.
func TestMigrateLayoutKeepsDroppedPostgres(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateDatabase("main", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DropDatabase("postgres", false); err != nil {
		t.Fatal(err)
	}
	must(t, db.Close())
	db, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := db.Databases(); len(got) != 1 || got[0].Name != "main" {
		t.Fatalf("databases: %+v", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

const dbCrashEnv = "DEEPLAKED_STORAGE_DBCRASH_DIR"

// dbCrashChild makes database made with a table, drops database doomed
// while a transaction reads it (so its objects wait), says "done" and
// waits to be killed.
func dbCrashChild(dir string) {
	db, err := Open(Options{Dir: dir, FlushRows: 1 << 30})
	if err != nil {
		fmt.Println("error", err)
		return
	}
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(1)
	}
	d, err := db.CreateDatabase("made", "alice")
	if err != nil {
		fail(err)
	}
	tbl := kvTable("t")
	if _, err := db.Catalog(d.OID).CreateTable(tbl, false); err != nil {
		fail(err)
	}
	txn := db.Begin()
	if err := txn.Insert(tbl, kvRows(tbl, "made", 4)); err != nil {
		fail(err)
	}
	if err := txn.Commit(); err != nil {
		fail(err)
	}
	doomed, err := db.LookupDatabase("doomed")
	if err != nil {
		fail(err)
	}
	old, err := db.Catalog(doomed.OID).Table("t")
	if err != nil {
		fail(err)
	}
	reader := db.Begin()
	sc, err := reader.Scan(old, []int{0})
	if err != nil {
		fail(err)
	}
	sc.Close()
	if _, err := db.DropDatabase("doomed", false); err != nil {
		fail(err)
	}
	fmt.Println("done")
	select {}
}

// TestDatabaseCrash kills a process right after it made one database and
// dropped another (whose objects an open transaction still held): after
// reopening the first is there with its rows, the second and its tables
// are gone, and its objects are deleted.
func TestDatabaseCrash(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.CreateDatabase("doomed", "")
	if err != nil {
		t.Fatal(err)
	}
	doomed := kvTable("t")
	if _, err := db.Catalog(d.OID).CreateTable(doomed, false); err != nil {
		t.Fatal(err)
	}
	insert(t, db, doomed, kvRows(doomed, "doomed", 50))
	keep := createTable(t, db, kvTable("t"))
	insert(t, db, keep, kvRows(keep, "keep", 9))
	must(t, db.Flush(context.Background()))
	ctx := context.Background()
	if keys, _ := db.Store().List(ctx, tableObjectPrefix(doomed.ID)); len(keys) == 0 {
		t.Fatal("no objects to drop")
	}
	must(t, db.Close())

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), dbCrashEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "done" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %q", sc.Text())
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()

	db, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.LookupDatabase("doomed"); err == nil {
		t.Fatal("the dropped database is back")
	}
	if _, ok := db.state(doomed.ID); ok {
		t.Fatal("a table of the dropped database is back")
	}
	made, err := db.LookupDatabase("made")
	if err != nil || made.Owner != "alice" {
		t.Fatalf("database made: %+v, %v", made, err)
	}
	wantKV(t, db.Catalog(made.OID), "t", "made", 4)
	wantKV(t, db.postgres(), "t", "keep", 9)
	waitFor(t, func() bool { // Open deletes the objects the drop left
		keys, _ := db.Store().List(ctx, tableObjectPrefix(doomed.ID))
		return len(keys) == 0
	})
}

// TestDropDatabaseObjectDeleteFails drops a database while the object
// store refuses deletions: the database is gone at once, its objects are
// left recorded and deleted by the next VACUUM.
func TestDropDatabaseObjectDeleteFails(t *testing.T) {
	fs := NewFaultStore(NewMemStore(), 1)
	db, err := Open(Options{InMemory: true, Store: fs, FlushRows: 1 << 30, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	d, err := db.CreateDatabase("d", "")
	if err != nil {
		t.Fatal(err)
	}
	tbl := kvTable("t")
	if _, err := db.Catalog(d.OID).CreateTable(tbl, false); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, kvRows(tbl, "d", 30))
	must(t, db.Flush(ctx))
	in := fs.Inject(Fault{Ops: []ObjectOp{ObjectDelete}, Err: ErrInjected})
	if _, err := db.DropDatabase("d", false); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LookupDatabase("d"); err == nil {
		t.Fatal("database still there")
	}
	if keys, _ := fs.Inner().List(ctx, tableObjectPrefix(tbl.ID)); len(keys) == 0 || in.Fired() == 0 {
		t.Fatalf("%d objects left, %d deletions refused", len(keys), in.Fired())
	}
	left, err := db.droppedLeft()
	if err != nil || len(left) != 1 || left[0].id != tbl.ID {
		t.Fatalf("recorded dropped tables: %+v, %v", left, err)
	}
	in.Remove()
	if _, err := db.Vacuum(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if keys, _ := fs.Inner().List(ctx, tableObjectPrefix(tbl.ID)); len(keys) != 0 {
		t.Fatalf("objects left after VACUUM: %v", keys)
	}
	if left, _ := db.droppedLeft(); len(left) != 0 {
		t.Fatalf("still recorded: %+v", left)
	}
}
