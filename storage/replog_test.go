package storage

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// attachFixture is a location (a directory standing for an S3 prefix)
// and the data directories that serve it.
type attachFixture struct {
	bucket string
	store  ObjectStore
}

func newAttachFixture(t *testing.T) *attachFixture {
	t.Helper()
	f := &attachFixture{bucket: filepath.Join(t.TempDir(), "bucket")}
	s, err := NewDirStore(f.bucket)
	if err != nil {
		t.Fatal(err)
	}
	f.store = s
	return f
}

func (f *attachFixture) open(t *testing.T, dir string, opts Options) (*DB, error) {
	t.Helper()
	opts.Dir, opts.Store, opts.Location = dir, f.store, identityBucket
	return Open(opts)
}

// writeMix makes a table with rows in every place rows live (a fragment
// of a large transaction, a flushed fragment, buffered rows), deletes
// some, makes a role, and takes serial values; it returns the rows.
func writeMix(t *testing.T, db *DB) [][]any {
	t.Helper()
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 30000)) // spills: a fragment
	insert(t, db, tbl, wideRows(tbl, 30000, 500))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, wideRows(tbl, 30500, 100)) // buffered
	_, ids := scanNow(t, db, tbl, []int{0})
	deleteRows(t, db, tbl, []uint64{ids[0], ids[30100], ids[30550]})
	if err := db.CreateRole("alice", true, false, nil); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := db.NextVal(tbl.ID, 0); err != nil {
			t.Fatal(err)
		}
	}
	rows, _ := scanNow(t, db, tbl, allColumns(len(tbl.Columns)))
	if len(rows) != 30600-3 {
		t.Fatalf("%d rows", len(rows))
	}
	return rows
}

// wantServes checks db serves what writeMix wrote.
func wantServes(t *testing.T, db *DB, want [][]any) {
	t.Helper()
	tbl, err := db.Table("w")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := scanNow(t, db, tbl, allColumns(len(tbl.Columns)))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("attached data directory serves %d rows, want %d (first %v / %v)", len(got), len(want), first(got), first(want))
	}
	if _, err := db.Role("alice"); err != nil {
		t.Fatalf("role alice: %v", err)
	}
	v, err := db.NextVal(tbl.ID, 0)
	if err != nil || v <= 3 {
		t.Fatalf("nextval after attach: %d, %v; want past the 3 handed out", v, err)
	}
}

func first(rows [][]any) []any {
	if len(rows) == 0 {
		return nil
	}
	return rows[0]
}

