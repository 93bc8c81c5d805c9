package planner

import (
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// TestReorderJoins: FROM a, b, c WHERE a.k = c.a AND b.k = c.b joins c
// before b, so that no join is a cross product, and keeps the columns in
// the order written.
func TestReorderJoins(t *testing.T) {
	tbl := func(id uint64, name string, cols ...string) *plan.Scan {
		d := &storage.TableDesc{ID: id, Name: name}
		s := &plan.Scan{Table: d}
		for i, c := range cols {
			d.Columns = append(d.Columns, storage.ColumnDesc{Name: c, Type: types.TypInt4})
			s.Cols = append(s.Cols, i)
		}
		return s
	}
	a, b, c := tbl(1, "a", "k", "x"), tbl(2, "b", "k", "y"), tbl(3, "c", "a", "b")
	col := func(i int) *plan.ColRef { return &plan.ColRef{Idx: i, Typ: types.TypInt4} }
	eq := func(x, y plan.Expr) plan.Expr {
		return &plan.Call{Op: plan.OpEq, Args: []plan.Expr{x, y}, Typ: types.TypBool}
	}
	cross := func(l, r plan.Node) *plan.Join { return &plan.Join{Kind: plan.JoinInner, Left: l, Right: r} }
	// a: #0 #1, b: #2 #3, c: #4 #5.
	written := cross(cross(a, b), c)
	n := &plan.Filter{Input: written, Pred: and([]plan.Expr{eq(col(0), col(4)), eq(col(2), col(5))})}
	got := Optimize(n)
	p, ok := got.(*plan.Project)
	if !ok {
		t.Fatalf("plan %T, want a projection over the reordered joins", got)
	}
	top, ok := p.Input.(*plan.Join)
	if !ok || len(top.LeftKeys) != 1 || top.Right.(*plan.Scan).Table.Name != "b" {
		t.Fatalf("top join %#v: want a hash join with b", p.Input)
	}
	low, ok := top.Left.(*plan.Join)
	if !ok || len(low.LeftKeys) != 1 || low.Left.(*plan.Scan).Table.Name != "a" || low.Right.(*plan.Scan).Table.Name != "c" {
		t.Fatalf("lower join %#v: want a hash join of a with c", top.Left)
	}
	// a, c, b: b's columns now come last.
	for i, want := range []int{0, 1, 4, 5, 2, 3} {
		if idx := p.Exprs[i].(*plan.ColRef).Idx; idx != want {
			t.Errorf("column %d reads #%d, want #%d", i, idx, want)
		}
	}
	if w, g := written.Columns(), p.Columns(); len(w) != len(g) {
		t.Fatalf("%d columns, want %d", len(g), len(w))
	} else {
		for i := range w {
			if w[i].Name != g[i].Name || w[i].TableID != g[i].TableID || w[i].Ordinal != g[i].Ordinal || w[i].Type.Kind != g[i].Type.Kind {
				t.Errorf("column %d is %+v, want %+v", i, g[i], w[i])
			}
		}
	}

	// An order without a cross product is kept: the joins are the written ones.
	n2 := &plan.Filter{Input: cross(cross(a, c), b), Pred: and([]plan.Expr{eq(col(0), col(2)), eq(col(4), col(3))})}
	if j, ok := Optimize(n2).(*plan.Join); !ok || j.Right.(*plan.Scan).Table.Name != "b" || len(j.LeftKeys) != 1 {
		t.Errorf("plan %#v: want the written order", Optimize(n2))
	}

	// The keys of a join written with ON relate its inputs too: a JOIN b
	// ON a.x = b.y, c WHERE c.a = a.k joins c after them as written...
	on := hashJoinKeys(&plan.Join{Kind: plan.JoinInner, Left: a, Right: b, On: eq(col(1), col(3))})
	n3 := &plan.Filter{Input: cross(on, c), Pred: eq(col(4), col(0))}
	if j, ok := Optimize(n3).(*plan.Join); !ok || len(j.LeftKeys) != 1 {
		t.Errorf("plan %#v: want the written order", Optimize(n3))
	}
	// ...and a, c JOIN b ON b.k = c.b joins b last, however written.
	n4 := &plan.Filter{Input: cross(a, &plan.Join{Kind: plan.JoinInner, Left: b, Right: c, On: eq(col(0), col(3))}),
		Pred: eq(col(0), col(4))}
	if p, ok := Optimize(n4).(*plan.Project); !ok || p.Input.(*plan.Join).Right.(*plan.Scan).Table.Name != "b" {
		t.Errorf("plan %#v: want b joined last", Optimize(n4))
	}

	// A join condition that reads random() keeps the tree as written.
	rnd := &plan.Call{Op: plan.OpGt, Typ: types.TypBool, Args: []plan.Expr{
		&plan.Call{Op: plan.OpRandom, Typ: types.TypFloat8}, &plan.Const{Typ: types.TypFloat8}}}
	n5 := &plan.Filter{Input: cross(&plan.Join{Kind: plan.JoinInner, Left: a, Right: b, On: rnd}, c), Pred: n.Pred}
	if _, ok := Optimize(n5).(*plan.Project); ok {
		t.Errorf("a tree with a volatile condition was reordered")
	}
	// So does a left join in it.
	n6 := &plan.Filter{Input: cross(&plan.Join{Kind: plan.JoinLeft, Left: a, Right: b, On: eq(col(1), col(3))}, c), Pred: n.Pred}
	if j, ok := Optimize(n6).(*plan.Join); !ok || j.Left.(*plan.Join).Kind != plan.JoinLeft {
		t.Errorf("plan %#v: want the left join below as written", Optimize(n6))
	}
}
