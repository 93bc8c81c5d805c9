package planner

import (
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
)

// Plan returns the physical plan of a query: Optimize's, with each inner
// hash join building on its smaller input, then run by up to o.Workers
// workers where that cannot change its answer.
func Plan(n plan.Node, o Options) plan.Node {
	e := &estimator{tableRows: o.TableRows}
	return parallelize(e.buildSmaller(Optimize(n)), false, o.Workers)
}

// parallelize puts a Gather over each pipeline of filters and
// projections over a sequential scan whose rows' order does not matter:
// those below an aggregate whose result does not depend on the order of
// its input (and through the joins, filters and projections between
// them). orderFree says whether n's own output order matters to its
// consumer.
func parallelize(n plan.Node, orderFree bool, workers int) plan.Node {
	if workers < 2 {
		return n
	}
	if orderFree {
		if s, ok := parallelScan(n); ok {
			return &plan.Gather{Input: sharePipeline(n, workers), Scan: s, Workers: workers}
		}
	}
	switch n := n.(type) {
	case *plan.Aggregate:
		free := true
		for _, a := range n.Aggs {
			if a.Func == plan.AggStringAgg {
				free = false // string_agg's result follows its input's order
			}
		}
		c := *n
		if free {
			c = computeBelow(c)
			if s, ok := parallelScan(c.Input); ok && partialAggs(c.Aggs) {
				return splitAggregate(&c, s, workers)
			}
		}
		c.Input = parallelize(c.Input, free, workers)
		return &c
	case *plan.Filter, *plan.Project:
		return mapChildren(n, func(in plan.Node) plan.Node { return parallelize(in, orderFree, workers) })
	case *plan.Join:
		// A hash join's output follows its inputs' order.
		c := *n
		c.Left = parallelize(n.Left, orderFree, workers)
		c.Right = parallelize(n.Right, orderFree, workers)
		return &c
	}
	return mapChildren(n, func(in plan.Node) plan.Node { return parallelize(in, false, workers) })
}

// partialAggs reports whether every aggregate of aggs has a partial
// state (plan.AggCall.Partial).
func partialAggs(aggs []plan.AggCall) bool {
	for _, a := range aggs {
		if !a.Partial() {
			return false
		}
	}
	return true
}

// splitAggregate returns aggregate a, whose input is a pipeline over
// scan s, computed in two phases: each worker aggregates the rows it
// reads (a partial aggregate under a Gather), and a final aggregate
// combines what they hand on, by the same keys.
func splitAggregate(a *plan.Aggregate, s *plan.Scan, workers int) plan.Node {
	partial := *a
	partial.Phase = plan.AggPartial
	partial.Input = sharePipeline(a.Input, workers)
	return plan.FinalAggregate(&partial, &plan.Gather{Input: &partial, Scan: s, Workers: workers})
}

// parallelScan returns the scan at the bottom of n when n is a pipeline
// of filters, projections and hash joins probed with their left input
// over a sequential scan of a table, whose expressions workers can
// evaluate apart: no parameters of an enclosing query, no subqueries,
// nothing volatile or that reads the session (see sharedJoin for the
// joins).
func parallelScan(n plan.Node) (*plan.Scan, bool) {
	for {
		switch x := n.(type) {
		case *plan.Join:
			if !sharedJoin(x) {
				return nil, false
			}
			n = x.Left
		case *plan.Filter:
			if !parallelSafe(x.Pred) {
				return nil, false
			}
			n = x.Input
		case *plan.Project:
			for _, e := range x.Exprs {
				if !parallelSafe(e) {
					return nil, false
				}
			}
			n = x.Input
		case *plan.Scan:
			if x.Borrow || len(x.Hollow) > 0 || x.Table.AsOf != 0 || !parallelSafe(x.Filter) ||
				storage.LookupOf(x.Table, x.ZonePreds()) != storage.NoLookup {
				return nil, false
			}
			return x, true
		default:
			return nil, false
		}
	}
}

// sharedJoin reports whether the workers of a Gather can each probe join
// j with their rows and share one hash table, built from its right input
// by one of them: a hash join whose build rows' matches need not be
// known across workers (inner, left, semi, anti), with keys and
// condition workers can evaluate, over a right input that one worker can
// run beside the others (parallelTree).
func sharedJoin(j *plan.Join) bool {
	switch j.Kind {
	case plan.JoinInner, plan.JoinLeft, plan.JoinSemi, plan.JoinAnti:
	default:
		return false
	}
	if len(j.LeftKeys) == 0 || !parallelSafe(j.On) || !parallelTree(j.Right) {
		return false
	}
	for i := range j.LeftKeys {
		if !parallelSafe(j.LeftKeys[i]) || !parallelSafe(j.RightKeys[i]) {
			return false
		}
	}
	return true
}

