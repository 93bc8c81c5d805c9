package planner

import (
	"slices"

	"github.com/deeplaked/deeplaked/plan"
)

// hashJoinKeys moves the equalities of a join condition that compare an
// expression of the left input with one of the right input into the join's
// hash keys; what remains of the condition is checked on each hashed match.
func hashJoinKeys(n plan.Node) plan.Node {
	j, ok := n.(*plan.Join)
	if !ok || j.On == nil {
		return n
	}
	nl := len(j.Left.Columns())
	nr := len(j.Right.Columns())
	var rest []plan.Expr
	c := *j
	c.LeftKeys = append([]plan.Expr{}, j.LeftKeys...)
	c.RightKeys = append([]plan.Expr{}, j.RightKeys...)
	for _, cond := range conjuncts(j.On, nil) {
		eq, ok := cond.(*plan.Call)
		if ok && eq.Op == plan.OpEq && eq.Args[0].Type().Phys() == eq.Args[1].Type().Phys() {
			l, r := eq.Args[0], eq.Args[1]
			ls, rs := side(l, nl), side(r, nl)
			if ls == sideRight && rs == sideLeft {
				l, r, ls, rs = r, l, rs, ls
			}
			if ls == sideLeft && rs == sideRight {
				shift := make([]int, nl+nr)
				for i := nl; i < nl+nr; i++ {
					shift[i] = i - nl
				}
				c.LeftKeys = append(c.LeftKeys, l)
				c.RightKeys = append(c.RightKeys, Remap(r, shift))
				continue
			}
		}
		rest = append(rest, cond)
	}
	switch len(rest) {
	case 0:
		c.On = nil
	case 1:
		c.On = rest[0]
	default:
		c.On = &plan.Call{Op: plan.OpAnd, Args: rest, Typ: j.On.Type()}
	}
	return &c
}

func conjuncts(e plan.Expr, out []plan.Expr) []plan.Expr {
	if c, ok := e.(*plan.Call); ok && c.Op == plan.OpAnd {
		for _, a := range c.Args {
			out = conjuncts(a, out)
		}
		return out
	}
	return append(out, e)
}

const (
	sideNone  = 0
	sideLeft  = 1
	sideRight = 2
	sideBoth  = 3
)

// side tells which join inputs e reads: a key must read exactly one, and
// nothing that varies otherwise (random(), a subquery).
func side(e plan.Expr, nl int) int {
	return sideOf(e, nl, false)
}

// filterSide tells which join inputs a conjunct of a filter over the join
// reads. A subquery without arguments (evaluated once, whatever reads
// it) counts by its compared value alone: `o_orderkey IN (SELECT ...)`
// filters the input o_orderkey comes from.
func filterSide(e plan.Expr, nl int) int {
	return sideOf(e, nl, true)
}

func sideOf(e plan.Expr, nl int, onceSubqueries bool) int {
	s := sideNone
	Walk(e, func(x plan.Expr) {
		switch x := x.(type) {
		case *plan.ColRef:
			if x.Idx < nl {
				s |= sideLeft
			} else {
				s |= sideRight
			}
		case *plan.Subquery:
			if !onceSubqueries || len(x.Args) > 0 {
				s = sideBoth
			}
		case *plan.Call:
			if x.Op.Volatile() {
				s = sideBoth
			}
		}
	})
	return s
}

// optimizeSubqueries optimizes the plans of the subqueries in n's expressions.
func optimizeSubqueries(n plan.Node) plan.Node {
	switch n := n.(type) {
	case *plan.Filter:
		if hasSubquery(n.Pred) {
			c := *n
			c.Pred = optimizeIn(n.Pred)
			return &c
		}
	case *plan.Project:
		for _, e := range n.Exprs {
			if hasSubquery(e) {
				c := *n
				c.Exprs = make([]plan.Expr, len(n.Exprs))
				for i, e := range n.Exprs {
					c.Exprs[i] = optimizeIn(e)
				}
				return &c
			}
		}
	case *plan.Join:
		if n.On != nil && hasSubquery(n.On) {
			c := *n
			c.On = optimizeIn(n.On)
			return &c
		}
	}
	return n
}

