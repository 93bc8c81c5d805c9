package storage

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/deeplaked/deeplaked/types"
)

// hollowTable has two tensor columns whose chunks may be hollow, one of
// 48-byte values (341 rows to a checksum block, so extents start and end
// inside blocks) and one of 4 KiB values (4 rows to a block), and a
// vector column with NULLs, whose chunks are read.
func hollowTable(name string) *TableDesc {
	return &TableDesc{Name: name, Columns: []ColumnDesc{
		{Name: "id", Type: types.TypInt8, NotNull: true},
		{Name: "small", Type: types.TensorOf(types.DTUint8, 48)},
		{Name: "big", Type: types.TensorOf(types.DTUint8, 4096)},
		{Name: "v", Type: types.VectorOf(3)},
	}, Options: TableOptions{ChunkSize: 64 << 10, Compression: "none"}}
}

func hollowRows(tbl *TableDesc, start, n int) *types.Batch {
	b := types.NewBatch(tbl.ColumnTypes(), n)
	for id := start; id < start+n; id++ {
		b.Cols[0].AppendInt(int64(id))
		for c, w := range []int{48, 4096} {
			v := make([]byte, w)
			for k := range v {
				v[k] = byte(id*(c+3) + k*7 + k>>8)
			}
			b.Cols[1+c].AppendBytes(v)
		}
		if id%5 == 0 {
			b.Cols[3].AppendNull()
		} else {
			b.Cols[3].AppendBytes(make([]byte, 12))
		}
	}
	return b
}

