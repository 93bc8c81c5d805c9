package storage

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
)

// TestSharedStress: three servers of one location insert (small and
// spilling transactions), flush and vacuum one table at once; no read
// meets a missing or foreign object, and every server reads the same rows
// back. (Counter blocks reserved from a read that an applied entry made
// stale once gave two servers one fragment id.)
func TestSharedStress(t *testing.T) {
	f := newAttachFixture(t)
	opts := Options{Durability: DurabilityBucket, FlushRows: 200, RefreshInterval: 20 * time.Millisecond, NodeHeartbeat: 50 * time.Millisecond, VersionRetention: -1}
	var dbs []*DB
	for i := range 3 {
		o := opts
		o.Attach = i > 0
		db, err := f.open(t, filepath.Join(t.TempDir(), "d"), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs = append(dbs, db)
		if i == 0 {
			createTable(t, db, wideTable("w"))
		}
	}
	ctx := context.Background()
	deadline := time.Now().Add(4 * time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	report := func(err error) {
		switch pgerror.GetCode(err) {
		case pgerror.SerializationFailure, pgerror.UniqueViolation, pgerror.UndefinedTable:
			return
		}
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for w := range 4 {
		db := dbs[w%2]
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				tbl, err := db.Table("w")
				if err != nil {
					report(err)
					return
				}
				txn := db.Begin()
				n := 50
				if i%7 == 0 {
					n = 20000 // spills
				}
				err = txn.Insert(tbl, wideRows(tbl, (w*1000000)+i*100000, n))
				if err == nil {
					err = txn.Commit()
				} else {
					txn.Rollback()
				}
				if err != nil {
					report(err)
				}
			}
		})
	}
	for _, db := range dbs {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if _, err := db.Vacuum(ctx, ""); err != nil {
					report(err)
				}
				time.Sleep(30 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Errorf("during the load: %v", err)
	}
	var counts []int
	for _, db := range dbs {
		refresh(t, db)
		tbl := tableOf(t, db, "w")
		txn := db.Begin()
		sc, err := txn.ScanWith(tbl, ScanOptions{Cols: []int{0, 9}})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			b, _, err := sc.Next()
			if err != nil {
				t.Fatalf("reading back: %v", err)
			}
			if b == nil {
				break
			}
			n += b.Len()
		}
		sc.Close()
		txn.Rollback()
		counts = append(counts, n)
	}
	if counts[0] != counts[1] || counts[1] != counts[2] {
		t.Fatalf("the servers count %v rows", counts)
	}
}
