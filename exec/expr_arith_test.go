package exec

import (
	"math"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

const rangeErr = pgerror.NumericValueOutOfRange

// TestIntArithLimits checks every integer operator at and beyond the
// limits of each result type, as PostgreSQL's int2/int4/int8 operators
// (and their mixed-width forms, whose result is the wider type) answer.
func TestIntArithLimits(t *testing.T) {
	const (
		min2, max2 = math.MinInt16, math.MaxInt16
		min4, max4 = math.MinInt32, math.MaxInt32
		min8, max8 = math.MinInt64, math.MaxInt64
	)
	i2, i4, i8 := types.TypInt2, types.TypInt4, types.TypInt8
	add, sub, mul, div, mod := plan.OpAdd, plan.OpSub, plan.OpMul, plan.OpDiv, plan.OpMod
	for _, tc := range []struct {
		op   plan.Op
		typ  types.Type
		a, b int64
		code pgerror.Code
		want int64
	}{
		{add, i2, max2, 0, "", max2},
		{add, i2, max2, 1, rangeErr, 0},
		{add, i2, min2, -1, rangeErr, 0},
		{sub, i2, min2, 1, rangeErr, 0},
		{sub, i2, 0, min2, rangeErr, 0},
		{sub, i2, -1, min2, "", max2},
		{mul, i2, 181, 181, "", 32761},
		{mul, i2, 182, 181, rangeErr, 0},
		{mul, i2, min2, -1, rangeErr, 0},
		{div, i2, min2, -1, rangeErr, 0},
		{mod, i2, min2, -1, "", 0},
		{div, i2, 1, 0, pgerror.DivisionByZero, 0},
		{mod, i2, 1, 0, pgerror.DivisionByZero, 0},

		{add, i4, max4, 1, rangeErr, 0},
		{add, i4, max4, -1, "", max4 - 1},
		{add, i4, min4, -1, rangeErr, 0},
		{sub, i4, min4, 1, rangeErr, 0},
		{sub, i4, max4, -1, rangeErr, 0},
		{mul, i4, 46341, 46341, rangeErr, 0},
		{mul, i4, 46340, 46341, "", 2147441940},
		{mul, i4, min4, -1, rangeErr, 0},
		{mul, i4, min4, 1, "", min4},
		{div, i4, min4, -1, rangeErr, 0},
		{div, i4, min4, 1, "", min4},
		{mod, i4, min4, -1, "", 0},
		{div, i4, -7, 2, "", -3},
		{mod, i4, -7, 3, "", -1},
		{mod, i4, 7, -3, "", 1},
		{div, i4, 0, 0, pgerror.DivisionByZero, 0},
		// integer op smallint is integer.
		{add, i4, max2, max2, "", 2 * max2},

		{add, i8, max8, 1, rangeErr, 0},
		{add, i8, max8, min8, "", -1},
		{add, i8, min8, -1, rangeErr, 0},
		{add, i8, max4, 1, "", max4 + 1},
		{sub, i8, min8, 1, rangeErr, 0},
		{sub, i8, max8, -1, rangeErr, 0},
		{sub, i8, 0, min8, rangeErr, 0},
		{sub, i8, -1, min8, "", max8},
		{mul, i8, max8/2 + 1, 2, rangeErr, 0},
		{mul, i8, max8 / 2, 2, "", max8 - 1},
		{mul, i8, min8 / 2, 2, "", min8},
		{mul, i8, min8/2 - 1, 2, rangeErr, 0},
		{mul, i8, min8, -1, rangeErr, 0},
		{mul, i8, -1, min8, rangeErr, 0},
		{mul, i8, min8, 1, "", min8},
		{mul, i8, min8, 0, "", 0},
		{mul, i8, 3037000500, 3037000500, rangeErr, 0},
		{mul, i8, 3037000499, 3037000499, "", 9223372030926249001},
		{mul, i8, max4, max4, "", max4 * max4},
		{div, i8, min8, -1, rangeErr, 0},
		{div, i8, min8, 2, "", min8 / 2},
		{mod, i8, min8, -1, "", 0},
		{div, i8, max8, 0, pgerror.DivisionByZero, 0},
	} {
		out := types.NewVec(tc.typ, 1)
		err := arith(tc.op, intVec(tc.typ, tc.a), intVec(tc.typ, tc.b), out, 1)
		if tc.code != "" {
			if pgerror.GetCode(err) != tc.code {
				t.Errorf("%d %s %d (%s): err %v, want %s", tc.a, tc.op, tc.b, tc.typ, err, tc.code)
			}
			continue
		}
		if err != nil || out.Len() != 1 || out.Nulls[0] || out.Ints[0] != tc.want {
			t.Errorf("%d %s %d (%s) = %v, %v; want %d", tc.a, tc.op, tc.b, tc.typ, out.Ints, err, tc.want)
		}
	}
}

// TestIntArithMessages checks the words of the errors, as PostgreSQL's.
func TestIntArithMessages(t *testing.T) {
	for typ, want := range map[types.Kind]string{
		types.Int2: "smallint out of range", types.Int4: "integer out of range", types.Int8: "bigint out of range",
	} {
		tt := types.Type{Kind: typ}
		lo, _, _ := intRange(typ)
		out := types.NewVec(tt, 1)
		if err := negate(intVec(tt, lo), out, 1, false); err == nil || err.Error() != want {
			t.Errorf("-(%d)::%s: %v, want %q", lo, tt, err, want)
		}
		if err := negate(intVec(tt, lo), out, 1, true); err == nil || err.Error() != want {
			t.Errorf("abs(%d::%s): %v, want %q", lo, tt, err, want)
		}
	}
}

// TestArithSkipsNullRows checks that a NULL row's slot, whatever it
// holds, neither fails nor hides a failing row after it.
func TestArithSkipsNullRows(t *testing.T) {
	n := 3000
	a := types.NewVec(types.TypInt8, n)
	b := types.NewVec(types.TypInt8, n)
	for i := 0; i < n; i++ {
		a.AppendInt(int64(i))
		b.AppendInt(1)
	}
	// A NULL row holding values that would overflow or divide by zero.
	a.Nulls[10], a.Ints[10] = true, math.MinInt64
	b.Ints[10] = 0
	b.Nulls[11], b.Ints[11] = true, 0
	for _, op := range []plan.Op{plan.OpAdd, plan.OpSub, plan.OpMul, plan.OpDiv, plan.OpMod} {
		out := types.NewVec(types.TypInt8, n)
		if err := arith(op, a, b, out, n); err != nil {
			t.Fatalf("%s over NULL rows: %v", op, err)
		}
		if out.Len() != n || !out.Nulls[10] || !out.Nulls[11] || out.Nulls[12] {
			t.Fatalf("%s: NULLs %v", op, out.Nulls[9:13])
		}
	}
	// The last row overflows: the batch fails.
	a.Ints[n-1] = math.MaxInt64
	out := types.NewVec(types.TypInt8, n)
	if err := arith(plan.OpAdd, a, b, out, n); pgerror.GetCode(err) != rangeErr {
		t.Fatalf("overflow on the last row: %v", err)
	}
	// Float: 0/0 in a NULL row is not a division by zero.
	x := types.NewVec(types.TypFloat8, 2)
	y := types.NewVec(types.TypFloat8, 2)
	x.AppendNull()
	y.AppendFloat(0)
	x.AppendFloat(1)
	y.AppendNull()
	fo := types.NewVec(types.TypFloat8, 2)
	for _, op := range []plan.Op{plan.OpMul, plan.OpDiv, plan.OpMod} {
		if err := arith(op, x, y, fo, 2); err != nil || !fo.Nulls[0] || !fo.Nulls[1] {
			t.Fatalf("float %s over NULL rows: %v %v", op, fo.Nulls, err)
		}
	}
}

func floatVec(t types.Type, vals ...float64) *types.Vec {
	v := types.NewVec(t, len(vals))
	for _, x := range vals {
		v.AppendFloat(x)
	}
	return v
}

// TestFloatArithLimits checks float4 and float8 arithmetic as PostgreSQL's
// float4/float8 operators answer: overflow from finite operands and
// underflow to zero from non-zero ones are 22003; infinities and NaN
// operands pass.
func TestFloatArithLimits(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	f4, f8 := types.TypFloat4, types.TypFloat8
	add, sub, mul, div, mod := plan.OpAdd, plan.OpSub, plan.OpMul, plan.OpDiv, plan.OpMod
	for _, tc := range []struct {
		op   plan.Op
		typ  types.Type
		a, b float64
		code pgerror.Code
		want float64
	}{
		{add, f8, math.MaxFloat64, math.MaxFloat64, rangeErr, 0},
		{sub, f8, -math.MaxFloat64, math.MaxFloat64, rangeErr, 0},
		{mul, f8, 1e308, 10, rangeErr, 0},
		{mul, f8, 1e-200, 1e-200, rangeErr, 0},
		{mul, f8, 0, 1e-200, "", 0},
		{mul, f8, inf, 2, "", inf},
		{mul, f8, inf, 0, "", nan},
		{add, f8, inf, 1, "", inf},
		{sub, f8, inf, inf, "", nan},
		{add, f8, nan, 1, "", nan},
		{div, f8, 1e308, 1e-10, rangeErr, 0},
		{div, f8, 1e-300, 1e300, rangeErr, 0},
		{div, f8, 5e-324, 2, rangeErr, 0},
		{div, f8, 1, inf, "", 0},
		{div, f8, inf, 2, "", inf},
		{div, f8, 1, 0, pgerror.DivisionByZero, 0},
		{div, f8, inf, 0, pgerror.DivisionByZero, 0},
		{div, f8, nan, 0, "", nan},
		{mod, f8, 1, 0, pgerror.DivisionByZero, 0},
		{mod, f8, nan, 0, "", nan},
		{mod, f8, -5.5, 2, "", -1.5},
		{add, f8, 5e-324, -5e-324, "", 0},
		{mul, f4, 3.4e38, 10, rangeErr, 0},
		{add, f4, float64(float32(3e38)), float64(float32(3e38)), rangeErr, 0},
		{mul, f4, float64(float32(1e-30)), float64(float32(1e-30)), rangeErr, 0},
		{div, f4, float64(float32(1e-45)), 10, rangeErr, 0},
		{add, f4, 16777216, 1, "", 16777216},
		{mul, f4, inf, 2, "", inf},
	} {
		out := types.NewVec(tc.typ, 1)
		err := arith(tc.op, floatVec(tc.typ, tc.a), floatVec(tc.typ, tc.b), out, 1)
		if tc.code != "" {
			if pgerror.GetCode(err) != tc.code {
				t.Errorf("%g %s %g (%s): err %v, want %s", tc.a, tc.op, tc.b, tc.typ, err, tc.code)
			}
			continue
		}
		got := out.Floats[0]
		if err != nil || !(got == tc.want || math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("%g %s %g (%s) = %g, %v; want %g", tc.a, tc.op, tc.b, tc.typ, got, err, tc.want)
		}
	}
	out := types.NewVec(f8, 1)
	if err := arith(mul, floatVec(f8, 1e308), floatVec(f8, 10), out, 1); err == nil || err.Error() != "value out of range: overflow" {
		t.Errorf("overflow message: %v", err)
	}
	if err := arith(mul, floatVec(f8, 1e-308), floatVec(f8, 1e-308), out, 1); err == nil || err.Error() != "value out of range: underflow" {
		t.Errorf("underflow message: %v", err)
	}
}

// TestArithAllocatesNothing checks the kernels allocate nothing once
// their output has grown.
func TestArithAllocatesNothing(t *testing.T) {
	n := types.BatchSize
	a, b := types.NewVec(types.TypInt8, n), types.NewVec(types.TypInt8, n)
	fa, fb := types.NewVec(types.TypFloat8, n), types.NewVec(types.TypFloat8, n)
	for i := 0; i < n; i++ {
		a.AppendInt(int64(i))
		b.AppendInt(int64(i%7 + 1))
		fa.AppendFloat(float64(i))
		fb.AppendFloat(float64(i%7 + 1))
	}
	a.Nulls[3] = true
	out, fout := types.NewVec(types.TypInt8, n), types.NewVec(types.TypFloat8, n)
	allocs := testing.AllocsPerRun(20, func() {
		for _, op := range []plan.Op{plan.OpAdd, plan.OpSub, plan.OpMul, plan.OpDiv, plan.OpMod} {
			out.Reset()
			if err := arith(op, a, b, out, n); err != nil {
				t.Fatal(err)
			}
			fout.Reset()
			if err := arith(op, fa, fb, fout, n); err != nil {
				t.Fatal(err)
			}
		}
		out.Reset()
		if err := negate(a, out, n, false); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run, want 0", allocs)
	}
}

func BenchmarkIntAdd(b *testing.B) {
	n := types.BatchSize
	x, y, out := types.NewVec(types.TypInt8, n), types.NewVec(types.TypInt8, n), types.NewVec(types.TypInt8, n)
	for i := 0; i < n; i++ {
		x.AppendInt(int64(i))
		y.AppendInt(int64(3 * i))
	}
	b.ReportAllocs()
	b.SetBytes(int64(8 * n))
	for i := 0; i < b.N; i++ {
		out.Reset()
		if err := arith(plan.OpAdd, x, y, out, n); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIntMul(b *testing.B) {
	n := types.BatchSize
	x, y, out := types.NewVec(types.TypInt8, n), types.NewVec(types.TypInt8, n), types.NewVec(types.TypInt8, n)
	for i := 0; i < n; i++ {
		x.AppendInt(int64(i))
		y.AppendInt(int64(3 * i))
	}
	b.ReportAllocs()
	b.SetBytes(int64(8 * n))
	for i := 0; i < b.N; i++ {
		out.Reset()
		if err := arith(plan.OpMul, x, y, out, n); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFloatMul(b *testing.B) {
	n := types.BatchSize
	x, y, out := types.NewVec(types.TypFloat8, n), types.NewVec(types.TypFloat8, n), types.NewVec(types.TypFloat8, n)
	for i := 0; i < n; i++ {
		x.AppendFloat(float64(i))
		y.AppendFloat(1.5)
	}
	b.ReportAllocs()
	b.SetBytes(int64(8 * n))
	for i := 0; i < b.N; i++ {
		out.Reset()
		if err := arith(plan.OpMul, x, y, out, n); err != nil {
			b.Fatal(err)
		}
	}
}
