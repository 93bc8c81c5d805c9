package storage

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
)

// twoServers opens two data directories on one location, the second
// attached to the first's catalog, both acknowledging commits only once
// the location has them.
func twoServers(t *testing.T) (a, b *DB) {
	t.Helper()
	f := newAttachFixture(t)
	// A refresh interval long enough that the test decides when each
	// server sees the other's commits.
	opts := Options{Durability: DurabilityBucket, FlushRows: 1 << 30, RefreshInterval: 1 << 40, NodeHeartbeat: 20 * time.Millisecond}
	a, err := f.open(t, filepath.Join(t.TempDir(), "a"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	createTable(t, a, wideTable("w"))
	opts.Attach = true
	b, err = f.open(t, filepath.Join(t.TempDir(), "b"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

func refresh(t *testing.T, dbs ...*DB) {
	t.Helper()
	for _, db := range dbs {
		if err := db.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func tableOf(t *testing.T, db *DB, name string) *TableDesc {
	t.Helper()
	tbl, err := db.Table(name)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// keysOf returns the ids (column 0) db serves from table w.
func keysOf(t *testing.T, db *DB) map[int64]int {
	t.Helper()
	tbl := tableOf(t, db, "w")
	rows, _ := scanNow(t, db, tbl, []int{0})
	got := make(map[int64]int, len(rows))
	for _, r := range rows {
		got[r[0].(int64)]++
	}
	return got
}

func wantKeys(t *testing.T, db *DB, n int) {
	t.Helper()
	got := keysOf(t, db)
	for k, c := range got {
		if c != 1 {
			t.Fatalf("key %d served %d times", k, c)
		}
	}
	if len(got) != n {
		t.Fatalf("%d keys, want %d", len(got), n)
	}
}

// TestTwoServersShareLocation runs two servers on one location: each
// sees the other's commits after a refresh, commits that do not conflict
// both land (the later one built again on the earlier), and those that
// do conflict fail as PostgreSQL fails them.
func TestTwoServersShareLocation(t *testing.T) {
	a, b := twoServers(t)
	insert(t, a, tableOf(t, a, "w"), wideRows(tableOf(t, a, "w"), 0, 100))
	refresh(t, b)
	wantKeys(t, b, 100)

	// Disjoint inserts, B not refreshed: B's commit loses the race for
	// the log entry, applies A's, and commits after it.
	insert(t, a, tableOf(t, a, "w"), wideRows(tableOf(t, a, "w"), 100, 100))
	insert(t, b, tableOf(t, b, "w"), wideRows(tableOf(t, b, "w"), 200, 100))
	insert(t, b, tableOf(t, b, "w"), wideRows(tableOf(t, b, "w"), 300, 30000)) // a fragment
	refresh(t, a, b)
	wantKeys(t, a, 30300)
	wantKeys(t, b, 30300)

	// One primary key inserted on both: the later commit gets 23505.
	insert(t, a, tableOf(t, a, "w"), wideRows(tableOf(t, a, "w"), 50000, 1))
	txn := b.Begin()
	err := txn.Insert(tableOf(t, b, "w"), wideRows(tableOf(t, b, "w"), 50000, 1))
	if err == nil {
		err = txn.Commit()
	}
	wantCode(t, err, pgerror.UniqueViolation)

	// One row deleted on both: the later commit gets 40001.
	refresh(t, a, b)
	_, ids := scanNow(t, a, tableOf(t, a, "w"), []int{0})
	victim := ids[5]
	tb := b.Begin()
	if err := tb.Delete(tableOf(t, b, "w"), []uint64{victim}); err != nil {
		t.Fatal(err)
	}
	deleteRows(t, a, tableOf(t, a, "w"), []uint64{victim})
	wantCode(t, tb.Commit(), pgerror.SerializationFailure)
	refresh(t, a, b)
	wantKeys(t, a, 30300)
	wantKeys(t, b, 30300)

	// Both flush the buffered rows: they land in one fragment once.
	ctx := context.Background()
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	refresh(t, a, b)
	wantKeys(t, a, 30300)
	wantKeys(t, b, 30300)

	// DDL: a table made on B, then on A before A refreshed: A's commit
	// loses, A applies B's and finds the table there (42P07, never two
	// tables). A table made on A meanwhile is there on B after a refresh.
	if _, err := b.CreateTable(wideTable("x"), false); err != nil {
		t.Fatal(err)
	}
	_, err = a.CreateTable(wideTable("x"), false)
	wantCode(t, err, pgerror.DuplicateTable)
	if _, err := b.CreateTable(wideTable("y"), false); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateTable(wideTable("z"), false); err != nil {
		t.Fatalf("a table of another name, made on A after B made one: %v", err)
	}
	if dropped, err := a.DropTable("y", false); err != nil || !dropped {
		t.Fatal(dropped, err)
	}
	refresh(t, a, b)
	for _, db := range []*DB{a, b} {
		if _, err := db.Table("y"); err == nil {
			t.Fatal("table y is still there")
		}
		if _, err := db.Table("z"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Table("x"); err != nil {
		t.Fatal(err)
	}

	// A vector index made on A is built on B after a refresh.
	if _, err := a.CreateIndex(context.Background(), "w", IndexDesc{Name: "w_v_idx", Method: "hnsw", Column: 8, OpClass: "vector_l2_ops", M: 8, EfConstruction: 32}, false); err != nil {
		t.Fatal(err)
	}
	refresh(t, b)
	ts, _ := b.state(tableOf(t, b, "w").ID)
	for deadline := time.Now().Add(30 * time.Second); ; {
		ts.vmu.Lock()
		n := len(ts.vindexes)
		ts.vmu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the index made on the other server was not built here")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSerialAcrossServers takes serial values on two servers at once:
// none is handed out twice.
func TestSerialAcrossServers(t *testing.T) {
	a, b := twoServers(t)
	id := tableOf(t, a, "w").ID
	var mu sync.Mutex
	seen := make(map[int64]bool)
	var wg sync.WaitGroup
	for _, db := range []*DB{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3000 {
				v, err := db.NextVal(id, 0)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[v] {
					t.Errorf("serial value %d handed out twice", v)
				}
				seen[v] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// TestVacuumKeepsWhatAnotherServerReads vacuums a table on one server
// while a transaction of the other reads it from an older snapshot: the
// objects of the fragments compacted away stay until that transaction
// ends (its server's horizon, in its record, moves past the removal).
func TestVacuumKeepsWhatAnotherServerReads(t *testing.T) {
	a, b := twoServers(t)
	ctx := context.Background()
	tbl := tableOf(t, a, "w")
	for k := range 3 {
		insert(t, a, tbl, wideRows(tbl, k*1000, 1000))
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	_, ids := scanNow(t, a, tbl, []int{0})
	deleteRows(t, a, tbl, ids[:1500])
	refresh(t, b)
	reader := b.Begin()
	defer reader.Rollback()
	sc, err := reader.ScanWith(tableOf(t, b, "w"), ScanOptions{Cols: []int{0, 9}})
	if err != nil {
		t.Fatal(err)
	}
	first, _, err := sc.Next()
	if err != nil || first == nil {
		t.Fatal(first, err)
	}
	n := first.Len()
	time.Sleep(100 * time.Millisecond) // b's horizon reaches its record
	frags := func() int { return len(objectsUnder(t, a.Store(), tableFragsPrefix(tbl.ID))) }
	before := frags()
	if _, err := a.Vacuum(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	if frags() < before {
		t.Fatalf("vacuum deleted objects another server's open snapshot reads: %d -> %d", before, frags())
	}
	for {
		bt, _, err := sc.Next()
		if err != nil {
			t.Fatalf("reading on after the other server's vacuum: %v", err)
		}
		if bt == nil {
			break
		}
		n += bt.Len()
	}
	sc.Close()
	if n != 1500 {
		t.Fatalf("read %d rows, want 1500", n)
	}
	reader.Rollback()
	refresh(t, b)
	time.Sleep(100 * time.Millisecond)
	if _, err := a.Vacuum(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	if after := frags(); after >= before {
		t.Fatalf("the compacted fragments' objects stay once no server reads them: %d -> %d", before, after)
	}
	refresh(t, b)
	wantKeys(t, b, 1500)
}

// TestSharedLogUnderFaults runs two servers on one location, each through
// its own fault store that delays, fails and loses the replies of its
// put-if-absent calls (so their commits race in every order): every
// insert acknowledged on either server is there on both at the end, once,
// and every one refused is absent.
func TestSharedLogUnderFaults(t *testing.T) {
	f := newAttachFixture(t)
	opts := Options{Durability: DurabilityBucket, FlushRows: 300, RefreshInterval: 5 * time.Millisecond, NodeHeartbeat: 20 * time.Millisecond}
	var dbs [2]*DB
	for i := range dbs {
		fs := NewFaultStore(f.store, uint64(i+1))
		isLog := func(k string) bool { return strings.HasPrefix(k, logPrefix) }
		fs.Inject(Fault{Ops: []ObjectOp{ObjectPutIfAbsent}, Key: isLog, Prob: 0.3, Delay: 3 * time.Millisecond})
		fs.Inject(Fault{Ops: []ObjectOp{ObjectPutIfAbsent}, Key: isLog, Prob: 0.05, Err: ErrInjected})
		fs.Inject(Fault{Ops: []ObjectOp{ObjectPutIfAbsent}, Key: isLog, Prob: 0.05, Err: ErrInjected, AfterCall: true})
		o := opts
		o.Attach = i > 0
		o.Dir, o.Store, o.Location = filepath.Join(t.TempDir(), "d"), fs, identityBucket
		db, err := Open(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
		if i == 0 {
			createTable(t, db, wideTable("w"))
		}
	}
	var mu sync.Mutex
	acked := make(map[int64]bool)
	refused := make(map[int64]bool)
	outcomes := make(map[pgerror.Code]int)
	var wg sync.WaitGroup
	for w := range 4 {
		db := dbs[w%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 60 {
				// Keys overlap between the two writers of a pair of
				// servers: one insert of each pair wins.
				key := int64(i*2 + w/2)
				if w%2 == 1 && i%3 == 0 {
					key = int64(i*2 + (w/2+1)%2)
				}
				tbl, err := db.Table("w")
				if err != nil {
					t.Error(err)
					return
				}
				txn := db.Begin()
				err = txn.Insert(tbl, wideRows(tbl, int(key)*10, 10))
				if err == nil {
					err = txn.Commit()
				} else {
					txn.Rollback()
				}
				mu.Lock()
				if err != nil {
					outcomes[pgerror.GetCode(err)]++
				} else {
					outcomes["ok"]++
				}
				switch code := pgerror.GetCode(err); {
				case err == nil:
					for k := key * 10; k < key*10+10; k++ {
						if acked[k] {
							t.Errorf("key %d acknowledged twice", k)
						}
						acked[k] = true
					}
				case code == pgerror.UniqueViolation, code == pgerror.IOError, code == pgerror.SerializationFailure:
					for k := key * 10; k < key*10+10; k++ {
						refused[k] = true
					}
				case code == pgerror.TransactionResolutionUnknown:
				default:
					t.Errorf("insert: %v", err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d keys acknowledged, %d refused; outcomes %v", len(acked), len(refused), outcomes)
	for _, db := range dbs {
		var err error
		for range 50 { // a refresh may meet an injected fault
			if err = db.Refresh(context.Background()); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		got := keysOf(t, db)
		for k, c := range got {
			if c != 1 {
				t.Fatalf("key %d served %d times", k, c)
			}
			if refused[k] && !acked[k] {
				t.Fatalf("key %d was refused but is there", k)
			}
		}
		for k := range acked {
			if got[k] != 1 {
				t.Fatalf("acknowledged key %d is missing", k)
			}
		}
		if len(acked) == 0 {
			t.Fatal("nothing was acknowledged")
		}
	}
}

// smallFrag is a fragment of one small chunk per column over [lo, hi].
func smallFrag(id, lo, hi uint64) *fragment {
	return &fragment{ID: id, Rows: int64(hi - lo + 1), MinRow: lo, MaxRow: hi, Cols: [][]fragChunk{{{Rows: int64(hi - lo + 1), Size: 100}}}}
}

// TestPickCompactionAcrossBlocks: fragments of two servers' row id
// blocks. One wide small fragment (rows of both, flushed together before
// flushes cut at gaps) does not keep the many it overlaps from merging,
// and no merge spans the gap between the blocks.
func TestPickCompactionAcrossBlocks(t *testing.T) {
	frags := []*fragment{smallFrag(1, 1, 65736)} // wide: both servers' rows
	for i := range uint64(10) {
		frags = append(frags, smallFrag(10+i, 101+i*100, 200+i*100)) // server A's
	}
	for i := range uint64(3) {
		frags = append(frags, smallFrag(30+i, 65737+i*100, 65836+i*100)) // server B's
	}
	got := pickCompaction(frags, nil, 8<<20)
	var ids []uint64
	for _, f := range got {
		ids = append(ids, f.ID)
	}
	if len(ids) != 10 || ids[0] != 10 || ids[9] != 19 {
		t.Fatalf("picked %v, want server A's ten fragments 10..19", ids)
	}
}

// TestFlushCutsAtGaps: buffered rows whose ids lie in two servers'
// blocks are flushed into a fragment each.
func TestFlushCutsAtGaps(t *testing.T) {
	db := openMem(t, 1<<30)
	defer db.Close()
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 100))
	// The next rows take ids past a gap, as another server's block would
	// give them.
	if _, err := db.alloc(rowIDCounter, 2*compactGap); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, wideRows(tbl, 100, 100))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	frags, err := db.liveFragments(db.kv, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if len(frags) != 2 || frags[0].Rows != 100 || frags[1].Rows != 100 {
		t.Fatalf("%d fragments, want two of 100 rows", len(frags))
	}
	wantKeys(t, db, 200)
}

// TestLapsedServerCannotCommit cuts server B off from the location's
// node records for longer than the others wait for a silent server,
// while a large transaction of B has written its first fragments: A's
// VACUUM takes B for gone and deletes them; B, back in contact, refuses
// to commit that transaction (40001) instead of committing rows whose
// objects are gone, and commits the next one.
func TestLapsedServerCannotCommit(t *testing.T) {
	f := newAttachFixture(t)
	opts := Options{Durability: DurabilityBucket, FlushRows: 1 << 30, RefreshInterval: 1 << 40, NodeHeartbeat: 10 * time.Millisecond}
	a, err := f.open(t, filepath.Join(t.TempDir(), "a"), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	createTable(t, a, wideTable("w"))
	fs := NewFaultStore(f.store, 1)
	o := opts
	o.Attach, o.Dir, o.Store, o.Location = true, filepath.Join(t.TempDir(), "b"), fs, identityBucket
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tbl := tableOf(t, b, "w")
	txn := b.Begin()
	if err := txn.Insert(tbl, wideRows(tbl, 0, 60000)); err != nil { // spills
		t.Fatal(err)
	}
	in := fs.Inject(Fault{Ops: []ObjectOp{ObjectPut}, Key: func(k string) bool { return strings.HasPrefix(k, nodesPrefix) }, Err: ErrInjected})
	time.Sleep(b.deleteGrace() + 200*time.Millisecond)
	if _, err := a.Vacuum(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	in.Remove()
	time.Sleep(100 * time.Millisecond) // B's heartbeat renews
	wantCode(t, txn.Commit(), pgerror.SerializationFailure)
	insert(t, b, tbl, wideRows(tbl, 0, 10))
	refresh(t, a)
	wantKeys(t, a, 10)
}