// parallelTree reports whether every expression of plan n is one workers
// can evaluate (parallelSafe), in scans, filters, projections, joins and
// aggregates only.
func parallelTree(n plan.Node) bool {
	safe := true
	all := func(es []plan.Expr) {
		for _, e := range es {
			safe = safe && parallelSafe(e)
		}
	}
	var walk func(plan.Node) plan.Node
	walk = func(n plan.Node) plan.Node {
		switch x := n.(type) {
		case *plan.Scan:
			safe = safe && parallelSafe(x.Filter)
		case *plan.Filter:
			safe = safe && parallelSafe(x.Pred)
		case *plan.Project:
			all(x.Exprs)
		case *plan.Join:
			safe = safe && parallelSafe(x.On)
			all(x.LeftKeys)
			all(x.RightKeys)
		case *plan.Aggregate:
			all(x.GroupBy)
			for _, c := range x.Aggs {
				safe = safe && parallelSafe(c.Arg)
			}
		default:
			safe = false
		}
		if safe {
			mapChildren(n, walk)
		}
		return n
	}
	walk(n)
	return safe
}

// sharePipeline returns pipeline n (see parallelScan) for the workers of
// a Gather: each join in it shares its hash table among them
// (plan.Join.SharedBuild), and its right input, which one worker runs,
// is itself parallelized.
func sharePipeline(n plan.Node, workers int) plan.Node {
	switch x := n.(type) {
	case *plan.Join:
		c := *x
		c.SharedBuild = true
		c.Left = sharePipeline(x.Left, workers)
		// A hash table's rows' order does not matter.
		c.Right = parallelize(x.Right, true, workers)
		return &c
	case *plan.Filter, *plan.Project:
		return mapChildren(n, func(in plan.Node) plan.Node { return sharePipeline(in, workers) })
	}
	return n
}

// parallelFuncs are the functions workers may evaluate at once: they
// read their arguments only.
var parallelFuncs = map[string]bool{}

func init() {
	for _, f := range []string{"pi", "now", "statement_timestamp", "date_part", "extract", "date_trunc",
		"date_pli", "date_mii", "date_mi", "timestamp_pl_interval", "timestamp_mi_interval", "timestamp_mi",
		"interval_pl", "interval_mi", "interval_mul", "interval_div", "sqrt", "cbrt", "exp", "ln", "log10",
		"log", "sin", "cos", "tan", "cot", "asin", "acos", "atan", "atan2", "degrees", "radians", "floor",
		"ceil", "ceiling", "sign", "power", "pow", "round", "trunc", "mod", "greatest", "least", "concat",
		"concat_ws", "lpad", "rpad", "repeat", "reverse", "split_part", "chr", "ascii", "initcap", "md5",
		"octet_length", "starts_with", "translate", "to_hex", "position", "substring", "substr", "replace",
		"strpos", "left", "right", "btrim", "ltrim", "rtrim"} {
		parallelFuncs[f] = true
	}
}

// parallelSafe reports whether workers may evaluate e at once.
func parallelSafe(e plan.Expr) bool {
	safe := true
	Walk(e, func(x plan.Expr) {
		switch x := x.(type) {
		case *plan.ColRef, *plan.Cast, *plan.Case:
		case *plan.Const:
			safe = safe && x.Param == nil
		case *plan.Call:
			safe = safe && x.Op != plan.OpRandom
		case *plan.Func:
			safe = safe && parallelFuncs[x.Name]
		default:
			safe = false
		}
	})
	return safe
}

// computeBelow moves the group keys and arguments of aggregate a that
// are not plain columns into a projection under it, when its input is a
// pipeline the workers of a Gather run: they then compute them (TPC-H's
// sum(l_extendedprice * (1 - l_discount) * (1 + l_tax))), and the
// aggregate reads columns.
func computeBelow(a plan.Aggregate) plan.Aggregate {
	if _, ok := parallelScan(a.Input); !ok {
		return a
	}
	computed := false
	var exprs []plan.Expr
	for _, g := range a.GroupBy {
		exprs = append(exprs, g)
	}
	for _, c := range a.Aggs {
		if c.Arg != nil {
			exprs = append(exprs, c.Arg)
		}
	}
	for _, e := range exprs {
		if !parallelSafe(e) {
			return a
		}
		if _, ok := e.(*plan.ColRef); !ok {
			computed = true
		}
	}
	if !computed {
		return a
	}
	p := &plan.Project{Input: a.Input, Exprs: exprs, Names: make([]string, len(exprs))}
	ref := func(i int, e plan.Expr) plan.Expr {
		p.Names[i] = plan.ExprText(e)
		return &plan.ColRef{Idx: i, Typ: e.Type(), Name: p.Names[i]}
	}
	a.Input = p
	a.GroupBy = append([]plan.Expr(nil), a.GroupBy...)
	for i, g := range a.GroupBy {
		a.GroupBy[i] = ref(i, g)
	}
	a.Aggs = append([]plan.AggCall(nil), a.Aggs...)
	k := len(a.GroupBy)
	for i := range a.Aggs {
		if a.Aggs[i].Arg != nil {
			a.Aggs[i].Arg = ref(k, a.Aggs[i].Arg)
			k++
		}
	}
	return a
}
