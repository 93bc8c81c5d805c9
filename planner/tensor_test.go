package planner

import (
	"slices"
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// TestNarrowScan rewrites a filter over a scan of table columns 4, 1, 7
// and 2 onto a scan of only the columns it reads: column refs are
// renumbered in the order first met, inside calls, casts and CASE, and
// the original filter is left as it was. A subquery is not rewritten.
func TestNarrowScan(t *testing.T) {
	col := func(i int) *plan.ColRef { return &plan.ColRef{Idx: i, Typ: types.TypInt8} }
	gt := func(a, b plan.Expr) plan.Expr {
		return &plan.Call{Op: plan.OpGt, Args: []plan.Expr{a, b}, Typ: types.TypBool}
	}
	k := plan.IntConst(types.TypInt8, 5)
	filter := &plan.Call{Op: plan.OpAnd, Typ: types.TypBool, Args: []plan.Expr{
		gt(col(3), k),
		&plan.Case{Typ: types.TypBool, Whens: []plan.When{{Cond: gt(&plan.Cast{X: col(1), Typ: types.TypInt8}, k), Result: gt(col(3), col(1))}}},
	}}
	n := &plan.Scan{Table: &storage.TableDesc{Name: "t"}, Cols: []int{4, 1, 7, 2}, Filter: filter}
	narrow, ok := narrowScan(n)
	if !ok || !slices.Equal(narrow.Cols, []int{2, 1}) {
		t.Fatalf("narrow scan: ok %v, columns %v, want [2 1]", ok, narrow.Cols)
	}
	var refs []int
	var walk func(e plan.Expr)
	walk = func(e plan.Expr) {
		switch e := e.(type) {
		case *plan.ColRef:
			refs = append(refs, e.Idx)
		case *plan.Call:
			for _, a := range e.Args {
				walk(a)
			}
		case *plan.Cast:
			walk(e.X)
		case *plan.Case:
			for _, w := range e.Whens {
				walk(w.Cond)
				walk(w.Result)
			}
		}
	}
	walk(narrow.Filter)
	if !slices.Equal(refs, []int{0, 1, 0, 1}) {
		t.Fatalf("rewritten refs %v, want [0 1 0 1]", refs)
	}
	refs = nil
	walk(n.Filter)
	if !slices.Equal(refs, []int{3, 1, 3, 1}) {
		t.Fatalf("the original filter changed: refs %v", refs)
	}
	if narrow, ok := narrowScan(&plan.Scan{Table: n.Table, Cols: n.Cols}); !ok || len(narrow.Cols) != 0 || narrow.Filter != nil {
		t.Fatalf("no filter: %v, %+v", ok, narrow)
	}
	sub := &plan.Scan{Table: n.Table, Cols: n.Cols, Filter: &plan.Subquery{Kind: plan.SubExists, Typ: types.TypBool}}
	if _, ok := narrowScan(sub); ok {
		t.Fatal("a subquery was rewritten")
	}
}
