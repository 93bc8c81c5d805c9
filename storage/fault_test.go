package storage_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// These tests run a DB on a FaultStore and check that object store
// failures, short reads and latency never lose, duplicate or corrupt a
// row: an operation either fails with an error that says what happened
// or does its whole job, and the DB keeps working once the faults stop.
//
// Row id of the table ft is the primary key; the others derive from it
// (ftRow), so every value read can be checked.

const ftEmbDim = 256 // 1 KiB of float32 per row

// ftOpts says how faultDB builds its database.
type ftOpts struct {
	flushRows int   // 0: no background flush
	chunkSize int64 // 0: 64 KiB, so that fragments have many chunks
	// keepOnlyCurrent retains only the current version, so that
	// compaction drops deleted rows at once.
	keepOnlyCurrent bool
	// rangeFetch makes FetchRows read every chunk by byte ranges.
	rangeFetch bool
}

// faultDB opens an in-memory DB whose objects go through a FaultStore
// and creates table ft in it.
func faultDB(t *testing.T, o ftOpts) (*storage.DB, *storage.FaultStore, *storage.TableDesc) {
	t.Helper()
	fs := storage.NewFaultStore(storage.NewMemStore(), 1)
	if o.flushRows == 0 {
		o.flushRows = 1 << 30
	}
	if o.chunkSize == 0 {
		o.chunkSize = 64 << 10
	}
	opts := storage.Options{InMemory: true, Store: fs, FlushRows: o.flushRows, NoCompaction: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if o.rangeFetch {
		opts.WholeChunkFetch = -1
	}
	if o.keepOnlyCurrent {
		opts.VersionRetention = -1
	}
	db, err := storage.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	desc := &storage.TableDesc{Name: "ft", Columns: []storage.ColumnDesc{
		{Name: "id", Type: types.TypInt8, NotNull: true},
		{Name: "n", Type: types.TypInt8},
		// Uncompressed, so FetchRows reads single rows with byte ranges.
		{Name: "emb", Type: types.VectorOf(ftEmbDim), Compression: "none"},
		{Name: "note", Type: types.TypText},
	}, PrimaryKey: []int{0}, Options: storage.TableOptions{ChunkSize: o.chunkSize}}
	if _, err := db.CreateTable(desc, false); err != nil {
		t.Fatal(err)
	}
	tbl, err := db.Table("ft")
	if err != nil {
		t.Fatal(err)
	}
	return db, fs, tbl
}

// ftEmb returns the bytes of row id's emb.
func ftEmb(id int64) []byte {
	b := make([]byte, 4*ftEmbDim)
	for i := range ftEmbDim {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(id%1000)+float32(i)/4))
	}
	return b
}

// ftNote returns row id's note; ok is false for a NULL.
func ftNote(id int64) (note string, ok bool) {
	if id%17 == 0 {
		return "", false
	}
	return fmt.Sprintf("row %d ", id) + strings.Repeat("x", int(id%50)), true
}

// ftBatch returns the rows with ids [from, from+n); n holds id/10000, the
// transaction number in TestFaultLatency.
func ftBatch(tbl *storage.TableDesc, from, n int64) *types.Batch {
	b := types.NewBatch(tbl.ColumnTypes(), int(n))
	for id := from; id < from+n; id++ {
		b.Cols[0].AppendInt(id)
		b.Cols[1].AppendInt(id / 10000)
		b.Cols[2].AppendBytes(ftEmb(id))
		if note, ok := ftNote(id); ok {
			b.Cols[3].AppendString(note)
		} else {
			b.Cols[3].AppendNull()
		}
	}
	return b
}

// ftInsert inserts rows [from, from+n) in one transaction, in batches of
// 500, and commits. On an error it rolls back and returns it.
func ftInsert(db *storage.DB, tbl *storage.TableDesc, from, n int64) error {
	txn := db.Begin()
	for lo := from; lo < from+n; lo += 500 {
		if err := txn.Insert(tbl, ftBatch(tbl, lo, min(500, from+n-lo))); err != nil {
			txn.Rollback()
			return err
		}
	}
	return txn.Commit()
}

