package planner

import (
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

func ref(i int, t types.Type) *plan.ColRef { return &plan.ColRef{Idx: i, Typ: t} }

func gt(e plan.Expr, n int64) plan.Expr {
	return &plan.Call{Op: plan.OpGt, Typ: types.TypBool, Args: []plan.Expr{e, &plan.Const{Val: constInt(n)}}}
}

// TestFlattenSubquery: SELECT a FROM (SELECT a, b FROM t WHERE a > 1) q
// WHERE b > 2 becomes one projection over one scan whose filter is both
// conditions, the inner one first, reading only a and b; a condition over
// random() stays above the projection that computes it, and a projection
// that reads random() twice is not merged.
func TestFlattenSubquery(t *testing.T) {
	tbl := &storage.TableDesc{ID: 1, Name: "t", Columns: []storage.ColumnDesc{
		{Name: "a", Type: types.TypInt8}, {Name: "b", Type: types.TypInt8}, {Name: "c", Type: types.TypText},
	}}
	i8 := types.TypInt8
	scan := &plan.Scan{Table: tbl, Cols: []int{0, 1, 2}, Filter: gt(ref(0, i8), 1)}
	inner := &plan.Project{Input: scan, Exprs: []plan.Expr{ref(0, i8), ref(1, i8)}, Names: []string{"a", "b"}}
	outer := &plan.Project{Input: &plan.Filter{Input: inner, Pred: gt(ref(1, i8), 2)}, Exprs: []plan.Expr{ref(0, i8)}, Names: []string{"a"}}
	p, ok := Optimize(outer).(*plan.Project)
	if !ok {
		t.Fatalf("%T, want a projection", Optimize(outer))
	}
	s, ok := p.Input.(*plan.Scan)
	if !ok {
		t.Fatalf("projection over %T, want the scan", p.Input)
	}
	and, ok := s.Filter.(*plan.Call)
	if !ok || and.Op != plan.OpAnd || len(and.Args) != 2 || plan.ExprText(and.Args[0]) != plan.ExprText(gt(ref(0, i8), 1)) {
		t.Fatalf("scan filter %s, want the inner condition AND the outer one", plan.ExprText(s.Filter))
	}
	if len(s.Cols) != 2 || s.Cols[0] != 0 || s.Cols[1] != 1 {
		t.Fatalf("the scan reads columns %v, want [0 1]", s.Cols)
	}

	// WHERE r > 0.5 over SELECT a, random() AS r: the condition reads
	// random()'s value, so it stays above the projection.
	rnd := &plan.Call{Op: plan.OpRandom, Typ: types.TypFloat8}
	withRandom := &plan.Project{Input: &plan.Scan{Table: tbl, Cols: []int{0}}, Exprs: []plan.Expr{ref(0, i8), rnd}, Names: []string{"a", "r"}}
	cond := &plan.Call{Op: plan.OpGt, Typ: types.TypBool, Args: []plan.Expr{ref(1, types.TypFloat8), &plan.Const{Val: types.NewVec(types.TypFloat8, 1)}}}
	if f, ok := Optimize(&plan.Filter{Input: withRandom, Pred: cond}).(*plan.Filter); !ok {
		t.Fatalf("a condition on random() moved: %T", f)
	}
	// SELECT r, r FROM (SELECT random() AS r): one value, not two.
	twice := &plan.Project{Input: withRandom, Exprs: []plan.Expr{ref(1, types.TypFloat8), ref(1, types.TypFloat8)}, Names: []string{"r", "r"}}
	if p, ok := Optimize(twice).(*plan.Project); !ok || p.Input == nil {
		t.Fatal("no projection")
	} else if _, merged := p.Input.(*plan.Scan); merged {
		t.Fatal("a projection reading random() twice was merged into one that computes it twice")
	}
}
