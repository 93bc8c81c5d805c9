package plan

import (
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// ZonePreds extracts from the scan's pushed-down filter the conjuncts that
// zone maps can rule out: `column OP constant` (either side) for =, <, <=,
// >, >=, `column IN (constants)` and `column IS [NOT] NULL`. The scan
// still evaluates the whole filter; these only let storage skip chunks
// that cannot match, or look rows up by key or by _rowid.
func (n *Scan) ZonePreds() []storage.ZonePred {
	var out []storage.ZonePred
	var walk func(e Expr)
	walk = func(e Expr) {
		c, ok := e.(*Call)
		if !ok {
			return
		}
		switch c.Op {
		case OpAnd:
			for _, a := range c.Args {
				walk(a)
			}
		case OpIsNull, OpIsNotNull:
			if col, ok := c.Args[0].(*ColRef); ok {
				op := storage.ZoneIsNull
				if c.Op == OpIsNotNull {
					op = storage.ZoneIsNotNull
				}
				out = append(out, storage.ZonePred{Col: n.Cols[col.Idx], Op: op, Row: -1})
			}
		case OpEq, OpLt, OpLe, OpGt, OpGe:
			if len(c.Args) != 2 {
				return
			}
			op := c.Op
			col, okc := c.Args[0].(*ColRef)
			k, okk := c.Args[1].(*Const)
			if !okc || !okk {
				// constant OP column: flip the operator.
				col, okc = c.Args[1].(*ColRef)
				k, okk = c.Args[0].(*Const)
				op = flipOp(op)
			}
			if !okc || !okk || k.Null || k.Val == nil || !zoneComparable(col.Typ, k.Typ) {
				return
			}
			out = append(out, storage.ZonePred{Col: n.Cols[col.Idx], Op: zoneOp(op), Val: k.Val, Row: 0})
		case OpIn:
			// column IN (constants): one Vec of the values that are
			// not NULL (a NULL matches no row).
			col, ok := c.Args[0].(*ColRef)
			if !ok || len(c.Args) < 2 {
				return
			}
			var vals *types.Vec
			for _, a := range c.Args[1:] {
				k, ok := a.(*Const)
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
	case col.Kind == types.UUID && k.Kind == types.UUID:
		return true // canonical text, ordered as the bytes
	case col.IsDateTime() && k.Kind == col.Kind:
		return true
	}
	return false
}

func flipOp(op Op) Op {
	switch op {
	case OpLt:
		return OpGt
	case OpLe:
		return OpGe
	case OpGt:
		return OpLt
	case OpGe:
		return OpLe
	}
	return op
}

func zoneOp(op Op) storage.ZoneOp {
	switch op {
	case OpLt:
		return storage.ZoneLt
	case OpLe:
		return storage.ZoneLe
	case OpGt:
		return storage.ZoneGt
	case OpGe:
		return storage.ZoneGe
	}
	return storage.ZoneEq
}
