package planner

import (
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// TestVectorTopKFetchesNoVector checks the nearest-neighbour rewrite:
// SELECT id, v <-> q FROM t WHERE cat = 1 ORDER BY 2 LIMIT 5 becomes a
// search that outputs the distance itself, so the rows found are fetched
// without their vectors (a vector is the widest thing in the row).
func TestVectorTopKFetchesNoVector(t *testing.T) {
	tbl := &storage.TableDesc{ID: 1, Name: "t", Columns: []storage.ColumnDesc{
		{Name: "id", Type: types.TypInt8}, {Name: "v", Type: types.VectorOf(3)}, {Name: "cat", Type: types.TypInt4},
	}}
	scan := &plan.Scan{Table: tbl, Cols: []int{0, 1, 2},
		Filter: &plan.Call{Op: plan.OpEq, Typ: types.TypBool, Args: []plan.Expr{
			&plan.ColRef{Idx: 2, Typ: types.TypInt4}, &plan.Const{Val: constInt(1)}}}}
	q := &plan.Const{Val: types.NewVec(types.VectorOf(3), 1)}
	dist := &plan.Call{Op: plan.OpL2Distance, Typ: types.TypFloat8, Args: []plan.Expr{&plan.ColRef{Idx: 1, Typ: types.VectorOf(3)}, q}}
	proj := &plan.Project{Input: scan, Exprs: []plan.Expr{&plan.ColRef{Idx: 0, Typ: types.TypInt8}, dist}, Names: []string{"id", "d"}}
	lim := &plan.Limit{Input: &plan.Sort{Input: proj, Keys: []plan.SortKey{{Col: 1}}}, Count: &plan.Const{Val: constInt(5)}}

	got := Optimize(lim).(*plan.Limit)
	p, ok := got.Input.(*plan.Project)
	if !ok {
		t.Fatalf("limit over %T, want a projection", got.Input)
	}
	vt, ok := p.Input.(*plan.VectorTopK)
	if !ok {
		t.Fatalf("projection over %T, want VectorTopK", p.Input)
	}
	if len(vt.Scan.Cols) != 1 || vt.Scan.Cols[0] != 0 || vt.Scan.Filter != nil {
		t.Errorf("rows fetched with columns %v (filter %v), want [0] and none", vt.Scan.Cols, vt.Scan.Filter)
	}
	if cols := vt.Columns(); len(cols) != 2 || cols[1].Type.Kind != types.TypFloat8.Kind {
		t.Fatalf("search outputs %v, want id and the distance", cols)
	}
	if r, ok := p.Exprs[1].(*plan.ColRef); !ok || r.Idx != 1 {
		t.Errorf("the distance is %v, want the search's column #1", p.Exprs[1])
	}
	if r, ok := p.Exprs[0].(*plan.ColRef); !ok || r.Idx != 0 {
		t.Errorf("id is %v, want #0", p.Exprs[0])
	}
	if got := vt.Search.Cols; len(got) != 2 || got[vt.SearchCol] != 1 {
		t.Errorf("search reads %v (vector at %d), want the vector and the filter's column", got, vt.SearchCol)
	}
}

func constInt(v int64) *types.Vec {
	c := types.NewVec(types.TypInt4, 1)
	c.AppendInt(v)
	return c
}
