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
