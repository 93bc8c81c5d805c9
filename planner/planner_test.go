package planner

import (
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

func TestFilterPushdownAndColumnPruning(t *testing.T) {
	tbl := &storage.TableDesc{ID: 1, Name: "t", Columns: []storage.ColumnDesc{
		{Name: "a", Type: types.TypInt4}, {Name: "b", Type: types.TypText},
		{Name: "c", Type: types.TypFloat8}, {Name: "d", Type: types.TypBool},
	}}
	scan := &plan.Scan{Table: tbl, Cols: []int{0, 1, 2, 3}}
	// SELECT c FROM t WHERE d
	pred := &plan.ColRef{Idx: 3, Typ: types.TypBool}
	proj := &plan.Project{Input: &plan.Filter{Input: scan, Pred: pred},
		Exprs: []plan.Expr{&plan.ColRef{Idx: 2, Typ: types.TypFloat8}}, Names: []string{"c"}}

	got := Optimize(proj).(*plan.Project)
	s, ok := got.Input.(*plan.Scan)
	if !ok {
		t.Fatalf("filter not merged into scan: %T", got.Input)
	}
	if len(s.Cols) != 2 || s.Cols[0] != 2 || s.Cols[1] != 3 {
		t.Fatalf("scan reads columns %v, want [2 3]", s.Cols)
	}
	if r := got.Exprs[0].(*plan.ColRef); r.Idx != 0 {
		t.Errorf("projection reads #%d, want #0", r.Idx)
	}
	if r := s.Filter.(*plan.ColRef); r.Idx != 1 {
		t.Errorf("filter reads #%d, want #1", r.Idx)
	}
	// The input plan is not modified.
	if len(scan.Cols) != 4 || pred.Idx != 3 {
		t.Errorf("Optimize modified its input")
	}

	// count(*) reads no column, but the scan keeps one so rows are counted.
	agg := &plan.Aggregate{Input: scan, Aggs: []plan.AggCall{{Func: plan.AggCountStar, Typ: types.TypInt8}}}
	ga := Optimize(agg).(*plan.Aggregate)
	if n := len(ga.Input.(*plan.Scan).Cols); n != 1 {
		t.Errorf("count(*) scan reads %d columns, want 1", n)
	}
}