// TestScanHollow reads a table with deleted rows, buffered rows and the
// txn's own rows with hollow columns: the values read through the
// extents must be those of a plain scan, row for row, and the tensor
// columns' chunks must come as hollow windows, also those with rows
// deleted here and there (a batch for each run of visible rows), but not
// those where deletions leave runs too short to pay for a batch each
// (read whole, as without hollow columns).
func TestScanHollow(t *testing.T) {
	db, err := Open(Options{Dir: t.TempDir(), FlushRows: 700})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl := createTable(t, db, hollowTable("h"))
	for i := 0; i < 2100; i += 700 {
		insert(t, db, tbl, hollowRows(tbl, i, 700))
	}
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	txn := db.Begin()
	// Single deleted rows and a run of them.
	// Single deleted rows, a run of them, and every other row.
	deleteIDs(t, txn, tbl, func(id int64) bool {
		return id%13 == 0 && id < 700 || id >= 900 && id < 1000 || id >= 1400 && id < 1600 && id%2 == 0
	})
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, hollowRows(tbl, 2100, 50)) // buffered
	txn = db.Begin()
	defer txn.Rollback()
	if err := txn.Insert(tbl, hollowRows(tbl, 2150, 30)); err != nil { // the txn's own
		t.Fatal(err)
	}
	cols := []int{0, 1, 2, 3}
	want, wantIDs := scanAllWith(t, db, txn, tbl, ScanOptions{Cols: cols})

	sc, err := txn.ScanWith(tbl, ScanOptions{Cols: cols, Borrow: true, Hollow: []int{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var got [][]any
	var ids []uint64
	var scratch []byte
	hollow := [4]int{}
	hollowIDs := map[uint64]bool{} // rows whose big column came hollow
	nbatches := 0
	for {
		b, bids, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		nbatches++
		filled := types.NewBatch(tbl.ColumnTypes(), b.Len())
		for j, v := range b.Cols {
			e, ok := sc.Extent(v)
			if !ok {
				for i := range v.Len() {
					filled.Cols[j].AppendFrom(v, i)
				}
				continue
			}
			hollow[j]++
			if j == 2 {
				for _, id := range bids {
					hollowIDs[id] = true
				}
			}
			if e.Rows != v.Len() || e.Width() != []int{0, 48, 4096, 12}[j] {
				t.Fatalf("column %d: extent of %d rows of %d bytes for %d rows", j, e.Rows, e.Width(), v.Len())
			}
			// Read in two parts, as a frame split between workers is.
			dst := make([]byte, e.Len())
			h := e.Rows / 2
			if err := db.ReadExtent(context.Background(), e.Slice(0, h), dst[:h*e.Width()], &scratch); err != nil {
				t.Fatal(err)
			}
			if err := db.ReadExtent(context.Background(), e.Slice(h, e.Rows), dst[h*e.Width():], &scratch); err != nil {
				t.Fatal(err)
			}
			for i := range e.Rows {
				filled.Cols[j].AppendBytes(dst[i*e.Width() : (i+1)*e.Width()])
			}
		}
		got = append(got, rowsOf(filled)...)
		ids = append(ids, bids...)
	}
	batches := 0
	plain, err := txn.ScanWith(tbl, ScanOptions{Cols: cols, Borrow: true})
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, _, err := plain.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		batches++
	}
	plain.Close()
	if nbatches <= batches {
		t.Fatalf("%d batches with hollow columns, %d without: no run of visible rows made a batch of its own", nbatches, batches)
	}
	if hollow[1] == 0 || hollow[2] == 0 {
		t.Fatalf("hollow windows per column: %v", hollow)
	}
	if hollow[0] != 0 || hollow[3] != 0 {
		t.Fatalf("columns not asked hollow or with NULLs came hollow: %v", hollow)
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if ids[i] != wantIDs[i] || !rowEqual(got[i], want[i]) {
			t.Fatalf("row %d (id %d): %v, want %v (id %d)", i, ids[i], got[i], want[i], wantIDs[i])
		}
	}
	// Rows are ids + 1 (hollowRows): ids 0..699 lose one row in 13, in
	// 16-row chunks of the big column, and come hollow; among 1400..1583
	// every other row is deleted, and those chunks are read whole.
	for _, id := range ids {
		switch v := id - 1; {
		case v < 700 && !hollowIDs[id]:
			t.Fatalf("row %d, among rows deleted here and there, did not come hollow", v)
		case v >= 1400 && v < 1584 && hollowIDs[id]:
			t.Fatalf("row %d, among every other row deleted, came hollow", v)
		}
	}
}

func rowEqual(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		ab, aok := a[i].([]byte)
		bb, bok := b[i].([]byte)
		if aok || bok {
			if !bytes.Equal(ab, bb) {
				return false
			}
			continue
		}
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReadExtentCorrupt damages one stored value: reading an extent over
// it fails with ErrCorruption, one beside it in another block does not.
func TestReadExtentCorrupt(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(Options{Dir: dir, FlushRows: 700})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl := createTable(t, db, hollowTable("c"))
	insert(t, db, tbl, hollowRows(tbl, 0, 700))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Damage the last byte of the first chunk of column big (rows of 4
	// KiB, 16 to a 64 KiB chunk): row 15, block 3.
	files, _ := filepath.Glob(filepath.Join(dir, "objects", "tables", "*", "frags", "*", "0002-*.dlc"))
	if len(files) == 0 {
		t.Fatal("no chunk of column big")
	}
	var first string
	for _, f := range files {
		if first == "" || f < first {
			first = f
		}
	}
	data, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 0x40
	if err := os.WriteFile(first, data, 0o600); err != nil {
		t.Fatal(err)
	}
	txn := db.Begin()
	defer txn.Rollback()
	sc, err := txn.ScanWith(tbl, ScanOptions{Cols: []int{2}, Borrow: true, Hollow: []int{2}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	b, _, err := sc.Next()
	if err != nil {
		t.Fatal(err)
	}
	e, ok := sc.Extent(b.Cols[0])
	if !ok || e.Row != 0 || e.Rows != 16 {
		t.Fatalf("first batch: extent %v %+v", ok, e)
	}
	var scratch []byte
	ctx := context.Background()
	if err := db.ReadExtent(ctx, e.Slice(0, 12), make([]byte, 12*4096), &scratch); err != nil {
		t.Fatalf("rows 0-11, undamaged: %v", err)
	}
	for _, r := range [][2]int{{0, 16}, {15, 16}, {13, 16}} {
		err := db.ReadExtent(ctx, e.Slice(r[0], r[1]), make([]byte, (r[1]-r[0])*4096), &scratch)
		if !errors.Is(err, ErrCorruption) {
			t.Fatalf("rows %v over the damaged block: %v", r, err)
		}
	}
}

// TestReadExtentAllocs: reading an extent, as a shuffled stream does row
// by row, allocates nothing once its chunk's file is open.
func TestReadExtentAllocs(t *testing.T) {
	db, err := Open(Options{Dir: t.TempDir(), FlushRows: 700})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl := createTable(t, db, hollowTable("a"))
	insert(t, db, tbl, hollowRows(tbl, 0, 700))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	txn := db.Begin()
	defer txn.Rollback()
	sc, err := txn.ScanWith(tbl, ScanOptions{Cols: []int{1, 2}, Borrow: true, Hollow: []int{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	b, _, err := sc.Next()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var scratch []byte
	for j, v := range b.Cols {
		e, ok := sc.Extent(v)
		if !ok || e.Rows < 3 {
			t.Fatalf("column %d: extent %v %+v", j, ok, e)
		}
		dst := make([]byte, e.Len())
		one := make([]byte, e.Width())
		read := func() {
			// The whole window, then one row inside a block.
			if err := db.ReadExtent(ctx, e, dst, &scratch); err != nil {
				t.Fatal(err)
			}
			if err := db.ReadExtent(ctx, e.Slice(1, 2), one, &scratch); err != nil {
				t.Fatal(err)
			}
		}
		read()
		if n := testing.AllocsPerRun(50, read); n != 0 {
			t.Errorf("column %d: %v allocations per read", j, n)
		}
	}
}

// TestScanHollowRunsDecidedOnce deletes rows 12 and 14 of every 16-row
// chunk of the big column: each chunk's runs (12 rows, 1, 1) are worth a
// batch each, decided once for the chunk, so every visible row comes
// hollow and no chunk of the big column is read whole (a decision taken
// again after the first run went out, on the short runs alone, read it
// whole as well).
func TestScanHollowRunsDecidedOnce(t *testing.T) {
	db, err := Open(Options{Dir: t.TempDir(), FlushRows: 700})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl := createTable(t, db, hollowTable("h"))
	insert(t, db, tbl, hollowRows(tbl, 0, 700))
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	txn := db.Begin()
	deleteIDs(t, txn, tbl, func(id int64) bool { return id%16 == 12 || id%16 == 14 })
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	txn = db.Begin()
	defer txn.Rollback()
	before := db.Stats().ChunksRead.Load()
	sc, err := txn.ScanWith(tbl, ScanOptions{Cols: []int{0, 2}, Borrow: true, Hollow: []int{2}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	rows, hollow := 0, 0
	for {
		b, _, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		rows += b.Len()
		if e, ok := sc.Extent(b.Cols[1]); ok {
			hollow += e.Rows
		}
	}
	const visible = 700 - 2*43 // rows 12 and 14 of the 43 whole chunks; the last has 12 rows
	if rows != visible || hollow != visible {
		t.Fatalf("%d rows, %d of them hollow; want %d, all hollow", rows, hollow, visible)
	}
	if read := db.Stats().ChunksRead.Load() - before; read > 2 {
		t.Fatalf("%d chunks read whole; want at most the id column's and the row ids'", read)
	}
}