// TestAttachRebuildsFromLocation loses a data directory and serves its
// location from a new one with Attach: every acknowledged commit is back,
// and no table object was copied or written.
func TestAttachRebuildsFromLocation(t *testing.T) {
	for _, d := range []Durability{DurabilityLocal, DurabilityBucket} {
		t.Run(d.String(), func(t *testing.T) {
			f := newAttachFixture(t)
			db, err := f.open(t, filepath.Join(t.TempDir(), "a"), Options{Durability: d, FlushRows: 1 << 30})
			if err != nil {
				t.Fatal(err)
			}
			want := writeMix(t, db)
			if d == DurabilityLocal {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := db.SyncLog(ctx); err != nil {
					t.Fatal(err)
				}
			}
			// The server stops and its data directory is lost.
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			tables := objectsUnder(t, f.store, "tables/")

			dir := filepath.Join(t.TempDir(), "b")
			if _, err := f.open(t, dir, Options{}); err == nil {
				t.Fatal("a new data directory opened a location holding a catalog without Attach")
			} else {
				wantForeign(t, err, identityBucket, "--attach")
			}
			db2, err := f.open(t, dir, Options{Attach: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db2.Close()
			wantServes(t, db2, want)
			if got := objectsUnder(t, f.store, "tables/"); !slices.Equal(got, tables) {
				t.Fatalf("attaching changed the table objects:\n%v\nwas\n%v", got, tables)
			}
		})
	}
}

// TestAttachAfterCheckpoint attaches from a checkpoint plus the entries
// after it.
func TestAttachAfterCheckpoint(t *testing.T) {
	f := newAttachFixture(t)
	db, err := f.open(t, filepath.Join(t.TempDir(), "a"), Options{Durability: DurabilityBucket, FlushRows: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 100))
	if err := db.checkpointNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, wideRows(tbl, 100, 100))
	want, _ := scanNow(t, db, tbl, allColumns(len(tbl.Columns)))
	cps, err := db.checkpoints(context.Background())
	if err != nil || len(cps) != 2 || cps[1] == 0 {
		t.Fatalf("checkpoints %v, %v; want the first and one after", cps, err)
	}
	db2, err := f.open(t, filepath.Join(t.TempDir(), "b"), Options{Attach: true, Durability: DurabilityBucket})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if db2.lastCheckpoint != cps[1] {
		t.Fatalf("attached from checkpoint %d, want %d", db2.lastCheckpoint, cps[1])
	}
	tbl2, err := db2.Table("w")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := scanNow(t, db2, tbl2, allColumns(len(tbl2.Columns)))
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
}

// TestLogDivergenceRefused starts a copy of a data directory whose
// original committed while the copy could not reach the location: the
// copy finds another entry where its queued one should be and refuses to
// start.
func TestLogDivergenceRefused(t *testing.T) {
	f := newAttachFixture(t)
	dir := filepath.Join(t.TempDir(), "a")
	db, err := f.open(t, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 10))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy")
	copyDir(t, dir, cp)
	// The original commits and uploads; the copy commits the same
	// entry number but cannot upload it (the location is unreachable for
	// it), then starts again with the location back.
	db, err = f.open(t, dir, Options{Durability: DurabilityBucket})
	if err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, wideRows(tbl, 10, 10))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	fs := NewFaultStore(f.store, 1)
	fs.Inject(Fault{Ops: []ObjectOp{ObjectGet}, Key: func(k string) bool { return strings.HasPrefix(k, logPrefix) }, Err: ErrNotFound})
	fs.Inject(Fault{Ops: []ObjectOp{ObjectPutIfAbsent}, Key: func(k string) bool { return strings.HasPrefix(k, logPrefix) }, Err: ErrInjected})
	c, err := Open(Options{Dir: cp, Store: fs, Location: identityBucket})
	if err != nil {
		t.Fatal(err)
	}
	ct, _ := c.Table("w")
	insert(t, c, ct, wideRows(ct, 10, 1))
	_ = c.Close()
	t.Logf("log: %v", objectsUnder(t, f.store, logPrefix))
	_, err = f.open(t, cp, Options{})
	wantForeign(t, err, "copy of the data directory")
}

func objectsUnder(t *testing.T, s ObjectStore, prefix string) []string {
	t.Helper()
	keys, err := s.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// copyDir copies the directory tree src to dst, as an operator's cp -a.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, DirMode)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, FileMode)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCopiedDataDirectoryRefused starts a copy of a data directory while
// its server runs: the copy sees the original's heartbeat move and
// refuses to start, writing nothing to the location.
func TestCopiedDataDirectoryRefused(t *testing.T) {
	f := newAttachFixture(t)
	dir := filepath.Join(t.TempDir(), "a")
	opts := Options{Durability: DurabilityBucket, NodeHeartbeat: 50 * time.Millisecond}
	db, err := f.open(t, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 10))
	cp := filepath.Join(t.TempDir(), "copy")
	copyDir(t, dir, cp)
	before := objectsUnder(t, f.store, "")
	_, err = f.open(t, cp, opts)
	wantForeign(t, err, "is a copy of it", dir, "--attach")
	after := objectsUnder(t, f.store, "")
	// (The original's own record is all that may have changed.)
	if !slices.Equal(before, after) {
		t.Fatalf("the refused copy changed the location:\n%v\nwas\n%v", after, before)
	}
}

