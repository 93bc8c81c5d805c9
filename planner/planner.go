// Package planner turns the bound logical plan into the physical plan exec
// runs. Rules are listed as data in rules; each rewrites the tree bottom-up.
package planner

import "github.com/deeplaked/deeplaked/plan"

// rule rewrites one node whose children are already rewritten.
type rule struct {
	name  string
	apply func(plan.Node) plan.Node
}

// rules run in order on every node.
var rules = []rule{
	{name: "hash join keys", apply: hashJoinKeys},
	{name: "flatten subqueries", apply: flattenSubquery},
	{name: "push filter into scan", apply: pushFilterIntoScan},
	{name: "prune scan columns", apply: pruneScanColumns},
	{name: "prune join columns", apply: pruneJoinColumns},
	{name: "vector top-k", apply: vectorTopK},
	{name: "sort top-k", apply: sortTopK},
	{name: "partition top-k", apply: partitionTopK},
}

// Optimize returns the physical plan for n.
func Optimize(n plan.Node) plan.Node {
	n = mapChildren(n, Optimize)
	// EXISTS subqueries that can be joins are, before subquery plans are
	// optimized on their own (neither is a rule: they recurse into
	// Optimize).
	n = decorrelate(n)
	n = optimizeSubqueries(n)
	// Neither of these is a rule: they optimize the filters they create.
	// The joins under a filter are ordered while the filter still holds
	// the WHERE's conditions, before they are placed in the joins.
	n = reorderJoins(n)
	n = pushFilterIntoJoin(n)
	for _, r := range rules {
		n = r.apply(n)
	}
	return n
}

func mapChildren(n plan.Node, fn func(plan.Node) plan.Node) plan.Node {
	switch n := n.(type) {
	case *plan.Filter:
		c := *n
		c.Input = fn(n.Input)
		return &c
	case *plan.Project:
		c := *n
		c.Input = fn(n.Input)
		return &c
	case *plan.Aggregate:
		c := *n
		c.Input = fn(n.Input)
		return &c
	case *plan.Sort:
		c := *n
		c.Input = fn(n.Input)
		return &c
	case *plan.Window:
		c := *n
		c.Input = fn(n.Input)
		return &c
	case *plan.PartitionTopK:
		c := *n
		c.Input = fn(n.Input)
		return &c
	case *plan.Limit:
		c := *n
		c.Input = fn(n.Input)
		return &c
	case *plan.Insert:
		c := *n
		c.Input = fn(n.Input)
		return &c
	case *plan.Join:
		c := *n
		c.Left = fn(n.Left)
		c.Right = fn(n.Right)
		return &c
	case *plan.ProjectSet:
		c := *n
		c.Input = fn(n.Input)
		return &c
	case *plan.SetOp:
		c := *n
		c.Left = fn(n.Left)
		c.Right = fn(n.Right)
		return &c
	case *plan.LateralJoin:
		c := *n
		c.Left = fn(n.Left)
		c.Right = fn(n.Right)
		return &c
	case *plan.Materialize:
		c := *n
		c.Input = fn(n.Input)
		return &c
	case *plan.RecursiveUnion:
		c := *n
		c.Base = fn(n.Base)
		c.Recursive = fn(n.Recursive)
		return &c
	case *plan.Append:
		c := *n
		c.Inputs = make([]plan.Node, len(n.Inputs))
		for i, in := range n.Inputs {
			c.Inputs[i] = fn(in)
		}
		return &c
	}
	return n
}

// pushFilterIntoScan merges Filter(Scan) into a Scan with a predicate, so the
// scan can skip rows (and, later, chunks) before they reach other operators.
func pushFilterIntoScan(n plan.Node) plan.Node {
	f, ok := n.(*plan.Filter)
	if !ok {
		return n
	}
	s, ok := f.Input.(*plan.Scan)
	if !ok || s.Filter != nil {
		return n
	}
	c := *s
	c.Filter = f.Pred
	return &c
}

// pruneScanColumns narrows a scan to the columns its consumer reads and
// renumbers the consumer's column references.
func pruneScanColumns(n plan.Node) plan.Node {
	switch p := n.(type) {
	case *plan.Project:
		s, ok := p.Input.(*plan.Scan)
		if !ok {
			return n
		}
		ns, remap := narrow(s, p.Exprs)
		c := *p
		c.Input = ns
		c.Exprs = remapAll(p.Exprs, remap)
		return &c
	case *plan.Aggregate:
		s, ok := p.Input.(*plan.Scan)
		if !ok {
			return n
		}
		exprs := append([]plan.Expr{}, p.GroupBy...)
		for _, a := range p.Aggs {
			if a.Arg != nil {
				exprs = append(exprs, a.Arg)
			}
		}
		ns, remap := narrow(s, exprs)
		c := *p
		c.Input = ns
		c.GroupBy = remapAll(p.GroupBy, remap)
		c.Aggs = append([]plan.AggCall{}, p.Aggs...)
		for i := range c.Aggs {
			if c.Aggs[i].Arg != nil {
				c.Aggs[i].Arg = Remap(c.Aggs[i].Arg, remap)
			}
		}
		return &c
	}
	return n
}

