package types

import (
	"strings"
	"testing"
)

// TestRowCodec encodes rows of every physical layout, NULLs included, and
// decodes them into all columns and into a subset; malformed rows are
// errors, not panics.
func TestRowCodec(t *testing.T) {
	ts := []Type{TypBool, TypInt8, TypFloat8, TypText, TensorOf(DTFloat32, 2), TypInt4}
	b := NewBatch(ts, 3)
	b.Cols[0].AppendBool(true)
	b.Cols[1].AppendInt(-1 << 40)
	b.Cols[2].AppendFloat(-0.5)
	b.Cols[3].AppendString("héllo")
	b.Cols[4].AppendBytes([]byte{0, 0, 128, 63, 0, 0, 0, 64})
	b.Cols[5].AppendInt(7)
	for _, v := range b.Cols {
		v.AppendNull()
	}
	b.SetLen(2)
	var enc [][]byte
	for i := range 2 {
		enc = append(enc, AppendRow(nil, b, i))
	}
	all := NewBatch(ts, 2)
	d := NewRowDecoder(ts)
	d.Bind(nil, all)
	some := NewBatch([]Type{TypText, TypBool}, 2)
	ds := NewRowDecoder(ts)
	ds.Bind([]int{3, 0}, some)
	for _, e := range enc {
		if err := d.Decode(e); err != nil {
			t.Fatal(err)
		}
		if err := ds.Decode(e); err != nil {
			t.Fatal(err)
		}
	}
	all.SetLen(2)
	some.SetLen(2)
	for c := range ts {
		for i := range 2 {
			if got, want := string(AppendText(nil, all.Cols[c], i)), string(AppendText(nil, b.Cols[c], i)); got != want || all.Cols[c].Nulls[i] != b.Cols[c].Nulls[i] {
				t.Fatalf("column %d row %d: %q, want %q", c, i, got, want)
			}
		}
	}
	if some.Cols[0].Bytes.Get(0) == nil || string(some.Cols[0].Bytes.Get(0)) != "héllo" || !some.Cols[1].Bools[0] || !some.Cols[0].Nulls[1] {
		t.Fatalf("subset: %q %v", some.Cols[0].Bytes.Get(0), some.Cols[1].Bools)
	}
	for _, bad := range [][]byte{nil, enc[0][:len(enc[0])-1], append(append([]byte{}, enc[0]...), 0), {0, 1}} {
		if err := d.Decode(bad); err == nil || strings.Contains(err.Error(), "panic") {
			t.Fatalf("%x decoded: %v", bad, err)
		}
	}
}
