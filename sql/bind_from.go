package sql

import (
	"sync/atomic"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// queryCtx is what every scope of one (sub)query shares: the enclosing
// query's scope and the outer expressions the subquery reads as Params.
type queryCtx struct {
	outer *scope
	args  *[]plan.Expr
	ctes  *cteScope
}

func (q queryCtx) attach(sc *scope) *scope {
	sc.outer, sc.args, sc.ctes = q.outer, q.args, q.ctes
	return sc
}

// cteScope holds the common table expressions a query's FROM may name: its
// own WITH's, then those of the queries around it.
type cteScope struct {
	defs   []CTE
	parent *cteScope
	// work is set in the scope of a recursive CTE's recursive term, whose
	// only def is the CTE itself: naming it reads the working table.
	work *plan.WorkTable
	used bool
}

// lookup finds the CTE name and the scope its query binds in: the CTEs
// defined before it (a CTE does not see itself or later ones, without
// RECURSIVE).
func (c *cteScope) lookup(name string) (*CTE, *cteScope, *cteScope) {
	for ; c != nil; c = c.parent {
		for i := range c.defs {
			if c.defs[i].Name == name {
				return &c.defs[i], &cteScope{defs: c.defs[:i], parent: c.parent}, c
			}
		}
	}
	return nil, nil, nil
}

// workIDs numbers the working tables of recursive CTEs.
var workIDs atomic.Int64

// bindCTE binds a reference to a CTE in the scope of its WITH. A recursive
// CTE (base UNION [ALL] a term naming itself) becomes a RecursiveUnion.
func bindCTE(cat Catalog, cte *CTE, defined *cteScope) (plan.Node, error) {
	q := cte.Query
	if cte.Recursive && q.SetOp == SetUnion && len(q.With) == 0 {
		base, err := bindSelect(cat, q.Larg, queryCtx{ctes: defined})
		if err != nil {
			return nil, err
		}
		cols := append([]plan.Column{}, base.Columns()...)
		for i := range cols {
			if i < len(cte.Cols) {
				cols[i].Name = cte.Cols[i]
			}
		}
		wt := &plan.WorkTable{ID: int(workIDs.Add(1)), Cols: cols}
		self := &cteScope{defs: []CTE{*cte}, parent: defined, work: wt}
		rec, err := bindSelect(cat, q.Rarg, queryCtx{ctes: self})
		if err != nil {
			return nil, err
		}
		if self.used {
			if len(q.OrderBy) > 0 || q.Limit != nil || q.Offset != nil {
				return nil, unsupported("ORDER BY or LIMIT in a recursive query")
			}
			rc := rec.Columns()
			if len(rc) != len(cols) {
				return nil, pgerror.New(pgerror.SyntaxError, "each UNION query must have the same number of columns")
			}
			proj := &plan.Project{Input: rec}
			cast := false
			for i, c := range rc {
				e := plan.Expr(&plan.ColRef{Idx: i, Typ: c.Type, Name: c.Name})
				if !c.Type.Equal(cols[i].Type) {
					if !canCast(c.Type, cols[i].Type) {
						return nil, pgerror.Newf(pgerror.DatatypeMismatch, "recursive query \"%s\" column %d has type %s in non-recursive term but type %s overall", cte.Name, i+1, cols[i].Type, c.Type)
					}
					e, cast = castExpr(e, cols[i].Type), true
				}
				proj.Exprs = append(proj.Exprs, e)
				proj.Names = append(proj.Names, cols[i].Name)
			}
			if cast {
				rec = proj
			}
			return &plan.RecursiveUnion{ID: wt.ID, Base: base, Recursive: rec, All: q.SetAll}, nil
		}
	}
	return bindSelect(cat, q, queryCtx{ctes: defined})
}

// bindFrom binds a FROM item into a plan node and the scope of its columns.
func bindFrom(cat Catalog, ref *TableRef, q queryCtx) (plan.Node, *scope, error) {
	node, sc, err := bindFromItem(cat, ref, q)
	if err != nil || len(ref.ColAliases) == 0 {
		return node, sc, err
	}
	if len(ref.ColAliases) > len(sc.names) {
		return nil, nil, pgerror.Newf(pgerror.InvalidColumnReference, "table \"%s\" has %d columns available but %d columns specified", ref.Alias, len(sc.names), len(ref.ColAliases))
	}
	sc.names = append([]string{}, sc.names...)
	copy(sc.names, ref.ColAliases)
	return node, sc, nil
}

func bindFromItem(cat Catalog, ref *TableRef, q queryCtx) (plan.Node, *scope, error) {
	switch {
	case ref.Join != nil:
		return bindJoin(cat, ref.Join, q)
	case ref.Func != nil:
		return bindTableFunc(cat, ref, q)
	case ref.Subquery != nil:
		qq := queryCtx{ctes: q.ctes}
		if ref.Lateral {
			qq.outer, qq.args = q.outer, q.args
		}
		node, err := bindSelect(cat, ref.Subquery, qq)
		if err != nil {
			return nil, nil, err
		}
		sc := &scope{table: ref.Alias}
		for _, c := range node.Columns() {
			sc.names = append(sc.names, c.Name)
			sc.types = append(sc.types, c.Type)
			sc.ordinal = append(sc.ordinal, -1)
		}
		return node, q.attach(sc), nil
	}
	if ref.Schema == "" {
		if cte, defined, owner := q.ctes.lookup(ref.Name); cte != nil {
			// A CTE binds like a subquery in FROM, in the scope of its WITH;
			// inside its own recursive term it is the working table.
			var node plan.Node
			var err error
			if owner.work != nil {
				owner.used = true
				node = owner.work
			} else if node, err = bindCTE(cat, cte, defined); err != nil {
				return nil, nil, err
			}
			alias := ref.Alias
			if alias == "" {
				alias = cte.Name
			}
			sc := &scope{table: alias}
			for i, c := range node.Columns() {
				name := c.Name
				if i < len(cte.Cols) {
					name = cte.Cols[i]
				}
				sc.names = append(sc.names, name)
				sc.types = append(sc.types, c.Type)
				sc.ordinal = append(sc.ordinal, -1)
			}
			return node, q.attach(sc), nil
		}
	}
	node, sc, err := bindRelation(cat, ref)
	if err != nil {
		return nil, nil, err
	}
	return node, q.attach(sc), nil
}

// bindRelation resolves a table name: a system table of pg_catalog or
// information_schema, or a user table (schema public).
func bindRelation(cat Catalog, ref *TableRef) (plan.Node, *scope, error) {
	alias := ref.Alias
	if alias == "" {
		alias = ref.Name
	}
	if st := systemTable(ref.Schema, ref.Name); st != nil {
		sc := &scope{table: alias}
		cols := make([]int, len(st.Cols)+1)
		for i, c := range st.Cols {
			sc.names = append(sc.names, c.Name)
			sc.types = append(sc.types, c.Type)
			sc.ordinal = append(sc.ordinal, i)
			cols[i] = i
		}
		// The system column tableoid, named only when qualified (l.tableoid).
		cols[len(st.Cols)] = len(st.Cols)
		sc.names = append(sc.names, "tableoid")
		sc.types = append(sc.types, types.Type{Kind: types.Oid})
		sc.ordinal = append(sc.ordinal, -1)
		sc.hidden = make([]bool, len(cols))
		sc.hidden[len(st.Cols)] = true
		return &plan.SysScan{Table: st, Cols: cols}, sc, nil
	}
	switch ref.Schema {
	case "", "public":
	default:
		if isSystemSchema(ref.Schema) {
			return nil, nil, pgerror.Newf(pgerror.UndefinedTable, "relation \"%s.%s\" does not exist", ref.Schema, ref.Name)
		}
		return nil, nil, pgerror.Newf(pgerror.Code("3F000"), "schema \"%s\" does not exist", ref.Schema)
	}
	t, err := cat.Table(ref.Name)
	if err != nil {
		return nil, nil, err
	}
	if t.View != "" {
		return bindView(cat, t, alias)
	}
	return scanTable(t, alias)
}

// maxViewDepth bounds views of views: past it, as PostgreSQL says of a
// view that names itself, recursion is infinite.
const maxViewDepth = 64

// depthCatalog is the catalog a view's query binds against: depth views
// deep.
type depthCatalog struct {
	Catalog
	depth int
}

// bindView binds view t's query, as a subquery named alias whose columns
// are the view's.
func bindView(cat Catalog, t *storage.TableDesc, alias string) (plan.Node, *scope, error) {
	depth := 0
	if dc, ok := cat.(*depthCatalog); ok {
		depth = dc.depth
	}
	if depth >= maxViewDepth {
		return nil, nil, pgerror.Newf(pgerror.Code("42P17"), "infinite recursion detected in rules for relation %q", t.Name)
	}
	stmts, err := Parse(t.View)
	if err != nil {
		return nil, nil, pgerror.Newf(pgerror.DataCorrupted, "view %q: %v", t.Name, err)
	}
	sel, ok := stmts[0].Stmt.(*Select)
	if len(stmts) != 1 || !ok {
		return nil, nil, pgerror.Newf(pgerror.DataCorrupted, "view %q does not hold a query", t.Name)
	}
	node, err := bindSelect(&depthCatalog{Catalog: cat, depth: depth + 1}, sel, queryCtx{})
	if err != nil {
		return nil, nil, err
	}
	cols := node.Columns()
	if len(cols) != len(t.Columns) {
		return nil, nil, pgerror.Newf(pgerror.Code("42P17"), "view %q returns %d columns, its definition %d: a table it reads changed", t.Name, len(cols), len(t.Columns))
	}
	sc := &scope{table: alias}
	for i, c := range t.Columns {
		sc.names = append(sc.names, c.Name)
		sc.types = append(sc.types, cols[i].Type)
		sc.ordinal = append(sc.ordinal, -1)
	}
	return node, sc, nil
}

// scanTable returns the scan of every column of t (and _rowid) named
// alias.
func scanTable(t *storage.TableDesc, alias string) (plan.Node, *scope, error) {
	cols := make([]int, len(t.Columns), len(t.Columns)+1)
	for i := range cols {
		cols[i] = i
	}
	if hasRowID(t) {
		cols = append(cols, storage.RowIDColumn(t))
	}
	return &plan.Scan{Table: t, Cols: cols}, tableScope(t, alias, true), nil
}

// constArgs returns the arguments of table function f, which are text
// constants: what the function reads is decided when it is bound.
func constArgs(cat Catalog, f *FuncCall, q queryCtx) ([]string, error) {
	b := &binder{cat: cat, sc: q.attach(&scope{}), noAgg: "functions in FROM"}
	names := make([]string, len(f.Args))
	for i, a := range f.Args {
		e, err := b.expr(a)
		if err != nil {
			return nil, err
		}
		c, ok := e.(*plan.Const)
		if !ok || c.Param != nil || c.Null || (!isUnknown(c) && c.Typ.Kind != types.Text && c.Typ.Kind != types.Varchar) {
			return nil, pgerror.Newf(pgerror.FeatureNotSupported, "%s takes text constants", f.Name).
				WithHint("Name the table and the refs in the query text.")
		}
		names[i] = string(c.Val.Bytes.Get(0))
	}
	return names, nil
}

// bindHistory binds deeplake_log(t [, ref]) and deeplake_diff(t, a, b).
func bindHistory(cat Catalog, ref *TableRef, q queryCtx) (plan.Node, *scope, error) {
	f := ref.Func
	lo, hi := 1, 2
	switch f.Name {
	case "deeplake_diff":
		lo, hi = 3, 3
	case "deeplake_refs":
		hi = 1
	}
	if len(f.Args) < lo || len(f.Args) > hi {
		return nil, nil, pgerror.Newf(pgerror.UndefinedFunction, "function %s with %d arguments does not exist", f.Name, len(f.Args))
	}
	args, err := constArgs(cat, f, q)
	if err != nil {
		return nil, nil, err
	}
	view := func(ref string) (*storage.TableDesc, error) {
		if ref == "" {
			return cat.Table(args[0])
		}
		return cat.Table(args[0] + "@" + ref)
	}
	n := &plan.History{Kind: plan.HistoryLog}
	if len(args) > 1 {
		n.Table, err = view(args[1])
	} else {
		n.Table, err = view("")
	}
	if err != nil {
		return nil, nil, err
	}
	if f.Name == "deeplake_diff" {
		n.Kind = plan.HistoryDiff
		if n.B, err = view(args[2]); err != nil {
			return nil, nil, err
		}
		n.Cols = append(n.Cols, plan.Column{Name: "change", Type: types.TypText, Ordinal: -1})
		for _, c := range n.Table.Columns {
			n.Cols = append(n.Cols, plan.Column{Name: c.Name, Type: c.Type, Ordinal: -1})
		}
		if hasRowID(n.Table) {
			n.Cols = append(n.Cols, plan.Column{Name: storage.RowIDName, Type: types.TypInt8, Ordinal: -1})
		}
	} else if f.Name == "deeplake_refs" {
		n.Kind = plan.HistoryRefs
		for _, c := range []struct {
			name string
			typ  types.Type
		}{{"kind", types.TypText}, {"name", types.TypText}, {"branch", types.TypText}, {"version", types.TypInt8},
			{"commit", types.TypText}, {"message", types.TypText}, {"author", types.TypText}, {"time", types.Type{Kind: types.TimestampTZ}}} {
			n.Cols = append(n.Cols, plan.Column{Name: c.name, Type: c.typ, Ordinal: -1})
		}
	} else {
		for _, c := range []struct {
			name string
			typ  types.Type
		}{{"id", types.TypText}, {"parent", types.TypText}, {"merged", types.TypText}, {"branch", types.TypText},
			{"message", types.TypText}, {"author", types.TypText}, {"time", types.Type{Kind: types.TimestampTZ}},
			{"added", types.TypInt8}, {"deleted", types.TypInt8}} {
			n.Cols = append(n.Cols, plan.Column{Name: c.name, Type: c.typ, Ordinal: -1})
		}
	}
	alias := ref.Alias
	if alias == "" {
		alias = f.Name
	}
	sc := &scope{table: alias}
	for _, c := range n.Cols {
		sc.names = append(sc.names, c.Name)
		sc.types = append(sc.types, c.Type)
		sc.ordinal = append(sc.ordinal, -1)
	}
	return n, q.attach(sc), nil
}

// bindAt binds deeplake_at('t', 'ref'): the version of table t that ref
// names, as "t@ref" names it, scanned as a table is. Both arguments are
// constants: what the scan reads is decided here.
func bindAt(cat Catalog, ref *TableRef, q queryCtx) (plan.Node, *scope, error) {
	f := ref.Func
	if len(f.Args) != 2 {
		return nil, nil, pgerror.Newf(pgerror.UndefinedFunction, "function deeplake_at with %d arguments does not exist", len(f.Args)).
			WithHint("deeplake_at(table, ref) takes a table's name and a branch, commit, tag, version or time.")
	}
	names, err := constArgs(cat, f, q)
	if err != nil {
		return nil, nil, err
	}
	t, err := cat.Table(names[0] + "@" + names[1])
	if err != nil {
		return nil, nil, err
	}
	alias := ref.Alias
	if alias == "" {
		alias = "deeplake_at"
	}
	return scanTable(t, alias)
}

// bindJoin binds Left JOIN Right. A right join becomes a left join with the
// inputs swapped, under a projection that restores the column order.
func bindJoin(cat Catalog, j *JoinClause, q queryCtx) (plan.Node, *scope, error) {
	ln, lsc, err := bindFrom(cat, j.Left, q)
	if err != nil {
		return nil, nil, err
	}
	// A lateral right item reads the left items' columns as Params: the
	// join then runs it again for each left row.
	var largs []plan.Expr
	rq := q
	if j.Right.Lateral && j.Right.Join == nil {
		rq = queryCtx{outer: lsc, args: &largs, ctes: q.ctes}
	}
	rn, rsc, err := bindFrom(cat, j.Right, rq)
	if err != nil {
		return nil, nil, err
	}
	if len(largs) > 0 && (j.Kind == JoinRight || j.Kind == JoinFull) {
		return nil, nil, pgerror.New(pgerror.InvalidColumnReference, "invalid reference to FROM-clause entry for table").
			WithHint("The combining JOIN type must be INNER or LEFT for a LATERAL reference.")
	}
	for i := range rsc.names {
		if r := rsc.rel(i); r != "" && lsc.hasRel(r) {
			return nil, nil, pgerror.Newf(pgerror.Code("42712"), "table name \"%s\" specified more than once", r)
		}
	}
	sc := q.attach(concatScopes(lsc, rsc))
	nl := len(lsc.names)

	// USING (a, b) and NATURAL: equalities of the named columns; the
	// right-hand copies hide, and * lists the join columns first.
	using := j.Using
	if j.Natural {
		for i, n := range lsc.names {
			if lsc.isHidden(i) || lsc.isSystem(i) {
				continue
			}
			if k, _ := rsc.lookup(&ColumnRef{Name: n}); k >= 0 {
				using = append(using, n)
			}
		}
	}
	var conds []plan.Expr
	if len(using) > 0 {
		if j.Kind == JoinFull {
			return nil, nil, unsupported("FULL JOIN with USING or NATURAL")
		}
		sc.hidden = make([]bool, len(sc.names))
		for i := range sc.names {
			sc.hidden[i] = (i < nl && lsc.isHidden(i)) || (i >= nl && rsc.isHidden(i-nl))
		}
		var first []int
		for _, u := range using {
			li, err := lsc.lookup(&ColumnRef{Name: u})
			if err != nil {
				return nil, nil, err
			}
			if li < 0 {
				return nil, nil, pgerror.Newf(pgerror.UndefinedColumn, "column \"%s\" specified in USING clause does not exist in left table", u)
			}
			ri, err := rsc.lookup(&ColumnRef{Name: u})
			if err != nil {
				return nil, nil, err
			}
			if ri < 0 {
				return nil, nil, pgerror.Newf(pgerror.UndefinedColumn, "column \"%s\" specified in USING clause does not exist in right table", u)
			}
			l := plan.Expr(&plan.ColRef{Idx: li, Typ: lsc.types[li], Name: u})
			r := plan.Expr(&plan.ColRef{Idx: nl + ri, Typ: rsc.types[ri], Name: u})
			if l, r, err = unify(l, r, "="); err != nil {
				return nil, nil, err
			}
			conds = append(conds, &plan.Call{Op: plan.OpEq, Args: []plan.Expr{l, r}, Typ: types.TypBool})
			keep, hide := li, nl+ri
			if j.Kind == JoinRight {
				keep, hide = hide, keep
			}
			sc.hidden[hide] = true
			first = append(first, keep)
		}
		sc.star = first
		for _, i := range concatStars(lsc, rsc) {
			if !sc.hidden[i] && !containsInt(first, i) {
				sc.star = append(sc.star, i)
			}
		}
	} else if lsc.star != nil || rsc.star != nil {
		sc.star = concatStars(lsc, rsc)
	}
	if j.On != nil {
		b := &binder{cat: cat, sc: sc, noAgg: "JOIN conditions"}
		on, err := b.boolExpr(j.On, "JOIN/ON")
		if err != nil {
			return nil, nil, err
		}
		conds = append(conds, on)
	}
	var on plan.Expr
	switch len(conds) {
	case 0:
	case 1:
		on = conds[0]
	default:
		on = &plan.Call{Op: plan.OpAnd, Args: conds, Typ: types.TypBool}
	}
	if len(largs) > 0 {
		kind := plan.JoinInner
		if j.Kind == JoinLeft {
			kind = plan.JoinLeft
		}
		return &plan.LateralJoin{Kind: kind, Left: ln, Right: rn, Args: largs, On: on}, sc, nil
	}
	switch j.Kind {
	case JoinInner, JoinCross:
		return &plan.Join{Kind: plan.JoinInner, Left: ln, Right: rn, On: on}, sc, nil
	case JoinLeft:
		return &plan.Join{Kind: plan.JoinLeft, Left: ln, Right: rn, On: on}, sc, nil
	case JoinFull:
		return &plan.Join{Kind: plan.JoinFull, Left: ln, Right: rn, On: on}, sc, nil
	}
	// Right join: Right LEFT JOIN Left, then put Left's columns first again.
	nr := len(rsc.names)
	swap := make([]int, len(sc.names)) // old position (l, r) → swapped position (r, l)
	for i := range swap {
		if i < nl {
			swap[i] = nr + i
		} else {
			swap[i] = i - nl
		}
	}
	if on != nil {
		on = remapCols(on, swap)
	}
	join := &plan.Join{Kind: plan.JoinLeft, Left: rn, Right: ln, On: on}
	jc := join.Columns()
	proj := &plan.Project{Input: join}
	for i := range sc.names {
		c := jc[swap[i]]
		proj.Exprs = append(proj.Exprs, &plan.ColRef{Idx: swap[i], Typ: c.Type, Name: c.Name})
		proj.Names = append(proj.Names, sc.names[i])
	}
	return proj, sc, nil
}

func concatScopes(l, r *scope) *scope {
	sc := &scope{}
	n := len(l.names) + len(r.names)
	sc.rels = make([]string, 0, n)
	for _, s := range []*scope{l, r} {
		sc.names = append(sc.names, s.names...)
		sc.types = append(sc.types, s.types...)
		sc.ordinal = append(sc.ordinal, s.ordinal...)
		for i := range s.names {
			sc.rels = append(sc.rels, s.rel(i))
		}
	}
	if l.hidden != nil || r.hidden != nil {
		sc.hidden = make([]bool, n)
		for i := range sc.hidden {
			if i < len(l.names) {
				sc.hidden[i] = l.isHidden(i)
			} else {
				sc.hidden[i] = r.isHidden(i - len(l.names))
			}
		}
	}
	return sc
}

// starCols lists the columns * expands to; rel limits them to one FROM item.
func (sc *scope) starCols(rel string) []int {
	var out []int
	if rel != "" {
		for i := range sc.names {
			if sc.rel(i) == rel && !sc.isSystem(i) {
				out = append(out, i)
			}
		}
		return out
	}
	if sc.star != nil {
		return sc.star
	}
	for i := range sc.names {
		if !sc.isHidden(i) && !sc.isSystem(i) {
			out = append(out, i)
		}
	}
	return out
}

func concatStars(l, r *scope) []int {
	out := append([]int{}, l.starCols("")...)
	for _, i := range r.starCols("") {
		out = append(out, len(l.names)+i)
	}
	return out
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// remapCols renumbers the column references of e (not those inside
// subqueries, which read their own input).
func remapCols(e plan.Expr, m []int) plan.Expr {
	switch e := e.(type) {
	case *plan.ColRef:
		c := *e
		c.Idx = m[e.Idx]
		return &c
	case *plan.Call:
		c := *e
		c.Args = make([]plan.Expr, len(e.Args))
		for i, a := range e.Args {
			c.Args[i] = remapCols(a, m)
		}
		return &c
	case *plan.Func:
		c := *e
		c.Args = make([]plan.Expr, len(e.Args))
		for i, a := range e.Args {
			c.Args[i] = remapCols(a, m)
		}
		return &c
	case *plan.Cast:
		c := *e
		c.X = remapCols(e.X, m)
		return &c
	case *plan.Case:
		c := *e
		c.Whens = make([]plan.When, len(e.Whens))
		for i, w := range e.Whens {
			c.Whens[i] = plan.When{Cond: remapCols(w.Cond, m), Result: remapCols(w.Result, m)}
		}
		if e.Else != nil {
			c.Else = remapCols(e.Else, m)
		}
		return &c
	case *plan.Subquery:
		c := *e
		c.Args = make([]plan.Expr, len(e.Args))
		for i, a := range e.Args {
			c.Args[i] = remapCols(a, m)
		}
		if e.Test != nil {
			c.Test = remapCols(e.Test, m)
		}
		return &c
	}
	return e
}

// subquery binds a subquery used as a value.
func (b *binder) subquery(e *SubqueryExpr) (plan.Expr, error) {
	var args []plan.Expr
	q := queryCtx{args: &args}
	if b.agg == nil && b.sc != nil {
		q.outer = b.sc
	}
	switch {
	case b.sc != nil:
		q.ctes = b.sc.ctes
	case b.agg != nil && b.agg.input.sc != nil:
		q.ctes = b.agg.input.sc.ctes
	}
	node, err := bindSelect(b.cat, e.Query, q)
	if err != nil {
		return nil, err
	}
	cols := node.Columns()
	sq := &plan.Subquery{Plan: node}
	switch e.Kind {
	case SubExists:
		sq.Kind, sq.Typ = plan.SubExists, types.TypBool
	case SubScalar:
		if len(cols) != 1 {
			return nil, pgerror.New(pgerror.SyntaxError, "subquery must return only one column")
		}
		sq.Kind, sq.Typ = plan.SubScalar, cols[0].Type
	case SubAny, SubAll:
		if len(cols) != 1 {
			return nil, pgerror.New(pgerror.SyntaxError, "subquery has too many columns")
		}
		op, ok := comparisonOps[e.Op]
		if !ok {
			return nil, unsupported("operator " + e.Op + " with ANY/ALL")
		}
		x, err := b.expr(e.X)
		if err != nil {
			return nil, err
		}
		col := plan.Expr(&plan.ColRef{Idx: 0, Typ: cols[0].Type, Name: cols[0].Name})
		x, col, err = unify(x, col, e.Op)
		if err != nil {
			return nil, err
		}
		if _, same := col.(*plan.ColRef); !same {
			node = &plan.Project{Input: node, Exprs: []plan.Expr{col}, Names: []string{cols[0].Name}}
		}
		sq.Kind, sq.Typ, sq.Plan, sq.Test, sq.Op = plan.SubAny, types.TypBool, node, x, op
		if e.Kind == SubAll {
			sq.Kind = plan.SubAll
		}
	case SubArray:
		if len(cols) != 1 {
			return nil, pgerror.New(pgerror.SyntaxError, "subquery must return only one column")
		}
		// Arrays of scalars have no type of their own yet: the value is
		// the array's text form.
		sq.Kind, sq.Typ = plan.SubArray, types.TypText
	default:
		return nil, unsupported("this subquery")
	}
	sq.Args = args
	return sq, nil
}

// bindSetOp binds Larg UNION [ALL] Rarg with the ORDER BY and LIMIT of the
// whole; ORDER BY names output columns or their positions.
func bindSetOp(cat Catalog, s *Select, q queryCtx) (plan.Node, error) {
	l, err := bindSelect(cat, s.Larg, q)
	if err != nil {
		return nil, err
	}
	r, err := bindSelect(cat, s.Rarg, q)
	if err != nil {
		return nil, err
	}
	lc, rc := l.Columns(), r.Columns()
	if len(lc) != len(rc) {
		return nil, pgerror.Newf(pgerror.SyntaxError, "each %s query must have the same number of columns", setOpName(s.SetOp))
	}
	lx := make([]plan.Expr, len(lc))
	rx := make([]plan.Expr, len(rc))
	names := make([]string, len(lc))
	castL, castR := false, false
	for i := range lc {
		t, ok := commonType(lc[i].Type, rc[i].Type)
		if !ok {
			return nil, pgerror.Newf(pgerror.DatatypeMismatch, "%s types %s and %s cannot be matched", setOpName(s.SetOp), lc[i].Type, rc[i].Type)
		}
		names[i] = lc[i].Name
		lx[i] = castExpr(&plan.ColRef{Idx: i, Typ: lc[i].Type, Name: lc[i].Name}, t)
		rx[i] = castExpr(&plan.ColRef{Idx: i, Typ: rc[i].Type, Name: rc[i].Name}, t)
		castL = castL || !lc[i].Type.Equal(t)
		castR = castR || !rc[i].Type.Equal(t)
	}
	if castL {
		l = &plan.Project{Input: l, Exprs: lx, Names: names}
	}
	if castR {
		r = &plan.Project{Input: r, Exprs: rx, Names: names}
	}
	var node plan.Node = &plan.Append{Inputs: []plan.Node{l, r}}
	if s.SetOp != SetUnion {
		node = &plan.SetOp{Except: s.SetOp == SetExcept, All: s.SetAll, Left: l, Right: r}
	}
	cols := node.Columns()
	refs := make([]plan.Expr, len(cols))
	for i, c := range cols {
		refs[i] = &plan.ColRef{Idx: i, Typ: c.Type, Name: names[i]}
	}
	if !s.SetAll && s.SetOp == SetUnion {
		node = &plan.Project{Input: &plan.Aggregate{Input: node, GroupBy: refs}, Exprs: refs, Names: names}
	}
	var keys []plan.SortKey
	for _, o := range s.OrderBy {
		idx := -1
		if lit, ok := o.Expr.(*Literal); ok && lit.Kind == LitInt {
			if n := atoiSafe(lit.Text); n >= 1 && n <= len(cols) {
				idx = n - 1
			}
		} else if cr, ok := o.Expr.(*ColumnRef); ok && cr.Table == "" {
			for i, n := range names {
				if n == cr.Name {
					idx = i
					break
				}
			}
		}
		if idx < 0 {
			return nil, unsupported("ORDER BY expressions over UNION")
		}
		nullsFirst := o.Desc
		if o.Nulls == 1 {
			nullsFirst = true
		} else if o.Nulls == 2 {
			nullsFirst = false
		}
		keys = append(keys, plan.SortKey{Col: idx, Desc: o.Desc, NullsFirst: nullsFirst})
	}
	if len(keys) > 0 {
		node = &plan.Sort{Input: node, Keys: keys}
	}
	if s.Limit != nil || s.Offset != nil {
		lim := &plan.Limit{Input: node}
		if lim.Count, err = bindLimit(cat, s.Limit, "LIMIT"); err != nil {
			return nil, err
		}
		if lim.Offset, err = bindLimit(cat, s.Offset, "OFFSET"); err != nil {
			return nil, err
		}
		node = lim
	}
	return node, nil
}

// bindTableFunc binds a set-returning function in FROM: generate_series
// over integers. Its arguments may read the enclosing query's columns.
func bindTableFunc(cat Catalog, ref *TableRef, q queryCtx) (plan.Node, *scope, error) {
	f := ref.Func
	if f.Name == "unnest" {
		// FROM unnest(array): the select-list form over one empty row.
		b := &binder{cat: cat, sc: q.attach(&scope{}), noAgg: "functions in FROM"}
		one := &plan.Values{Rows: [][]plan.Expr{{}}}
		node, _, err := bindSRFs(b, one, []SelectItem{{Expr: f}})
		if err != nil {
			return nil, nil, err
		}
		col := node.Columns()[0]
		sc := &scope{table: ref.Alias, names: []string{ref.Alias}, types: []types.Type{col.Type}, ordinal: []int{-1}}
		return node, q.attach(sc), nil
	}
	switch f.Name {
	case "deeplake_at":
		return bindAt(cat, ref, q)
	case "deeplake_log", "deeplake_diff", "deeplake_refs":
		return bindHistory(cat, ref, q)
	}
	if f.Name != "generate_series" {
		return nil, nil, pgerror.Newf(pgerror.UndefinedFunction, "function %s does not exist", f.Name)
	}
	if len(f.Args) < 2 || len(f.Args) > 3 {
		return nil, nil, pgerror.Newf(pgerror.UndefinedFunction, "function generate_series with %d arguments does not exist", len(f.Args))
	}
	b := &binder{cat: cat, sc: q.attach(&scope{}), noAgg: "functions in FROM"}
	args, err := b.exprs(f.Args)
	if err != nil {
		return nil, nil, err
	}
	t := types.TypInt4
	for i, a := range args {
		if isUnknown(a) {
			a = castExpr(a, types.TypInt4)
			args[i] = a
		}
		if !a.Type().IsInteger() {
			return nil, nil, pgerror.Newf(pgerror.UndefinedFunction, "function generate_series(%s) does not exist", a.Type())
		}
		if a.Type().Kind == types.Int8 {
			t = types.TypInt8
		}
	}
	node := &plan.Series{Start: args[0], Stop: args[1], Typ: t, Name: ref.Alias}
	if len(args) == 3 {
		node.Step = args[2]
	}
	sc := &scope{table: ref.Alias, names: []string{ref.Alias}, types: []types.Type{t}, ordinal: []int{-1}}
	return node, q.attach(sc), nil
}

// mergeType folds the type of one more CASE arm into the arms' common
// type: NULL and untyped literals leave it open (unknown) until a typed arm
// decides, as in PostgreSQL, where CASE WHEN c THEN NULL ELSE 1 END is an
// integer.
func mergeType(t, u types.Type) (types.Type, bool) {
	if t.Kind == types.Unknown && u.Kind == types.Unknown {
		return t, true
	}
	return commonType(t, u)
}

func setOpName(k SetOpKind) string {
	switch k {
	case SetIntersect:
		return "INTERSECT"
	case SetExcept:
		return "EXCEPT"
	}
	return "UNION"
}
