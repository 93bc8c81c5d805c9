package types

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

func mustParse(t *testing.T, typ Type, s string) []byte {
	t.Helper()
	v := NewVec(typ, 1)
	if err := AppendParsed(v, s); err != nil {
		t.Fatalf("%s %q: %v", typ, s, err)
	}
	return v.GetBytes(0)
}

// TestTensorLayout checks the byte layout of fixed and ragged tensors.
func TestTensorLayout(t *testing.T) {
	got := mustParse(t, TensorOf(DTInt16, 2, 2), "{{1,-2},{3,4}}")
	want := []byte{1, 0, 0xfe, 0xff, 3, 0, 4, 0}
	if string(got) != string(want) {
		t.Errorf("int16[2][2]: % x, want % x", got, want)
	}
	got = mustParse(t, TensorOf(DTUint8, Ragged, 2), "{{1,2},{3,4},{5,6}}")
	want = []byte{3, 0, 0, 0, 2, 0, 0, 0, 1, 2, 3, 4, 5, 6}
	if string(got) != string(want) {
		t.Errorf("uint8[][2]: % x, want % x", got, want)
	}
	got = mustParse(t, TensorOf(DTFloat16, 2), "{1,-2}")
	if h := binary.LittleEndian.Uint16(got); h != 0x3c00 || binary.LittleEndian.Uint16(got[2:]) != 0xc000 {
		t.Errorf("float16: % x", got)
	}
	vec := mustParse(t, VectorOf(2), "[1,-2]")
	f32 := mustParse(t, TensorOf(DTFloat32, 2), "{1,-2}")
	if string(vec) != string(f32) {
		t.Errorf("vector(2) % x and float32[2] % x differ", vec, f32)
	}
}

// TestTensorHelpers checks TensorDims, Cardinality and ArrayLength.
func TestTensorHelpers(t *testing.T) {
	for _, c := range []struct {
		typ  Type
		lit  string
		dims []int
		card int
		lens []int // array_length per dim; -1 = NULL
	}{
		{TensorOf(DTUint8, 2, 3), "{{1,2,3},{4,5,6}}", []int{2, 3}, 6, []int{2, 3}},
		{TensorOf(DTFloat32, Ragged, 2), "{{1,2},{3,4},{5,6}}", []int{3, 2}, 6, []int{3, 2}},
		{TensorOf(DTInt64, Ragged), "{}", []int{0}, 0, []int{-1}},
		{TensorOf(DTInt64, 2, Ragged), "{{},{}}", []int{2, 0}, 0, []int{-1, -1}},
	} {
		val := mustParse(t, c.typ, c.lit)
		dims, data := TensorDims(c.typ, val, nil)
		if len(dims) != len(c.dims) || len(data) != c.card*c.typ.DType.Size() {
			t.Errorf("%s %s: dims %v data %d", c.typ, c.lit, dims, len(data))
		}
		for k := range dims {
			if dims[k] != c.dims[k] {
				t.Errorf("%s %s: dims %v, want %v", c.typ, c.lit, dims, c.dims)
			}
		}
		if n := Cardinality(c.typ, val); n != c.card {
			t.Errorf("%s %s: cardinality %d, want %d", c.typ, c.lit, n, c.card)
		}
		for k, want := range c.lens {
			n, ok := ArrayLength(c.typ, val, k+1)
			if want < 0 && ok || want >= 0 && (!ok || n != want) {
				t.Errorf("%s %s: array_length(%d) = %d %v, want %d", c.typ, c.lit, k+1, n, ok, want)
			}
		}
		if _, ok := ArrayLength(c.typ, val, 0); ok {
			t.Errorf("array_length(0) not NULL")
		}
		if _, ok := ArrayLength(c.typ, val, len(c.typ.Shape)+1); ok {
			t.Errorf("array_length past the last dim not NULL")
		}
	}
}

