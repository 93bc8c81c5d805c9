package planner

import (
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

func TestHashJoinKeys(t *testing.T) {
	vals := func(ts ...types.Type) *plan.Values {
		v := &plan.Values{}
		for _, t := range ts {
			v.Cols = append(v.Cols, plan.Column{Type: t, Ordinal: -1})
		}
		return v
	}
	col := func(i int, t types.Type) *plan.ColRef { return &plan.ColRef{Idx: i, Typ: t} }
	eq := func(a, b plan.Expr) plan.Expr {
		return &plan.Call{Op: plan.OpEq, Args: []plan.Expr{a, b}, Typ: types.TypBool}
	}
	// left (a int, b text), right (c text, d int):
	// ON d = a AND b = c AND a < d
	lt := &plan.Call{Op: plan.OpLt, Args: []plan.Expr{col(0, types.TypInt4), col(3, types.TypInt4)}, Typ: types.TypBool}
	on := &plan.Call{Op: plan.OpAnd, Typ: types.TypBool, Args: []plan.Expr{
		eq(col(3, types.TypInt4), col(0, types.TypInt4)),
		eq(col(1, types.TypText), col(2, types.TypText)),
		lt,
	}}
	j := &plan.Join{Kind: plan.JoinLeft, Left: vals(types.TypInt4, types.TypText), Right: vals(types.TypText, types.TypInt4), On: on}
	got := Optimize(j).(*plan.Join)
	if len(got.LeftKeys) != 2 {
		t.Fatalf("%d keys, want 2", len(got.LeftKeys))
	}
	want := []struct{ l, r int }{{0, 1}, {1, 0}}
	for i, w := range want {
		if l, r := got.LeftKeys[i].(*plan.ColRef).Idx, got.RightKeys[i].(*plan.ColRef).Idx; l != w.l || r != w.r {
			t.Errorf("key %d: left #%d right #%d, want #%d #%d", i, l, r, w.l, w.r)
		}
	}
	if got.On != lt {
		t.Errorf("residual condition %v, want %v", got.On, lt)
	}

	// A condition that reads both sides on one side of = stays a condition.
	add := &plan.Call{Op: plan.OpAdd, Args: []plan.Expr{col(0, types.TypInt4), col(3, types.TypInt4)}, Typ: types.TypInt4}
	j2 := &plan.Join{Kind: plan.JoinInner, Left: vals(types.TypInt4, types.TypText), Right: vals(types.TypText, types.TypInt4),
		On: eq(add, col(0, types.TypInt4))}
	if got := Optimize(j2).(*plan.Join); len(got.LeftKeys) != 0 || got.On == nil {
		t.Errorf("keys %v on %v: want a nested loop", got.LeftKeys, got.On)
	}
}
