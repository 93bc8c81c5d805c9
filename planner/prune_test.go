package planner

import (
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// TestPruneThroughProjection: the columns an aggregate reads of a
// projection that picks columns of a join are all its scans read.
func TestPruneThroughProjection(t *testing.T) {
	i4 := types.TypInt4
	scan := func(id uint64) *plan.Scan {
		return &plan.Scan{Table: &storage.TableDesc{ID: id, Name: "t", Columns: []storage.ColumnDesc{
			{Name: "a", Type: i4}, {Name: "b", Type: i4}, {Name: "c", Type: i4},
		}}, Cols: []int{0, 1, 2}}
	}
	on := &plan.Call{Op: plan.OpEq, Args: []plan.Expr{ref(0, i4), ref(3, i4)}, Typ: types.TypBool}
	j := &plan.Join{Kind: plan.JoinInner, Left: scan(1), Right: scan(2), On: on}
	exprs := make([]plan.Expr, 6)
	for i := range exprs {
		exprs[i] = ref(i, i4)
	}
	pick := &plan.Project{Input: j, Exprs: exprs, Names: []string{"a", "b", "c", "a", "b", "c"}}
	// SELECT sum(l.c) over the picked columns.
	n := &plan.Aggregate{Input: pick, Aggs: []plan.AggCall{{Func: plan.AggSum, Arg: ref(2, i4), Typ: types.TypInt8}}}
	got := Optimize(n).(*plan.Aggregate)
	p := got.Input.(*plan.Project)
	gj := p.Input.(*plan.Join)
	if l, r := gj.Left.(*plan.Scan).Cols, gj.Right.(*plan.Scan).Cols; len(l) != 2 || len(r) != 1 {
		t.Errorf("scans read %v and %v, want [0 2] and [0]", l, r)
	}
	if len(p.Exprs) != 1 || got.Aggs[0].Arg.(*plan.ColRef).Idx != 0 || p.Exprs[0].(*plan.ColRef).Idx != 1 {
		t.Errorf("projection %v, sum of #%d; want #1 alone, summed as #0", p.Exprs, got.Aggs[0].Arg.(*plan.ColRef).Idx)
	}
}
