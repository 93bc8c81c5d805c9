package planner

import (
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// Options are what Plan needs to know beyond the query.
type Options struct {
	// Workers is the most workers a Gather may use (below 2: none).
	Workers int
	// TableRows returns about how many rows a table holds (nil: nothing
	// is known, every table is taken as equal).
	TableRows func(*storage.TableDesc) int64
}

// Default selectivities, PostgreSQL's where it has one (selfuncs.h):
// an equality, a range comparison, a pattern match; a condition the
// estimate does not know keeps a third of the rows.
const (
	selEq      = 0.005
	selRange   = 1.0 / 3
	selMatch   = 0.005
	selUnknown = 1.0 / 3
	// groupsPerRow is the share of its input rows an aggregate's groups
	// are taken to be.
	groupsPerRow = 0.1
)

// estimator estimates how many rows plan nodes emit. Without statistics
// it works from the tables' sizes and default selectivities: enough to
// tell a table of millions of rows from one of thousands, which is what
// the choices it serves need.
type estimator struct {
	tableRows func(*storage.TableDesc) int64
	// rowsOf holds each table's rows once asked (a table's size is asked
	// again at every join above its scan).
	rowsOf map[*storage.TableDesc]float64
}

// rows returns about how many rows n emits.
func (e *estimator) rows(n plan.Node) float64 {
	switch n := n.(type) {
	case *plan.Scan:
		if storage.LookupOf(n.Table, n.ZonePreds()) != storage.NoLookup {
			return 1
		}
		r, ok := e.rowsOf[n.Table]
		if !ok {
			r = 1000
			if e.tableRows != nil {
				r = float64(e.tableRows(n.Table))
			}
			if e.rowsOf == nil {
				e.rowsOf = make(map[*storage.TableDesc]float64)
			}
			e.rowsOf[n.Table] = r
		}
		return r * selectivity(n.Filter)
	case *plan.Filter:
		return e.rows(n.Input) * selectivity(n.Pred)
	case *plan.Project:
		return e.rows(n.Input)
	case *plan.Sort:
		return e.rows(n.Input)
	case *plan.Window:
		return e.rows(n.Input)
	case *plan.Materialize:
		return e.rows(n.Input)
	case *plan.Limit:
		r := e.rows(n.Input)
		if c, ok := n.Count.(*plan.Const); ok && c.Param == nil && !c.Null && c.Val.Type.Phys() == types.PhysInt {
			r = min(r, float64(c.Val.Ints[0]))
		}
		return r
	case *plan.Aggregate:
		if len(n.GroupBy) == 0 {
			return 1
		}
		return max(1, e.rows(n.Input)*groupsPerRow)
	case *plan.Join:
		l, r := e.rows(n.Left), e.rows(n.Right)
		switch n.Kind {
		case plan.JoinSemi, plan.JoinAnti:
			return l * 0.5
		case plan.JoinRightSemi, plan.JoinRightAnti:
			return r * 0.5
		case plan.JoinFull:
			return l + r
		case plan.JoinRight:
			l, r = r, l
		}
		// An equi-join is taken as a key joined to a foreign key: as many
		// rows as the larger side.
		out := l * r
		if len(n.LeftKeys) > 0 {
			out = max(l, r)
		}
		out *= selectivity(n.On)
		if n.Kind == plan.JoinLeft || n.Kind == plan.JoinRight {
			out = max(out, l)
		}
		return out
	case *plan.Values:
		return float64(len(n.Rows))
	}
	return 1000
}

// selectivity returns about the share of rows that pass e (nil: all).
func selectivity(e plan.Expr) float64 {
	if e == nil {
		return 1
	}
	c, ok := e.(*plan.Call)
	if !ok {
		return selUnknown
	}
	switch c.Op {
	case plan.OpAnd:
		s := 1.0
		for _, a := range c.Args {
			s *= selectivity(a)
		}
		return s
	case plan.OpOr:
		s := 0.0
		for _, a := range c.Args {
			s += selectivity(a)
		}
		return min(s, 1)
	case plan.OpNot:
		return 1 - selectivity(c.Args[0])
	case plan.OpEq, plan.OpIsNull:
		return selEq
	case plan.OpNe, plan.OpIsNotNull:
		return 1 - selEq
	case plan.OpLt, plan.OpLe, plan.OpGt, plan.OpGe:
		return selRange
	case plan.OpIn:
		return min(1, selEq*float64(len(c.Args)-1))
	case plan.OpLike, plan.OpILike:
		return selMatch
	}
	return selUnknown
}

// buildSmaller makes each inner, left, semi or anti hash join build its
// hash table from the input estimated to have fewer rows: exec reads the
// right input into memory and streams the left, so when the right is the
// larger the inputs swap (a left join becoming a right join, a semi or
// anti join a right semi or anti join), with a projection above that puts
// the columns back in the order the join's consumers read them.
func (e *estimator) buildSmaller(n plan.Node) plan.Node {
	n = mapChildren(n, e.buildSmaller)
	j, ok := n.(*plan.Join)
	if !ok || len(j.LeftKeys) == 0 {
		return n
	}
	// Swapped, a left join keeps its left rows without a match as a
	// right join (which emits the build rows no probe row matched), a
	// semi or anti join returns its build rows that matched or not.
	swapped, ok := map[plan.JoinKind]plan.JoinKind{plan.JoinInner: plan.JoinInner, plan.JoinLeft: plan.JoinRight,
		plan.JoinSemi: plan.JoinRightSemi, plan.JoinAnti: plan.JoinRightAnti}[j.Kind]
	if !ok {
		return n
	}
	l, r := max(1, e.rows(j.Left)), max(1, e.rows(j.Right))
	if r <= 2*l {
		// Swapping costs a projection: only for a clear difference.
		return n
	}
	nl, nr := len(j.Left.Columns()), len(j.Right.Columns())
	// The swapped join's pairs are Right's columns, then Left's (the
	// columns its condition reads).
	toSwapped := make([]int, nl+nr)
	for i := range toSwapped {
		if i < nl {
			toSwapped[i] = nr + i
		} else {
			toSwapped[i] = i - nl
		}
	}
	s := &plan.Join{Kind: swapped, Left: j.Right, Right: j.Left, LeftKeys: j.RightKeys, RightKeys: j.LeftKeys}
	if j.On != nil {
		s.On = Remap(j.On, toSwapped)
	}
	if swapped == plan.JoinRightSemi || swapped == plan.JoinRightAnti {
		return s // its columns are the left input's, as before
	}
	cols := j.Columns()
	p := &plan.Project{Input: s, Exprs: make([]plan.Expr, len(cols)), Names: make([]string, len(cols))}
	for i, c := range cols {
		p.Exprs[i] = &plan.ColRef{Idx: toSwapped[i], Typ: c.Type, Name: c.Name}
		p.Names[i] = c.Name
	}
	return p
}
