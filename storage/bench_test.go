package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/types"
)

// BenchmarkInsertScan inserts 100k rows in transactions of 1,000 rows into
// an on-disk database, then scans them (buffered and, after a flush, from
// chunks).
func BenchmarkInsertScan(b *testing.B) {
	const total, per = 100_000, 1_000
	tbl := &TableDesc{Name: "bench", Columns: []ColumnDesc{
		{Name: "id", Type: types.TypInt8}, {Name: "x", Type: types.TypFloat8}, {Name: "s", Type: types.TypText},
	}, PrimaryKey: []int{0}}
	batches := make([]*types.Batch, total/per)
	for i := range batches {
		bt := types.NewBatch(tbl.ColumnTypes(), per)
		for j := range per {
			n := i*per + j
			bt.Cols[0].AppendInt(int64(n))
			bt.Cols[1].AppendFloat(float64(n) / 7)
			bt.Cols[2].AppendString(fmt.Sprintf("value-%d", n))
		}
		batches[i] = bt
	}
	scan := func(b *testing.B, db *DB, t *TableDesc) {
		txn := db.Begin()
		defer txn.Rollback()
		sc, err := txn.Scan(t, []int{0, 1, 2})
		if err != nil {
			b.Fatal(err)
		}
		defer sc.Close()
		n := 0
		for {
			bt, _, err := sc.Next()
			if err != nil {
				b.Fatal(err)
			}
			if bt == nil {
				break
			}
			n += bt.Len()
		}
		if n != total {
			b.Fatalf("scanned %d rows", n)
		}
	}
	b.Run("insert", func(b *testing.B) {
		for b.Loop() {
			db, err := Open(Options{Dir: b.TempDir(), FlushRows: 1 << 30})
			if err != nil {
				b.Fatal(err)
			}
			t := *tbl
			if _, err := db.CreateTable(&t, false); err != nil {
				b.Fatal(err)
			}
			for _, bt := range batches {
				txn := db.Begin()
				if err := txn.Insert(&t, bt); err != nil {
					b.Fatal(err)
				}
				if err := txn.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			db.Close()
		}
		b.ReportMetric(float64(total*b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	db, err := Open(Options{Dir: b.TempDir(), FlushRows: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	t := *tbl
	if _, err := db.CreateTable(&t, false); err != nil {
		b.Fatal(err)
	}
	for _, bt := range batches {
		txn := db.Begin()
		if err := txn.Insert(&t, bt); err != nil {
			b.Fatal(err)
		}
		if err := txn.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("scan-buffered", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			scan(b, db, &t)
		}
		b.ReportMetric(float64(total*b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	if err := db.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Run("scan-chunks", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			scan(b, db, &t)
		}
		b.ReportMetric(float64(total*b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}

// BenchmarkPKLookupDeleted looks rows up by primary key in a table of
// 100k rows, a third of them deleted (their markers not yet compacted
// away), and, as the anchor in the same run, in the same table without
// deletions; it reports the ratio of the two (1 when a lookup reads only
// its own row's marker).
//
//	go test ./storage -run '^$' -bench PKLookupDeleted
func BenchmarkPKLookupDeleted(b *testing.B) {
	const n = 100_000
	setup := func(deleteSome bool) (*DB, *TableDesc) {
		db := openMem(b, 1<<30)
		tbl := createTable(b, db, intTable("pk", 0))
		insert(b, db, tbl, intRows(0, n))
		if err := db.Flush(context.Background()); err != nil {
			b.Fatal(err)
		}
		if deleteSome {
			_, ids := scanAll(b, db, nil, tbl, []int{0})
			var gone []uint64
			for i := 0; i < n; i += 3 {
				gone = append(gone, ids[i])
			}
			deleteRows(b, db, tbl, gone)
		}
		return db, tbl
	}
	lookup := func(b *testing.B, db *DB, tbl *TableDesc) float64 {
		txn := db.Begin()
		defer txn.Rollback()
		i := int64(0)
		val := types.NewVec(types.TypInt8, 1)
		for b.Loop() {
			i = (i + 7919) % n
			val.Reset()
			val.AppendInt(i)
			sc, err := txn.ScanWith(tbl, ScanOptions{Cols: []int{1}, Preds: []ZonePred{{Col: 0, Op: ZoneEq, Val: val}}})
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := sc.Next(); err != nil {
				b.Fatal(err)
			}
			sc.Close()
		}
		return float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	}
	var plain, deleted float64
	b.Run("no-deletions", func(b *testing.B) {
		db, tbl := setup(false)
		plain = lookup(b, db, tbl)
	})
	b.Run("third-deleted", func(b *testing.B) {
		db, tbl := setup(true)
		deleted = lookup(b, db, tbl)
		if plain > 0 {
			b.ReportMetric(deleted/plain, "x-anchor")
		}
	})
}

// BenchmarkFetchRowsLatency fetches rows by id in a random order, as an
// exact shuffle does, from a store whose every read takes a round trip
// (fetchRTT, as S3's do), reading one block at a time and reading ahead
// with 32 reads in flight (S3Store's default). The anchor is the ceiling
// of the reads in flight: 32 reads per round trip. It reports rows/s and
// the fraction of that ceiling reached.
//
//	go test ./storage -run '^$' -bench FetchRowsLatency
func BenchmarkFetchRowsLatency(b *testing.B) {
	const fetchRTT = 2 * time.Millisecond
	store := &concStore{MemStore: NewMemStore()}
	db, err := Open(Options{InMemory: true, Store: store, FlushRows: 1 << 30, WholeChunkFetch: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	desc := intTable("lat", 1<<20)
	desc.Columns[2].Compression = "none"
	tbl := createTable(b, db, desc)
	insert(b, db, tbl, intRows(0, 100_000))
	if err := db.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	_, ids := scanAll(b, db, nil, tbl, []int{0})
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	store.delay.Store(int64(fetchRTT))
	for _, conc := range []int{1, 32} {
		b.Run(fmt.Sprintf("in-flight=%d", conc), func(b *testing.B) {
			store.conc.Store(int32(conc))
			txn := db.Begin()
			defer txn.Rollback()
			rf, err := txn.NewRowFetcher(tbl, []int{2}, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer rf.Close()
			var dst *types.Batch
			rows, at := 0, 0
			for b.Loop() {
				part := ids[at : at+256]
				if at = (at + 256) % (len(ids) - 256); at == 0 {
					rf.Close()
					if rf, err = txn.NewRowFetcher(tbl, []int{2}, 0); err != nil {
						b.Fatal(err)
					}
				}
				if dst, _, err = rf.Fetch(part, dst); err != nil {
					b.Fatal(err)
				}
				rows += dst.Len()
			}
			rate := float64(rows) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "rows/s")
			b.ReportMetric(rate/(32/fetchRTT.Seconds()), "x-ceiling")
		})
	}
}
