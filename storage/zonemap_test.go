package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/types"
)

var zoneOps = []ZoneOp{ZoneEq, ZoneLt, ZoneLe, ZoneGt, ZoneGe, ZoneIsNull, ZoneIsNotNull}

func zoneOf(t *testing.T, v *types.Vec, from, to int) ZoneMap {
	t.Helper()
	_, z, err := encodeColChunk(nil, v.Type, v, from, to, CompressionNone)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

func intVec(t types.Type, vals ...any) *types.Vec {
	v := types.NewVec(t, len(vals))
	for _, x := range vals {
		switch x := x.(type) {
		case nil:
			v.AppendNull()
		case int:
			v.AppendInt(int64(x))
		case float64:
			v.AppendFloat(x)
		case bool:
			v.AppendBool(x)
		case string:
			v.AppendString(x)
		}
	}
	return v
}

func TestZoneMapCompute(t *testing.T) {
	nan := math.NaN()
	long := strings.Repeat("m", 100)
	ff := string(bytes.Repeat([]byte{0xff}, 70))
	cases := []struct {
		name string
		v    *types.Vec
		want ZoneMap
	}{
		{"ints", intVec(types.TypInt4, 5, nil, -3, 7, nil), ZoneMap{Rows: 5, NullCount: 2, HasMinMax: true, Phys: types.PhysInt, MinInt: -3, MaxInt: 7}},
		{"all null", intVec(types.TypInt8, nil, nil), ZoneMap{Rows: 2, NullCount: 2}},
		{"empty", intVec(types.TypInt8), ZoneMap{}},
		{"bools", intVec(types.TypBool, true, nil, true), ZoneMap{Rows: 3, NullCount: 1, HasMinMax: true, Phys: types.PhysBool, MinInt: 1, MaxInt: 1}},
		{"floats with NaN", intVec(types.TypFloat8, 1.5, nan, -2.0, math.Inf(1)), ZoneMap{Rows: 4, HasMinMax: true, Phys: types.PhysFloat, MinFloat: -2, MaxFloat: nan}},
		{"only NaN", intVec(types.TypFloat4, nan, nil, nan), ZoneMap{Rows: 3, NullCount: 1, HasMinMax: true, Phys: types.PhysFloat, MinFloat: nan, MaxFloat: nan}},
		{"-inf", intVec(types.TypFloat8, math.Inf(-1), 0.0), ZoneMap{Rows: 2, HasMinMax: true, Phys: types.PhysFloat, MinFloat: math.Inf(-1), MaxFloat: 0}},
		{"text", intVec(types.TypText, "b", "", "é", nil), ZoneMap{Rows: 4, NullCount: 1, HasMinMax: true, Phys: types.PhysBytes, MinBytes: []byte(""), MaxBytes: []byte("é")}},
		{"long text", intVec(types.TypText, long, "a"+long), ZoneMap{Rows: 2, HasMinMax: true, Phys: types.PhysBytes,
			MinBytes: []byte("a" + long[:63]), MaxBytes: []byte(long[:63] + "n")}},
		{"long max ending in 0xff", intVec(types.TypText, "a", "b"+ff), ZoneMap{Rows: 2, HasMinMax: true, Phys: types.PhysBytes,
			MinBytes: []byte("a"), MaxBytes: []byte("c")}},
		{"long 0xff max", intVec(types.TypText, "a", ff), ZoneMap{Rows: 2}},
		{"bytea keeps counts", intVec(types.TypBytea, "a", nil), ZoneMap{Rows: 2, NullCount: 1}},
	}
	for _, c := range cases {
		got := zoneOf(t, c.v, 0, c.v.Len())
		if !zoneEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
	v := genVec(rand.New(rand.NewPCG(1, 1)), types.TensorOf(types.DTFloat32, 4), 10, true)
	if z := zoneOf(t, v, 2, 9); z.HasMinMax || z.Rows != 7 || z.NullCount != int64(nullCount(v.Nulls[2:9])) {
		t.Errorf("tensor zone map %+v", z)
	}
}

// zoneEqual compares zone maps, floats bit for bit and bytes by content.
func zoneEqual(a, b ZoneMap) bool {
	return a.Rows == b.Rows && a.NullCount == b.NullCount && a.HasMinMax == b.HasMinMax && a.Phys == b.Phys &&
		a.MinInt == b.MinInt && a.MaxInt == b.MaxInt &&
		math.Float64bits(a.MinFloat) == math.Float64bits(b.MinFloat) && math.Float64bits(a.MaxFloat) == math.Float64bits(b.MaxFloat) &&
		bytes.Equal(a.MinBytes, b.MinBytes) && bytes.Equal(a.MaxBytes, b.MaxBytes)
}

func TestZoneMapDoesNotAliasVec(t *testing.T) {
	v := intVec(types.TypText, "abc", "xyz")
	z := zoneOf(t, v, 0, 2)
	clear(v.Bytes.Data)
	if string(z.MinBytes) != "abc" || string(z.MaxBytes) != "xyz" {
		t.Fatalf("zone map changed with its vector: %q %q", z.MinBytes, z.MaxBytes)
	}
}

// satisfies reports whether non-NULL row i of col satisfies `col OP val`
// (row j of vals), as the executor would decide it.
func satisfies(col *types.Vec, i int, op ZoneOp, vals *types.Vec, j int) bool {
	if op == ZoneIsNull {
		return col.Nulls[i]
	}
	if op == ZoneIsNotNull {
		return !col.Nulls[i]
	}
	if col.Nulls[i] || vals.Nulls[j] {
		return false
	}
	var c int
	switch cp, vp := col.Type.Phys(), vals.Type.Phys(); {
	case cp == types.PhysInt && vp == types.PhysInt:
		c = cmpInt(col.Ints[i], vals.Ints[j])
	case cp == types.PhysInt && vp == types.PhysFloat:
		c = types.CompareFloat(float64(col.Ints[i]), vals.Floats[j])
	case cp == types.PhysFloat && vp == types.PhysInt:
		c = types.CompareFloat(col.Floats[i], float64(vals.Ints[j]))
	case cp == types.PhysFloat:
		c = types.CompareFloat(col.Floats[i], vals.Floats[j])
	case cp == types.PhysBool:
		c = cmpInt(b2i(col.Bools[i]), b2i(vals.Bools[j]))
	default:
		c = bytes.Compare(col.GetBytes(i), vals.GetBytes(j))
	}
	switch op {
	case ZoneEq:
		return c == 0
	case ZoneLt:
		return c < 0
	case ZoneLe:
		return c <= 0
	case ZoneGt:
		return c > 0
	}
	return c >= 0
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// zoneColumn makes n random values of typ from a small domain, so that
// probes often hit, miss and touch the bounds.
func zoneColumn(rng *rand.Rand, typ types.Type, n int) *types.Vec {
	v := types.NewVec(typ, n)
	prefix := strings.Repeat("p", 60)
	for range n {
		if rng.IntN(5) == 0 {
			v.AppendNull()
			continue
		}
		switch typ.Kind {
		case types.Bool:
			v.AppendBool(rng.IntN(2) == 0)
		case types.Int2, types.Int4, types.Int8:
			v.AppendInt(int64(rng.IntN(41) - 20))
		case types.Float4, types.Float8:
			f := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0}[rng.IntN(5)]
			if rng.IntN(3) > 0 {
				f = float64(rng.IntN(41)-20) / 2
			}
			v.AppendFloat(f)
		default:
			// Short strings and long ones sharing a 60-byte prefix, so
			// that bounds are cut.
			s := string(rune('a' + rng.IntN(6)))
			if rng.IntN(2) == 0 {
				s = prefix + strings.Repeat(string(rune('a'+rng.IntN(6))), rng.IntN(10))
			}
			v.AppendString(s)
		}
	}
	return v
}

// zoneProbes returns probe values of typ (and of the other numeric layout
// for numbers), NULL included.
func zoneProbes(rng *rand.Rand, typ types.Type) []*types.Vec {
	probes := []*types.Vec{zoneColumn(rng, typ, 60)}
	probes[0].AppendNull()
	if typ.IsNumeric() {
		ints := types.NewVec(types.TypInt8, 45)
		for x := -22; x <= 22; x++ {
			ints.AppendInt(int64(x))
		}
		floats := types.NewVec(types.TypFloat8, 100)
		for x := -22.0; x <= 22; x += 0.25 {
			floats.AppendFloat(x)
		}
		floats.AppendFloat(math.NaN())
		floats.AppendFloat(math.Inf(1))
		floats.AppendFloat(math.Inf(-1))
		probes = append(probes, ints, floats)
	}
	if typ.IsTextual() {
		p := types.NewVec(typ, 10)
		for _, s := range []string{"", "a", "f", "g", strings.Repeat("p", 59), strings.Repeat("p", 60), strings.Repeat("p", 64),
			strings.Repeat("p", 60) + "a", strings.Repeat("p", 60) + "ffff", strings.Repeat("p", 60) + "fffffffff", strings.Repeat("p", 60) + "g", "q"} {
			p.AppendString(s)
		}
		probes = append(probes, p)
	}
	return probes
}

// TestZoneMapMayContainProperty checks against brute force that a zone map
// (computed, round-tripped through its encoding, or merged) never prunes
// a chunk holding a matching row, and that it prunes some.
func TestZoneMapMayContainProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, typ := range []types.Type{types.TypBool, types.TypInt2, types.TypInt4, types.TypInt8,
		types.TypFloat4, types.TypFloat8, types.TypText, {Kind: types.Varchar, Width: 80}} {
		pruned, checked := 0, 0
		for trial := range 300 {
			n := 1 + rng.IntN(12)
			if trial%50 == 0 {
				n = 0
			}
			col := zoneColumn(rng, typ, n)
			split := rng.IntN(n + 1)
			z := zoneOf(t, col, 0, n)
			decoded, rest, err := DecodeZoneMap(z.AppendBinary([]byte(nil)))
			if err != nil || len(rest) != 0 {
				t.Fatalf("%s: decode: %v (%d bytes left)", typ, err, len(rest))
			}
			merged := zoneOf(t, col, 0, split)
			merged.Merge(zoneOf(t, col, split, n))
			for _, probes := range zoneProbes(rng, typ) {
				// col IN (every probe).
				in := false
				for j := range probes.Len() {
					for i := range n {
						in = in || satisfies(col, i, ZoneEq, probes, j)
					}
				}
				for k, zm := range []ZoneMap{z, decoded, merged} {
					if in && !zm.MayContain(ZoneIn, probes, -1) {
						t.Fatalf("%s zone map %d %+v prunes `col IN (...)` though a row matches (column %v)", typ, k, zm, colString(col))
					}
				}
				for j := range probes.Len() {
					for _, op := range zoneOps {
						match := false
						for i := range n {
							match = match || satisfies(col, i, op, probes, j)
						}
						for k, zm := range []ZoneMap{z, decoded, merged} {
							checked++
							may := zm.MayContain(op, probes, j)
							if match && !may {
								t.Fatalf("%s zone map %d %+v prunes `col %s %s` though a row matches (column %v)",
									typ, k, zm, op, probeString(probes, j), colString(col))
							}
							if !may {
								pruned++
							}
						}
					}
				}
			}
		}
		if pruned < checked/10 {
			t.Errorf("%s: pruned only %d of %d", typ, pruned, checked)
		}
	}
}

func probeString(v *types.Vec, i int) string {
	if v.Nulls[i] {
		return "NULL"
	}
	switch v.Type.Phys() {
	case types.PhysInt:
		return fmt.Sprint(v.Ints[i])
	case types.PhysFloat:
		return fmt.Sprint(v.Floats[i])
	case types.PhysBool:
		return fmt.Sprint(v.Bools[i])
	}
	return fmt.Sprintf("%q", v.GetBytes(i))
}

func colString(v *types.Vec) string {
	var parts []string
	for i := range v.Len() {
		parts = append(parts, probeString(v, i))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func TestZoneMapMerge(t *testing.T) {
	a := zoneOf(t, intVec(types.TypInt4, 3, nil, 9), 0, 3)
	b := zoneOf(t, intVec(types.TypInt4, -4, 5), 0, 2)
	nulls := zoneOf(t, intVec(types.TypInt4, nil, nil), 0, 2)
	var z ZoneMap
	for _, o := range []ZoneMap{nulls, a, nulls, b, {}} {
		z.Merge(o)
	}
	want := ZoneMap{Rows: 9, NullCount: 5, HasMinMax: true, Phys: types.PhysInt, MinInt: -4, MaxInt: 9}
	if !zoneEqual(z, want) {
		t.Errorf("merged %+v, want %+v", z, want)
	}
	// A chunk with values but no bounds leaves the merge without bounds.
	z.Merge(ZoneMap{Rows: 1})
	if z.HasMinMax || z.Rows != 10 || z.NullCount != 5 {
		t.Errorf("merged with an unbounded chunk: %+v", z)
	}
	f := zoneOf(t, intVec(types.TypFloat8, 1.0, math.NaN()), 0, 2)
	f.Merge(zoneOf(t, intVec(types.TypFloat8, -1.0), 0, 1))
	if f.MinFloat != -1 || !math.IsNaN(f.MaxFloat) {
		t.Errorf("float merge %+v", f)
	}
	s := zoneOf(t, intVec(types.TypText, "m", "n"), 0, 2)
	s.Merge(zoneOf(t, intVec(types.TypText, "a", "b"), 0, 2))
	if string(s.MinBytes) != "a" || string(s.MaxBytes) != "n" {
		t.Errorf("text merge %+v", s)
	}
	// Bounds of different layouts do not mix.
	s.Merge(a)
	if s.HasMinMax {
		t.Errorf("text merged with ints keeps bounds: %+v", s)
	}
}

func TestZoneMapBinary(t *testing.T) {
	maps := []ZoneMap{
		{},
		{Rows: 5, NullCount: 5},
		{Rows: 1 << 40, NullCount: 3, HasMinMax: true, Phys: types.PhysInt, MinInt: math.MinInt64, MaxInt: math.MaxInt64},
		{Rows: 2, HasMinMax: true, Phys: types.PhysBool, MinInt: 0, MaxInt: 1},
		{Rows: 2, HasMinMax: true, Phys: types.PhysFloat, MinFloat: math.Inf(-1), MaxFloat: math.NaN()},
		{Rows: 2, HasMinMax: true, Phys: types.PhysBytes, MinBytes: []byte{}, MaxBytes: []byte("zz")},
	}
	var buf []byte
	for _, z := range maps {
		buf = z.AppendBinary(buf)
	}
	rest := buf
	for _, want := range maps {
		var got ZoneMap
		var err error
		got, rest, err = DecodeZoneMap(rest)
		if err != nil || !zoneEqual(got, want) {
			t.Fatalf("decoded %+v, %v; want %+v", got, err, want)
		}
	}
	if len(rest) != 0 {
		t.Fatalf("%d bytes left", len(rest))
	}
	// Every truncation of the last map fails; decoded bounds do not alias.
	last := maps[len(maps)-1].AppendBinary(nil)
	for n := range len(last) {
		if _, _, err := DecodeZoneMap(last[:n]); !errors.Is(err, ErrCorruption) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
	}
	z, _, _ := DecodeZoneMap(last)
	clear(last)
	if string(z.MaxBytes) != "zz" {
		t.Fatal("decoded bounds alias their encoding")
	}
	for _, bad := range [][]byte{
		{2, 0, 1, 0},                 // unknown flag
		{1, 9, 1, 0, 0, 0},           // unknown layout
		{0, 2, 1, 0},                 // layout without bounds
		{1, 2, 1, 1, 0, 0},           // bounds but every row NULL
		{0, 0, 1, 2},                 // more NULLs than rows
		{1, 2, 1, 0, 4, 2},           // min > max
		{1, 1, 1, 0, 0, 4},           // bool bound 2
		{1, 4, 1, 0, 1, 'b', 1, 'a'}, // min > max bytes
	} {
		if _, _, err := DecodeZoneMap(bad); !errors.Is(err, ErrCorruption) {
			t.Errorf("DecodeZoneMap(%v): %v", bad, err)
		}
	}
}

func FuzzDecodeZoneMap(f *testing.F) {
	f.Add(ZoneMap{Rows: 3, HasMinMax: true, Phys: types.PhysBytes, MinBytes: []byte("a"), MaxBytes: []byte("b")}.AppendBinary(nil))
	f.Add(ZoneMap{Rows: 3, HasMinMax: true, Phys: types.PhysFloat, MaxFloat: 1}.AppendBinary(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		z, rest, err := DecodeZoneMap(b)
		if err != nil {
			return
		}
		again, _, err := DecodeZoneMap(z.AppendBinary(nil))
		if err != nil || !zoneEqual(z, again) || len(rest) > len(b) {
			t.Fatalf("%+v does not round-trip: %v", z, err)
		}
	})
}

// TestZoneMapIn prunes a chunk for `col IN (...)` only when no value of
// the list falls within its bounds.
func TestZoneMapIn(t *testing.T) {
	col := types.NewVec(types.TypInt8, 11)
	for i := int64(10); i <= 20; i++ {
		col.AppendInt(i)
	}
	z := zoneOf(t, col, 0, col.Len())
	list := func(vals ...int64) *types.Vec {
		v := types.NewVec(types.TypInt4, len(vals))
		for _, x := range vals {
			v.AppendInt(x)
		}
		v.AppendNull()
		return v
	}
	for vals, want := range map[[2]int64]bool{{1, 30}: false, {1, 15}: true, {20, 99}: true, {9, 21}: false} {
		if got := z.MayContain(ZoneIn, list(vals[0], vals[1]), -1); got != want {
			t.Errorf("[10, 20] IN (%d, %d, NULL): %v, want %v", vals[0], vals[1], got, want)
		}
	}
	if z.MayContain(ZoneIn, list(), -1) {
		t.Error("IN (NULL) may match")
	}
}