// TestRestartAfterKill restarts a data directory whose server was
// killed (its record still says running, its heartbeat stopped): the
// restart waits out the heartbeat and starts.
func TestRestartAfterKill(t *testing.T) {
	f := newAttachFixture(t)
	dir := filepath.Join(t.TempDir(), "a")
	opts := Options{Durability: DurabilityBucket, NodeHeartbeat: 50 * time.Millisecond}
	db, err := f.open(t, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 10))
	rec := db.nodeRec
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	rec.Heartbeat = time.Now().UTC() // as a kill left it: not stopped
	db.nodeRec = rec
	if err := db.putNode(context.Background()); err != nil {
		t.Fatal(err)
	}
	db, err = f.open(t, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	wantKeys(t, db, 10)
}

// scanNow scans tbl in a transaction of its own.
func scanNow(t *testing.T, db *DB, tbl *TableDesc, cols []int) ([][]any, []uint64) {
	t.Helper()
	txn := db.Begin()
	defer txn.Rollback()
	return scanAll(t, db, txn, tbl, cols)
}

// TestCheckpointsFollowTheLog: a server with bucket durability writes a
// checkpoint every checkpointEvery entries, and a new data directory
// attaches from the latest.
func TestCheckpointsFollowTheLog(t *testing.T) {
	defer func(n uint64) { checkpointEvery = n }(checkpointEvery)
	checkpointEvery = 8
	f := newAttachFixture(t)
	db, err := f.open(t, filepath.Join(t.TempDir(), "a"), Options{Durability: DurabilityBucket})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl := createTable(t, db, wideTable("w"))
	for i := range 30 {
		insert(t, db, tbl, wideRows(tbl, i*10, 10))
	}
	var cps []uint64
	for deadline := time.Now().Add(30 * time.Second); len(cps) < 3; {
		if cps, err = db.checkpoints(context.Background()); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoints %v after %d entries", cps, db.LogSeq())
		}
		time.Sleep(10 * time.Millisecond)
	}
	db2, err := f.open(t, filepath.Join(t.TempDir(), "b"), Options{Attach: true, Durability: DurabilityBucket})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if db2.lastCheckpoint == 0 {
		t.Fatal("attached from the first checkpoint")
	}
	wantKeys(t, db2, 300)
}

// TestLocalDurabilityLossWindow: with local durability, the commits
// acknowledged while the location could not take their log entries are
// what a lost data directory loses; those uploaded before are attached
// back. With bucket durability the same commits are refused instead.
func TestLocalDurabilityLossWindow(t *testing.T) {
	f := newAttachFixture(t)
	fs := NewFaultStore(f.store, 1)
	db, err := Open(Options{Dir: filepath.Join(t.TempDir(), "a"), Store: fs, Location: identityBucket})
	if err != nil {
		t.Fatal(err)
	}
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 10))
	if err := db.SyncLog(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The location stops taking log entries: commits are acknowledged
	// and queued.
	in := fs.Inject(Fault{Ops: []ObjectOp{ObjectPutIfAbsent, ObjectPut}, Key: func(k string) bool { return strings.HasPrefix(k, "deeplake/") }, Err: ErrInjected})
	insert(t, db, tbl, wideRows(tbl, 10, 5))
	wantKeys(t, db, 15)
	// The data directory is lost with its server (no clean shutdown:
	// the queue cannot be uploaded).
	_ = db.Close()
	in.Remove()
	db2, err := f.open(t, filepath.Join(t.TempDir(), "b"), Options{Attach: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	got := keysOf(t, db2)
	if len(got) != 10 || got[9] != 1 || got[10] != 0 {
		t.Fatalf("attached after losing a data directory with queued commits: %d keys (want the 10 uploaded, not the 5 queued)", len(got))
	}
}

// TestAttachNeedsACatalog: --attach on a location that holds no catalog
// (a mistyped prefix, or the first server not started yet) is refused
// rather than serving a new, empty one.
func TestAttachNeedsACatalog(t *testing.T) {
	f := newAttachFixture(t)
	_, err := f.open(t, filepath.Join(t.TempDir(), "a"), Options{Attach: true})
	wantForeign(t, err, "holds no catalog to attach to")
	if keys := objectsUnder(t, f.store, ""); len(keys) != 0 {
		t.Fatalf("the refused attach wrote %v", keys)
	}
}
