package storage

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// TestScanBorrow reads tables whose chunks are small, stored compressed
// and not, with deleted rows, buffered rows and the txn's own rows, with
// and without ScanOptions.Borrow: the rows must be the same, and with
// Borrow the uncompressed tensor column must come as windows onto its
// chunks (no copy), read through reused buffers scan after scan.
func TestScanBorrow(t *testing.T) {
	db, err := Open(Options{Dir: t.TempDir(), FlushRows: 700})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, comp := range []string{"none", "zstd"} {
		desc := wideTable("w_" + comp)
		desc.Options.ChunkSize = 2 << 10
		desc.Options.Compression = comp
		tbl := createTable(t, db, desc)
		for i := 0; i < 2100; i += 700 {
			insert(t, db, tbl, wideRows(tbl, i, 700))
		}
		if err := db.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		// Before any deletion, the tensor column (ordinal 9) of a
		// borrowing scan comes as windows onto its chunks.
		rtx := db.Begin()
		sc, err := rtx.ScanWith(tbl, ScanOptions{Cols: []int{0, 9}, Borrow: true})
		if err != nil {
			t.Fatal(err)
		}
		windows := 0
		for {
			b, _, err := sc.Next()
			if err != nil {
				t.Fatal(err)
			}
			if b == nil {
				break
			}
			if sc.borrowed[1] {
				windows++
			}
		}
		sc.Close()
		if windows == 0 {
			t.Fatalf("%s: no batch of the borrowing scan was a window onto a chunk", comp)
		}
		rtx.Rollback()
		txn := db.Begin()
		deleteIDs(t, txn, tbl, func(id int64) bool { return id%11 == 0 })
		if err := txn.Commit(); err != nil {
			t.Fatal(err)
		}
		insert(t, db, tbl, wideRows(tbl, 2100, 50)) // buffered
		txn = db.Begin()
		if err := txn.Insert(tbl, wideRows(tbl, 2150, 30)); err != nil { // the txn's own
			t.Fatal(err)
		}
		all := allColumns(len(tbl.Columns))
		want, wantIDs := scanAllWith(t, db, txn, tbl, ScanOptions{Cols: all})
		if len(want) != 2180-191 {
			t.Fatalf("%s: %d rows", comp, len(want))
		}
		for range 2 {
			got, ids := scanAllWith(t, db, txn, tbl, ScanOptions{Cols: all, Borrow: true})
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(ids, wantIDs) {
				t.Fatalf("%s: a borrowing scan read other rows (%d rows, want %d)", comp, len(got), len(want))
			}
		}
		txn.Rollback()
	}
}

// TestScanKeepsReadBuffer reads an uncompressed tensor column without
// NULLs, whose chunks' Vecs take the buffers the chunks are read into:
// scan after scan through the reused buffers, borrowing or not, the
// values must be those written.
func TestScanKeepsReadBuffer(t *testing.T) {
	db, err := Open(Options{Dir: t.TempDir(), FlushRows: 20000})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl := createTable(t, db, &TableDesc{Name: "img", Columns: []ColumnDesc{
		{Name: "id", Type: types.TypInt8, NotNull: true},
		{Name: "img", Type: types.TensorOf(types.DTUint8, 256)},
	}, Options: TableOptions{ChunkSize: 1 << 20, Compression: "none"}})
	val := func(id, k int) byte { return byte(id*31 + k*7 + id>>8) }
	// Fragments of 20000 rows in chunks of 4096 (1 MiB), a little more
	// than a new read buffer holds, so the buffers grow to fit and the
	// Vecs keep them while the next chunks load.
	for i := 0; i < 40000; i += 20000 {
		b := types.NewBatch(tbl.ColumnTypes(), 20000)
		for id := i; id < i+20000; id++ {
			img := make([]byte, 256)
			for k := range img {
				img[k] = val(id, k)
			}
			b.Cols[0].AppendInt(int64(id))
			b.Cols[1].AppendBytes(img)
		}
		insert(t, db, tbl, b)
	}
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for k := range 4 {
		rows, _ := scanAllWith(t, db, nil, tbl, ScanOptions{Cols: []int{0, 1}, Borrow: k%2 == 1})
		if len(rows) != 40000 {
			t.Fatalf("scan %d: %d rows", k, len(rows))
		}
		for _, r := range rows {
			id, img := int(r[0].(int64)), r[1].(string)
			for j, b := range []byte(img) {
				if b != val(id, j) {
					t.Fatalf("scan %d: row %d byte %d is %d, want %d", k, id, j, b, val(id, j))
				}
			}
		}
	}
}

// TestCorruptChunkReadInPieces flips one bit of an on-disk chunk, in its
// header or in a data block past the first piece GetInto reads, for a
// chunk whose checksums are checked piece by piece as it is read: the scan
// must fail with XX001 naming the table.
func TestCorruptChunkReadInPieces(t *testing.T) {
	for _, at := range []int{20, 3 * getIntoPiece / 2} {
		dir := t.TempDir()
		db, err := Open(Options{Dir: dir, FlushRows: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		tbl := createTable(t, db, &TableDesc{Name: "img", Columns: []ColumnDesc{
			{Name: "img", Type: types.TensorOf(types.DTUint8, 256)},
		}, Options: TableOptions{Compression: "none"}})
		b := types.NewBatch(tbl.ColumnTypes(), 4000)
		for i := range 4000 {
			b.Cols[0].AppendBytes(bytes.Repeat([]byte{byte(i)}, 256))
		}
		insert(t, db, tbl, b)
		if err := db.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		// The largest object is the image column's chunk (1 MB).
		keys, _ := db.Store().List(context.Background(), "tables/")
		var path string
		var size int64
		for _, k := range keys {
			p := filepath.Join(dir, "objects", filepath.FromSlash(k))
			if st, err := os.Stat(p); err == nil && st.Size() > size {
				path, size = p, st.Size()
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data[at] ^= 0x10
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		txn := db.Begin()
		sc, err := txn.Scan(tbl, []int{0})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = sc.Next()
		if !errors.Is(err, ErrCorruption) || pgerror.GetCode(err) != pgerror.DataCorrupted ||
			!strings.Contains(pgerror.Convert(err).Message, `table "img"`) {
			t.Fatalf("bit %d flipped: err = %v (code %s), want XX001 naming the table", at, err, pgerror.GetCode(err))
		}
		sc.Close()
		txn.Rollback()
		db.Close()
	}
}