func mustInsert(t *testing.T, db *storage.DB, tbl *storage.TableDesc, from, n int64) {
	t.Helper()
	if err := ftInsert(db, tbl, from, n); err != nil {
		t.Fatalf("inserting rows [%d, %d): %v", from, from+n, err)
	}
}

// ftCheckRows reports rows of b whose values are not those of their id.
func ftCheckRows(t *testing.T, b *types.Batch, cols []int) {
	t.Helper()
	for i := range b.Len() {
		id := b.Cols[0].Ints[i]
		for j, c := range cols {
			v := b.Cols[j]
			ok := true
			switch c {
			case 1:
				ok = !v.Nulls[i] && v.Ints[i] == id/10000
			case 2:
				ok = !v.Nulls[i] && bytes.Equal(v.Bytes.Get(i), ftEmb(id))
			case 3:
				note, notNull := ftNote(id)
				ok = v.Nulls[i] == !notNull && (!notNull || string(v.Bytes.Get(i)) == note)
			}
			if !ok {
				t.Errorf("row %d: column %d holds a wrong value", id, c)
			}
		}
	}
}

// ftScan reads table ft in a fresh transaction, checking every value
// read. It returns the ids read, sorted, with the scan's error; ids read
// before an error are checked too.
func ftScan(t *testing.T, db *storage.DB, tbl *storage.TableDesc) ([]int64, error) {
	t.Helper()
	txn := db.Begin()
	defer txn.Rollback()
	cols := []int{0, 1, 2, 3}
	sc, err := txn.Scan(tbl, cols)
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	var ids []int64
	for {
		b, _, err := sc.Next()
		if err != nil || b == nil {
			slices.Sort(ids)
			for i := 1; i < len(ids); i++ {
				if ids[i] == ids[i-1] {
					t.Errorf("row %d read twice", ids[i])
				}
			}
			return ids, err
		}
		ftCheckRows(t, b, cols)
		ids = append(ids, b.Cols[0].Ints[:b.Len()]...)
	}
}

// ftRanges lists the ids of half-open ranges [lo, hi), in order.
func ftRanges(bounds ...int64) []int64 {
	var ids []int64
	for i := 0; i+1 < len(bounds); i += 2 {
		for id := bounds[i]; id < bounds[i+1]; id++ {
			ids = append(ids, id)
		}
	}
	return ids
}

// wantRows scans ft and fails unless it holds exactly the rows want.
func wantRows(t *testing.T, db *storage.DB, tbl *storage.TableDesc, want []int64) {
	t.Helper()
	got, err := ftScan(t, db, tbl)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("scan returned %d rows, want %d%s", len(got), len(want), ftDiff(got, want))
	}
}

func ftDiff(got, want []int64) string {
	in := func(xs []int64, x int64) bool { _, ok := slices.BinarySearch(xs, x); return ok }
	var missing, extra []int64
	for _, x := range want {
		if !in(got, x) && len(missing) < 5 {
			missing = append(missing, x)
		}
	}
	for _, x := range got {
		if !in(want, x) && len(extra) < 5 {
			extra = append(extra, x)
		}
	}
	return fmt.Sprintf(" (missing e.g. %v, extra e.g. %v)", missing, extra)
}

// wantInjected fails unless err is an I/O error (58030) caused by an
// injected fault.
func wantInjected(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, storage.ErrInjected) || pgerror.GetCode(err) != pgerror.IOError {
		t.Fatalf("%s: %v (SQLSTATE %s); want the injected fault as a 58030 error", what, err, pgerror.GetCode(err))
	}
}

// wantCorruption fails unless err is an XX001 corruption error naming the
// table.
func wantCorruption(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, storage.ErrCorruption) || pgerror.GetCode(err) != pgerror.DataCorrupted || !strings.Contains(err.Error(), `"ft"`) {
		t.Fatalf("%s: %v (SQLSTATE %s); want XX001 naming table \"ft\"", what, err, pgerror.GetCode(err))
	}
}

