package planner

import (
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// Scalar aggregate subqueries. A filter's conjunct that reads a scalar
// subquery aggregating the rows its WHERE matches to the outer row by
// equalities, as TPC-H's queries 2, 17 and 20 do,
//
//	l_quantity < (SELECT 0.2 * avg(l_quantity) FROM lineitem WHERE l_partkey = p_partkey)
//
// reads instead the row of a hash join of the filter's input with the
// subquery's input grouped by the equalities' inner sides (l_partkey), so
// the inner table is read and aggregated once rather than once per outer
// row. The equalities are the join's keys: an outer row meets the group
// its subquery would have aggregated, and at most one, as a group's key
// is unique under the equality the join compares keys with (the key's
// type is one whose grouping and equality agree). An outer row that meets
// no group is one whose subquery aggregates no row (a NULL key included:
// = matches no NULL, and a hash key none either). When the conjunct cannot
// be true then, the subquery's value being NULL (min, max, sum, avg) and
// the conjunct NULL with it, the join is inner and drops the row;
// otherwise (count, coalesce(max(x), 0)) the join is a left join and the
// value is computed from its NULLs with every count 0, as the subquery
// computes it over no row.
//
// The subquery must be one select item over aggregates without GROUP BY,
// HAVING, window, DISTINCT, ORDER BY or LIMIT, read the outer row only in
// equalities inner = outer of its WHERE (both sides of one type), and
// aggregate only with count, sum, avg, min and max. Their arguments must
// not fail (1/x): the grouped input computes them for every row, also
// those of groups no outer row meets, where the subquery computed them
// only on the rows it matched. A subquery of any other shape runs per row.

// groupedSubquery is a correlated scalar subquery as a grouped aggregate.
type groupedSubquery struct {
	sq *plan.Subquery
	// group is the subquery's input, filtered by the conjuncts of its
	// WHERE that do not read the outer row, grouped by the correlated
	// equalities' inner sides: its output is those keys, then the
	// subquery's aggregates.
	group *plan.Aggregate
	// keys are the equalities' outer sides, over the filter's input.
	keys []plan.Expr
	// value is the subquery's select item; its column i is aggregate i.
	value plan.Expr
}

// groupSubquery returns sq as a grouped aggregate, when it has the shape
// the rewrite keeps the answers of.
func groupSubquery(sq *plan.Subquery) (*groupedSubquery, bool) {
	if sq.Kind != plan.SubScalar || len(sq.Args) == 0 {
		return nil, false
	}
	for _, a := range sq.Args {
		if !plan.RowWise(a) {
			return nil, false
		}
	}
	p, ok := sq.Plan.(*plan.Project)
	if !ok || len(p.Exprs) != 1 {
		return nil, false
	}
	agg, ok := p.Input.(*plan.Aggregate)
	if !ok || len(agg.GroupBy) > 0 || len(agg.Aggs) == 0 {
		return nil, false
	}
	f, ok := agg.Input.(*plan.Filter)
	if !ok || readsParams(f.Input) {
		return nil, false
	}
	for _, a := range agg.Aggs {
		switch a.Func {
		case plan.AggCount, plan.AggCountStar, plan.AggSum, plan.AggAvg, plan.AggMin, plan.AggMax:
		default:
			return nil, false
		}
		if a.Arg != nil && (exprReadsParams(a.Arg) || !cannotFail(a.Arg)) {
			return nil, false
		}
	}
	v := p.Exprs[0]
	if exprReadsParams(v) || hasSubquery(v) || volatile(v) || !readsColumn(v) {
		return nil, false
	}
	g := &groupedSubquery{sq: sq, value: v}
	inner, correlated, ok := splitCorrelated(f.Pred)
	if !ok {
		return nil, false
	}
	var groupBy []plan.Expr
	for _, c := range correlated {
		in, out, ok := correlation(c, sq.Args)
		if !ok {
			return nil, false
		}
		groupBy = append(groupBy, in)
		g.keys = append(g.keys, out)
	}
	input := f.Input
	if len(inner) > 0 {
		input = &plan.Filter{Input: input, Pred: and(inner)}
	}
	g.group = &plan.Aggregate{Input: input, GroupBy: groupBy, Aggs: agg.Aggs}
	return g, true
}

// correlation splits conjunct c of a subquery's WHERE, inner = outer
// (either way round), into the inner side, over the subquery's input, and
// the outer side, over the outer row (args for the parameters).
func correlation(c plan.Expr, args []plan.Expr) (inner, outer plan.Expr, ok bool) {
	eq, isCall := c.(*plan.Call)
	if !isCall || eq.Op != plan.OpEq || len(eq.Args) != 2 {
		return nil, nil, false
	}
	l, r := eq.Args[0], eq.Args[1]
	if exprReadsParams(l) {
		l, r = r, l
	}
	if exprReadsParams(l) || readsColumn(r) || !l.Type().Equal(r.Type()) || !groupsByEquality(l.Type()) {
		return nil, nil, false
	}
	outer = mapLeaves(r, func(x plan.Expr) plan.Expr {
		if p, ok := x.(*plan.Param); ok {
			return args[p.Idx]
		}
		return x
	})
	return l, outer, true
}

// groupsByEquality reports whether values of type t fall in one group
// exactly when = holds between them, so that a grouped key meets an outer
// value at most once: not for interval ('1 day' = '24 hours'), bpchar
// (trailing spaces), numbers held as text, vectors or JSON.
func groupsByEquality(t types.Type) bool {
	switch t.Kind {
	case types.Bool, types.Int2, types.Int4, types.Int8, types.Float4, types.Float8,
		types.Oid, types.Date, types.Timestamp, types.TimestampTZ,
		types.Text, types.Varchar, types.Name, types.Char, types.Bytea, types.UUID:
		return true
	}
	return false
}

// cannotFail reports whether e, an aggregate's argument, computes a value
// for any row: columns, constants, casts to a wider number, and float
// arithmetic (which fails only on an overflow, as float sums do).
func cannotFail(e plan.Expr) bool {
	if !readsColumn(e) {
		return plan.RowWise(e) // the same value, or error, for every row
	}
	switch x := e.(type) {
	case *plan.ColRef:
		return true
	case *plan.Cast:
		return widens(x.X.Type(), x.Typ) && cannotFail(x.X)
	case *plan.Call:
		switch x.Op {
		case plan.OpAdd, plan.OpSub, plan.OpMul, plan.OpNeg, plan.OpAbs:
			if k := x.Typ.Kind; k != types.Float4 && k != types.Float8 {
				return false
			}
		case plan.OpCoalesce:
		default:
			return false
		}
		for _, a := range x.Args {
			if !cannotFail(a) {
				return false
			}
		}
		return true
	}
	return false
}

// widens reports whether a cast from number type from to number type to
// converts every value (a float4 rounds an int8's, never fails).
func widens(from, to types.Type) bool {
	rank := func(k types.Kind) int {
		switch k {
		case types.Int2:
			return 1
		case types.Int4:
			return 2
		case types.Int8:
			return 3
		case types.Float4:
			return 4
		case types.Float8:
			return 5
		}
		return 0
	}
	f, t := rank(from.Kind), rank(to.Kind)
	return f > 0 && t >= f
}

func readsColumn(e plan.Expr) bool {
	found := false
	Walk(e, func(x plan.Expr) {
		if _, ok := x.(*plan.ColRef); ok {
			found = true
		}
	})
	return found
}

// nullOnEmpty reports whether the subquery's value over no row is NULL:
// its aggregates then are NULL but for counts (0).
func (g *groupedSubquery) nullOnEmpty() bool {
	return nullWith(g.value, func(x plan.Expr) bool {
		r, ok := x.(*plan.ColRef)
		return ok && !isCount(g.group.Aggs[r.Idx])
	})
}

func isCount(a plan.AggCall) bool { return a.Func == plan.AggCount || a.Func == plan.AggCountStar }

// nullWith reports whether e is NULL whenever the expressions null picks
// are: it reaches one through operators that are NULL on a NULL operand.
func nullWith(e plan.Expr, null func(plan.Expr) bool) bool {
	if null(e) {
		return true
	}
	switch x := e.(type) {
	case *plan.Cast:
		return nullWith(x.X, null)
	case *plan.Call:
		switch x.Op {
		case plan.OpAdd, plan.OpSub, plan.OpMul, plan.OpDiv, plan.OpMod, plan.OpNeg, plan.OpAbs,
			plan.OpEq, plan.OpNe, plan.OpLt, plan.OpLe, plan.OpGt, plan.OpGe, plan.OpNot:
			for _, a := range x.Args {
				if nullWith(a, null) {
					return true
				}
			}
		}
	}
	return false
}

// join returns left joined with the grouped subquery, inner or left, and
// the subquery's value over the join's output. The groups are the build
// side: the aggregate holds them all anyway, so hashing them at most
// doubles that, where nothing bounds the outer side's rows.
func (g *groupedSubquery) join(left plan.Node, inner bool) (plan.Node, plan.Expr) {
	nl, nk := len(left.Columns()), len(g.keys)
	on := make([]plan.Expr, nk)
	for i, k := range g.keys {
		name := ""
		if r, ok := g.group.GroupBy[i].(*plan.ColRef); ok {
			name = r.Name
		}
		key := &plan.ColRef{Idx: nl + i, Typ: k.Type(), Name: name}
		on[i] = &plan.Call{Op: plan.OpEq, Args: []plan.Expr{k, key}, Typ: types.TypBool}
	}
	kind := plan.JoinLeft
	if inner {
		kind = plan.JoinInner
	}
	j := hashJoinKeys(&plan.Join{Kind: kind, Left: left, Right: Optimize(g.group), On: and(on)})
	value := mapRefs(g.value, func(r *plan.ColRef) plan.Expr {
		c := *r
		c.Idx = nl + nk + r.Idx
		if a := g.group.Aggs[r.Idx]; !inner && isCount(a) {
			// An outer row that met no group counts no row.
			return &plan.Call{Op: plan.OpCoalesce, Args: []plan.Expr{&c, plan.IntConst(a.Typ, 0)}, Typ: a.Typ}
		}
		return &c
	})
	return j, value
}

// joinAggregates returns input filtered by conjuncts cs, with the scalar
// aggregate subqueries they read (those groupSubquery takes) computed by
// joins, and whether there was one. The conjuncts that read none filter
// the input first; the rest filter each join's output, or are its
// condition. The result has input's columns.
func joinAggregates(input plan.Node, cs []plan.Expr) (plan.Node, bool) {
	type rewrite struct {
		c    plan.Expr
		subs []*groupedSubquery
	}
	var keep []plan.Expr
	var rws []rewrite
	for _, c := range cs {
		var subs []*groupedSubquery
		seen := map[*plan.Subquery]bool{}
		Walk(c, func(x plan.Expr) {
			if sq, ok := x.(*plan.Subquery); ok && !seen[sq] {
				seen[sq] = true
				if g, ok := groupSubquery(sq); ok {
					subs = append(subs, g)
				}
			}
		})
		if len(subs) == 0 {
			keep = append(keep, c)
			continue
		}
		rws = append(rws, rewrite{c: c, subs: subs})
	}
	if len(rws) == 0 {
		return nil, false
	}
	cols := input.Columns()
	out := input
	if len(keep) > 0 {
		out = Optimize(&plan.Filter{Input: input, Pred: and(keep)})
	}
	for _, rw := range rws {
		values := make(map[*plan.Subquery]plan.Expr, len(rw.subs))
		for _, g := range rw.subs {
			inner := g.nullOnEmpty() && nullWith(rw.c, func(x plan.Expr) bool { return x == plan.Expr(g.sq) })
			out, values[g.sq] = g.join(out, inner)
		}
		c := mapLeaves(rw.c, func(x plan.Expr) plan.Expr {
			if sq, ok := x.(*plan.Subquery); ok {
				if v, ok := values[sq]; ok {
					return v
				}
			}
			return x
		})
		out = pushFilterIntoJoin(optimizeSubqueries(&plan.Filter{Input: out, Pred: c}))
	}
	exprs := make([]plan.Expr, len(cols))
	names := make([]string, len(cols))
	for i, c := range cols {
		exprs[i] = &plan.ColRef{Idx: i, Typ: c.Type, Name: c.Name}
		names[i] = c.Name
	}
	return &plan.Project{Input: out, Exprs: exprs, Names: names}, true
}
