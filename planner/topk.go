package planner

import "github.com/deeplaked/deeplaked/plan"

// sortTopK turns `ORDER BY ... LIMIT k OFFSET m`, Limit(Sort) with
// perhaps a projection between them (which keeps the row count), into a
// Sort that emits only its first k + m rows (plan.Sort.TopK): exec keeps
// them in a bounded heap instead of sorting every row. The Limit stays
// above it and skips the offset. A LIMIT that is not a constant or a
// parameter (a subquery, random()) is left alone: the sort and the limit
// would each evaluate it.
func sortTopK(n plan.Node) plan.Node {
	lim, ok := n.(*plan.Limit)
	if !ok || lim.Count == nil || !isConstant(lim.Count) || lim.Offset != nil && !isConstant(lim.Offset) {
		return n
	}
	if c, ok := lim.Count.(*plan.Const); ok && c.Null && c.Param == nil {
		return n // LIMIT NULL: all rows
	}
	topK := func(in plan.Node) (plan.Node, bool) {
		s, ok := in.(*plan.Sort)
		if !ok || s.TopK != nil {
			return in, false
		}
		c := *s
		c.TopK = &plan.TopK{Count: lim.Count, Offset: lim.Offset}
		return &c, true
	}
	l := *lim
	switch in := lim.Input.(type) {
	case *plan.Sort:
		if l.Input, ok = topK(in); !ok {
			return n
		}
	case *plan.Project:
		s, ok := topK(in.Input)
		if !ok {
			return n
		}
		p := *in
		p.Input = s
		l.Input = &p
	default:
		return n
	}
	return &l
}
