package planner

import (
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// TestRankBound checks which conditions on a window's column bound it,
// and to what: column 3 of the window's output is its call 1.
func TestRankBound(t *testing.T) {
	col := &plan.ColRef{Idx: 3, Typ: types.TypInt8}
	in := &plan.ColRef{Idx: 1, Typ: types.TypInt8}
	k := func(v int64) plan.Expr { return plan.IntConst(types.TypInt4, v) }
	cmp := func(op plan.Op, l, r plan.Expr) plan.Expr {
		return &plan.Call{Op: op, Args: []plan.Expr{l, r}, Typ: types.TypBool}
	}
	f := func(e plan.Expr, ok bool, want int64) {
		t.Helper()
		call, got, isBound := rankBound(e, 2)
		if isBound != ok || ok && (call != 1 || got != want) {
			t.Errorf("%s: call %d, bound %d, %v; want call 1, bound %d, %v", plan.ExprText(e), call, got, isBound, want, ok)
		}
	}
	f(cmp(plan.OpLe, col, k(3)), true, 3)
	f(cmp(plan.OpLt, col, k(3)), true, 2)
	f(cmp(plan.OpEq, col, k(1)), true, 1)
	f(cmp(plan.OpGe, k(4), col), true, 4)
	f(cmp(plan.OpGt, k(4), col), true, 3)
	f(cmp(plan.OpEq, k(2), col), true, 2)
	f(cmp(plan.OpLe, col, &plan.Cast{X: plan.IntConst(types.TypInt8, 5), Typ: types.TypInt4}), true, 5)
	// Not bounds: the other way, not a constant, NULL, a column of the
	// window's input, a number that is not an integer.
	f(cmp(plan.OpGe, col, k(3)), false, 0)
	f(cmp(plan.OpLe, k(3), col), false, 0)
	f(cmp(plan.OpNe, col, k(3)), false, 0)
	f(cmp(plan.OpLe, col, in), false, 0)
	f(cmp(plan.OpLe, col, plan.NullConst(types.TypInt4)), false, 0)
	f(cmp(plan.OpLe, in, k(3)), false, 0)
	f(cmp(plan.OpLe, &plan.Cast{X: col, Typ: types.TypNumeric}, plan.FloatConst(2.5)), false, 0)
}