func ftOps(ops ...storage.ObjectOp) []storage.ObjectOp { return ops }

// ftKeys lists the objects past the faults.
func ftKeys(t *testing.T, fs *storage.FaultStore, prefix string) []string {
	t.Helper()
	keys, err := fs.Inner().List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// ftVersionOps counts the table's retained versions by operation.
func ftVersionOps(t *testing.T, db *storage.DB) map[string]int {
	t.Helper()
	vs, err := db.Versions("ft")
	if err != nil {
		t.Fatal(err)
	}
	ops := make(map[string]int)
	for _, v := range vs {
		ops[v.Op]++
	}
	return ops
}

// wantManifestsOfVersions checks that the manifest objects are exactly
// those of the retained versions: none left over by a failed commit.
func wantManifestsOfVersions(t *testing.T, db *storage.DB, fs *storage.FaultStore, tbl *storage.TableDesc) {
	t.Helper()
	vs, err := db.Versions("ft")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, v := range vs {
		if v.Manifest != "" {
			want = append(want, v.Manifest)
		}
	}
	got := ftKeys(t, fs, fmt.Sprintf("tables/%d/manifests/", tbl.ID))
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("manifest objects %v, retained versions name %v", got, want)
	}
}

// writeFaults are the ways a write can fail: refused, or applied with its
// reply lost, for chunk objects (Put) and manifests (PutIfAbsent).
var writeFaults = []struct {
	name  string
	fault storage.Fault
}{
	{"chunk", storage.Fault{Ops: ftOps(storage.ObjectPut), EveryNth: 3, Times: 1, Err: storage.ErrInjected}},
	{"chunk-reply-lost", storage.Fault{Ops: ftOps(storage.ObjectPut), EveryNth: 3, Times: 1, Err: storage.ErrInjected, AfterCall: true}},
	{"manifest", storage.Fault{Ops: ftOps(storage.ObjectPutIfAbsent), Key: isManifest, Times: 1, Err: storage.ErrInjected}},
	{"manifest-reply-lost", storage.Fault{Ops: ftOps(storage.ObjectPutIfAbsent), Key: isManifest, Times: 1, Err: storage.ErrInjected, AfterCall: true}},
}

func isManifest(key string) bool { return strings.Contains(key, "/manifests/") }

// TestFaultFlushWriteError fails an object write of a flush: the flush
// reports it, every buffered row stays readable exactly once, the next
// flush moves them, and the failed one leaves no object behind (a
// manifest whose write landed is collected by VACUUM).
func TestFaultFlushWriteError(t *testing.T) {
	for _, wf := range writeFaults {
		t.Run(wf.name, func(t *testing.T) {
			ctx := context.Background()
			db, fs, tbl := faultDB(t, ftOpts{})
			for i := range int64(3) {
				mustInsert(t, db, tbl, i*400, 400)
			}
			in := fs.Inject(wf.fault)
			wantInjected(t, "flush", db.Flush(ctx))
			if in.Fired() != 1 {
				t.Fatalf("the fault fired %d times", in.Fired())
			}
			wantRows(t, db, tbl, ftRanges(0, 1200))
			keys := ftKeys(t, fs, "tables/")
			if wf.name == "manifest-reply-lost" {
				if len(keys) != 1 || !strings.Contains(keys[0], "/manifests/") {
					t.Fatalf("objects after a flush whose manifest landed unacknowledged: %v", keys)
				}
			} else if len(keys) != 0 {
				t.Fatalf("the failed flush left objects: %v", keys)
			}

			if err := db.Flush(ctx); err != nil {
				t.Fatalf("flush after the fault: %v", err)
			}
			wantRows(t, db, tbl, ftRanges(0, 1200))
			mustInsert(t, db, tbl, 1200, 300)
			if err := db.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			wantRows(t, db, tbl, ftRanges(0, 1500))
			if ops := ftVersionOps(t, db); ops["flush"] != 2 {
				t.Fatalf("versions %v; want 2 flushes", ops)
			}
			if _, err := db.Vacuum(ctx, "ft"); err != nil {
				t.Fatal(err)
			}
			wantManifestsOfVersions(t, db, fs, tbl)
			wantRows(t, db, tbl, ftRanges(0, 1500))
		})
	}
}