func hasSubquery(e plan.Expr) bool {
	found := false
	Walk(e, func(x plan.Expr) {
		if _, ok := x.(*plan.Subquery); ok {
			found = true
		}
	})
	return found
}

// optimizeIn returns e with every subquery plan in it optimized.
func optimizeIn(e plan.Expr) plan.Expr {
	switch e := e.(type) {
	case *plan.Subquery:
		c := *e
		c.Plan = Optimize(e.Plan)
		c.Args = make([]plan.Expr, len(e.Args))
		for i, a := range e.Args {
			c.Args[i] = optimizeIn(a)
		}
		if e.Test != nil {
			c.Test = optimizeIn(e.Test)
		}
		return &c
	case *plan.Call:
		c := *e
		c.Args = make([]plan.Expr, len(e.Args))
		for i, a := range e.Args {
			c.Args[i] = optimizeIn(a)
		}
		return &c
	case *plan.Func:
		c := *e
		c.Args = make([]plan.Expr, len(e.Args))
		for i, a := range e.Args {
			c.Args[i] = optimizeIn(a)
		}
		return &c
	case *plan.Cast:
		c := *e
		c.X = optimizeIn(e.X)
		return &c
	case *plan.Case:
		c := *e
		c.Whens = make([]plan.When, len(e.Whens))
		for i, w := range e.Whens {
			c.Whens[i] = plan.When{Cond: optimizeIn(w.Cond), Result: optimizeIn(w.Result)}
		}
		if e.Else != nil {
			c.Else = optimizeIn(e.Else)
		}
		return &c
	}
	return e
}

// pushFilterIntoJoin moves the conjuncts of a filter over a join to where
// they can act first: those that read only the left input (or neither)
// filter it, and for an inner join those that read only the right input
// filter that one, and those that read both join the condition, where
// equalities become hash keys. A WHERE over a comma list thus becomes hash
// joins over filtered scans rather than a filtered cross product. What
// reads a volatile function, or a subquery that reads the row, stays
// above the join.
func pushFilterIntoJoin(n plan.Node) plan.Node {
	f, ok := n.(*plan.Filter)
	if !ok {
		return n
	}
	j, ok := f.Input.(*plan.Join)
	if !ok || (j.Kind != plan.JoinInner && j.Kind != plan.JoinLeft && j.Kind != plan.JoinSemi && j.Kind != plan.JoinAnti) {
		return n
	}
	inner := j.Kind == plan.JoinInner
	nl := len(j.Left.Columns())
	nr := len(j.Right.Columns())
	var left, right, on, keep []plan.Expr
	shift := make([]int, nl+nr) // the join's columns → the right input's
	for i := nl; i < nl+nr; i++ {
		shift[i] = i - nl
	}
	for _, c := range factorOrs(conjuncts(f.Pred, nil)) {
		switch s := filterSide(c, nl); {
		case s == sideNone || s == sideLeft:
			left = append(left, c)
		case s == sideRight && inner:
			right = append(right, Remap(c, shift))
		case s == sideBoth && inner && !hasSubquery(c) && !volatile(c):
			on = append(on, c)
			// An OR over both inputs still restricts each: the rows of
			// either that no branch could take are filtered out first.
			if x := impliedBySide(c, nl, sideLeft); x != nil {
				left = append(left, x)
			}
			if x := impliedBySide(c, nl, sideRight); x != nil {
				right = append(right, Remap(x, shift))
			}
		default:
			keep = append(keep, c)
		}
	}
	if len(left)+len(right)+len(on) == 0 {
		return n
	}
	c := *j
	if len(left) > 0 {
		c.Left = Optimize(&plan.Filter{Input: j.Left, Pred: and(left)})
	}
	if len(right) > 0 {
		c.Right = Optimize(&plan.Filter{Input: j.Right, Pred: and(right)})
	}
	if len(on) > 0 {
		if j.On != nil {
			on = append([]plan.Expr{j.On}, on...)
		}
		c.On = and(on)
	}
	var out plan.Node = hashJoinKeys(&c)
	if len(keep) > 0 {
		out = &plan.Filter{Input: out, Pred: and(keep)}
	}
	return out
}

