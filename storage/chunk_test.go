package storage

import (
	"errors"
	"reflect"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

func testChunk(t testing.TB, n int) (*TableDesc, []byte, *types.Batch, []uint64) {
	tbl := wideTable("w")
	b := wideRows(tbl, 0, n)
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = uint64(10 + 3*i)
	}
	return tbl, appendChunk(nil, ids, b.Cols), b, ids
}

func TestChunkRoundTrip(t *testing.T) {
	for _, n := range []int{1, 7, 8, 9, 1000} {
		tbl, data, b, ids := testChunk(t, n)
		if len(data)%8 != 4 {
			t.Errorf("n=%d: %d bytes, want 8-aligned body", n, len(data))
		}
		ck, err := decodeChunk(data, tbl)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if !reflect.DeepEqual(ck.rowIDs, ids) {
			t.Fatalf("n=%d: row ids differ", n)
		}
		if got := rowsOf(&types.Batch{Cols: ck.cols}); !reflect.DeepEqual(got, rowsOf(b)) {
			t.Fatalf("n=%d: rows differ", n)
		}
	}
}

// TestChunkCorruption flips every byte and truncates at every length: each
// damaged chunk must fail with ErrCorruption (XX001), never panic.
func TestChunkCorruption(t *testing.T) {
	tbl, data, _, _ := testChunk(t, 20)
	check := func(what string, bad []byte) {
		t.Helper()
		_, err := decodeChunk(bad, tbl)
		if !errors.Is(err, ErrCorruption) || pgerror.GetCode(err) != pgerror.DataCorrupted {
			t.Fatalf("%s: err = %v", what, err)
		}
	}
	for i := range data {
		bad := append([]byte(nil), data...)
		bad[i] ^= 0x01
		check("flip", bad)
	}
	for n := range len(data) {
		check("truncate", data[:n])
	}
	// Damage with a matching checksum exercises the structural checks.
	other := wideTable("o")
	other.Columns = other.Columns[:3]
	if _, err := decodeChunk(data, other); !errors.Is(err, ErrCorruption) {
		t.Fatalf("wrong column count: %v", err)
	}
	swapped := wideTable("s")
	swapped.Columns[2].Type = types.TypInt8
	if _, err := decodeChunk(data, swapped); !errors.Is(err, ErrCorruption) {
		t.Fatalf("wrong column width: %v", err)
	}
}

func FuzzDecodeChunk(f *testing.F) {
	tbl, data, _, _ := testChunk(f, 5)
	f.Add(data)
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := decodeChunk(b, tbl); err != nil && !errors.Is(err, ErrCorruption) {
			t.Fatalf("error not marked: %v", err)
		}
	})
}

func FuzzDecodeRow(f *testing.F) {
	tbl := wideTable("w")
	b := wideRows(tbl, 0, 10)
	for i := range 10 {
		f.Add(appendRow(nil, b, i))
	}
	out := types.NewBatch(tbl.ColumnTypes(), 1)
	dec := newRowDecoder(tbl)
	dec.bind(allColumns(len(tbl.Columns)), out)
	f.Fuzz(func(t *testing.T, data []byte) {
		out.Reset()
		if err := dec.decode(data); err != nil && !errors.Is(err, ErrCorruption) {
			t.Fatalf("error not marked: %v", err)
		}
	})
}

func TestPKKeyOrder(t *testing.T) {
	tbl := &TableDesc{ID: 1, Name: "k", Columns: []ColumnDesc{{Name: "f", Type: types.TypFloat8}}, PrimaryKey: []int{0}}
	vals := []float64{-1e300, -2, -0.5, 0, 0.5, 3, 1e300}
	var prev []byte
	for _, v := range vals {
		b := types.NewBatch(tbl.ColumnTypes(), 1)
		b.Cols[0].AppendFloat(v)
		k := appendPKKey(nil, tbl, b, 0)
		if prev != nil && string(prev) >= string(k) {
			t.Fatalf("key of %v does not sort after its predecessor", v)
		}
		prev = k
	}
	ti := &TableDesc{ID: 1, Name: "k", Columns: []ColumnDesc{{Name: "i", Type: types.TypInt8}}, PrimaryKey: []int{0}}
	prev = nil
	for _, v := range []int64{-1 << 63, -5, -1, 0, 1, 1 << 62} {
		b := types.NewBatch(ti.ColumnTypes(), 1)
		b.Cols[0].AppendInt(v)
		k := appendPKKey(nil, ti, b, 0)
		if prev != nil && string(prev) >= string(k) {
			t.Fatalf("key of %d does not sort after its predecessor", v)
		}
		prev = k
	}
}
