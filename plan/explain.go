package plan

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// Explain returns the lines of EXPLAIN's output for the physical plan n,
// laid out as PostgreSQL lays out its plans (without costs): a node per
// line, its children under "->", its details below it, the plans of its
// subqueries as InitPlans and SubPlans. Projections are not shown, as in
// PostgreSQL.
func Explain(n Node) []string { return ExplainWith(n, ExplainOptions{}) }

// ExplainOptions is what EXPLAIN shows besides the plan.
type ExplainOptions struct {
	// Actual returns what running node n measured, for EXPLAIN ANALYZE;
	// nil: the plan alone.
	Actual func(n Node) Actual
	// Timing shows Actual's times besides its rows and loops.
	Timing bool
	// Verbose shows, as PostgreSQL's EXPLAIN VERBOSE does, the Output of
	// each node, first among its details, and a hash join's Hash Cond.
	// A node's Output is the columns it emits itself: a scan's are the
	// columns it reads, a join's those it carries; the projections above
	// them, which are not shown, compute the select list from these. A
	// vector search's Output is the columns it fetches for the rows it
	// finds, and its distance; its Search Output the columns it computes
	// the distances over.
	Verbose bool
}

// Actual is what running one plan node measured (EXPLAIN ANALYZE),
// summed over its loops: the runs of the node that were asked for rows
// (a correlated subquery's plan runs once for each outer row).
type Actual struct {
	Loops int64
	// Rows counts the rows the node emitted.
	Rows int64
	// Startup is the time spent in the node until its first batch (or
	// its end, when it had none), Total all the time spent in it, its
	// inputs' included.
	Startup, Total time.Duration
}

// ExplainWith is Explain with options: with o.Actual each node's line
// ends as PostgreSQL's text format ends it under ANALYZE with COSTS off,
// "(actual time=S..T rows=N loops=L)", times and rows averaged over the
// loops. A projection, which is not shown, counts toward the node below
// it, as in PostgreSQL, where nodes project their own rows.
func ExplainWith(n Node, o ExplainOptions) []string {
	e := explainer{opts: o}
	e.node(n, 0, false, nil, nil)
	return e.lines
}

type explainer struct {
	opts  ExplainOptions
	lines []string
	// subs numbers the subqueries met, as PostgreSQL numbers its
	// InitPlans and SubPlans; args holds the text of each one's
	// arguments, which its plan's Params show.
	subs map[*Subquery]int
	args map[*Subquery][]string
	// found lists the subqueries first met in the expressions of the
	// node being laid out: their plans are shown under it.
	found []*Subquery
	// params is the text of the arguments of the subquery (or lateral
	// join) plan being laid out, innermost last.
	params [][]string
}

