package plan

import (
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// Node is a relational operator in a plan. Every node produces a fixed list
// of output columns.
type Node interface {
	Columns() []Column
}

// Column is one output column of a Node.
type Column struct {
	Name string
	Type types.Type
	// TableID and Ordinal identify a base-table column (0 and -1 otherwise).
	TableID uint64
	Ordinal int
}

// Scan reads columns Cols (ordinals) of Table.
type Scan struct {
	Table *storage.TableDesc
	Cols  []int
	// Filter is pushed down into the scan by the planner; nil if none. It
	// refers to the scan's own output columns.
	Filter Expr
	// Borrow is set for a reader that only reads the rows' values (an
	// in-order tensor stream): bytes columns may then be windows onto the
	// chunks read (storage.ScanOptions.Borrow).
	Borrow bool
	// Hollow lists table columns whose values the reader reads itself
	// straight from storage (storage.ScanOptions.Hollow); with Borrow.
	Hollow []int
}

// SysScan reads columns Cols of a system table, whose rows exec generates
// from the catalog when the scan starts. Column len(Table.Cols) is the
// system column tableoid.
type SysScan struct {
	Table *SysTable
	Cols  []int
}

// Values produces constant rows; zero columns and one row for SELECT without FROM.
type Values struct {
	Cols []Column
	Rows [][]Expr
}

// JoinKind is the kind of a Join.
type JoinKind uint8

// Join kinds. A right join is bound as a left join with its inputs
// swapped; the planner makes JoinRight of a left join whose right input
// is the larger, so that the hash table holds the smaller.
const (
	JoinInner JoinKind = iota + 1
	JoinLeft
	JoinFull
	// JoinSemi and JoinAnti return the rows of Left that have a match in
	// Right (EXISTS) or none (NOT EXISTS), each once, with Left's columns
	// only; the planner makes them of correlated subqueries.
	JoinSemi
	JoinAnti
	// JoinRight returns the pairs that match and Right's rows without a
	// match, padded with NULLs.
	JoinRight
	// JoinRightSemi and JoinRightAnti return the rows of Right that have
	// a match in Left or none, each once, with Right's columns only: a
	// semi or anti join whose hash table holds the rows it returns,
	// made by the planner when they are the fewer.
	JoinRightSemi
	JoinRightAnti
)

// Join combines rows of Left and Right; its output is Left's columns
// followed by Right's. On (over that output; nil means true) decides which
// pairs match; an outer join also emits unmatched rows padded with NULLs.
// The planner moves equalities between a Left and a Right expression from On
// into LeftKeys/RightKeys (hashed), leaving the rest in On.
type Join struct {
	Kind        JoinKind
	Left, Right Node
	On          Expr
	LeftKeys    []Expr // over Left's columns
	RightKeys   []Expr // over Right's columns
	// SharedBuild marks a hash join in a Gather's pipeline whose workers
	// probe one hash table, built from Right by one of them (EXPLAIN's
	// Parallel Hash Join); inner, left, semi and anti joins only.
	SharedBuild bool
}

// Series is generate_series(Start, Stop[, Step]): one integer column. The
// arguments read no columns (Params of an enclosing query at most).
type Series struct {
	Start, Stop, Step Expr // Step nil means 1
	Typ               types.Type
	Name              string
}

// HistoryKind is a table function over a table's history.
type HistoryKind uint8

// History functions (docs/versioning.md).
const (
	HistoryLog  HistoryKind = iota + 1 // deeplake_log: the commits a ref reaches
	HistoryDiff                        // deeplake_diff: the rows two refs differ in
	HistoryRefs                        // deeplake_refs: the branches, tags and commits
)

// History is deeplake_log(t [, ref]) or deeplake_diff(t, a, b) in FROM.
// Its arguments are constants, resolved to views when bound: Table is the
// view the log starts from, or diff's first; B diff's second.
type History struct {
	Kind  HistoryKind
	Table *storage.TableDesc
	B     *storage.TableDesc
	Cols  []Column
}

// SRFKind is a set-returning function of a select list.
type SRFKind uint8

// Set-returning functions.
const (
	SRFUnnest             SRFKind = iota + 1 // the elements of an array
	SRFGenerateSubscripts                    // 1..n over an array's dimension 1
	SRFExpandArray                           // (element, position) as the text "(x,n)"
)

// SRF is one set-returning call of a ProjectSet.
type SRF struct {
	Kind SRFKind
	Arg  Expr // the array, over the ProjectSet's input
	Typ  types.Type
}

// ProjectSet runs its SRFs on each input row in lockstep, as PostgreSQL
// does: the row repeats as often as the longest result, shorter results
// padded with NULL. Its output is the input's columns, then one column per
// SRF.
type ProjectSet struct {
	Input Node
	SRFs  []SRF
}

// RecursiveUnion is a WITH RECURSIVE query: Base's rows, then Recursive's
// run again and again over the rows the previous run added (read through
// WorkTable ID), until a run adds none. Without All, rows already produced
// are not added again.
type RecursiveUnion struct {
	ID              int
	Base, Recursive Node
	All             bool
}

// WorkTable reads the rows a RecursiveUnion's previous iteration added.
type WorkTable struct {
	ID   int
	Cols []Column
}

// Materialize reads all of Input before returning its first row (INSERT
// ... SELECT reading the table it writes).
type Materialize struct {
	Input Node
}

// SetOp is INTERSECT or EXCEPT [ALL] of two inputs with the same column
// types; rows compare as in DISTINCT (NULLs equal).
type SetOp struct {
	Except      bool // EXCEPT; INTERSECT otherwise
	All         bool
	Left, Right Node
}

// Append returns the rows of each input in turn (UNION ALL); the inputs
// have the same column types.
type Append struct {
	Inputs []Node
}

// LateralJoin joins each row of Left with the rows Right produces for it:
// Right reads Args (expressions over Left's columns) as Params, so it runs
// again for each left row. Kind is JoinInner or JoinLeft; On is over the
// output (Left's columns then Right's).
type LateralJoin struct {
	Kind        JoinKind
	Left, Right Node
	Args        []Expr
	On          Expr
}

// Filter keeps rows for which Pred is true.
type Filter struct {
	Input Node
	Pred  Expr
}

// Project computes Exprs over each input row.
type Project struct {
	Input Node
	Exprs []Expr
	Names []string
}

// AggFunc is an aggregate function.
type AggFunc uint8

// Aggregate functions.
const (
	AggCount AggFunc = iota + 1
	AggCountStar
	AggSum
	AggAvg
	AggMin
	AggMax
	AggStringAgg // string_agg(text, separator)
)

// AggCall is one aggregate computed by an Aggregate node.
type AggCall struct {
	Func     AggFunc
	Arg      Expr // nil for count(*)
	Distinct bool
	Typ      types.Type
	Name     string
	// Sep is string_agg's separator.
	Sep string
	// Count is, in a final aggregate, the column of avg's partial counts;
	// Arg is then the column of its partial sums.
	Count Expr
}

// AggPhase says what an Aggregate computes of its aggregates: all of
// them from its input's rows, or one of the two halves of a parallel
// aggregation, where each worker aggregates the rows it reads (partial)
// and one aggregate combines the workers' groups (final).
type AggPhase uint8

// Aggregate phases.
const (
	// AggSingle computes the aggregates from the input's rows.
	AggSingle AggPhase = iota
	// AggPartial outputs, per group, each aggregate's partial state
	// (PartialColumns) instead of its value: a count, a sum in the
	// result's type, avg's sum and count, a min or a max. It holds
	// groups up to its memory budget, then outputs them and starts
	// again, so a group may come out more than once; it never spills.
	AggPartial
	// AggFinal combines partial states: its group keys and arguments are
	// columns of a partial aggregate's output (Count for avg's count).
	AggFinal
)

// Partial reports whether an aggregate can be computed in two phases:
// each aggregate has a partial state that the final phase combines.
func (a AggCall) Partial() bool {
	if a.Distinct || a.Typ.IsVector() {
		return false
	}
	switch a.Func {
	case AggCount, AggCountStar, AggSum, AggAvg, AggMin, AggMax:
		return true
	}
	return false
}

// PartialColumns returns the columns of a's partial state: one, or two
// for avg (the sum, numeric for exact inputs, and the count).
func (a AggCall) PartialColumns() []Column {
	switch a.Func {
	case AggCount, AggCountStar:
		return []Column{{Name: a.Name, Type: types.TypInt8, Ordinal: -1}}
	case AggAvg:
		sum := types.TypFloat8
		if a.Typ.Kind == types.Numeric {
			sum = a.Typ
		}
		return []Column{{Name: a.Name + "_sum", Type: sum, Ordinal: -1}, {Name: a.Name + "_count", Type: types.TypInt8, Ordinal: -1}}
	}
	return []Column{{Name: a.Name, Type: a.Typ, Ordinal: -1}}
}

// FinalAggregate returns the aggregate that combines the groups of
// partial (an AggPartial aggregate) that input passes on: it groups by
// partial's keys and combines each aggregate's partial state.
func FinalAggregate(partial *Aggregate, input Node) *Aggregate {
	cols := partial.Columns()
	final := &Aggregate{Input: input, Phase: AggFinal}
	ref := func(i int, name string) Expr { return &ColRef{Idx: i, Typ: cols[i].Type, Name: name} }
	for i, g := range partial.GroupBy {
		final.GroupBy = append(final.GroupBy, ref(i, ExprText(g)))
	}
	k := len(partial.GroupBy)
	for _, c := range partial.Aggs {
		f := c
		f.Arg = ref(k, c.Name)
		k++
		if c.Func == AggAvg {
			f.Count = ref(k, c.Name+"_count")
			k++
		}
		final.Aggs = append(final.Aggs, f)
	}
	return final
}

// Aggregate groups its input by GroupBy and computes Aggs; its output is the
// group keys followed by the aggregates (their partial states when Phase
// is AggPartial).
type Aggregate struct {
	Input   Node
	GroupBy []Expr
	Aggs    []AggCall
	Phase   AggPhase
}

// SortKey orders by one input column.
type SortKey struct {
	Col        int
	Desc       bool
	NullsFirst bool
}

// Sort orders its input (stably: rows of equal keys keep their input
// order).
type Sort struct {
	Input Node
	Keys  []SortKey
	// TopK, set by the planner under a LIMIT, makes the sort emit only
	// its first rows, as many as the LIMIT can take; nil: all of them.
	TopK *TopK
}

// TopK bounds the rows a Sort emits to its first Count + Offset: a
// LIMIT's count and offset (Offset nil for none), which the Limit above
// the sort still applies. They read no column (constants or parameters)
// and are evaluated when the query runs; a NULL Count means all rows.
type TopK struct {
	Count, Offset Expr
}

// Limit skips Offset rows and returns at most Count (-1: no limit).
type Limit struct {
	Input  Node
	Count  Expr
	Offset Expr
}

// Insert writes rows (Input produces one column per table column, already
// coerced to the column types) and optionally returns Returning over them.
type Insert struct {
	Table     *storage.TableDesc
	Input     Node
	Returning []Expr
	RetNames  []string
}

// Update rewrites rows of Table that match Where; Set holds one expression
// per table column over the old row (a ColRef for unchanged columns).
type Update struct {
	Table     *storage.TableDesc
	Where     Expr // over the table's columns; nil for all rows
	Set       []Expr
	Returning []Expr
	RetNames  []string
}

// Delete removes the rows of Table that match Where.
type Delete struct {
	Table     *storage.TableDesc
	Where     Expr
	Returning []Expr
	RetNames  []string
}

// Columns implementations.

func (n *Scan) Columns() []Column {
	cols := make([]Column, len(n.Cols))
	for i, c := range n.Cols {
		if c == storage.RowIDColumn(n.Table) {
			cols[i] = Column{Name: storage.RowIDName, Type: types.TypInt8, Ordinal: -1}
			continue
		}
		cd := n.Table.Columns[c]
		cols[i] = Column{Name: cd.Name, Type: cd.Type, TableID: n.Table.ID, Ordinal: c}
	}
	return cols
}

func (n *Values) Columns() []Column { return n.Cols }

func (n *SysScan) Columns() []Column {
	cols := make([]Column, len(n.Cols))
	for i, c := range n.Cols {
		if c == len(n.Table.Cols) {
			cols[i] = Column{Name: "tableoid", Type: types.Type{Kind: types.Oid}, Ordinal: -1}
			continue
		}
		cols[i] = Column{Name: n.Table.Cols[c].Name, Type: n.Table.Cols[c].Type, Ordinal: -1}
	}
	return cols
}

func (n *ProjectSet) Columns() []Column {
	cols := append([]Column{}, n.Input.Columns()...)
	for _, f := range n.SRFs {
		cols = append(cols, Column{Name: "?srf?", Type: f.Typ, Ordinal: -1})
	}
	return cols
}

func (n *History) Columns() []Column { return n.Cols }

func (n *Series) Columns() []Column {
	return []Column{{Name: n.Name, Type: n.Typ, Ordinal: -1}}
}

func (n *Materialize) Columns() []Column { return n.Input.Columns() }

func (n *RecursiveUnion) Columns() []Column { return (&Append{Inputs: []Node{n.Base}}).Columns() }
func (n *WorkTable) Columns() []Column      { return n.Cols }

func (n *SetOp) Columns() []Column { return (&Append{Inputs: []Node{n.Left}}).Columns() }

func (n *Append) Columns() []Column {
	in := n.Inputs[0].Columns()
	cols := make([]Column, len(in))
	for i, c := range in {
		cols[i] = Column{Name: c.Name, Type: c.Type, Ordinal: -1}
	}
	return cols
}

func (n *LateralJoin) Columns() []Column {
	return append(append([]Column{}, n.Left.Columns()...), n.Right.Columns()...)
}

func (n *Join) Columns() []Column {
	switch n.Kind {
	case JoinSemi, JoinAnti:
		return n.Left.Columns()
	case JoinRightSemi, JoinRightAnti:
		return n.Right.Columns()
	}
	return append(append([]Column{}, n.Left.Columns()...), n.Right.Columns()...)
}
func (n *Filter) Columns() []Column { return n.Input.Columns() }
func (n *Sort) Columns() []Column   { return n.Input.Columns() }
func (n *Limit) Columns() []Column  { return n.Input.Columns() }

func (n *Project) Columns() []Column {
	in := n.Input.Columns()
	cols := make([]Column, len(n.Exprs))
	for i, e := range n.Exprs {
		cols[i] = Column{Name: n.Names[i], Type: e.Type(), Ordinal: -1}
		if r, ok := e.(*ColRef); ok && r.Idx < len(in) {
			cols[i].TableID, cols[i].Ordinal = in[r.Idx].TableID, in[r.Idx].Ordinal
		}
	}
	return cols
}

func (n *Aggregate) Columns() []Column {
	cols := make([]Column, 0, len(n.GroupBy)+len(n.Aggs))
	for _, g := range n.GroupBy {
		cols = append(cols, Column{Name: "?column?", Type: g.Type(), Ordinal: -1})
	}
	for _, a := range n.Aggs {
		if n.Phase == AggPartial {
			cols = append(cols, a.PartialColumns()...)
			continue
		}
		cols = append(cols, Column{Name: a.Name, Type: a.Typ, Ordinal: -1})
	}
	return cols
}

func returningColumns(exprs []Expr, names []string) []Column {
	cols := make([]Column, len(exprs))
	for i, e := range exprs {
		cols[i] = Column{Name: names[i], Type: e.Type(), Ordinal: -1}
	}
	return cols
}

func (n *Insert) Columns() []Column { return returningColumns(n.Returning, n.RetNames) }
func (n *Update) Columns() []Column { return returningColumns(n.Returning, n.RetNames) }
func (n *Delete) Columns() []Column { return returningColumns(n.Returning, n.RetNames) }

// VectorTopK is a nearest-neighbour search: the rows of a table whose
// vector column is nearest to Query by Op (a distance operator), the first
// Count + Offset of them in ascending distance (NULL distances last), as
// an `ORDER BY col <op> query LIMIT count OFFSET offset` reads them. Search
// is the scan the distances are computed over: the table narrowed to the
// vector column (SearchCol of its output) and the filter's columns. The
// rows found are then fetched by row id with Scan's columns (those the
// query reads besides the distance; Scan has no filter), and the search
// outputs them followed by the distance, of type Dist, computed as the
// operator computes it.
type VectorTopK struct {
	Scan          *Scan
	Search        *Scan
	SearchCol     int
	Op            Op
	Query         Expr
	Count, Offset Expr
	// Index, when set, is the hnsw index on the column whose operator
	// class orders by Op: the search walks its graph (hnsw.ef_search)
	// instead of computing every row's distance.
	Index *storage.IndexDesc
	// FilterScan, with Search.Filter, is Scan narrowed to the filter's
	// columns: an index search reads it to learn which rows pass.
	FilterScan *Scan
	Dist       types.Type
}

func (n *VectorTopK) Columns() []Column {
	return append(n.Scan.Columns(), Column{Name: "distance", Type: n.Dist, Ordinal: -1})
}
