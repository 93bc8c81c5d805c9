package storage

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// identityFixture is a data directory whose table has rows in a store of
// its own (a directory standing for an S3 prefix).
type identityFixture struct {
	dir, bucket string
}

const identityBucket = "s3://bucket/t1"

func newIdentityFixture(t *testing.T) identityFixture {
	t.Helper()
	f := identityFixture{dir: filepath.Join(t.TempDir(), "data"), bucket: filepath.Join(t.TempDir(), "bucket")}
	db, err := Open(Options{Dir: f.dir, Store: f.store(t), Location: identityBucket, FlushRows: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	tbl := createTable(t, db, wideTable("w"))
	insert(t, db, tbl, wideRows(tbl, 0, 100))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f identityFixture) store(t *testing.T) ObjectStore {
	t.Helper()
	s, err := NewDirStore(f.bucket)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// storeKeys lists every object of s.
func storeKeys(t *testing.T, s ObjectStore) []string {
	t.Helper()
	keys, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func wantForeign(t *testing.T, err error, parts ...string) {
	t.Helper()
	if !errors.Is(err, ErrForeignStorage) {
		t.Fatalf("got %v, want the data directory refused", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("%q does not say %q", err, p)
		}
	}
}

// reopen opens f's data directory on its bucket and checks the rows.
func (f identityFixture) reopen(t *testing.T) {
	t.Helper()
	db, err := Open(Options{Dir: f.dir, Store: f.store(t), Location: identityBucket})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl, err := db.Table("w")
	if err != nil {
		t.Fatal(err)
	}
	txn := db.Begin()
	defer txn.Rollback()
	if n := countRows(t, db, txn, tbl); n != 100 {
		t.Fatalf("%d rows, want 100", n)
	}
}

// TestForgottenStorageFlag: a data directory made on a bucket and started
// without --storage (on its own objects) is refused, names the bucket, and
// writes nothing there; back on its bucket it serves every row.
func TestForgottenStorageFlag(t *testing.T) {
	f := newIdentityFixture(t)
	local := filepath.Join(f.dir, "objects")
	_, err := Open(Options{Dir: f.dir})
	wantForeign(t, err, f.dir, identityBucket, "--storage "+identityBucket)
	if keys := storeKeys(t, mustDirStore(t, local)); len(keys) != 0 {
		t.Fatalf("the refused start wrote %v", keys)
	}
	// Another bucket, empty: refused the same way.
	_, err = Open(Options{Dir: f.dir, Store: mustDirStore(t, t.TempDir()), Location: "s3://bucket/t2"})
	wantForeign(t, err, "s3://bucket/t2 holds no deeplaked data", "--storage "+identityBucket)
	f.reopen(t)
}

// TestSecondCatalogOnOnePrefix: a new data directory on a prefix that
// another catalog's data directory uses is refused, and the prefix is left
// as it was.
func TestSecondCatalogOnOnePrefix(t *testing.T) {
	f := newIdentityFixture(t)
	before := storeKeys(t, f.store(t))
	_, err := Open(Options{Dir: filepath.Join(t.TempDir(), "b"), Store: f.store(t), Location: identityBucket})
	wantForeign(t, err, "already holds another catalog's data")
	if after := storeKeys(t, f.store(t)); !slices.Equal(before, after) {
		t.Fatalf("objects changed: %v -> %v", before, after)
	}
	// A data directory of another catalog on it: refused too.
	g := newIdentityFixture(t)
	_, err = Open(Options{Dir: g.dir, Store: f.store(t), Location: identityBucket})
	wantForeign(t, err, "holds another catalog's data (identity ")
	f.reopen(t)
}

// TestIdentityOfEarlierDataDirectory: a data directory written before
// identities (no record, a store without identity) claims its store; one
// whose tables' objects are missing from the store it meets is refused,
// and so is a new data directory on a store holding unclaimed table data.
func TestIdentityOfEarlierDataDirectory(t *testing.T) {
	f := newIdentityFixture(t)
	forget := func() {
		t.Helper()
		db, err := Open(Options{Dir: f.dir, Store: f.store(t), Location: identityBucket})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.kv.Delete(storageKey, nil); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if err := f.store(t).Delete(context.Background(), identityKey); err != nil {
			t.Fatal(err)
		}
	}
	forget()
	// Its tables' objects are not in an empty store.
	_, err := Open(Options{Dir: f.dir, Store: mustDirStore(t, t.TempDir()), Location: "s3://bucket/t2"})
	wantForeign(t, err, "holds tables whose data is not in s3://bucket/t2")
	// Nor may a new data directory take the unclaimed objects.
	_, err = Open(Options{Dir: filepath.Join(t.TempDir(), "b"), Store: f.store(t), Location: identityBucket})
	wantForeign(t, err, "holds table data that no catalog claims")
	// On its own store it claims it and serves its rows.
	f.reopen(t)
	if _, ok, err := readIdentity(context.Background(), f.store(t)); err != nil || !ok {
		t.Fatalf("no identity claimed: %v", err)
	}
}

func mustDirStore(t *testing.T, dir string) *DirStore {
	t.Helper()
	s, err := NewDirStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
