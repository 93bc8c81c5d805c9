package plan

import (
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/types"
)

// TestExplainSubqueries checks how subqueries show: numbered as met,
// referred to as PostgreSQL 17 refers to them, their plans under the
// node that reads them (InitPlans before its children, SubPlans after),
// their Params as the outer expressions they stand for.
func TestExplainSubqueries(t *testing.T) {
	x := &ColRef{Idx: 0, Typ: types.TypInt8, Name: "x"}
	one := &Values{Cols: []Column{{Name: "y", Type: types.TypInt8}}, Rows: [][]Expr{{IntConst(types.TypInt8, 1)}}}
	scalar := &Subquery{Kind: SubScalar, Plan: one, Typ: types.TypInt8}
	correlated := &Subquery{Kind: SubExists, Typ: types.TypBool, Args: []Expr{x},
		Plan: &Filter{Input: one, Pred: &Call{Op: OpEq, Typ: types.TypBool, Args: []Expr{&ColRef{Idx: 0, Typ: types.TypInt8, Name: "y"}, &Param{Idx: 0, Typ: types.TypInt8}}}}}
	in := &Subquery{Kind: SubAny, Op: OpEq, Test: x, Plan: one, Typ: types.TypBool}
	series := &Series{Start: IntConst(types.TypInt8, 1), Stop: IntConst(types.TypInt8, 3), Typ: types.TypInt8, Name: "x"}
	n := &Project{Input: &Filter{Input: series, Pred: &Call{Op: OpAnd, Typ: types.TypBool, Args: []Expr{
		&Call{Op: OpGt, Typ: types.TypBool, Args: []Expr{x, scalar}}, in}}},
		Exprs: []Expr{x, correlated}}
	want := []string{
		"Filter",
		"  Filter: ((x > (InitPlan 1).col1) AND (ANY (x = (SubPlan 2).col1)))",
		"  InitPlan 1",
		"    ->  Result",
		"  ->  Function Scan on generate_series",
		"  SubPlan 2",
		"    ->  Result",
		"  SubPlan 3",
		"    ->  Filter",
		"          Filter: (y = x)",
		"          ->  Result",
	}
	if got := Explain(n); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := ExprText(&Call{Op: OpNot, Typ: types.TypBool, Args: []Expr{correlated}}); got != "(NOT EXISTS(SubPlan 1))" {
		t.Errorf("ExprText: %s", got)
	}
}