// impliedBySide returns, for an OR whose every branch has conjuncts that
// read side s of a join alone, the OR of those conjuncts: a condition
// the rows of that side must meet for the OR to hold, which filters them
// before the join, as PostgreSQL derives restrictions from OR clauses
// (TPC-H's query 7 keeps the two nations of (n1 = 'FRANCE' AND n2 =
// 'GERMANY') OR (n1 = 'GERMANY' AND n2 = 'FRANCE') on each side; query 19
// its parts' brands and its lines' quantities). nil when a branch has
// none. The OR itself stays where it was.
func impliedBySide(c plan.Expr, nl, s int) plan.Expr {
	or, ok := c.(*plan.Call)
	if !ok || or.Op != plan.OpOr {
		return nil
	}
	branches := make([]plan.Expr, len(or.Args))
	for i, b := range or.Args {
		var mine []plan.Expr
		for _, x := range conjuncts(b, nil) {
			if side(x, nl) == s {
				mine = append(mine, x)
			}
		}
		if len(mine) == 0 {
			return nil
		}
		branches[i] = and(mine)
	}
	return &plan.Call{Op: plan.OpOr, Args: branches, Typ: or.Typ}
}

// factorOrs takes out of each OR in cs the conjuncts all its branches
// share: (a AND b) OR (a AND c) is a AND (b OR c), so that a join key
// written in every branch (TPC-H's query 19) becomes a hash key. A branch
// left with nothing makes the OR true.
func factorOrs(cs []plan.Expr) []plan.Expr {
	var out []plan.Expr
	for _, c := range cs {
		or, ok := c.(*plan.Call)
		if !ok || or.Op != plan.OpOr || volatile(c) || hasSubquery(c) {
			out = append(out, c)
			continue
		}
		branches := make([][]plan.Expr, len(or.Args))
		for i, b := range or.Args {
			branches[i] = conjuncts(b, nil)
		}
		var common []plan.Expr
		for _, x := range branches[0] {
			key := x.String()
			inAll := true
			for _, b := range branches[1:] {
				if !slices.ContainsFunc(b, func(y plan.Expr) bool { return y.String() == key }) {
					inAll = false
					break
				}
			}
			if inAll && !slices.ContainsFunc(common, func(y plan.Expr) bool { return y.String() == key }) {
				common = append(common, x)
			}
		}
		if len(common) == 0 {
			out = append(out, c)
			continue
		}
		out = append(out, common...)
		var rest []plan.Expr
		for _, b := range branches {
			var left []plan.Expr
			for _, y := range b {
				if !slices.ContainsFunc(common, func(x plan.Expr) bool { return x.String() == y.String() }) {
					left = append(left, y)
				}
			}
			if len(left) == 0 {
				rest = nil // this branch is the common part alone: the OR holds
				break
			}
			rest = append(rest, and(left))
		}
		if len(rest) > 0 {
			out = append(out, &plan.Call{Op: plan.OpOr, Args: rest, Typ: or.Typ})
		}
	}
	return out
}

func and(cs []plan.Expr) plan.Expr {
	if len(cs) == 1 {
		return cs[0]
	}
	return &plan.Call{Op: plan.OpAnd, Args: cs, Typ: cs[0].Type()}
}

func volatile(e plan.Expr) bool {
	found := false
	Walk(e, func(x plan.Expr) {
		if c, ok := x.(*plan.Call); ok && c.Op.Volatile() {
			found = true
		}
	})
	return found
}