// TestFaultBackgroundFlushRetries fails background flushes: the rows stay
// buffered and readable, and a later flush moves them without losing or
// repeating any.
func TestFaultBackgroundFlushRetries(t *testing.T) {
	db, fs, tbl := faultDB(t, ftOpts{flushRows: 100})
	in := fs.Inject(storage.Fault{Ops: ftOps(storage.ObjectPut), Times: 1, Err: storage.ErrInjected})
	mustInsert(t, db, tbl, 0, 150)
	waitUntil(t, "the background flush to fail", func() bool { return in.Fired() == 1 })
	wantRows(t, db, tbl, ftRanges(0, 150))
	// The next flush, once more rows are due, takes the rows of the failed
	// one too.
	mustInsert(t, db, tbl, 150, 101)
	waitUntil(t, "a flush after the failed one", func() bool { return ftVersionOps(t, db)["flush"] == 1 })
	wantRows(t, db, tbl, ftRanges(0, 251))

	// Under random write faults, some flushes fail and later ones succeed.
	fs.Inject(storage.Fault{Ops: ftOps(storage.ObjectPut, storage.ObjectPutIfAbsent), Prob: 0.2, Err: storage.ErrInjected})
	for i := range int64(30) {
		mustInsert(t, db, tbl, 1000+i*40, 40)
	}
	fs.Clear()
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRows(t, db, tbl, ftRanges(0, 251, 1000, 2200))
	t.Logf("versions: %v", ftVersionOps(t, db))
}