// TestSubscript checks SubscriptType and AppendSubscript.
func TestSubscript(t *testing.T) {
	typ := TensorOf(DTUint8, Ragged, 2)
	val := mustParse(t, typ, "{{1,2},{3,4},{5,255}}")
	et, err := SubscriptType(typ, 2)
	if err != nil || !et.Equal(TypInt2) {
		t.Fatalf("element type %s %v", et, err)
	}
	out := NewVec(et, 4)
	for _, subs := range [][]int64{{3, 2}, {1, 1}, {4, 1}, {0, 1}, {1, 3}} {
		AppendSubscript(out, typ, val, subs)
	}
	if out.Ints[0] != 255 || out.Ints[1] != 1 || out.Nulls[0] || !out.Nulls[2] || !out.Nulls[3] || !out.Nulls[4] {
		t.Errorf("elements %v nulls %v", out.Ints, out.Nulls)
	}

	rt, err := SubscriptType(typ, 1)
	if err != nil || !rt.Equal(TensorOf(DTUint8, 2)) {
		t.Fatalf("row type %s %v", rt, err)
	}
	rows := NewVec(rt, 2)
	AppendSubscript(rows, typ, val, []int64{2})
	AppendSubscript(rows, typ, val, []int64{9})
	if got := string(AppendText(nil, rows, 0)); got != "{3,4}" || !rows.Nulls[1] {
		t.Errorf("row 2 = %s, nulls %v", got, rows.Nulls)
	}

	// A ragged remainder keeps its header.
	rag := TensorOf(DTFloat16, 2, Ragged)
	rval := mustParse(t, rag, "{{0.5,1.5,2},{3,4,5}}")
	rt, _ = SubscriptType(rag, 1)
	if !rt.Equal(TensorOf(DTFloat16, Ragged)) {
		t.Fatalf("ragged row type %s", rt)
	}
	rows = NewVec(rt, 1)
	AppendSubscript(rows, rag, rval, []int64{1})
	if got := string(AppendText(nil, rows, 0)); got != "{0.5,1.5,2}" {
		t.Errorf("ragged row = %s", got)
	}
	fl := NewVec(TypFloat4, 1)
	AppendSubscript(fl, rag, rval, []int64{2, 3})
	if fl.Floats[0] != 5 {
		t.Errorf("float16 element %v", fl.Floats)
	}
	bv := NewVec(TypBool, 1)
	AppendSubscript(bv, TensorOf(DTBool, 2), mustParse(t, TensorOf(DTBool, 2), "{f,t}"), []int64{2})
	if !bv.Bools[0] {
		t.Errorf("bool element %v", bv.Bools)
	}

	if _, err := SubscriptType(typ, 3); pgerror.GetCode(err) != pgerror.ArraySubscriptError {
		t.Errorf("too many subscripts: %v", err)
	}
	if _, err := SubscriptType(TypInt4, 1); err == nil {
		t.Errorf("subscripting an integer: no error")
	}
}

// TestCorruptTensor checks that bytes inconsistent with their header never
// panic: text output degrades to a flat list and subscripts yield NULL.
func TestCorruptTensor(t *testing.T) {
	typ := TensorOf(DTInt32, Ragged, Ragged)
	for _, val := range [][]byte{
		nil,
		{1, 0, 0},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0},
		{2, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0},
	} {
		v := NewVec(typ, 1)
		v.AppendBytes(val)
		_ = AppendText(nil, v, 0)
		_ = Cardinality(typ, val)
		_, _ = ArrayLength(typ, val, 2)
		out := NewVec(TypInt4, 1)
		AppendSubscript(out, typ, val, []int64{1, 1})
		if len(val) != 4*2+4 && !out.Nulls[0] {
			t.Errorf("% x: subscript not NULL", val)
		}
	}
}

// TestHalf checks float16 and bfloat16 conversions, including rounding to
// nearest even, subnormals, overflow and NaN.
func TestHalf(t *testing.T) {
	for _, c := range []struct {
		f float32
		h uint16
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0x8000}, {1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff},
		{65520, 0x7c00}, {65519, 0x7bff}, {float32(math.Inf(-1)), 0xfc00},
		{5.960464477539063e-08, 0x0001}, {2.9802322387695312e-08, 0}, {2.98023259e-08, 0x0001},
		{6.097555160522461e-05, 0x03ff}, {6.103515625e-05, 0x0400},
		{1 + 1.0/2048, 0x3c00}, {1 + 3.0/2048, 0x3c02}, {0.1, 0x2e66},
	} {
		if got := Float32ToFloat16(c.f); got != c.h {
			t.Errorf("Float32ToFloat16(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	for h := 0; h < 1<<16; h++ {
		f := Float16ToFloat32(uint16(h))
		if math.IsNaN(float64(f)) {
			if back := Float32ToFloat16(f); back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("NaN %#04x → %#04x", h, back)
			}
			continue
		}
		if back := Float32ToFloat16(f); back != uint16(h) {
			t.Fatalf("half %#04x → %g → %#04x", h, f, back)
		}
	}
	for _, c := range []struct {
		f float32
		h uint16
	}{
		{1, 0x3f80}, {-2, 0xc000}, {1 + 1.0/256, 0x3f80}, {1 + 3.0/256, 0x3f82}, {math.MaxFloat32, 0x7f80},
	} {
		if got := Float32ToBFloat16(c.f); got != c.h {
			t.Errorf("Float32ToBFloat16(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	if !math.IsNaN(float64(BFloat16ToFloat32(Float32ToBFloat16(float32(math.NaN()))))) {
		t.Error("bfloat16 NaN lost")
	}
	if RoundFloat16(0.1) != 0.099975586 || RoundBFloat16(1.5) != 1.5 {
		t.Error("Round helpers")
	}
}
