package storage

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

func openMem(t testing.TB, flushRows int) *DB {
	t.Helper()
	db, err := Open(Options{InMemory: true, FlushRows: flushRows})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// wideTable has a column of every physical layout and width.
func wideTable(name string) *TableDesc {
	return &TableDesc{Name: name, Columns: []ColumnDesc{
		{Name: "id", Type: types.TypInt8, NotNull: true},
		{Name: "b", Type: types.TypBool},
		{Name: "i2", Type: types.TypInt2},
		{Name: "i4", Type: types.TypInt4},
		{Name: "f4", Type: types.TypFloat4},
		{Name: "f8", Type: types.TypFloat8},
		{Name: "s", Type: types.TypText},
		{Name: "raw", Type: types.TypBytea},
		{Name: "v", Type: types.VectorOf(3)},
		{Name: "tn", Type: types.TensorOf(types.DTFloat32, 2, 2)},
	}, PrimaryKey: []int{0}}
}

// wideRows returns rows with ids [start, start+n); column c of row i is NULL
// when (i+c)%7 == 0, except the key.
func wideRows(t *TableDesc, start, n int) *types.Batch {
	b := types.NewBatch(t.ColumnTypes(), n)
	for i := start; i < start+n; i++ {
		for c, v := range b.Cols {
			if c > 0 && (i+c)%7 == 0 {
				v.AppendNull()
				continue
			}
			switch c {
			case 0:
				v.AppendInt(int64(i))
			case 1:
				v.AppendBool(i%2 == 0)
			case 2:
				v.AppendInt(int64(int16(i*37 - 20000)))
			case 3:
				v.AppendInt(int64(int32(i*-104729 + 7)))
			case 4:
				v.AppendFloat(float64(float32(i) / 3))
			case 5:
				v.AppendFloat(float64(i) * -1.5e300 / 1e300)
			case 6:
				v.AppendString(fmt.Sprintf("row %d \x00 ü", i))
			case 7:
				v.AppendBytes(make([]byte, i%5))
			case 8: // vector(3): 3 float32
				v.AppendBytes(bytes.Repeat([]byte{byte(i), byte(i >> 8), 0, 1}, 3))
			default: // float32[2][2]
				v.AppendBytes(bytes.Repeat([]byte{byte(i), byte(i >> 8), 0, 1}, 4))
			}
		}
	}
	return b
}

// rowsOf renders rows [0, b.Len()) as comparable values.
func rowsOf(b *types.Batch) [][]any {
	out := make([][]any, b.Len())
	for i := range out {
		row := make([]any, len(b.Cols))
		for c, v := range b.Cols {
			if v.Nulls[i] {
				continue
			}
			switch v.Type.Phys() {
			case types.PhysBool:
				row[c] = v.Bools[i]
			case types.PhysInt:
				row[c] = v.Ints[i]
			case types.PhysFloat:
				row[c] = v.Floats[i]
			default:
				row[c] = string(v.Bytes.Get(i))
			}
		}
		out[i] = row
	}
	return out
}

// scanAll reads every row of tbl through txn (or a fresh txn if nil).
func scanAll(t testing.TB, db *DB, txn *Txn, tbl *TableDesc, cols []int) ([][]any, []uint64) {
	t.Helper()
	return scanAllWith(t, db, txn, tbl, ScanOptions{Cols: cols})
}

// scanAllWith is scanAll with scan options.
func scanAllWith(t testing.TB, db *DB, txn *Txn, tbl *TableDesc, opts ScanOptions) ([][]any, []uint64) {
	t.Helper()
	cols := opts.Cols
	if txn == nil {
		txn = db.Begin()
		defer txn.Rollback()
	}
	sc, err := txn.ScanWith(tbl, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var rows [][]any
	var ids []uint64
	for {
		b, bids, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			return rows, ids
		}
		if len(bids) != b.Len() || b.Len() > types.BatchSize {
			t.Fatalf("batch of %d rows with %d ids", b.Len(), len(bids))
		}
		if len(cols) == 0 {
			for range b.Len() {
				rows = append(rows, nil)
			}
		} else {
			rows = append(rows, rowsOf(b)...)
		}
		ids = append(ids, bids...)
	}
}

func insert(t testing.TB, db *DB, tbl *TableDesc, b *types.Batch) {
	t.Helper()
	txn := db.Begin()
	if err := txn.Insert(tbl, b); err != nil {
		txn.Rollback()
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
}

// deleteRows deletes the rows with ids from tbl in a transaction of its
// own.
func deleteRows(t testing.TB, db *DB, tbl *TableDesc, ids []uint64) {
	t.Helper()
	txn := db.Begin()
	if err := txn.Delete(tbl, ids); err != nil {
		txn.Rollback()
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
}

func wantCode(t testing.TB, err error, code pgerror.Code) *pgerror.Error {
	t.Helper()
	var pe *pgerror.Error
	if !errors.As(err, &pe) || pe.Code != code {
		t.Fatalf("error %v: want SQLSTATE %s", err, code)
	}
	return pe
}

func createTable(t testing.TB, db *DB, desc *TableDesc) *TableDesc {
	t.Helper()
	if _, err := db.CreateTable(desc, false); err != nil {
		t.Fatal(err)
	}
	return desc
}