// node lays out n at column pad, after "->" for a child. shown is the
// node whose measurements the line shows (the outermost of the hidden
// projections above n), hidden their expressions.
func (e *explainer) node(n Node, pad int, arrow bool, shown Node, hidden []Expr) {
	if p, ok := n.(*Project); ok {
		if shown == nil {
			shown = p
		}
		e.node(p.Input, pad, arrow, shown, append(hidden, p.Exprs...))
		return
	}
	if shown == nil {
		shown = n
	}
	e.found = nil
	var (
		title   string
		details []string
		kids    []Node
		// lateral are the arguments kids[1] (a lateral join's right
		// side) reads as Params.
		lateral []Expr
	)
	detail := func(format string, args ...any) { details = append(details, fmt.Sprintf(format, args...)) }
	switch n := n.(type) {
	case *CopyTo:
		title = "Copy"
		if n.Options.Format == CopyTensor {
			title = "Tensor Stream"
			details = e.stream(n)
		}
		kids = append(kids, n.Query)
	case *Gather:
		title = "Gather"
		detail("Workers Planned: %d", n.Workers)
		kids = append(kids, n.Input)
	case *Scan:
		switch storage.LookupOf(n.Table, n.ZonePreds()) {
		case storage.LookupByKey:
			title = "Index Scan using " + n.Table.Name + "_pkey on " + n.Table.Name
		case storage.LookupByRowID:
			title = "Tid Scan on " + n.Table.Name
		default:
			title = "Seq Scan on " + n.Table.Name
		}
		if n.Filter != nil {
			detail("Filter: %s", e.expr(n.Filter))
		}
	case *VectorTopK:
		col := n.Search.Columns()[n.SearchCol].Name
		if e.opts.Verbose {
			// Output is what it fetches for the rows found.
			detail("Search Output: %s", strings.Join(e.output(n.Search), ", "))
		}
		if n.Index != nil {
			title = "Index Scan using " + n.Index.Name + " on " + n.Scan.Table.Name
			detail("Order By: (%s %s %s)", col, n.Op, e.expr(n.Query))
		} else {
			title = "Vector Search on " + n.Scan.Table.Name
			detail("Order By: (%s %s %s)", col, n.Op, e.expr(n.Query))
			detail("Method: exact scan")
		}
		if n.Search.Filter != nil {
			detail("Filter: %s", e.expr(n.Search.Filter))
		}
		hidden = append(hidden, n.Count, n.Offset)
	case *SysScan:
		title = "Function Scan on " + n.Table.Name
	case *Values:
		if len(n.Rows) == 1 {
			title = "Result"
		} else {
			title = "Values Scan"
		}
		for _, r := range n.Rows {
			hidden = append(hidden, r...)
		}
	case *Series:
		title = "Function Scan on generate_series"
		hidden = append(hidden, n.Start, n.Stop, n.Step)
	case *History:
		fn := map[HistoryKind]string{HistoryLog: "deeplake_log", HistoryDiff: "deeplake_diff", HistoryRefs: "deeplake_refs"}[n.Kind]
		title = "Function Scan on " + fn
	case *Filter:
		title = "Filter"
		detail("Filter: %s", e.expr(n.Pred))
		kids = append(kids, n.Input)
	case *Sort:
		title = "Sort"
		detail("Sort Key: %s", sortKeys(n.Input.Columns(), n.Keys))
		if n.TopK != nil {
			detail("Top-N: %s", e.topN(n.TopK))
		}
		kids = append(kids, n.Input)
	case *PartitionTopK:
		title = "Partition Top-N"
		in := n.Input.Columns()
		if len(n.PartitionBy) > 0 {
			keys := make([]string, len(n.PartitionBy))
			for i, c := range n.PartitionBy {
				keys[i] = in[c].Name
			}
			detail("Partition Key: %s", strings.Join(keys, ", "))
		}
		if len(n.OrderBy) > 0 {
			detail("Sort Key: %s", sortKeys(in, n.OrderBy))
		}
		detail("Keep: %s() <= %d", rankingNames[n.Func], n.Count)
		kids = append(kids, n.Input)
	case *Limit:
		title = "Limit"
		hidden = append(hidden, n.Count, n.Offset)
		kids = append(kids, n.Input)
	case *Aggregate:
		title = map[AggPhase]string{AggPartial: "Partial ", AggFinal: "Finalize "}[n.Phase]
		if len(n.GroupBy) == 0 {
			title += "Aggregate"
		} else {
			title += "HashAggregate"
			keys := make([]string, len(n.GroupBy))
			for i, g := range n.GroupBy {
				keys[i] = e.expr(g)
			}
			detail("Group Key: %s", strings.Join(keys, ", "))
		}
		for _, a := range n.Aggs {
			hidden = append(hidden, a.Arg)
		}
		kids = append(kids, n.Input)
	case *Join:
		kind := map[JoinKind]string{JoinSemi: " Semi", JoinAnti: " Anti", JoinRight: " Right",
			JoinRightSemi: " Right Semi", JoinRightAnti: " Right Anti"}[n.Kind]
		if len(n.LeftKeys) > 0 {
			title = "Hash" + kind + " Join"
			if n.SharedBuild {
				title = "Parallel " + title
			}
		} else {
			title = "Nested Loop" + kind
		}
		if e.opts.Verbose && len(n.LeftKeys) > 0 {
			detail("Hash Cond: %s", e.hashCond(n))
		}
		if n.On != nil {
			detail("Join Filter: %s", e.expr(n.On))
		}
		hidden = append(append(hidden, n.LeftKeys...), n.RightKeys...)
		kids = append(kids, n.Left, n.Right)
	case *LateralJoin:
		title = "LateralJoin"
		if n.On != nil {
			detail("Join Filter: %s", e.expr(n.On))
		}
		kids, lateral = append(kids, n.Left, n.Right), n.Args
	case *Window:
		title = "WindowAgg"
		kids = append(kids, n.Input)
	case *ProjectSet:
		title = "ProjectSet"
		for _, f := range n.SRFs {
			hidden = append(hidden, f.Arg)
		}
		kids = append(kids, n.Input)
	default:
		title = strings.TrimPrefix(fmt.Sprintf("%T", n), "*plan.")
		kids = append(kids, children(n)...)
	}
	if e.opts.Verbose {
		details = append([]string{"Output: " + strings.Join(e.output(n), ", ")}, details...)
	}
	for _, x := range hidden {
		if x != nil {
			// Only for the subqueries in it.
			e.expr(x)
		}
	}
	head := strings.Repeat(" ", pad)
	in := pad + 2
	if arrow {
		head += "->  "
		in = pad + 6
	}
	e.lines = append(e.lines, head+title+e.actual(shown))
	for _, d := range details {
		e.lines = append(e.lines, strings.Repeat(" ", in)+d)
	}
	// PostgreSQL's order: the plans run once before the node's children,
	// the ones run per row after them.
	subs := e.found
	for _, sq := range subs {
		if initPlan(sq) {
			e.subplan(sq, in)
		}
	}
	for i, k := range kids {
		if i == 1 && lateral != nil {
			e.params = append(e.params, e.texts(lateral))
			e.node(k, in, true, nil, nil)
			e.params = e.params[:len(e.params)-1]
			continue
		}
		e.node(k, in, true, nil, nil)
	}
	for _, sq := range subs {
		if !initPlan(sq) {
			e.subplan(sq, in)
		}
	}
}

