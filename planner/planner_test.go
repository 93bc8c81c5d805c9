package planner

import (
	"reflect"
	"testing"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// The plans the rules choose are tested as golden EXPLAIN outputs in
// test/sqllogic/testdata (plan_*_deeplaked.test and others); this file
// keeps what a plan cannot show.

// TestOptimizeLeavesInput checks that Optimize copies what it rewrites
// rather than modifying its input, which the rules share between the
// trees they try (reorderJoins re-plans the inputs it takes apart) and
// which callers may plan again: each tree, optimized by the rules that
// apply to it, is deeply equal afterwards to a fresh copy of itself.
func TestOptimizeLeavesInput(t *testing.T) {
	i4, b := types.TypInt4, types.TypBool
	ref := func(i int) *plan.ColRef { return &plan.ColRef{Idx: i, Typ: i4} }
	call := func(op plan.Op, typ types.Type, args ...plan.Expr) *plan.Call {
		return &plan.Call{Op: op, Args: args, Typ: typ}
	}
	table := func(id uint64, name string, cols ...types.Type) *storage.TableDesc {
		d := &storage.TableDesc{ID: id, Name: name}
		for i, c := range cols {
			d.Columns = append(d.Columns, storage.ColumnDesc{Name: string(rune('a' + i)), Type: c})
		}
		return d
	}
	scan := func(d *storage.TableDesc) *plan.Scan {
		s := &plan.Scan{Table: d}
		for i := range d.Columns {
			s.Cols = append(s.Cols, i)
		}
		return s
	}
	for _, c := range []struct {
		name  string
		build func() plan.Node
	}{
		// count(*) over SELECT c FROM t WHERE d: the filter into the
		// scan, the scan's columns pruned.
		{"scan", func() plan.Node {
			t := table(1, "t", i4, i4, i4, b)
			return &plan.Aggregate{Input: &plan.Project{Input: &plan.Filter{Input: scan(t), Pred: &plan.ColRef{Idx: 3, Typ: b}},
				Exprs: []plan.Expr{ref(2)}, Names: []string{"c"}}, Aggs: []plan.AggCall{{Func: plan.AggCountStar, Typ: types.TypInt8}}}
		}},
		// SELECT b FROM t WHERE a > (SELECT max(a) FROM u): a filter
		// that reads a subquery, into the scan.
		{"subquery filter", func() plan.Node {
			agg := &plan.Aggregate{Input: scan(table(2, "u", i4)), Aggs: []plan.AggCall{{Func: plan.AggMax, Arg: ref(0), Typ: i4, Name: "max"}}}
			sq := &plan.Subquery{Kind: plan.SubScalar, Typ: i4, Plan: &plan.Project{Input: agg, Exprs: []plan.Expr{ref(0)}, Names: []string{"max"}}}
			f := &plan.Filter{Input: scan(table(1, "t", i4, i4)), Pred: call(plan.OpGt, b, ref(0), sq)}
			return &plan.Project{Input: f, Exprs: []plan.Expr{ref(1)}, Names: []string{"b"}}
		}},
		// SELECT b.b FROM a, b, c WHERE a.a = c.a AND b.a = c.b AND
		// (a.b = 1 OR a.b = 1 AND b.b = 2): the joins reordered, the
		// filters into them and their scans, the OR factored, hash keys,
		// the join's columns pruned.
		{"joins", func() plan.Node {
			cross := func(l, r plan.Node) *plan.Join { return &plan.Join{Kind: plan.JoinInner, Left: l, Right: r} }
			one, two := plan.IntConst(i4, 1), plan.IntConst(i4, 2)
			pred := call(plan.OpAnd, b, call(plan.OpEq, b, ref(0), ref(4)), call(plan.OpEq, b, ref(2), ref(5)),
				call(plan.OpOr, b, call(plan.OpEq, b, ref(1), one),
					call(plan.OpAnd, b, call(plan.OpEq, b, ref(1), one), call(plan.OpEq, b, ref(3), two))))
			from := cross(cross(scan(table(1, "a", i4, i4)), scan(table(2, "b", i4, i4))), scan(table(3, "c", i4, i4)))
			return &plan.Project{Input: &plan.Filter{Input: from, Pred: pred}, Exprs: []plan.Expr{ref(3)}, Names: []string{"b"}}
		}},
		// SELECT b FROM o WHERE b < (SELECT avg(b) FROM i WHERE i.a = o.a):
		// the subquery a join with i's rows grouped by a.
		{"scalar subquery", func() plan.Node {
			f8 := types.TypFloat8
			i := &plan.Filter{Input: scan(table(2, "i", i4, i4)), Pred: call(plan.OpEq, b, ref(0), &plan.Param{Idx: 0, Typ: i4})}
			avg := &plan.Aggregate{Input: i, Aggs: []plan.AggCall{{Func: plan.AggAvg, Arg: ref(1), Typ: f8, Name: "avg"}}}
			sq := &plan.Subquery{Kind: plan.SubScalar, Typ: f8, Args: []plan.Expr{ref(0)},
				Plan: &plan.Project{Input: avg, Exprs: []plan.Expr{&plan.ColRef{Idx: 0, Typ: f8}}, Names: []string{"avg"}}}
			cond := call(plan.OpLt, b, &plan.Cast{X: ref(1), Typ: f8}, sq)
			return &plan.Project{Input: &plan.Filter{Input: scan(table(1, "o", i4, i4)), Pred: cond}, Exprs: []plan.Expr{ref(1)}, Names: []string{"b"}}
		}},
		// SELECT a, b <-> q FROM t WHERE c = 1 ORDER BY 2 LIMIT 5: a
		// vector search.
		{"vector", func() plan.Node {
			vec := types.VectorOf(3)
			s := scan(table(1, "t", i4, vec, i4))
			s.Filter = call(plan.OpEq, b, ref(2), plan.IntConst(i4, 1))
			q := &plan.Const{Val: types.NewVec(vec, 1), Typ: vec}
			dist := call(plan.OpL2Distance, types.TypFloat8, &plan.ColRef{Idx: 1, Typ: vec}, q)
			p := &plan.Project{Input: s, Exprs: []plan.Expr{ref(0), dist}, Names: []string{"a", "d"}}
			return &plan.Limit{Input: &plan.Sort{Input: p, Keys: []plan.SortKey{{Col: 1}}}, Count: plan.IntConst(types.TypInt8, 5)}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := c.build()
			if reflect.DeepEqual(Optimize(in), in) {
				t.Fatalf("Optimize changed nothing: the case tests no rule")
			}
			if !reflect.DeepEqual(in, c.build()) {
				t.Errorf("Optimize modified its input")
			}
		})
	}
}