// narrow returns a copy of s reading only the columns exprs and s.Filter use
// (at least one, so row counts survive), and the old→new position map.
func narrow(s *plan.Scan, exprs []plan.Expr) (*plan.Scan, []int) {
	used := make([]bool, len(s.Cols))
	for _, e := range exprs {
		markUsed(e, used)
	}
	if s.Filter != nil {
		markUsed(s.Filter, used)
	}
	remap := make([]int, len(s.Cols))
	var cols []int
	for i, u := range used {
		remap[i] = -1
		if u {
			remap[i] = len(cols)
			cols = append(cols, s.Cols[i])
		}
	}
	if len(cols) == 0 && len(s.Cols) > 0 {
		remap[0] = 0
		cols = append(cols, s.Cols[0])
	}
	c := *s
	c.Cols = cols
	if s.Filter != nil {
		c.Filter = Remap(s.Filter, remap)
	}
	return &c, remap
}

func markUsed(e plan.Expr, used []bool) {
	Walk(e, func(x plan.Expr) {
		if r, ok := x.(*plan.ColRef); ok && r.Idx < len(used) {
			used[r.Idx] = true
		}
	})
}

func remapAll(es []plan.Expr, remap []int) []plan.Expr {
	out := make([]plan.Expr, len(es))
	for i, e := range es {
		out[i] = Remap(e, remap)
	}
	return out
}

// Walk calls fn on e and every expression below it.
func Walk(e plan.Expr, fn func(plan.Expr)) {
	if e == nil {
		return
	}
	fn(e)
	switch e := e.(type) {
	case *plan.Call:
		for _, a := range e.Args {
			Walk(a, fn)
		}
	case *plan.Cast:
		Walk(e.X, fn)
	case *plan.Case:
		for _, w := range e.Whens {
			Walk(w.Cond, fn)
			Walk(w.Result, fn)
		}
		Walk(e.Else, fn)
	case *plan.Func:
		for _, a := range e.Args {
			Walk(a, fn)
		}
	case *plan.Subquery:
		// The plan reads its own input; only Test and Args read ours.
		Walk(e.Test, fn)
		for _, a := range e.Args {
			Walk(a, fn)
		}
	}
}

// Remap returns e with every column reference i renumbered to remap[i].
func Remap(e plan.Expr, remap []int) plan.Expr {
	return mapRefs(e, func(r *plan.ColRef) plan.Expr {
		c := *r
		c.Idx = remap[r.Idx]
		return &c
	})
}

// mapRefs returns e with every column reference r replaced by fn(r); the
// rest of e is copied where it changes, never modified.
func mapRefs(e plan.Expr, fn func(*plan.ColRef) plan.Expr) plan.Expr {
	return mapLeaves(e, func(x plan.Expr) plan.Expr {
		if r, ok := x.(*plan.ColRef); ok {
			return fn(r)
		}
		return x
	})
}

// mapLeaves returns e with every column reference and parameter x
// replaced by fn(x); the rest of e is copied where it changes. A subquery
// is offered to fn too: one fn returns as it is has its arguments and
// test mapped.
func mapLeaves(e plan.Expr, fn func(plan.Expr) plan.Expr) plan.Expr {
	all := func(es []plan.Expr) []plan.Expr {
		out := make([]plan.Expr, len(es))
		for i, e := range es {
			out[i] = mapLeaves(e, fn)
		}
		return out
	}
	switch e := e.(type) {
	case *plan.ColRef, *plan.Param:
		return fn(e)
	case *plan.Call:
		c := *e
		c.Args = all(e.Args)
		return &c
	case *plan.Cast:
		c := *e
		c.X = mapLeaves(e.X, fn)
		return &c
	case *plan.Case:
		c := *e
		c.Whens = make([]plan.When, len(e.Whens))
		for i, w := range e.Whens {
			c.Whens[i] = plan.When{Cond: mapLeaves(w.Cond, fn), Result: mapLeaves(w.Result, fn)}
		}
		if e.Else != nil {
			c.Else = mapLeaves(e.Else, fn)
		}
		return &c
	case *plan.Func:
		c := *e
		c.Args = all(e.Args)
		return &c
	case *plan.Subquery:
		if x := fn(e); x != plan.Expr(e) {
			return x
		}
		// The plan reads its own input; only Test and Args read ours.
		c := *e
		c.Args = all(e.Args)
		if e.Test != nil {
			c.Test = mapLeaves(e.Test, fn)
		}
		return &c
	}
	return e
}
