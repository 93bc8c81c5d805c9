package planner

import "github.com/deeplaked/deeplaked/plan"

// flattenSubquery merges what a subquery in FROM leaves between an outer
// query and its table, SELECT ... FROM (SELECT ... FROM t WHERE ...) AS q
// WHERE ...:
//   - a Filter sinks below a Project (its condition rewritten onto the
//     projection's input) and below a Sort, into the scan when it gets
//     there (ANDed with the scan's own filter);
//   - a Project over a Project becomes one, and its scan reads only the
//     columns the merged projection needs.
//
// The query then has the shape of a query of one table's rows, which the
// tensor stream reads by row groups (sharded, shuffled, resumed without
// reading what it skips). An expression is moved or copied only when it
// is computed from its row alone (plan.RowWise): random() is neither
// evaluated twice nor on other rows; a condition with a subquery stays
// where it is.
func flattenSubquery(n plan.Node) plan.Node {
	switch n := n.(type) {
	case *plan.Filter:
		return sinkFilter(n.Pred, n.Input)
	case *plan.Project:
		in := n.Input
		if f, ok := in.(*plan.Filter); ok {
			in = sinkFilter(f.Pred, f.Input)
		}
		inner, ok := in.(*plan.Project)
		if !ok || !referencedDeterministic(n.Exprs, inner.Exprs) || anySubquery(n.Exprs) {
			if in == n.Input {
				return n
			}
			c := *n
			c.Input = in
			return &c
		}
		c := *n
		c.Input = inner.Input
		c.Exprs = make([]plan.Expr, len(n.Exprs))
		for i, e := range n.Exprs {
			c.Exprs[i] = substitute(e, inner.Exprs)
		}
		if _, ok := c.Input.(*plan.Scan); ok {
			return pruneScanColumns(&c)
		}
		return &c
	}
	return n
}

// sinkFilter returns input filtered by pred, with the filter as far down
// as it can go (see flattenSubquery).
func sinkFilter(pred plan.Expr, input plan.Node) plan.Node {
	if hasSubquery(pred) {
		return &plan.Filter{Input: input, Pred: pred}
	}
	switch in := input.(type) {
	case *plan.Project:
		if !referencedDeterministic([]plan.Expr{pred}, in.Exprs) {
			break
		}
		c := *in
		c.Input = sinkFilter(substitute(pred, in.Exprs), in.Input)
		return &c
	case *plan.Sort:
		c := *in
		c.Input = sinkFilter(pred, in.Input)
		return &c
	case *plan.Filter:
		return sinkFilter(and([]plan.Expr{in.Pred, pred}), in.Input)
	case *plan.Scan:
		c := *in
		if c.Filter == nil {
			c.Filter = pred
		} else {
			c.Filter = and([]plan.Expr{c.Filter, pred})
		}
		return &c
	}
	return &plan.Filter{Input: input, Pred: pred}
}

// referencedDeterministic reports whether every expression of exprs that
// es refer to (by column reference) is computed from its row alone
// (plan.RowWise).
func referencedDeterministic(es, exprs []plan.Expr) bool {
	ok := true
	for _, e := range es {
		Walk(e, func(x plan.Expr) {
			if r, isRef := x.(*plan.ColRef); isRef && (r.Idx >= len(exprs) || !plan.RowWise(exprs[r.Idx])) {
				ok = false
			}
		})
	}
	return ok
}

// substitute returns e with every column reference i replaced by exprs[i].
func substitute(e plan.Expr, exprs []plan.Expr) plan.Expr {
	return mapRefs(e, func(r *plan.ColRef) plan.Expr { return exprs[r.Idx] })
}

func anySubquery(es []plan.Expr) bool {
	for _, e := range es {
		if hasSubquery(e) {
			return true
		}
	}
	return false
}
