package storage

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
)

// epochKeys returns the keys of the epochs the DB holds.
func epochKeys(db *DB) []string {
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	var keys []string
	for k := range db.epochs {
		keys = append(keys, k)
	}
	return keys
}

func TestReadEpoch(t *testing.T) {
	const linger = 300 * time.Millisecond
	store := NewMemStore()
	db, err := Open(Options{InMemory: true, Store: store, FlushRows: 1 << 30, VersionRetention: -1, NoCompaction: true, EpochLinger: linger})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	tbl := createTable(t, db, intTable("ep", 0))
	insert(t, db, tbl, intRows(0, 100))

	inEpoch := func(key string) *Txn {
		t.Helper()
		txn := db.Begin()
		if err := txn.ReadEpoch(key); err != nil {
			t.Fatal(err)
		}
		return txn
	}
	a := inEpoch("e1")
	if n := countRows(t, db, a, tbl); n != 100 {
		t.Fatalf("first reader of e1: %d rows", n)
	}
	// Writes, a flush and a compaction between the epoch's statements
	// change the table's layout; the epoch's readers do not see them.
	insert(t, db, tbl, intRows(100, 50))
	if err := db.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Vacuum(ctx, "ep"); err != nil {
		t.Fatal(err)
	}
	b := inEpoch("e1")
	if n := countRows(t, db, b, tbl); n != 100 {
		t.Fatalf("second reader of e1: %d rows, want the first's 100", n)
	}
	other := inEpoch("e2")
	if n := countRows(t, db, other, tbl); n != 150 {
		t.Fatalf("reader of e2: %d rows", n)
	}
	other.Rollback()

	if err := b.ReadEpoch("e1"); !isCode(err, pgerror.ActiveSQLTransaction) {
		t.Fatalf("ReadEpoch after a read: %v", err)
	}
	c := db.Begin()
	for _, key := range []string{"", strings.Repeat("k", MaxEpochKey+1)} {
		if err := c.ReadEpoch(key); !isCode(err, pgerror.InvalidParameterValue) {
			t.Fatalf("ReadEpoch(%d bytes): %v", len(key), err)
		}
	}
	c.Rollback()

	// While a reader is open the snapshot stays, however long it reads.
	a.Rollback()
	time.Sleep(3 * linger)
	if n := countRows(t, db, b, tbl); n != 100 {
		t.Fatalf("open reader of e1: %d rows", n)
	}
	// After the last reader, the snapshot lingers; a reader within the
	// linger time reads it (and restarts the clock).
	b.Rollback()
	time.Sleep(linger / 3)
	d := inEpoch("e1")
	// Deleting every row and vacuuming with no retention reclaims what
	// only old versions need; the epoch's snapshot must keep its data.
	all := db.Begin()
	deleteIDs(t, all, tbl, func(int64) bool { return true })
	if err := all.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Vacuum(ctx, "ep"); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, db, d, tbl); n != 100 {
		t.Fatalf("reader of e1 within the linger time, after VACUUM: %d rows", n)
	}
	d.Rollback()
	if keys := epochKeys(db); len(keys) != 1 || keys[0] != "e1" { // e2 lapsed
		t.Fatalf("epochs held: %q", keys)
	}
	// Unread for the linger time, the keys lapse: e1 names a new snapshot.
	deadline := time.Now().Add(10 * time.Second)
	for len(epochKeys(db)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("epochs still held after %v: %q", 10*time.Second, epochKeys(db))
		}
		time.Sleep(linger / 4)
	}
	e := inEpoch("e1")
	if n := countRows(t, db, e, tbl); n != 0 {
		t.Fatalf("e1 after lapsing: %d rows", n)
	}
	e.Rollback()
	// A vacuum once no snapshot needs them reclaims the deleted rows.
	time.Sleep(2 * linger)
	if len(epochKeys(db)) != 0 {
		t.Fatalf("epochs still held: %q", epochKeys(db))
	}
	if _, err := db.Vacuum(ctx, "ep"); err != nil {
		t.Fatal(err)
	}
	frags, _ := db.liveFragments(db.kv, tbl)
	if len(frags) != 0 {
		t.Fatalf("%d fragments left after the epochs lapsed", len(frags))
	}
}

// TestReadEpochClose: a DB closes with epochs held and readers of them
// ended; Pebble reports no leaked snapshot.
func TestReadEpochClose(t *testing.T) {
	db, err := Open(Options{InMemory: true, FlushRows: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	tbl := createTable(t, db, intTable("epc", 0))
	insert(t, db, tbl, intRows(0, 10))
	txn := db.Begin()
	if err := txn.ReadEpoch("k"); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, db, txn, tbl); n != 10 {
		t.Fatalf("%d rows", n)
	}
	txn.Rollback()
	if err := db.Close(); err != nil {
		t.Fatalf("Close with an epoch held: %v", err)
	}
	late := db.Begin()
	if err := late.ReadEpoch("k2"); !isCode(err, pgerror.AdminShutdown) {
		t.Fatalf("ReadEpoch after Close: %v", err)
	}
}

// TestReadEpochLingerAndLimit: a lapse whose timer fired while a reader
// came and went does not cut the linger short; the DB holds at most
// MaxEpochs epochs.
func TestReadEpochLingerAndLimit(t *testing.T) {
	db, err := Open(Options{InMemory: true, FlushRows: 1 << 30, EpochLinger: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	txn := db.Begin()
	if err := txn.ReadEpoch("late"); err != nil {
		t.Fatal(err)
	}
	txn.Rollback()
	db.commitMu.Lock()
	e := db.epochs["late"]
	db.commitMu.Unlock()
	db.lapseEpoch(e) // as a timer run that waited for commitMu would
	if keys := epochKeys(db); len(keys) != 1 {
		t.Fatalf("the epoch lapsed within its linger time: %q", keys)
	}
	for i := 1; i < MaxEpochs; i++ {
		txn := db.Begin()
		if err := txn.ReadEpoch(fmt.Sprintf("k%d", i)); err != nil {
			t.Fatalf("epoch %d: %v", i, err)
		}
		txn.Rollback()
	}
	txn = db.Begin()
	defer txn.Rollback()
	if err := txn.ReadEpoch("one too many"); !isCode(err, pgerror.ConfigurationLimitExceeded) {
		t.Fatalf("epoch %d: %v", MaxEpochs+1, err)
	}
	if err := txn.ReadEpoch("late"); err != nil { // a held one is still read
		t.Fatal(err)
	}
}
