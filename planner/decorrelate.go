package planner

import "github.com/deeplaked/deeplaked/plan"

// Decorrelation. A conjunct EXISTS (subquery) or NOT EXISTS (subquery) of
// a filter, whose subquery reads the outer row only in conjuncts of its
// WHERE (as TPC-H's queries 4, 21 and 22 write them), becomes a semi or an
// anti join of the filter's input with the subquery's rows: its
// correlated conjuncts are the join's condition (equalities hash keys),
// so the subquery's table is read once, not once per outer row. Scalar
// subqueries that aggregate become joins too (decorrelate_scalar.go). A
// subquery of any other shape runs per row as before.

// decorrelate rewrites the EXISTS conjuncts of filter n it can, then the
// conjuncts that read scalar aggregate subqueries.
func decorrelate(n plan.Node) plan.Node {
	f, ok := n.(*plan.Filter)
	if !ok {
		return n
	}
	input := f.Input
	var keep []plan.Expr
	changed := false
	for _, c := range conjuncts(f.Pred, nil) {
		sq, anti := existsOf(c)
		if sq != nil {
			if j, ok := semiJoin(input, sq, anti); ok {
				input, changed = j, true
				continue
			}
		}
		keep = append(keep, c)
	}
	if out, ok := joinAggregates(input, keep); ok {
		return out
	}
	if !changed {
		return n
	}
	if len(keep) == 0 {
		return input
	}
	return &plan.Filter{Input: input, Pred: and(keep)}
}

// existsOf returns the subquery of EXISTS (subquery) or NOT EXISTS
// (subquery), and whether it is negated.
func existsOf(e plan.Expr) (*plan.Subquery, bool) {
	anti := false
	if c, ok := e.(*plan.Call); ok && c.Op == plan.OpNot && len(c.Args) == 1 {
		e, anti = c.Args[0], true
	}
	if sq, ok := e.(*plan.Subquery); ok && sq.Kind == plan.SubExists && len(sq.Args) > 0 {
		return sq, anti
	}
	return nil, false
}

// semiJoin returns the semi (anti) join of left with sq's rows, when sq's
// plan is a filter, perhaps under a projection, whose input reads no
// parameter of the outer row.
func semiJoin(left plan.Node, sq *plan.Subquery, anti bool) (plan.Node, bool) {
	p := sq.Plan
	if pr, ok := p.(*plan.Project); ok {
		p = pr.Input // EXISTS ignores what the subquery selects
	}
	f, ok := p.(*plan.Filter)
	if !ok || readsParams(f.Input) {
		return nil, false
	}
	nl := len(left.Columns())
	inner, correlated, ok := splitCorrelated(f.Pred)
	if !ok {
		return nil, false
	}
	var cond []plan.Expr
	for _, c := range correlated {
		// Over the join's row: the outer row's columns (the arguments the
		// parameters stand for), then the subquery's input's.
		cond = append(cond, mapLeaves(c, func(x plan.Expr) plan.Expr {
			switch x := x.(type) {
			case *plan.ColRef:
				r := *x
				r.Idx += nl
				return &r
			case *plan.Param:
				return sq.Args[x.Idx]
			}
			return x
		}))
	}
	if len(cond) == 0 {
		return nil, false
	}
	var right plan.Node = f.Input
	if len(inner) > 0 {
		right = &plan.Filter{Input: f.Input, Pred: and(inner)}
	}
	kind := plan.JoinSemi
	if anti {
		kind = plan.JoinAnti
	}
	return hashJoinKeys(&plan.Join{Kind: kind, Left: left, Right: Optimize(right), On: and(cond)}), true
}

func exprReadsParams(e plan.Expr) bool {
	found := false
	Walk(e, func(x plan.Expr) {
		if _, ok := x.(*plan.Param); ok {
			found = true
		}
	})
	return found
}

// readsParams reports whether plan n reads a parameter (or may: nodes it
// does not know count as reading one).
func readsParams(n plan.Node) bool {
	switch n := n.(type) {
	case *plan.Scan:
		return n.Filter != nil && exprReadsParams(n.Filter)
	case *plan.Filter:
		return exprReadsParams(n.Pred) || readsParams(n.Input)
	case *plan.Project:
		for _, e := range n.Exprs {
			if exprReadsParams(e) {
				return true
			}
		}
		return readsParams(n.Input)
	case *plan.Join:
		for _, e := range append(append([]plan.Expr{n.On}, n.LeftKeys...), n.RightKeys...) {
			if e != nil && exprReadsParams(e) {
				return true
			}
		}
		return readsParams(n.Left) || readsParams(n.Right)
	}
	return true
}

// splitCorrelated splits the conjuncts of a subquery's WHERE into those
// over its own input alone (inner) and those that read the outer row
// (correlated); ok is false when one reads a subquery or a volatile
// function, which cannot move into a join.
func splitCorrelated(pred plan.Expr) (inner, correlated []plan.Expr, ok bool) {
	for _, c := range conjuncts(pred, nil) {
		if hasSubquery(c) || volatile(c) {
			return nil, nil, false
		}
		if exprReadsParams(c) {
			correlated = append(correlated, c)
		} else {
			inner = append(inner, c)
		}
	}
	return inner, correlated, true
}
