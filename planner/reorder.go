package planner

import (
	"math/bits"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// Join order. A FROM list binds as left-deep cross joins in the order it is
// written, ((a × b) × c), and pushFilterIntoJoin places each conjunct of the
// WHERE at the lowest join that has its columns. When two neighbours of the
// written order share no equality, their join stays a cross product run as
// a nested loop: TPC-H's query 2 lists part, supplier, partsupp, and so
// joins every part with every supplier before partsupp relates them.
//
// reorderJoins takes a filter over a tree of inner joins apart into its
// inputs and conditions and joins the inputs again, left-deep, in an order
// without cross products where the conditions allow one: the first input
// written, then always the first input written that an equality relates to
// those already joined, and only when none is, the next input written (a
// cross product the query asks for). Inner joins commute, so the rows are
// the same; a projection on top restores the columns' order. The written
// order is kept when it has no cross product to avoid, so most plans do not
// change, and the rewrite is stable: the order it makes is the one it
// would make again, as it does when pushFilterIntoJoin optimizes the
// filters it puts on the inputs of the new joins.
//
// A tree with a condition that reads a subquery or a volatile function is
// left as it is: moving such a condition would change which rows it sees
// or how often it runs. The filter's own such conjuncts stay above the
// joins, where pushFilterIntoJoin keeps them.

// maxReorderInputs bounds the inputs of a reordered tree: the sets of
// inputs are bit masks.
const maxReorderInputs = 64

// reorderJoins returns filter n over a tree of inner joins with the joins
// in an order without avoidable cross products, or n when it keeps its
// order.
func reorderJoins(n plan.Node) plan.Node {
	f, ok := n.(*plan.Filter)
	if !ok {
		return n
	}
	j, ok := f.Input.(*plan.Join)
	if !ok || j.Kind != plan.JoinInner {
		return n
	}
	t := joinTree{}
	if !t.flatten(j, 0) || len(t.inputs) < 3 || len(t.inputs) > maxReorderInputs {
		return n
	}
	conds := append(t.conds, factorOrs(conjuncts(f.Pred, nil))...)
	order := t.order(conds)
	reordered := false
	for i, k := range order {
		if i != k {
			reordered = true
		}
	}
	if !reordered {
		return n
	}

	// remap takes a column of the written layout to the new one.
	cols := j.Columns()
	remap := make([]int, len(cols))
	var tree plan.Node
	at := 0
	for _, k := range order {
		in := t.inputs[k]
		for i := range in.Columns() {
			remap[t.offsets[k]+i] = at + i
		}
		at += len(in.Columns())
		if tree == nil {
			tree = in
			continue
		}
		tree = &plan.Join{Kind: plan.JoinInner, Left: tree, Right: in}
	}
	out := Optimize(&plan.Filter{Input: tree, Pred: and(remapAll(conds, remap))})
	p := &plan.Project{Input: out, Exprs: make([]plan.Expr, len(cols)), Names: make([]string, len(cols))}
	for i, c := range cols {
		p.Exprs[i] = &plan.ColRef{Idx: remap[i], Typ: c.Type, Name: c.Name}
		p.Names[i] = c.Name
	}
	return p
}

// joinTree is a tree of inner joins taken apart: its inputs in the order
// written, where each one's columns start in the tree's output, and the
// conditions of its joins over that output.
type joinTree struct {
	inputs  []plan.Node
	offsets []int
	conds   []plan.Expr
}

// flatten adds the inputs and conditions of n, whose columns start at
// column base of the tree's output. It reports false when the tree is not
// to be reordered.
func (t *joinTree) flatten(n plan.Node, base int) bool {
	j, ok := n.(*plan.Join)
	if !ok || j.Kind != plan.JoinInner {
		t.inputs = append(t.inputs, n)
		t.offsets = append(t.offsets, base)
		return true
	}
	nl := len(j.Left.Columns())
	nr := len(j.Right.Columns())
	if !t.flatten(j.Left, base) || !t.flatten(j.Right, base+nl) {
		return false
	}
	shift := func(e plan.Expr, from, by int) plan.Expr {
		m := make([]int, from)
		for i := range m {
			m[i] = i + by
		}
		return Remap(e, m)
	}
	var conds []plan.Expr
	if j.On != nil {
		conds = conjuncts(j.On, nil)
		for i, c := range conds {
			conds[i] = shift(c, nl+nr, base)
		}
	}
	// Keys hashJoinKeys has made are equalities of the condition again.
	for i := range j.LeftKeys {
		conds = append(conds, &plan.Call{Op: plan.OpEq, Typ: types.TypBool, Args: []plan.Expr{
			shift(j.LeftKeys[i], nl, base), shift(j.RightKeys[i], nr, base+nl),
		}})
	}
	for _, c := range conds {
		if hasSubquery(c) || volatile(c) {
			return false
		}
	}
	t.conds = append(t.conds, conds...)
	return true
}

// reads returns the set of inputs whose columns e reads.
func (t *joinTree) reads(e plan.Expr) uint64 {
	var s uint64
	Walk(e, func(x plan.Expr) {
		if r, ok := x.(*plan.ColRef); ok {
			k := len(t.offsets) - 1
			for t.offsets[k] > r.Idx {
				k--
			}
			s |= 1 << k
		}
	})
	return s
}

// order returns the order to join the inputs in: the first, then always
// the first input that an equality of conds, other(joined) = other(input),
// relates to those joined so far (such an equality is a hash key of their
// join), and when there is none, the next input in the written order.
func (t *joinTree) order(conds []plan.Expr) []int {
	// edges are the equalities' sides' input sets, each side one or more
	// inputs, the two sides disjoint.
	type edge struct{ a, b uint64 }
	var edges []edge
	for _, c := range conds {
		eq, ok := c.(*plan.Call)
		if !ok || eq.Op != plan.OpEq || hasSubquery(c) || volatile(c) ||
			eq.Args[0].Type().Phys() != eq.Args[1].Type().Phys() {
			continue
		}
		a, b := t.reads(eq.Args[0]), t.reads(eq.Args[1])
		if a != 0 && b != 0 && a&b == 0 {
			edges = append(edges, edge{a, b})
		}
	}
	// related reports whether an equality relates input k to the set.
	related := func(set uint64, k int) bool {
		one := uint64(1) << k
		for _, e := range edges {
			if (e.a&^set == 0 && e.b == one) || (e.b&^set == 0 && e.a == one) {
				return true
			}
		}
		return false
	}
	n := len(t.inputs)
	order := []int{0}
	joined := uint64(1)
	for len(order) < n {
		next := -1
		for k := 1; k < n && next < 0; k++ {
			if joined&(1<<k) == 0 && related(joined, k) {
				next = k
			}
		}
		if next < 0 {
			next = bits.TrailingZeros64(^joined)
		}
		order = append(order, next)
		joined |= 1 << next
	}
	return order
}
