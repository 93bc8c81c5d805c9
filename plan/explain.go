package plan

import (
	"fmt"
	"strings"

	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// Explain returns the lines of EXPLAIN's output for the physical plan n,
// laid out as PostgreSQL lays out its plans (without costs): a node per
// line, its children under "->", its details below it. Projections are
// not shown, as in PostgreSQL.
func Explain(n Node) []string {
	var e explainer
	e.node(n, 0)
	return e.lines
}

type explainer struct{ lines []string }

func (e *explainer) node(n Node, depth int) {
	if p, ok := n.(*Project); ok {
		e.node(p.Input, depth)
		return
	}
	head := ""
	if depth > 0 {
		head = strings.Repeat(" ", 6*depth-4) + "->  "
	}
	detail := func(format string, args ...any) {
		e.lines = append(e.lines, strings.Repeat(" ", 6*depth+2)+fmt.Sprintf(format, args...))
	}
	add := func(s string) { e.lines = append(e.lines, head+s) }
	var kids []Node
	switch n := n.(type) {
	case *Gather:
		add("Gather")
		detail("Workers Planned: %d", n.Workers)
		kids = append(kids, n.Input)
	case *Scan:
		switch storage.LookupOf(n.Table, n.ZonePreds()) {
		case storage.LookupByKey:
			add("Index Scan using " + n.Table.Name + "_pkey on " + n.Table.Name)
		case storage.LookupByRowID:
			add("Tid Scan on " + n.Table.Name)
		default:
			add("Seq Scan on " + n.Table.Name)
		}
		if n.Filter != nil {
			detail("Filter: %s", ExprText(n.Filter))
		}
	case *VectorTopK:
		col := n.Search.Columns()[n.SearchCol].Name
		if n.Index != nil {
			add("Index Scan using " + n.Index.Name + " on " + n.Scan.Table.Name)
			detail("Order By: (%s %s %s)", col, n.Op, ExprText(n.Query))
		} else {
			add("Vector Search on " + n.Scan.Table.Name)
			detail("Order By: (%s %s %s)", col, n.Op, ExprText(n.Query))
			detail("Method: exact scan")
		}
		if n.Search.Filter != nil {
			detail("Filter: %s", ExprText(n.Search.Filter))
		}
	case *SysScan:
		add("Function Scan on " + n.Table.Name)
	case *Values:
		if len(n.Rows) == 1 {
			add("Result")
		} else {
			add("Values Scan")
		}
	case *Series:
		add("Function Scan on generate_series")
	case *History:
		fn := map[HistoryKind]string{HistoryLog: "deeplake_log", HistoryDiff: "deeplake_diff", HistoryRefs: "deeplake_refs"}[n.Kind]
		add("Function Scan on " + fn)
	case *Filter:
		add("Filter")
		detail("Filter: %s", ExprText(n.Pred))
		kids = append(kids, n.Input)
	case *Sort:
		add("Sort")
		in := n.Input.Columns()
		keys := make([]string, len(n.Keys))
		for i, k := range n.Keys {
			keys[i] = in[k.Col].Name
			if k.Desc {
				keys[i] += " DESC"
			}
			if k.NullsFirst != k.Desc {
				if k.NullsFirst {
					keys[i] += " NULLS FIRST"
				} else {
					keys[i] += " NULLS LAST"
				}
			}
		}
		detail("Sort Key: %s", strings.Join(keys, ", "))
		kids = append(kids, n.Input)
	case *Limit:
		add("Limit")
		kids = append(kids, n.Input)
	case *Aggregate:
		if len(n.GroupBy) == 0 {
			add("Aggregate")
		} else {
			add("HashAggregate")
			keys := make([]string, len(n.GroupBy))
			for i, g := range n.GroupBy {
				keys[i] = ExprText(g)
			}
			detail("Group Key: %s", strings.Join(keys, ", "))
		}
		kids = append(kids, n.Input)
	case *Join:
		kind := map[JoinKind]string{JoinSemi: " Semi", JoinAnti: " Anti"}[n.Kind]
		if len(n.LeftKeys) > 0 {
			add("Hash" + kind + " Join")
		} else {
			add("Nested Loop" + kind)
		}
		if n.On != nil {
			detail("Join Filter: %s", ExprText(n.On))
		}
		kids = append(kids, n.Left, n.Right)
	case *Window:
		add("WindowAgg")
		kids = append(kids, n.Input)
	default:
		name := fmt.Sprintf("%T", n)
		add(strings.TrimPrefix(name, "*plan."))
		kids = append(kids, children(n)...)
	}
	for _, k := range kids {
		e.node(k, depth+1)
	}
}

// children returns the inputs of nodes Explain has no layout of its own for.
func children(n Node) []Node {
	switch n := n.(type) {
	case *ProjectSet:
		return []Node{n.Input}
	case *Materialize:
		return []Node{n.Input}
	case *SetOp:
		return []Node{n.Left, n.Right}
	case *Append:
		return n.Inputs
	case *LateralJoin:
		return []Node{n.Left, n.Right}
	case *RecursiveUnion:
		return []Node{n.Base, n.Recursive}
	}
	return nil
}

// ExprText prints e as EXPLAIN shows expressions: columns by name,
// operators infix, constants as typed literals.
func ExprText(e Expr) string {
	switch e := e.(type) {
	case *ColRef:
		if e.Name != "" {
			return e.Name
		}
		return e.String()
	case *Const:
		if e.Param != nil {
			return fmt.Sprintf("$%d", e.Param.N)
		}
		if e.Null || e.Val == nil {
			return e.String()
		}
		s := "'" + strings.ReplaceAll(string(types.AppendText(nil, e.Val, 0)), "'", "''") + "'"
		if e.Typ.Kind == types.Unknown {
			return s
		}
		return s + "::" + e.Typ.String()
	case *Cast:
		return ExprText(e.X) + "::" + e.Typ.String()
	case *Call:
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = ExprText(a)
		}
		if len(args) == 2 && infix(e.Op) {
			return "(" + args[0] + " " + e.Op.String() + " " + args[1] + ")"
		}
		switch e.Op {
		case OpNot:
			return "(NOT " + args[0] + ")"
		case OpIsNull, OpIsNotNull:
			return "(" + args[0] + " " + e.Op.String() + ")"
		case OpAnd, OpOr:
			return "(" + strings.Join(args, " "+e.Op.String()+" ") + ")"
		}
		return e.Op.String() + "(" + strings.Join(args, ", ") + ")"
	}
	return e.String()
}

func infix(o Op) bool {
	switch o {
	case OpAdd, OpSub, OpMul, OpDiv, OpMod, OpConcat, OpEq, OpNe, OpLt, OpLe, OpGt, OpGe,
		OpLike, OpILike, OpJSONGet, OpJSONGetText, OpJSONContains,
		OpVectorAdd, OpVectorSub, OpVectorMul, OpVectorConcat:
		return true
	}
	return o.IsDistance()
}