// stream returns the details of tensor stream n: how it reads its rows
// (TensorStream) and the options that decide it.
func (e *explainer) stream(n *CopyTo) []string {
	t := n.Options.Tensor
	s := n.Stream
	if s == nil {
		s = &TensorStream{Read: ReadQuery}
	}
	var out []string
	switch s.Read {
	case ReadRowGroups:
		out = append(out, "Read: by row group")
	case ReadByRowID:
		out = append(out, "Read: exact shuffle by row id")
	default:
		out = append(out, "Read: in order")
	}
	switch t.Shuffle {
	case ShuffleBuffer:
		out = append(out, fmt.Sprintf("Shuffle: buffer of %d rows", t.ShuffleBuffer))
	case ShuffleExact:
		if s.RandomOrder {
			out = append(out, "Shuffle: exact, for ORDER BY random()")
		} else {
			out = append(out, "Shuffle: exact")
		}
	}
	if t.SeedSet {
		out = append(out, fmt.Sprintf("Seed: %d", t.Seed))
	}
	if t.World > 1 {
		out = append(out, fmt.Sprintf("Shard: %d/%d", t.Rank, t.World))
	}
	if t.StartBatch > 0 {
		out = append(out, fmt.Sprintf("Start Batch: %d", t.StartBatch))
	}
	switch {
	case t.VersionRef != "":
		out = append(out, "Version: '"+strings.ReplaceAll(t.VersionRef, "'", "''")+"'")
	case t.Version != 0:
		out = append(out, fmt.Sprintf("Version: %d", t.Version))
	}
	if s.Limit != nil {
		l := "Limit: " + e.count(s.Limit)
		if s.Global {
			l += " of all shards"
		}
		out = append(out, l)
	}
	if s.Offset != nil {
		out = append(out, "Offset: "+e.count(s.Offset))
	}
	if late := lateColumns(s); len(late) > 0 {
		out = append(out, "Late Columns: "+strings.Join(late, ", "))
	}
	return out
}

// count prints a LIMIT's count or offset: a constant as its value.
func (e *explainer) count(x Expr) string {
	if c, ok := x.(*Const); ok && !c.Null && c.Val != nil && c.Param == nil {
		return string(types.AppendText(nil, c.Val, 0))
	}
	return e.expr(x)
}

// lateColumns names the columns of s's table scan that a stream under a
// WHERE reads only for the rows that pass it, when that reads less: those
// its narrow scan (TensorStream.IDScan) does not read.
func lateColumns(s *TensorStream) []string {
	if s.Scan == nil || s.Scan.Filter == nil || s.IDScan == nil || s.IDScan == s.Scan {
		return nil
	}
	var names []string
	for _, c := range s.Scan.Cols {
		if c < len(s.Scan.Table.Columns) && !slices.Contains(s.IDScan.Cols, c) {
			names = append(names, s.Scan.Table.Columns[c].Name)
		}
	}
	return names
}

