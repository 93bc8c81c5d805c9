package storage

import (
	"context"
	"fmt"
	"testing"

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
