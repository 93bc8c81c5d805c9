package exec

import (
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// zonePreds extracts from a scan's pushed-down filter the conjuncts that
// zone maps can rule out: `column OP constant` (either side) for =, <, <=,
// >, >=, and `column IS [NOT] NULL`. The scan still evaluates the whole
// filter; these only let storage skip chunks that cannot match.
func zonePreds(n *plan.Scan) []storage.ZonePred {
	var out []storage.ZonePred
	var walk func(e plan.Expr)
	walk = func(e plan.Expr) {
		c, ok := e.(*plan.Call)
		if !ok {
			return
		}
		switch c.Op {
		case plan.OpAnd:
			for _, a := range c.Args {
				walk(a)
			}
		case plan.OpIsNull, plan.OpIsNotNull:
			if col, ok := c.Args[0].(*plan.ColRef); ok {
				op := storage.ZoneIsNull
				if c.Op == plan.OpIsNotNull {
					op = storage.ZoneIsNotNull
				}
				out = append(out, storage.ZonePred{Col: n.Cols[col.Idx], Op: op, Row: -1})
			}
		case plan.OpEq, plan.OpLt, plan.OpLe, plan.OpGt, plan.OpGe:
			if len(c.Args) != 2 {
				return
			}
			op := c.Op
			col, okc := c.Args[0].(*plan.ColRef)
			k, okk := c.Args[1].(*plan.Const)
			if !okc || !okk {
				// constant OP column: flip the operator.
				col, okc = c.Args[1].(*plan.ColRef)
				k, okk = c.Args[0].(*plan.Const)
				op = flipOp(op)
			}
			if !okc || !okk || k.Null || k.Val == nil || !zoneComparable(col.Typ, k.Typ) {
				return
			}
			out = append(out, storage.ZonePred{Col: n.Cols[col.Idx], Op: zoneOp(op), Val: k.Val, Row: 0})
		case plan.OpIn:
			// column IN (constants): one Vec of the values that are
			// not NULL (a NULL matches no row).
			col, ok := c.Args[0].(*plan.ColRef)
			if !ok || len(c.Args) < 2 {
				return
			}
			var vals *types.Vec
			for _, a := range c.Args[1:] {
				k, ok := a.(*plan.Const)
				if !ok || k.Param != nil || !k.Null && (k.Val == nil || !zoneComparable(col.Typ, k.Typ)) {
					return
				}
				if k.Null {
					continue
				}
				if vals == nil {
					vals = types.NewVec(k.Typ, len(c.Args)-1)
				} else if vals.Type.Phys() != k.Typ.Phys() {
					return
				}
				vals.AppendFrom(k.Val, 0)
			}
			if vals == nil {
				vals = types.NewVec(col.Typ, 0)
			}
			out = append(out, storage.ZonePred{Col: n.Cols[col.Idx], Op: storage.ZoneIn, Val: vals, Row: -1})
		}
	}
	if n.Filter != nil {
		walk(n.Filter)
	}
	return out
}

// zoneComparable reports whether zone maps of a column of type col compare
// with constants of type k the way the filter does.
func zoneComparable(col, k types.Type) bool {
	switch {
	case col.IsInteger() && k.IsInteger():
		return true
	case (col.Kind == types.Float4 || col.Kind == types.Float8) && (k.Kind == types.Float4 || k.Kind == types.Float8):
		return true
	case col.IsTextual() && k.IsTextual():
		return true
	case col.Kind == types.Bool && k.Kind == types.Bool:
		return true
	}
	return false
}

func flipOp(op plan.Op) plan.Op {
	switch op {
	case plan.OpLt:
		return plan.OpGt
	case plan.OpLe:
		return plan.OpGe
	case plan.OpGt:
		return plan.OpLt
	case plan.OpGe:
		return plan.OpLe
	}
	return op
}

func zoneOp(op plan.Op) storage.ZoneOp {
	switch op {
	case plan.OpLt:
		return storage.ZoneLt
	case plan.OpLe:
		return storage.ZoneLe
	case plan.OpGt:
		return storage.ZoneGt
	case plan.OpGe:
		return storage.ZoneGe
	}
	return storage.ZoneEq
}

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
