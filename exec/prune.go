package exec

import (
	"github.com/deeplaked/deeplaked/plan"
)

// narrowScan returns a scan of n's table that reads only the columns n's
// filter refers to, with the filter rewritten onto them: the rows it
// returns are n's, with fewer columns read. ok is false when the filter
// holds an expression it does not know how to rewrite.
func narrowScan(n *plan.Scan) (narrow *plan.Scan, ok bool) {
	idx := make(map[int]int) // n's output column → narrow's
	var cols []int
	var remap func(e plan.Expr) plan.Expr
	all := func(es []plan.Expr) []plan.Expr {
		out := make([]plan.Expr, len(es))
		for i, e := range es {
			if out[i] = remap(e); out[i] == nil {
				return nil
			}
		}
		return out
	}
	remap = func(e plan.Expr) plan.Expr {
		switch e := e.(type) {
		case *plan.ColRef:
			k, seen := idx[e.Idx]
			if !seen {
				k = len(cols)
				idx[e.Idx] = k
				cols = append(cols, n.Cols[e.Idx])
			}
			c := *e
			c.Idx = k
			return &c
		case *plan.Const:
			return e
		case *plan.Call:
			c := *e
			if c.Args = all(e.Args); c.Args == nil && len(e.Args) > 0 {
				return nil
			}
			return &c
		case *plan.Func:
			c := *e
			if c.Args = all(e.Args); c.Args == nil && len(e.Args) > 0 {
				return nil
			}
			return &c
		case *plan.Cast:
			c := *e
			if c.X = remap(e.X); c.X == nil {
				return nil
			}
			return &c
		case *plan.Case:
			c := *e
			c.Whens = make([]plan.When, len(e.Whens))
			for i, w := range e.Whens {
				if c.Whens[i].Cond, c.Whens[i].Result = remap(w.Cond), remap(w.Result); c.Whens[i].Cond == nil || c.Whens[i].Result == nil {
					return nil
				}
			}
			if e.Else != nil {
				if c.Else = remap(e.Else); c.Else == nil {
					return nil
				}
			}
			return &c
		}
		return nil // subqueries, parameters: left to the full scan
	}
	if n.Filter == nil {
		return &plan.Scan{Table: n.Table}, true
	}
	f := remap(n.Filter)
	if f == nil {
		return nil, false
	}
	return &plan.Scan{Table: n.Table, Cols: cols, Filter: f}, true
}