// output is the text of the values node n emits, for VERBOSE's Output:
// its columns' names, an aggregate's group keys and calls.
func (e *explainer) output(n Node) []string {
	if a, ok := n.(*Aggregate); ok {
		out := e.texts(a.GroupBy)
		for _, c := range a.Aggs {
			out = append(out, e.aggCall(c))
		}
		return out
	}
	cols := n.Columns()
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
		if out[i] == "" {
			out[i] = "?column?"
		}
	}
	return out
}

// aggCall prints a as it is written: count(*), sum(x), string_agg(DISTINCT s, ',').
func (e *explainer) aggCall(a AggCall) string {
	if a.Arg == nil {
		return a.Name + "(*)"
	}
	arg := e.expr(a.Arg)
	if a.Distinct {
		arg = "DISTINCT " + arg
	}
	if a.Func == AggStringAgg {
		arg += ", '" + strings.ReplaceAll(a.Sep, "'", "''") + "'"
	}
	return a.Name + "(" + arg + ")"
}

// hashCond prints the equalities of join j's hash keys, as PostgreSQL's
// Hash Cond: the left input's side first.
func (e *explainer) hashCond(j *Join) string {
	eqs := make([]string, len(j.LeftKeys))
	for i := range j.LeftKeys {
		eqs[i] = "(" + e.expr(j.LeftKeys[i]) + " = " + e.expr(j.RightKeys[i]) + ")"
	}
	if len(eqs) == 1 {
		return eqs[0]
	}
	return "(" + strings.Join(eqs, " AND ") + ")"
}

// sortKeys prints keys over the columns in as PostgreSQL's Sort Key.
func sortKeys(in []Column, keys []SortKey) string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = in[k.Col].Name
		if k.Desc {
			out[i] += " DESC"
		}
		if k.NullsFirst != k.Desc {
			if k.NullsFirst {
				out[i] += " NULLS FIRST"
			} else {
				out[i] += " NULLS LAST"
			}
		}
	}
	return strings.Join(out, ", ")
}

// topN prints the rows a top-k sort keeps: their number when the LIMIT
// and OFFSET are constants, else their sum ($1 + 5).
func (e *explainer) topN(t *TopK) string {
	count, ok := intConst(t.Count)
	offset, ok2 := intConst(t.Offset)
	switch {
	case ok && t.Offset == nil:
		return fmt.Sprint(count)
	case ok && ok2 && count >= 0 && offset >= 0 && count <= math.MaxInt64-offset:
		return fmt.Sprint(count + offset)
	case t.Offset == nil:
		return e.limitTerm(t.Count)
	}
	return e.limitTerm(t.Count) + " + " + e.limitTerm(t.Offset)
}

// limitTerm prints a LIMIT or OFFSET: an integer constant as a number.
func (e *explainer) limitTerm(x Expr) string {
	if v, ok := intConst(x); ok {
		return fmt.Sprint(v)
	}
	return e.expr(x)
}

// intConst returns the value of a non-NULL integer constant.
func intConst(x Expr) (int64, bool) {
	c, ok := x.(*Const)
	if !ok || c.Param != nil || c.Null || c.Val == nil || !c.Typ.IsInteger() {
		return 0, false
	}
	return c.Val.Ints[0], true
}

// rankingNames names the ranking functions a PartitionTopK bounds.
var rankingNames = map[WindowFunc]string{WinRowNumber: "row_number", WinRank: "rank", WinDenseRank: "dense_rank"}

// actual is the end of the line of node n under EXPLAIN ANALYZE.
func (e *explainer) actual(n Node) string {
	if e.opts.Actual == nil {
		return ""
	}
	a := e.opts.Actual(n)
	if a.Loops == 0 {
		return " (never executed)"
	}
	loops := float64(a.Loops)
	rows := float64(a.Rows) / loops
	if !e.opts.Timing {
		return fmt.Sprintf(" (actual rows=%.0f loops=%d)", rows, a.Loops)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / loops }
	return fmt.Sprintf(" (actual time=%.3f..%.3f rows=%.0f loops=%d)", ms(a.Startup), ms(a.Total), rows, a.Loops)
}

// subplan lays out the plan of sq under its label, at column pad.
func (e *explainer) subplan(sq *Subquery, pad int) {
	e.lines = append(e.lines, strings.Repeat(" ", pad)+subName(sq, e.subs[sq]))
	e.params = append(e.params, e.args[sq])
	e.node(sq.Plan, pad+2, true, nil, nil)
	e.params = e.params[:len(e.params)-1]
}

