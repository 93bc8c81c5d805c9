package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/types"
)

// TestExplainActual checks how EXPLAIN ANALYZE's measurements end the
// lines: per-loop averages of the times (milliseconds, three decimals)
// and rows, "never executed" for a node that never ran, and the
// measurements of a hidden projection on the line of the node below it.
func TestExplainActual(t *testing.T) {
	vals := &Values{Cols: []Column{{Name: "x", Type: types.TypInt8}}, Rows: [][]Expr{{IntConst(types.TypInt8, 1)}, {IntConst(types.TypInt8, 2)}}}
	series := &Series{Start: IntConst(types.TypInt8, 1), Stop: IntConst(types.TypInt8, 3), Typ: types.TypInt8, Name: "g"}
	proj := &Project{Input: series, Exprs: []Expr{&ColRef{Idx: 0, Typ: types.TypInt8, Name: "g"}}}
	join := &Join{Kind: JoinInner, Left: vals, Right: proj,
		LeftKeys: []Expr{&ColRef{Idx: 0, Typ: types.TypInt8}}, RightKeys: []Expr{&ColRef{Idx: 0, Typ: types.TypInt8}}}
	limit := &Limit{Input: join, Count: IntConst(types.TypInt8, 1)}
	actual := map[Node]Actual{
		limit: {Loops: 1, Rows: 1, Startup: 1500 * time.Microsecond, Total: 2 * time.Millisecond},
		join:  {Loops: 1, Rows: 2, Startup: 1400 * time.Microsecond, Total: 1900 * time.Microsecond},
		// The projection's, not the series' own.
		proj:   {Loops: 4, Rows: 10, Startup: 4 * time.Microsecond, Total: 4*time.Millisecond + 2*time.Microsecond},
		series: {Loops: 4, Rows: 10, Startup: time.Microsecond, Total: time.Millisecond},
	}
	get := func(n Node) Actual { return actual[n] }
	for _, c := range []struct {
		opts ExplainOptions
		want []string
	}{
		{ExplainOptions{}, []string{
			"Limit",
			"  ->  Hash Join",
			"        ->  Values Scan",
			"        ->  Function Scan on generate_series",
		}},
		{ExplainOptions{Actual: get, Timing: true}, []string{
			"Limit (actual time=1.500..2.000 rows=1 loops=1)",
			"  ->  Hash Join (actual time=1.400..1.900 rows=2 loops=1)",
			"        ->  Values Scan (never executed)",
			"        ->  Function Scan on generate_series (actual time=0.001..1.000 rows=2 loops=4)",
		}},
		{ExplainOptions{Actual: get}, []string{
			"Limit (actual rows=1 loops=1)",
			"  ->  Hash Join (actual rows=2 loops=1)",
			"        ->  Values Scan (never executed)",
			"        ->  Function Scan on generate_series (actual rows=2 loops=4)",
		}},
	} {
		if got := ExplainWith(limit, c.opts); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
}

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

// TestExplainTopN checks a top-k sort's Top-N line: the rows it keeps,
// LIMIT plus OFFSET when both are constants, their sum's terms when a
// parameter is bound later.
func TestExplainTopN(t *testing.T) {
	vals := &Values{Cols: []Column{{Name: "x", Type: types.TypInt8}}, Rows: [][]Expr{{IntConst(types.TypInt8, 1)}}}
	param := &Const{Typ: types.TypInt8, Null: true, Param: &ParamInfo{N: 1, Type: types.TypInt8}}
	for _, c := range []struct {
		topK *TopK
		want string
	}{
		{&TopK{Count: IntConst(types.TypInt8, 10)}, "Top-N: 10"},
		{&TopK{Count: IntConst(types.TypInt8, 10), Offset: IntConst(types.TypInt8, 5)}, "Top-N: 15"},
		{&TopK{Count: param}, "Top-N: $1"},
		{&TopK{Count: param, Offset: IntConst(types.TypInt8, 5)}, "Top-N: $1 + 5"},
		{&TopK{Count: IntConst(types.TypInt8, 1<<62), Offset: IntConst(types.TypInt8, 1<<62)}, "Top-N: 4611686018427387904 + 4611686018427387904"},
	} {
		got := Explain(&Sort{Input: vals, Keys: []SortKey{{Col: 0, Desc: true, NullsFirst: true}}, TopK: c.topK})
		want := []string{"Sort", "  Sort Key: x DESC", "  " + c.want, "  ->  Result"}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
