package exec

import (
	"math"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

func TestLikeMatch(t *testing.T) {
	for _, tc := range []struct {
		s, p string
		want bool
	}{
		{"abc", "abc", true}, {"abc", "a%", true}, {"abc", "%c", true}, {"abc", "%b%", true},
		{"abc", "a_c", true}, {"abc", "a_", false}, {"", "%", true}, {"", "_", false},
		{"a%c", `a\%c`, true}, {"abc", `a\%c`, false}, {"héllo", "h_llo", true}, {"abc", "%%%", true},
		{"abcabc", "%bc", true}, {"ab", "abc", false},
	} {
		got, err := likeMatch([]byte(tc.s), []byte(tc.p))
		if err != nil || got != tc.want {
			t.Errorf("%q LIKE %q = %v, %v; want %v", tc.s, tc.p, got, err, tc.want)
		}
	}
	if _, err := likeMatch([]byte("a"), []byte(`a\`)); pgerror.GetCode(err) != "22025" {
		t.Errorf("trailing escape: %v", err)
	}
}

func intVec(t types.Type, vals ...int64) *types.Vec {
	v := types.NewVec(t, len(vals))
	for _, x := range vals {
		v.AppendInt(x)
	}
	return v
}

func TestIntegerArithmeticOverflow(t *testing.T) {
	for _, tc := range []struct {
		op   plan.Op
		typ  types.Type
		a, b int64
		code pgerror.Code
		want int64
	}{
		{plan.OpAdd, types.TypInt4, math.MaxInt32, 1, pgerror.NumericValueOutOfRange, 0},
		{plan.OpAdd, types.TypInt8, math.MaxInt32, 1, "", math.MaxInt32 + 1},
		{plan.OpAdd, types.TypInt8, math.MaxInt64, 1, pgerror.NumericValueOutOfRange, 0},
		{plan.OpSub, types.TypInt8, math.MinInt64, 1, pgerror.NumericValueOutOfRange, 0},
		{plan.OpMul, types.TypInt8, math.MaxInt64 / 2, 3, pgerror.NumericValueOutOfRange, 0},
		{plan.OpMul, types.TypInt2, 200, 200, pgerror.NumericValueOutOfRange, 0},
		{plan.OpDiv, types.TypInt4, 7, 0, pgerror.DivisionByZero, 0},
		{plan.OpDiv, types.TypInt4, -7, 2, "", -3},
		{plan.OpMod, types.TypInt4, -7, 3, "", -1},
		{plan.OpDiv, types.TypInt8, math.MinInt64, -1, pgerror.NumericValueOutOfRange, 0},
		{plan.OpMod, types.TypInt8, math.MinInt64, -1, "", 0},
	} {
		out := types.NewVec(tc.typ, 1)
		err := arith(tc.op, intVec(tc.typ, tc.a), intVec(tc.typ, tc.b), out, 1)
		if tc.code != "" {
			if pgerror.GetCode(err) != tc.code {
				t.Errorf("%d %s %d (%s): err %v, want %s", tc.a, tc.op, tc.b, tc.typ, err, tc.code)
			}
			continue
		}
		if err != nil || out.Ints[0] != tc.want {
			t.Errorf("%d %s %d = %v, %v; want %d", tc.a, tc.op, tc.b, out.Ints, err, tc.want)
		}
	}
}

func TestCompareFloatOrdersNaNLast(t *testing.T) {
	nan := math.NaN()
	if types.CompareFloat(nan, math.Inf(1)) != 1 || types.CompareFloat(nan, nan) != 0 || types.CompareFloat(1, nan) != -1 || types.CompareFloat(-1, 1) != -1 {
		t.Fatal("NaN must sort above every other float and equal itself")
	}
}

func TestThreeValuedLogic(t *testing.T) {
	// Columns: a, b as bool with NULLs; check AND/OR truth tables.
	vals := []int8{1, 0, -1} // true, false, NULL
	a := types.NewVec(types.TypBool, 9)
	b := types.NewVec(types.TypBool, 9)
	for _, x := range vals {
		for _, y := range vals {
			for v, z := range map[*types.Vec]int8{a: x, b: y} {
				if z < 0 {
					v.AppendNull()
				} else {
					v.AppendBool(z == 1)
				}
			}
		}
	}
	batch := &types.Batch{Cols: []*types.Vec{a, b}}
	env := &Env{}
	ref := func(i int) plan.Expr { return &plan.ColRef{Idx: i, Typ: types.TypBool} }
	// Rows are (a, b) for a, b in (true, false, NULL).
	want := map[plan.Op]string{
		plan.OpAnd: "tfNfffNfN",
		plan.OpOr:  "ttttfNtNN",
	}
	for op, w := range want {
		ev, err := env.compile(&plan.Call{Op: op, Args: []plan.Expr{ref(0), ref(1)}, Typ: types.TypBool})
		if err != nil {
			t.Fatal(err)
		}
		out, err := ev.eval(batch)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for i := 0; i < out.Len(); i++ {
			switch {
			case out.Nulls[i]:
				got += "N"
			case out.Bools[i]:
				got += "t"
			default:
				got += "f"
			}
		}
		if got != w {
			t.Errorf("%s truth table %s, want %s", op, got, w)
		}
	}
}