// initPlan reports whether sq runs once, before the rows that read it
// (PostgreSQL's InitPlan), rather than for each row (a SubPlan).
func initPlan(sq *Subquery) bool {
	return len(sq.Args) == 0 && sq.Kind != SubAny && sq.Kind != SubAll
}

func subName(sq *Subquery, n int) string {
	if initPlan(sq) {
		return fmt.Sprintf("InitPlan %d", n)
	}
	return fmt.Sprintf("SubPlan %d", n)
}

func (e *explainer) texts(xs []Expr) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = e.expr(x)
	}
	return out
}

// children returns the inputs of nodes Explain has no layout of its own for.
func children(n Node) []Node {
	switch n := n.(type) {
	case *Materialize:
		return []Node{n.Input}
	case *SetOp:
		return []Node{n.Left, n.Right}
	case *Append:
		return n.Inputs
	case *RecursiveUnion:
		return []Node{n.Base, n.Recursive}
	}
	return nil
}

// ExprText prints e as EXPLAIN shows expressions: columns by name,
// operators infix, constants as typed literals, subqueries as PostgreSQL
// names them (numbered from 1 within e).
func ExprText(e Expr) string {
	var x explainer
	return x.expr(e)
}

// expr prints x as ExprText does, numbering the subqueries it meets for
// the first time and adding them to e.found.
func (e *explainer) expr(x Expr) string {
	switch x := x.(type) {
	case *ColRef:
		if x.Name != "" {
			return x.Name
		}
		return x.String()
	case *Const:
		if x.Param != nil {
			return fmt.Sprintf("$%d", x.Param.N)
		}
		if x.Null || x.Val == nil {
			return x.String()
		}
		s := "'" + strings.ReplaceAll(string(types.AppendText(nil, x.Val, 0)), "'", "''") + "'"
		if x.Typ.Kind == types.Unknown {
			return s
		}
		return s + "::" + x.Typ.String()
	case *Cast:
		return e.expr(x.X) + "::" + x.Typ.String()
	case *Call:
		args := e.texts(x.Args)
		if len(args) == 2 && infix(x.Op) {
			return "(" + args[0] + " " + x.Op.String() + " " + args[1] + ")"
		}
		switch x.Op {
		case OpNot:
			return "(NOT " + args[0] + ")"
		case OpIsNull, OpIsNotNull:
			return "(" + args[0] + " " + x.Op.String() + ")"
		case OpAnd, OpOr:
			return "(" + strings.Join(args, " "+x.Op.String()+" ") + ")"
		}
		return x.Op.String() + "(" + strings.Join(args, ", ") + ")"
	case *Param:
		// The outer expression the plan reads, as PostgreSQL shows an
		// outer column a subquery refers to.
		if k := len(e.params); k > 0 && x.Idx < len(e.params[k-1]) {
			return e.params[k-1][x.Idx]
		}
		return x.String()
	case *Subquery:
		return e.subquery(x)
	}
	return x.String()
}

// subquery prints sq as PostgreSQL 17 shows a reference to a subplan:
// (InitPlan 1).col1 for the value of one run once, (SubPlan 1) for one
// run per row, EXISTS(SubPlan 1), ARRAY(SubPlan 1), and
// (ANY (x = (SubPlan 1).col1)) for IN and ANY.
func (e *explainer) subquery(sq *Subquery) string {
	n, ok := e.subs[sq]
	if !ok {
		if e.subs == nil {
			e.subs = make(map[*Subquery]int)
			e.args = make(map[*Subquery][]string)
		}
		n = len(e.subs) + 1
		e.subs[sq] = n
		e.found = append(e.found, sq)
		// Its arguments are over this node's input: printed here.
		e.args[sq] = e.texts(sq.Args)
	}
	name := subName(sq, n)
	switch sq.Kind {
	case SubAny, SubAll:
		kw := "ANY"
		if sq.Kind == SubAll {
			kw = "ALL"
		}
		return "(" + kw + " (" + e.expr(sq.Test) + " " + sq.Op.String() + " (" + name + ").col1))"
	}
	if initPlan(sq) {
		return "(" + name + ").col1"
	}
	switch sq.Kind {
	case SubExists:
		return "EXISTS(" + name + ")"
	case SubArray:
		return "ARRAY(" + name + ")"
	}
	return "(" + name + ")"
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
