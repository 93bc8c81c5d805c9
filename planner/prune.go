package planner

import "github.com/deeplaked/deeplaked/plan"

// pruneJoinColumns narrows the scans below a projection or aggregation over
// joins and filters to the columns the plan above reads, so that a join
// does not carry (or read from storage) columns nobody uses, such as the
// tensors of a table joined on its id.
func pruneJoinColumns(n plan.Node) plan.Node {
	switch p := n.(type) {
	case *plan.Project:
		if !prunable(p.Input) {
			return n
		}
		used := make([]bool, len(p.Input.Columns()))
		for _, e := range p.Exprs {
			markUsed(e, used)
		}
		in, m := prune(p.Input, used)
		c := *p
		c.Input = in
		c.Exprs = remapAll(p.Exprs, m)
		return &c
	case *plan.Aggregate:
		if !prunable(p.Input) {
			return n
		}
		used := make([]bool, len(p.Input.Columns()))
		for _, e := range p.GroupBy {
			markUsed(e, used)
		}
		for _, a := range p.Aggs {
			if a.Arg != nil {
				markUsed(a.Arg, used)
			}
		}
		in, m := prune(p.Input, used)
		c := *p
		c.Input = in
		c.GroupBy = remapAll(p.GroupBy, m)
		c.Aggs = append([]plan.AggCall{}, p.Aggs...)
		for i := range c.Aggs {
			if c.Aggs[i].Arg != nil {
				c.Aggs[i].Arg = Remap(c.Aggs[i].Arg, m)
			}
		}
		return &c
	}
	return n
}

// prunable reports whether n is a join, under filters and projections
// that pick columns.
func prunable(n plan.Node) bool {
	for {
		switch x := n.(type) {
		case *plan.Filter:
			n = x.Input
		case *plan.Project:
			if !picksColumns(x) {
				return false
			}
			n = x.Input
		case *plan.Join:
			return true
		default:
			return false
		}
	}
}

// prune returns n reading only the columns used marks (and those its own
// conditions read), with the map from n's old output positions to the new
// ones (-1 for a dropped column).
func prune(n plan.Node, used []bool) (plan.Node, []int) {
	switch x := n.(type) {
	case *plan.Scan:
		if len(x.Cols) == 0 {
			break
		}
		exprs := make([]plan.Expr, 0, len(used))
		for i, u := range used {
			if u {
				exprs = append(exprs, &plan.ColRef{Idx: i})
			}
		}
		return narrow(x, exprs)
	case *plan.Filter:
		u := append([]bool{}, used...)
		markUsed(x.Pred, u)
		in, m := prune(x.Input, u)
		return &plan.Filter{Input: in, Pred: Remap(x.Pred, m)}, m
	case *plan.Project:
		if !picksColumns(x) || len(x.Exprs) == 0 {
			break
		}
		// The columns used, or the first, so that rows are still counted.
		var keep []int
		for i, u := range used {
			if u {
				keep = append(keep, i)
			}
		}
		if len(keep) == 0 {
			keep = []int{0}
		}
		u := make([]bool, len(x.Input.Columns()))
		for _, i := range keep {
			u[x.Exprs[i].(*plan.ColRef).Idx] = true
		}
		in, mi := prune(x.Input, u)
		m := make([]int, len(used))
		for i := range m {
			m[i] = -1
		}
		c := &plan.Project{Input: in}
		for _, i := range keep {
			r := *x.Exprs[i].(*plan.ColRef)
			r.Idx = mi[r.Idx]
			m[i] = len(c.Exprs)
			c.Exprs = append(c.Exprs, &r)
			c.Names = append(c.Names, x.Names[i])
		}
		return c, m
	case *plan.Join:
		nl := len(x.Left.Columns())
		nr := len(used) - nl
		all := append([]bool{}, used...)
		semi := x.Kind == plan.JoinSemi || x.Kind == plan.JoinAnti
		if semi {
			// Its output is the left side's; its condition reads both.
			nr = len(x.Right.Columns())
			all = append(all, make([]bool, nr)...)
		}
		if x.On != nil {
			markUsed(x.On, all)
		}
		ul, ur := all[:nl:nl], all[nl:]
		for _, k := range x.LeftKeys {
			markUsed(k, ul)
		}
		for _, k := range x.RightKeys {
			markUsed(k, ur)
		}
		l, ml := prune(x.Left, ul)
		r, mr := prune(x.Right, ur)
		newL := len(l.Columns())
		m := make([]int, nl+nr)
		for i := range m {
			switch {
			case i < nl:
				m[i] = ml[i]
			case mr[i-nl] >= 0:
				m[i] = newL + mr[i-nl]
			default:
				m[i] = -1
			}
		}
		c := *x
		c.Left, c.Right = l, r
		if x.On != nil {
			c.On = Remap(x.On, m)
		}
		c.LeftKeys = remapAll(x.LeftKeys, ml)
		c.RightKeys = remapAll(x.RightKeys, mr)
		if semi {
			return &c, m[:nl]
		}
		return &c, m
	}
	m := make([]int, len(used))
	for i := range m {
		m[i] = i
	}
	return n, m
}

// picksColumns reports whether projection p only picks columns of its
// input.
func picksColumns(p *plan.Project) bool {
	for _, e := range p.Exprs {
		if _, ok := e.(*plan.ColRef); !ok {
			return false
		}
	}
	return true
}
