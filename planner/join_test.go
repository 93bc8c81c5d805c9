package planner

import (
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
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

func TestPushFilterIntoJoin(t *testing.T) {
	tbl := func(id uint64) *plan.Scan {
		return &plan.Scan{Table: &storage.TableDesc{ID: id, Name: "t", Columns: []storage.ColumnDesc{
			{Name: "a", Type: types.TypInt4}, {Name: "b", Type: types.TypInt4},
		}}, Cols: []int{0, 1}}
	}
	col := func(i int) *plan.ColRef { return &plan.ColRef{Idx: i, Typ: types.TypInt4} }
	eq := func(a, b plan.Expr) plan.Expr {
		return &plan.Call{Op: plan.OpEq, Args: []plan.Expr{a, b}, Typ: types.TypBool}
	}
	// FROM l, r WHERE l.a = 1 AND r.b = 2 AND l.b = r.a
	pred := &plan.Call{Op: plan.OpAnd, Typ: types.TypBool, Args: []plan.Expr{
		eq(col(0), plan.IntConst(types.TypInt4, 1)),
		eq(col(3), plan.IntConst(types.TypInt4, 2)),
		eq(col(1), col(2)),
	}}
	n := &plan.Filter{Input: &plan.Join{Kind: plan.JoinInner, Left: tbl(1), Right: tbl(2)}, Pred: pred}
	j, ok := Optimize(n).(*plan.Join)
	if !ok {
		t.Fatalf("filter stayed above the join: %T", Optimize(n))
	}
	if len(j.LeftKeys) != 1 || j.LeftKeys[0].(*plan.ColRef).Idx != 1 || j.RightKeys[0].(*plan.ColRef).Idx != 0 || j.On != nil {
		t.Errorf("keys %v %v on %v, want #1 = #0 and no condition", j.LeftKeys, j.RightKeys, j.On)
	}
	for i, in := range []plan.Node{j.Left, j.Right} {
		s, ok := in.(*plan.Scan)
		if !ok || s.Filter == nil {
			t.Errorf("input %d: %T without a pushed filter", i, in)
		}
	}
	if f := j.Right.(*plan.Scan).Filter.(*plan.Call); f.Args[0].(*plan.ColRef).Idx != 1 {
		t.Errorf("right filter reads #%d, want #1", f.Args[0].(*plan.ColRef).Idx)
	}

	// Above a left join, a condition on the right input stays above it.
	n2 := &plan.Filter{Input: &plan.Join{Kind: plan.JoinLeft, Left: tbl(1), Right: tbl(2), On: eq(col(1), col(2))},
		Pred: eq(col(3), plan.IntConst(types.TypInt4, 2))}
	if _, ok := Optimize(n2).(*plan.Filter); !ok {
		t.Errorf("a right-side condition moved below a left join")
	}
}

func TestPruneJoinColumns(t *testing.T) {
	scan := func(id uint64) *plan.Scan {
		return &plan.Scan{Table: &storage.TableDesc{ID: id, Name: "t", Columns: []storage.ColumnDesc{
			{Name: "id", Type: types.TypInt4}, {Name: "img", Type: types.TensorOf(types.DTUint8, 224, 224, 3)},
			{Name: "label", Type: types.TypText},
		}}, Cols: []int{0, 1, 2}}
	}
	col := func(i int, typ types.Type) *plan.ColRef { return &plan.ColRef{Idx: i, Typ: typ} }
	// SELECT r.label FROM l JOIN r ON l.id = r.id WHERE l.label <> 'x'
	on := &plan.Call{Op: plan.OpEq, Args: []plan.Expr{col(0, types.TypInt4), col(3, types.TypInt4)}, Typ: types.TypBool}
	where := &plan.Call{Op: plan.OpNe, Args: []plan.Expr{col(2, types.TypText), plan.StringConst(types.TypText, "x")}, Typ: types.TypBool}
	n := &plan.Project{
		Input: &plan.Filter{Input: &plan.Join{Kind: plan.JoinLeft, Left: scan(1), Right: scan(2), On: on}, Pred: where},
		Exprs: []plan.Expr{col(5, types.TypText)}, Names: []string{"label"},
	}
	p := Optimize(n).(*plan.Project)
	j := p.Input.(*plan.Join)
	l, r := j.Left.(*plan.Scan), j.Right.(*plan.Scan)
	if len(l.Cols) != 2 || l.Cols[0] != 0 || l.Cols[1] != 2 {
		t.Errorf("left scan reads %v, want [0 2]", l.Cols)
	}
	if len(r.Cols) != 2 || r.Cols[0] != 0 || r.Cols[1] != 2 {
		t.Errorf("right scan reads %v, want [0 2]", r.Cols)
	}
	if got := p.Exprs[0].(*plan.ColRef).Idx; got != 3 {
		t.Errorf("projection reads #%d, want #3", got)
	}
	if k := j.RightKeys[0].(*plan.ColRef).Idx; k != 0 {
		t.Errorf("right key #%d, want #0", k)
	}
}

// TestFactorOrs: a conjunct every branch of an OR shares comes out of it,
// and an equality of the two sides so taken out is a hash key (TPC-H's
// query 19).
func TestFactorOrs(t *testing.T) {
	vals := func(ts ...types.Type) *plan.Values {
		v := &plan.Values{}
		for _, t := range ts {
			v.Cols = append(v.Cols, plan.Column{Type: t, Ordinal: -1})
		}
		return v
	}
	col := func(i int) *plan.ColRef { return &plan.ColRef{Idx: i, Typ: types.TypInt4} }
	c := func(op plan.Op, args ...plan.Expr) *plan.Call {
		return &plan.Call{Op: op, Args: args, Typ: types.TypBool}
	}
	lit := func(n int64) *plan.Const {
		v := types.NewVec(types.TypInt4, 1)
		v.AppendInt(n)
		return &plan.Const{Typ: types.TypInt4, Val: v}
	}
	// left (a, b), right (c, d): (a = c AND b = 1) OR (a = c AND d = 2)
	key := c(plan.OpEq, col(0), col(2))
	pred := c(plan.OpOr,
		c(plan.OpAnd, key, c(plan.OpEq, col(1), lit(1))),
		c(plan.OpAnd, c(plan.OpEq, col(0), col(2)), c(plan.OpEq, col(3), lit(2))))
	f := &plan.Filter{Input: &plan.Join{Kind: plan.JoinInner, Left: vals(types.TypInt4, types.TypInt4), Right: vals(types.TypInt4, types.TypInt4)}, Pred: pred}
	j, ok := Optimize(f).(*plan.Join)
	if !ok || len(j.LeftKeys) != 1 {
		t.Fatalf("plan %#v: want a hash join on a = c", Optimize(f))
	}
	if or, ok := j.On.(*plan.Call); !ok || or.Op != plan.OpOr || len(or.Args) != 2 {
		t.Fatalf("residual %v, want the OR of the rest", j.On)
	}
	// A branch that is the shared conjunct alone makes the OR true.
	got := factorOrs([]plan.Expr{c(plan.OpOr, key, c(plan.OpAnd, key, c(plan.OpEq, col(1), lit(1))))})
	if len(got) != 1 || got[0] != key {
		t.Fatalf("factored to %v, want %v alone", got, key)
	}
}
