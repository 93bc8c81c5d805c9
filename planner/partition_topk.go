package planner

import (
	"slices"

	"github.com/deeplaked/deeplaked/plan"
)

// partitionTopK serves "the first k rows of each group",
//
//	SELECT ... FROM (SELECT ..., row_number() OVER (PARTITION BY p ORDER BY o) AS rn
//	                 FROM t) s WHERE rn <= k
//
// Filter(Window(Sort(input))) whose filter keeps only rows whose
// row_number(), rank() or dense_rank() is at most a constant (rn <= k,
// rn < k, rn = k), by putting a PartitionTopK under the window's sort:
// the window is computed over each partition's first rows only, and the
// rest of them is neither sorted nor held. The filter stays.
//
// Only a window whose every function is row_number, rank or dense_rank
// qualifies: their values over a partition's first rows do not depend on
// the rows after them, where an aggregate's, lead's, ntile's or
// percent_rank's do.
//
// The filter sinks below the subquery's projection after the projection
// is optimized (flattenSubquery), so the rule also looks under a Project.
func partitionTopK(n plan.Node) plan.Node {
	if p, ok := n.(*plan.Project); ok {
		f, ok := p.Input.(*plan.Filter)
		if !ok {
			return n
		}
		in := partitionTopK(f)
		if in == plan.Node(f) {
			return n
		}
		c := *p
		c.Input = in
		return &c
	}
	f, ok := n.(*plan.Filter)
	if !ok {
		return n
	}
	w, ok := f.Input.(*plan.Window)
	if !ok || len(w.Calls) == 0 {
		return n
	}
	s, ok := w.Input.(*plan.Sort)
	if !ok || s.TopK != nil || !windowSort(w, s) {
		return n
	}
	if _, done := s.Input.(*plan.PartitionTopK); done {
		return n
	}
	for _, c := range w.Calls {
		if c.Func != plan.WinRowNumber && c.Func != plan.WinRank && c.Func != plan.WinDenseRank {
			return n
		}
	}
	width := len(w.Input.Columns())
	var best *plan.PartitionTopK
	for _, c := range conjuncts(f.Pred, nil) {
		call, k, ok := rankBound(c, width)
		if !ok || call >= len(w.Calls) || k < 1 {
			continue
		}
		fn := w.Calls[call].Func
		// The bound that keeps the fewest rows: the smallest, then
		// row_number's (no ties) before rank's before dense_rank's.
		if best == nil || k < best.Count || k == best.Count && fn < best.Func {
			best = &plan.PartitionTopK{Input: s.Input, PartitionBy: w.PartitionBy, OrderBy: w.OrderBy, Func: fn, Count: k}
		}
	}
	if best == nil {
		return n
	}
	sc := *s
	sc.Input = best
	wc := *w
	wc.Input = &sc
	fc := *f
	fc.Input = &wc
	return &fc
}

// windowSort reports whether s sorts w's input as the binder sorts it for
// w: by the partition keys (ascending), then by w's order.
func windowSort(w *plan.Window, s *plan.Sort) bool {
	if len(s.Keys) != len(w.PartitionBy)+len(w.OrderBy) || len(s.Keys) == 0 {
		return false
	}
	for i, c := range w.PartitionBy {
		if s.Keys[i] != (plan.SortKey{Col: c}) {
			return false
		}
	}
	return slices.Equal(s.Keys[len(w.PartitionBy):], w.OrderBy)
}

// rankBound matches a condition that bounds a window call's value, the
// output column width+call: `col <= k`, `col < k` (k-1), `col = k`, or
// the same with the operands swapped, k an integer constant. It returns
// the call and the largest value the condition lets through.
func rankBound(e plan.Expr, width int) (call int, k int64, ok bool) {
	c, ok := e.(*plan.Call)
	if !ok || len(c.Args) != 2 {
		return 0, 0, false
	}
	op, l, r := c.Op, c.Args[0], c.Args[1]
	if _, isRef := r.(*plan.ColRef); isRef {
		// k >= col is col <= k.
		l, r = r, l
		switch op {
		case plan.OpGe:
			op = plan.OpLe
		case plan.OpGt:
			op = plan.OpLt
		case plan.OpEq:
		default:
			return 0, 0, false
		}
	}
	ref, ok := l.(*plan.ColRef)
	if !ok || ref.Idx < width {
		return 0, 0, false
	}
	if cast, isCast := r.(*plan.Cast); isCast && cast.Typ.IsInteger() {
		r = cast.X
	}
	v, ok := r.(*plan.Const)
	if !ok || v.Null || v.Param != nil || v.Val == nil || !v.Typ.IsInteger() {
		return 0, 0, false
	}
	k = v.Val.Ints[0]
	switch op {
	case plan.OpLe, plan.OpEq:
	case plan.OpLt:
		k--
	default:
		return 0, 0, false
	}
	return ref.Idx - width, k, true
}
