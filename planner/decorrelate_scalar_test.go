package planner

import (
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// aggSubqueryCase builds WHERE <cond over v and the subquery> over
// o (k int, v int), the subquery aggregating i (k int, k2 int, x int).
type aggSubqueryCase struct {
	name string
	// agg is the subquery's aggregate; value its select item over it.
	agg   plan.AggCall
	value func(agg plan.Expr) plan.Expr
	// where is the subquery's WHERE over i's columns and $1 (o.k).
	where plan.Expr
	// groupBy, when set, groups the subquery.
	groupBy []plan.Expr
	// cond is the outer condition over v and the subquery's value.
	cond func(v, sq plan.Expr) plan.Expr
	// kind is the join expected; 0 for none (the subquery runs per row).
	kind plan.JoinKind
}

func TestDecorrelateScalarAggregate(t *testing.T) {
	i4, i8, f8, b := types.TypInt4, types.TypInt8, types.TypFloat8, types.TypBool
	call := func(op plan.Op, typ types.Type, args ...plan.Expr) plan.Expr {
		return &plan.Call{Op: op, Args: args, Typ: typ}
	}
	param := &plan.Param{Idx: 0, Typ: i4}
	keyEq := call(plan.OpEq, b, ref(0, i4), param)
	avg := plan.AggCall{Func: plan.AggAvg, Arg: ref(2, i4), Typ: f8, Name: "avg"}
	same := func(a plan.Expr) plan.Expr { return a }
	less := func(v, sq plan.Expr) plan.Expr { return call(plan.OpLt, b, &plan.Cast{X: v, Typ: f8}, sq) }
	cases := []aggSubqueryCase{
		{name: "avg", agg: avg, value: same, where: keyEq, cond: less, kind: plan.JoinInner},
		{name: "key on the right, 0.2 * avg, a condition of its own", agg: avg,
			value: func(a plan.Expr) plan.Expr { return call(plan.OpMul, f8, plan.FloatConst(0.2), a) },
			where: call(plan.OpAnd, b, call(plan.OpEq, b, param, ref(0, i4)), gt(ref(2, i4), 1)),
			cond:  less, kind: plan.JoinInner},
		{name: "count is 0 on no row", agg: plan.AggCall{Func: plan.AggCountStar, Typ: i8, Name: "count"}, value: same, where: keyEq,
			cond: func(v, sq plan.Expr) plan.Expr { return call(plan.OpLt, b, &plan.Cast{X: v, Typ: i8}, sq) }, kind: plan.JoinLeft},
		{name: "IS NULL is true on no row", agg: avg, value: same, where: keyEq,
			cond: func(v, sq plan.Expr) plan.Expr { return call(plan.OpIsNull, b, sq) }, kind: plan.JoinLeft},
		{name: "coalesce is not NULL on no row", agg: avg,
			value: func(a plan.Expr) plan.Expr { return call(plan.OpCoalesce, f8, a, plan.FloatConst(0)) },
			where: keyEq, cond: less, kind: plan.JoinLeft},
		{name: "an inequality with the outer row", agg: avg, value: same,
			where: call(plan.OpLt, b, ref(0, i4), param), cond: less},
		{name: "an argument that can fail", value: same, where: keyEq, cond: less,
			agg: plan.AggCall{Func: plan.AggSum, Arg: call(plan.OpDiv, i4, plan.IntConst(i4, 10), ref(2, i4)), Typ: i8, Name: "sum"}},
		{name: "a value that reads the outer row", agg: avg, where: keyEq, cond: less,
			value: func(a plan.Expr) plan.Expr { return call(plan.OpAdd, f8, a, &plan.Cast{X: param, Typ: f8}) }},
		{name: "GROUP BY", agg: avg, value: same, where: keyEq, cond: less, groupBy: []plan.Expr{ref(1, i4)}},
		{name: "keys whose type groups other than =", agg: avg, value: same, cond: less,
			where: call(plan.OpEq, b, &plan.Cast{X: ref(0, i4), Typ: types.Type{Kind: types.Interval}},
				&plan.Cast{X: param, Typ: types.Type{Kind: types.Interval}})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inner := &plan.Scan{Table: &storage.TableDesc{ID: 2, Name: "i", Columns: []storage.ColumnDesc{
				{Name: "k", Type: i4}, {Name: "k2", Type: i4}, {Name: "x", Type: i4},
			}}, Cols: []int{0, 1, 2}}
			outer := &plan.Scan{Table: &storage.TableDesc{ID: 1, Name: "o", Columns: []storage.ColumnDesc{
				{Name: "k", Type: i4}, {Name: "v", Type: i4},
			}}, Cols: []int{0, 1}}
			agg := &plan.Aggregate{Input: &plan.Filter{Input: inner, Pred: c.where}, GroupBy: c.groupBy, Aggs: []plan.AggCall{c.agg}}
			aggRef := &plan.ColRef{Idx: len(c.groupBy), Typ: c.agg.Typ, Name: c.agg.Name}
			val := c.value(aggRef)
			sq := &plan.Subquery{Kind: plan.SubScalar, Typ: val.Type(), Args: []plan.Expr{ref(0, i4)},
				Plan: &plan.Project{Input: agg, Exprs: []plan.Expr{val}, Names: []string{"v"}}}
			n := &plan.Project{Input: &plan.Filter{Input: outer, Pred: c.cond(ref(1, i4), sq)},
				Exprs: []plan.Expr{ref(1, i4)}, Names: []string{"v"}}
			got := Optimize(n)
			j := findJoin(got)
			if c.kind == 0 {
				if j != nil {
					t.Fatalf("a join of kind %d; want the subquery per row", j.Kind)
				}
				return
			}
			if j == nil {
				t.Fatalf("no join in %#v", got)
			}
			if j.Kind != c.kind {
				t.Errorf("join kind %d, want %d", j.Kind, c.kind)
			}
			a, ok := j.Right.(*plan.Aggregate)
			if !ok || len(a.GroupBy) != 1 || len(j.LeftKeys) != 1 {
				t.Fatalf("join of %T with %d keys, want a hash join with the aggregate grouped by i.k", j.Right, len(j.LeftKeys))
			}
			if _, ok := a.Input.(*plan.Scan); !ok {
				t.Errorf("aggregate over %T, want the scan of i", a.Input)
			}
			if len(got.Columns()) != 1 {
				t.Errorf("%d columns, want 1", len(got.Columns()))
			}
			found := false
			walkNodes(got, func(n plan.Node) {
				if f, ok := n.(*plan.Filter); ok && hasSubquery(f.Pred) {
					found = true
				}
				if j, ok := n.(*plan.Join); ok && j.On != nil && hasSubquery(j.On) {
					found = true
				}
			})
			if found {
				t.Errorf("a subquery is left in the plan")
			}
		})
	}
}

func findJoin(n plan.Node) *plan.Join {
	var j *plan.Join
	walkNodes(n, func(n plan.Node) {
		if x, ok := n.(*plan.Join); ok && j == nil {
			j = x
		}
	})
	return j
}

func walkNodes(n plan.Node, fn func(plan.Node)) {
	fn(n)
	mapChildren(n, func(c plan.Node) plan.Node {
		walkNodes(c, fn)
		return c
	})
}