// TestFaultBackgroundFlushRetriesWithoutNewRows fails a background flush
// and then commits a single row: the rows of the failed flush are still
// more than FlushRows, so the flusher should come back for them.
func TestFaultBackgroundFlushRetriesWithoutNewRows(t *testing.T) {
	db, fs, tbl := faultDB(t, ftOpts{flushRows: 100})
	in := fs.Inject(storage.Fault{Ops: ftOps(storage.ObjectPut), Times: 1, Err: storage.ErrInjected})
	mustInsert(t, db, tbl, 0, 150)
	waitUntil(t, "the background flush to fail", func() bool { return in.Fired() == 1 })
	mustInsert(t, db, tbl, 150, 1)
	waitUntil(t, "a flush after the failed one", func() bool { return ftVersionOps(t, db)["flush"] == 1 })
	wantRows(t, db, tbl, ftRanges(0, 151))
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5s for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestFaultSpillingTxnWriteError fails an object write of a transaction
// large enough to write its rows into a fragment as it runs: Insert or
// Commit fails, nothing of the transaction is visible or keeps its keys,
// its objects are gone, and the same transaction then commits.
func TestFaultSpillingTxnWriteError(t *testing.T) {
	for _, wf := range writeFaults {
		t.Run(wf.name, func(t *testing.T) {
			ctx := context.Background()
			db, fs, tbl := faultDB(t, ftOpts{})
			mustInsert(t, db, tbl, 0, 100)
			in := fs.Inject(wf.fault)
			// 5,000 rows of about 1.1 kB pass the 4 MiB a transaction
			// buffers in memory.
			err := ftInsert(db, tbl, 1000, 5000)
			wantInjected(t, "large transaction", err)
			if in.Fired() != 1 {
				t.Fatalf("the fault fired %d times", in.Fired())
			}
			wantRows(t, db, tbl, ftRanges(0, 100))
			keys := ftKeys(t, fs, "tables/")
			if wf.name == "manifest-reply-lost" {
				if len(keys) != 1 || !strings.Contains(keys[0], "/manifests/") {
					t.Fatalf("objects after a commit whose manifest landed unacknowledged: %v", keys)
				}
			} else if len(keys) != 0 {
				t.Fatalf("the failed transaction left objects: %v", keys)
			}

			mustInsert(t, db, tbl, 1000, 5000)
			wantRows(t, db, tbl, ftRanges(0, 100, 1000, 6000))
			vs, err := db.Versions("ft")
			if err != nil {
				t.Fatal(err)
			}
			if last := vs[len(vs)-1]; last.Op != "write" || last.Manifest == "" || last.Added != 5000 {
				t.Fatalf("the large transaction committed as %+v; want a write with a fragment", last)
			}
			if err := db.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Vacuum(ctx, "ft"); err != nil {
				t.Fatal(err)
			}
			wantManifestsOfVersions(t, db, fs, tbl)
			wantRows(t, db, tbl, ftRanges(0, 100, 1000, 6000))
		})
	}
}

// ftFragmented fills ft with three flushed fragments of 1,000 rows (each
// column in many chunks) and 100 buffered rows.
func ftFragmented(t *testing.T, db *storage.DB, tbl *storage.TableDesc) []int64 {
	t.Helper()
	for i := range int64(3) {
		mustInsert(t, db, tbl, i*1000, 1000)
		if err := db.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	mustInsert(t, db, tbl, 3000, 100)
	return ftRanges(0, 3100)
}

// TestFaultScanReadError fails chunk reads: the scan (or fetch) returns
// the error, after only correct rows, and the next one succeeds.
func TestFaultScanReadError(t *testing.T) {
	// Point reads go through byte ranges even of these small chunks.
	db, fs, tbl := faultDB(t, ftOpts{rangeFetch: true})
	all := ftFragmented(t, db, tbl)
	for _, nth := range []int{1, 7, 40} {
		in := fs.Inject(storage.Fault{Ops: ftOps(storage.ObjectGet), EveryNth: nth, Times: 1, Err: storage.ErrInjected})
		got, err := ftScan(t, db, tbl)
		wantInjected(t, fmt.Sprintf("scan failing read #%d", nth), err)
		if in.Fired() != 1 || len(got) >= len(all) {
			t.Fatalf("read #%d failed (fired %d), scan returned %d of %d rows", nth, in.Fired(), len(got), len(all))
		}
		in.Remove()
		wantRows(t, db, tbl, all)
	}

	// Under random read faults every scan either fails or is complete.
	fs.Inject(storage.Fault{Ops: ftOps(storage.ObjectGet), Prob: 0.02, Err: storage.ErrInjected})
	failed := 0
	for range 20 {
		got, err := ftScan(t, db, tbl)
		if err != nil {
			wantInjected(t, "scan", err)
			failed++
			continue
		}
		if !slices.Equal(got, all) {
			t.Fatalf("a scan that reported no error returned %d of %d rows", len(got), len(all))
		}
	}
	fs.Clear()
	if failed == 0 || failed == 20 {
		t.Fatalf("%d of 20 scans failed; want some of each", failed)
	}

	// Point reads by row id, through byte ranges.
	txn := db.Begin()
	defer txn.Rollback()
	sc, err := txn.Scan(tbl, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	var rowIDs []uint64
	for {
		b, ids, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		rowIDs = append(rowIDs, ids...)
	}
	sc.Close()
	pick := []uint64{rowIDs[5], rowIDs[1500], rowIDs[2999], rowIDs[3050]}
	cols := []int{0, 1, 2, 3}
	for _, op := range []storage.ObjectOp{storage.ObjectGet, storage.ObjectGetRange} {
		in := fs.Inject(storage.Fault{Ops: ftOps(op), EveryNth: 2, Times: 1, Err: storage.ErrInjected})
		_, _, err := txn.FetchRows(tbl, cols, pick)
		wantInjected(t, "fetch failing "+op.String(), err)
		in.Remove()
		b, got, err := txn.FetchRows(tbl, cols, pick)
		if err != nil || !slices.Equal(got, pick) {
			t.Fatalf("fetch after the fault: %v rows, %v", got, err)
		}
		ftCheckRows(t, b, cols)
	}
}

// TestFaultShortReadIsCorruption truncates objects as they are read: a
// scan or fetch that meets one fails with XX001 naming the table, never
// returns a wrong value, and the next read is whole again.
func TestFaultShortReadIsCorruption(t *testing.T) {
	db, fs, tbl := faultDB(t, ftOpts{})
	all := ftFragmented(t, db, tbl)
	in := fs.Inject(storage.Fault{Ops: ftOps(storage.ObjectGet), EveryNth: 5, Times: 1, ShortRead: true})
	_, err := ftScan(t, db, tbl)
	wantCorruption(t, "scan with a short read", err)
	in.Remove()
	wantRows(t, db, tbl, all)

	fs.Inject(storage.Fault{Ops: ftOps(storage.ObjectGet, storage.ObjectGetRange), Prob: 0.05, ShortRead: true})
	txn := db.Begin()
	defer txn.Rollback()
	failed := 0
	for i := range 20 {
		got, err := ftScan(t, db, tbl)
		if err != nil {
			wantCorruption(t, "scan", err)
			failed++
		} else if !slices.Equal(got, all) {
			t.Fatalf("a scan that reported no error returned %d of %d rows", len(got), len(all))
		}
		// Single rows: byte ranges of emb, whole chunks of the rest.
		ids := []uint64{uint64(i*151 + 1), uint64(i*97 + 2000)}
		b, _, err := txn.FetchRows(tbl, []int{0, 1, 2, 3}, ids)
		if err != nil {
			wantCorruption(t, "fetch", err)
			failed++
		} else {
			ftCheckRows(t, b, []int{0, 1, 2, 3})
		}
	}
	fs.Clear()
	if failed == 0 {
		t.Fatal("no read was cut short")
	}
	wantRows(t, db, tbl, all)
}

// TestFaultCompactAndVacuum fails the reads, writes, lists and deletes of
// compactions and VACUUMs: each reports its error and changes nothing
// visible; deleted rows stay deleted; the next run does the work.
func TestFaultCompactAndVacuum(t *testing.T) {
	ctx := context.Background()
	db, fs, tbl := faultDB(t, ftOpts{keepOnlyCurrent: true})
	ftFragmented(t, db, tbl)
	// Delete every tenth row of the flushed ones, so that compaction
	// rewrites the fragments.
	txn := db.Begin()
	sc, err := txn.Scan(tbl, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	var del []uint64
	for {
		b, ids, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		for i, id := range ids {
			if b.Cols[0].Ints[i]%10 == 3 && b.Cols[0].Ints[i] < 3000 {
				del = append(del, id)
			}
		}
	}
	sc.Close()
	if err := txn.Delete(tbl, del); err != nil {
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	var want []int64
	for id := range int64(3100) {
		if id%10 != 3 || id >= 3000 {
			want = append(want, id)
		}
	}
	wantRows(t, db, tbl, want)
	// VACUUM flushes the buffered rows first, a step of its own: done
	// here, so that what the failures below leave is compared with the
	// objects of a flushed table.
	if err := db.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	before := len(ftKeys(t, fs, "tables/"))

	// The first VACUUM expires the versions before the deletion, so
	// compactions may drop the deleted rows, then fails in its compaction;
	// compactions on their own fail the same way. Each failure leaves the
	// objects as they were.
	for i, f := range []storage.Fault{
		{Ops: ftOps(storage.ObjectGet), EveryNth: 4, Times: 1, Err: storage.ErrInjected},
		{Ops: ftOps(storage.ObjectGet), EveryNth: 4, Times: 1, Err: storage.ErrInjected},
		{Ops: ftOps(storage.ObjectPut), EveryNth: 2, Times: 1, Err: storage.ErrInjected},
		{Ops: ftOps(storage.ObjectPutIfAbsent), Times: 1, Err: storage.ErrInjected},
	} {
		in := fs.Inject(f)
		what := "compaction"
		if i == 0 {
			what = "VACUUM"
			_, err = db.Vacuum(ctx, "ft")
		} else {
			_, err = db.Compact(ctx, "ft")
		}
		wantInjected(t, fmt.Sprintf("%s failing %s (fired %d times)", what, f.Ops[0], in.Fired()), err)
		in.Remove()
		wantRows(t, db, tbl, want)
		if n := len(ftKeys(t, fs, "tables/")); n != before {
			t.Fatalf("a failed compaction left %d objects, there were %d", n, before)
		}
	}
	// Then VACUUM compacts, lists and deletes what nothing reads.
	for _, f := range []storage.Fault{
		{Ops: ftOps(storage.ObjectList), Times: 1, Err: storage.ErrInjected},
		{Ops: ftOps(storage.ObjectDelete), EveryNth: 3, Times: 1, Err: storage.ErrInjected},
	} {
		in := fs.Inject(f)
		_, err := db.Vacuum(ctx, "ft")
		wantInjected(t, fmt.Sprintf("VACUUM failing %s (fired %d times)", f.Ops[0], in.Fired()), err)
		in.Remove()
		wantRows(t, db, tbl, want)
	}
	st, err := db.Vacuum(ctx, "ft")
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, db, tbl, want)
	wantManifestsOfVersions(t, db, fs, tbl)
	if ops := ftVersionOps(t, db); ops["compact"] == 0 {
		t.Fatalf("no compaction committed: %v", ops)
	}
	t.Logf("last VACUUM: %+v; %d objects, %d before", st, len(ftKeys(t, fs, "tables/")), before)
}

// TestFaultLatency slows object store calls down at random while writers
// commit small and large transactions, the background flusher runs,
// compactions run and readers scan: every scan sees each transaction
// whole or not at all, and in the end every committed row is there.
func TestFaultLatency(t *testing.T) {
	ctx := context.Background()
	db, fs, tbl := faultDB(t, ftOpts{flushRows: 500, chunkSize: 8 << 20})
	fs.Inject(storage.Fault{Prob: 0.3, Delay: 2 * time.Millisecond})
	fs.Inject(storage.Fault{Ops: ftOps(storage.ObjectGet, storage.ObjectGetRange), Prob: 0.05, Delay: 20 * time.Millisecond})

	var (
		mu        sync.Mutex
		sizes     = map[int64]int64{} // txn → rows, recorded before its commit
		committed []int64
		stop      atomic.Bool
		wg        sync.WaitGroup
	)
	for w := range int64(2) {
		wg.Go(func() {
			for seq := int64(0); !stop.Load(); seq++ {
				txn := 1 + w*1000 + seq
				n := 1 + (seq*37)%200
				if seq%6 == 2 {
					n = 4500 // spills
				}
				mu.Lock()
				sizes[txn] = n
				mu.Unlock()
				if err := ftInsert(db, tbl, txn*10000, n); err != nil {
					t.Errorf("txn %d: %v", txn, err)
					return
				}
				mu.Lock()
				committed = append(committed, txn)
				mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		for !stop.Load() {
			if _, err := db.Compact(ctx, "ft"); err != nil {
				t.Errorf("compaction: %v", err)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	scans := 0
	for deadline := time.Now().Add(1500 * time.Millisecond); time.Now().Before(deadline) && !t.Failed(); scans++ {
		ids, err := ftScan(t, db, tbl)
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		perTxn := map[int64]int64{}
		for _, id := range ids {
			perTxn[id/10000]++
		}
		mu.Lock()
		for txn, n := range perTxn {
			if n != sizes[txn] {
				t.Errorf("a scan saw %d of the %d rows of txn %d", n, sizes[txn], txn)
			}
		}
		mu.Unlock()
	}
	stop.Store(true)
	wg.Wait()
	fs.Clear()
	var want []int64
	for _, txn := range committed {
		want = append(want, ftRanges(txn*10000, txn*10000+sizes[txn])...)
	}
	slices.Sort(want)
	wantRows(t, db, tbl, want)
	t.Logf("%d transactions, %d rows, %d scans; versions %v", len(committed), len(want), scans, ftVersionOps(t, db))
}
