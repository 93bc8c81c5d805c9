package sql

import (
	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// BindSelect binds a SELECT into a plan whose output columns are the query's.
func BindSelect(cat Catalog, s *Select) (plan.Node, error) {
	node, err := bindSelect(cat, s, queryCtx{})
	if err != nil {
		return nil, err
	}
	return regTypesAsText(node), nil
}

// regTypesAsText makes reg* output columns text: a regclass prints as the
// relation's name, which only the catalog knows.
func regTypesAsText(node plan.Node) plan.Node {
	cols := node.Columns()
	found := false
	for _, c := range cols {
		found = found || c.Type.IsRegType()
	}
	if !found {
		return node
	}
	p := &plan.Project{Input: node}
	for i, c := range cols {
		p.Exprs = append(p.Exprs, textOf(&plan.ColRef{Idx: i, Typ: c.Type, Name: c.Name}))
		p.Names = append(p.Names, c.Name)
	}
	return p
}

// bindSelect binds a SELECT; q links a subquery to its enclosing query.
func bindSelect(cat Catalog, s *Select, q queryCtx) (plan.Node, error) {
	if len(s.With) > 0 {
		q.ctes = &cteScope{defs: s.With, parent: q.ctes}
	}
	if s.Values != nil {
		return bindValues(cat, s.Values)
	}
	if s.SetOp != 0 {
		return bindSetOp(cat, s, q)
	}
	in := &binder{cat: cat}
	var input plan.Node
	if s.From != nil {
		var err error
		if input, in.sc, err = bindFrom(cat, s.From, q); err != nil {
			return nil, err
		}
	} else {
		input = &plan.Values{Rows: [][]plan.Expr{{}}}
		in.sc = q.attach(&scope{})
	}
	if s.Where != nil {
		w := *in
		w.noAgg = "WHERE"
		pred, err := w.boolExpr(s.Where, "WHERE")
		if err != nil {
			return nil, err
		}
		input = &plan.Filter{Input: input, Pred: pred}
	}

	// Expand * and decide whether this is an aggregate query.
	var items []SelectItem
	for _, it := range s.Items {
		if it.Star {
			if s.From == nil {
				return nil, pgerror.New(pgerror.SyntaxError, "SELECT * with no tables specified is not valid")
			}
			if it.StarTable != "" && !in.sc.hasRel(it.StarTable) {
				return nil, pgerror.Newf(pgerror.UndefinedTable, "missing FROM-clause entry for table \"%s\"", it.StarTable)
			}
			for _, i := range in.sc.starCols(it.StarTable) {
				items = append(items, SelectItem{Expr: &ColumnRef{Table: in.sc.rel(i), Name: in.sc.names[i]}})
			}
			continue
		}
		items = append(items, it)
	}
	hasSRF := false
	for _, it := range items {
		hasSRF = hasSRF || containsSRF(it.Expr)
	}
	if hasSRF {
		var err error
		if input, items, err = bindSRFs(in, input, items); err != nil {
			return nil, err
		}
	}
	aggregating := len(s.GroupBy) > 0 || s.Having != nil
	for _, it := range items {
		aggregating = aggregating || containsAgg(it.Expr)
	}
	for _, o := range s.OrderBy {
		aggregating = aggregating || containsAgg(o.Expr)
	}

	stage := in
	var agg *aggContext
	if aggregating {
		agg = &aggContext{input: in}
		for _, g := range s.GroupBy {
			// GROUP BY 2 names the second output column; GROUP BY name may name an output alias.
			if l, ok := g.(*Literal); ok && l.Kind == LitInt {
				n := atoiSafe(l.Text)
				if n < 1 || n > len(items) {
					return nil, pgerror.Newf(pgerror.InvalidColumnReference, "GROUP BY position %s is not in select list", l.Text)
				}
				g = items[n-1].Expr
			} else if cr, ok := g.(*ColumnRef); ok && cr.Table == "" {
				if _, err := in.sc.resolve(cr); err != nil {
					for _, it := range items {
						if it.Alias == cr.Name {
							g = it.Expr
						}
					}
				}
			}
			gb := *in
			gb.noAgg = "GROUP BY"
			ge, err := gb.expr(g)
			if err != nil {
				return nil, err
			}
			ge = resolveUnknown(ge)
			agg.groups = append(agg.groups, ge)
			agg.keys = append(agg.keys, ge.String())
		}
		stage = &binder{cat: cat, agg: agg}
	}

	win, err := newWinContext(s.Windows)
	if err != nil {
		return nil, err
	}
	stage.win = win
	exprs := make([]plan.Expr, len(items))
	names := make([]string, len(items))
	for i, it := range items {
		e, err := stage.expr(it.Expr)
		if err != nil {
			return nil, err
		}
		exprs[i] = resolveUnknown(e)
		names[i] = it.Alias
		if names[i] == "" {
			names[i] = exprName(it.Expr)
		}
	}
	var having plan.Expr
	if s.Having != nil {
		h, err := stage.boolExpr(s.Having, "HAVING")
		if err != nil {
			return nil, err
		}
		having = h
	}

	// ORDER BY keys: output positions, output names, or expressions (added
	// as hidden columns that a final projection drops).
	visible := len(exprs)
	var keys []plan.SortKey
	for _, o := range s.OrderBy {
		idx := -1
		if l, ok := o.Expr.(*Literal); ok && l.Kind == LitInt {
			n := atoiSafe(l.Text)
			if n < 1 || n > visible {
				return nil, pgerror.Newf(pgerror.InvalidColumnReference, "ORDER BY position %s is not in select list", l.Text)
			}
			idx = n - 1
		} else if cr, ok := o.Expr.(*ColumnRef); ok && cr.Table == "" {
			for i := 0; i < visible; i++ {
				if names[i] == cr.Name {
					idx = i
					break
				}
			}
		}
		if idx < 0 {
			e, err := stage.expr(o.Expr)
			if err != nil {
				return nil, err
			}
			e = resolveUnknown(e)
			// Matched by text, made only when a select item has e's type:
			// the text of a vector constant is long.
			k, haveK := "", false
			for i, x := range exprs {
				if !x.Type().Equal(e.Type()) {
					continue
				}
				if !haveK {
					k, haveK = e.String(), true
				}
				if x.String() == k && (e.Type().Kind != types.Float8 || !containsRandom(e)) {
					idx = i
					break
				}
			}
			if idx < 0 {
				if s.Distinct {
					return nil, pgerror.New(pgerror.InvalidColumnReference, "for SELECT DISTINCT, ORDER BY expressions must appear in select list")
				}
				exprs = append(exprs, e)
				names = append(names, "?order?")
				idx = len(exprs) - 1
			}
		}
		if t := exprs[idx].Type(); t.Kind == types.Tensor || t.Kind == types.JSON {
			return nil, pgerror.Newf(pgerror.UndefinedFunction, "could not identify an ordering operator for type %s", t)
		}
		nullsFirst := o.Desc
		if o.Nulls == 1 {
			nullsFirst = true
		} else if o.Nulls == 2 {
			nullsFirst = false
		}
		keys = append(keys, plan.SortKey{Col: idx, Desc: o.Desc, NullsFirst: nullsFirst})
	}

	var node plan.Node = input
	if aggregating {
		node = &plan.Aggregate{Input: input, GroupBy: agg.groups, Aggs: agg.aggs}
		if having != nil {
			node = &plan.Filter{Input: node, Pred: having}
		}
	}
	if win.used() {
		node = win.build(node)
	}
	node = &plan.Project{Input: node, Exprs: exprs, Names: names}
	if s.Distinct {
		gb := make([]plan.Expr, visible)
		for i := range gb {
			gb[i] = &plan.ColRef{Idx: i, Typ: exprs[i].Type(), Name: names[i]}
		}
		node = &plan.Project{Input: &plan.Aggregate{Input: node, GroupBy: gb}, Exprs: gb, Names: names}
	}
	if len(keys) > 0 {
		node = &plan.Sort{Input: node, Keys: keys}
	}
	if s.Limit != nil || s.Offset != nil {
		lim := &plan.Limit{Input: node}
		var err error
		if lim.Count, err = bindLimit(cat, s.Limit, "LIMIT"); err != nil {
			return nil, err
		}
		if lim.Offset, err = bindLimit(cat, s.Offset, "OFFSET"); err != nil {
			return nil, err
		}
		node = lim
	}
	if len(exprs) > visible {
		out := make([]plan.Expr, visible)
		for i := range out {
			out[i] = &plan.ColRef{Idx: i, Typ: exprs[i].Type(), Name: names[i]}
		}
		node = &plan.Project{Input: node, Exprs: out, Names: names[:visible]}
	}
	return node, nil
}

// typedLiterals returns sel with its quoted literals and NULLs in the
// select list cast to the target columns' types: as in PostgreSQL, INSERT
// ... SELECT 'literal' takes the column's type (a tensor's text form, a
// number), where a SELECT on its own would make it text. sel is not
// changed (a prepared statement binds its AST again at each run).
func typedLiterals(sel *Select, t *storage.TableDesc, target []int) *Select {
	if sel.SetOp != 0 || sel.Values != nil || len(sel.Items) != len(target) {
		return sel
	}
	var out *Select
	for j, it := range sel.Items {
		lit, ok := it.Expr.(*Literal)
		if !ok || it.Star || (lit.Kind != LitString && lit.Kind != LitNull) {
			continue
		}
		if out == nil {
			c := *sel
			c.Items = append([]SelectItem{}, sel.Items...)
			out = &c
		}
		out.Items[j].Expr = &CastExpr{X: lit, Type: t.Columns[target[j]].Type}
	}
	if out == nil {
		return sel
	}
	return out
}

func containsRandom(e plan.Expr) bool {
	switch e := e.(type) {
	case *plan.Call:
		if e.Op == plan.OpRandom {
			return true
		}
		for _, a := range e.Args {
			if containsRandom(a) {
				return true
			}
		}
	case *plan.Cast:
		return containsRandom(e.X)
	}
	return false
}

func bindLimit(cat Catalog, e Expr, clause string) (plan.Expr, error) {
	if e == nil {
		return nil, nil
	}
	b := &binder{cat: cat, sc: &scope{}, noAgg: clause}
	x, err := b.expr(e)
	if err != nil {
		return nil, err
	}
	if isUnknown(x) {
		x = castExpr(x, types.TypInt8)
	}
	if !x.Type().IsInteger() {
		return nil, pgerror.Newf(pgerror.DatatypeMismatch, "argument of %s must be type bigint, not type %s", clause, x.Type())
	}
	return x, nil
}

func atoiSafe(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' || n > 1<<20 {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// containsAgg reports whether e calls an aggregate function.
func containsAgg(e Expr) bool {
	found := false
	walk(e, func(x Expr) {
		if isAggCall(x) {
			found = true
		}
	})
	return found
}

// walk calls fn for e and every expression below it (not inside aggregates' arguments).
func walk(e Expr, fn func(Expr)) {
	if e == nil {
		return
	}
	fn(e)
	switch e := e.(type) {
	case *BinaryExpr:
		walk(e.L, fn)
		walk(e.R, fn)
	case *UnaryExpr:
		walk(e.X, fn)
	case *AndExpr:
		for _, a := range e.Args {
			walk(a, fn)
		}
	case *OrExpr:
		for _, a := range e.Args {
			walk(a, fn)
		}
	case *NotExpr:
		walk(e.X, fn)
	case *ArrayCmpExpr:
		walk(e.X, fn)
		walk(e.Array, fn)
	case *FieldSelect:
		walk(e.X, fn)
	case *InExpr:
		walk(e.X, fn)
		for _, a := range e.List {
			walk(a, fn)
		}
	case *IsNullExpr:
		walk(e.X, fn)
	case *BoolTest:
		walk(e.X, fn)
	case *BetweenExpr:
		walk(e.X, fn)
		walk(e.Lo, fn)
		walk(e.Hi, fn)
	case *LikeExpr:
		walk(e.X, fn)
		walk(e.Pattern, fn)
	case *FuncCall:
		if !isAggCall(e) {
			for _, a := range e.Args {
				walk(a, fn)
			}
		}
	case *CastExpr:
		walk(e.X, fn)
	case *SubscriptExpr:
		walk(e.X, fn)
		for _, a := range e.Indexes {
			walk(a, fn)
		}
	case *CaseExpr:
		walk(e.Arg, fn)
		for _, w := range e.Whens {
			walk(w.Cond, fn)
			walk(w.Result, fn)
		}
		walk(e.Else, fn)
	}
}

func bindValues(cat Catalog, rows [][]Expr) (plan.Node, error) {
	b := &binder{cat: cat, sc: &scope{}, noAgg: "VALUES"}
	v := &plan.Values{}
	n := len(rows[0])
	colTypes := make([]types.Type, n)
	for i := range colTypes {
		colTypes[i] = types.TypUnknown
	}
	for _, r := range rows {
		if len(r) != n {
			return nil, pgerror.New(pgerror.SyntaxError, "VALUES lists must all be the same length")
		}
		row, err := b.exprs(r)
		if err != nil {
			return nil, err
		}
		for i, e := range row {
			var ok bool
			if colTypes[i], ok = commonType(colTypes[i], e.Type()); !ok {
				return nil, pgerror.Newf(pgerror.DatatypeMismatch, "VALUES types %s and %s cannot be matched", colTypes[i], e.Type())
			}
		}
		v.Rows = append(v.Rows, row)
	}
	for i, t := range colTypes {
		if t.Kind == types.Unknown {
			colTypes[i] = types.TypText
		}
		v.Cols = append(v.Cols, plan.Column{Name: "column" + itoa(int64(i+1)), Type: colTypes[i], Ordinal: -1})
	}
	for _, row := range v.Rows {
		for i := range row {
			row[i] = castIn(row[i], colTypes[i])
		}
	}
	return v, nil
}

// returning binds a RETURNING list over the table's columns.
func returning(cat Catalog, t *storage.TableDesc, alias string, items []SelectItem) ([]plan.Expr, []string, error) {
	b := &binder{cat: cat, sc: tableScope(t, alias, false), noAgg: "RETURNING"}
	var exprs []plan.Expr
	var names []string
	for _, it := range items {
		if it.Star {
			for i, c := range t.Columns {
				exprs = append(exprs, &plan.ColRef{Idx: i, Typ: c.Type, Name: c.Name})
				names = append(names, c.Name)
			}
			continue
		}
		e, err := b.expr(it.Expr)
		if err != nil {
			return nil, nil, err
		}
		exprs = append(exprs, resolveUnknown(e))
		name := it.Alias
		if name == "" {
			name = exprName(it.Expr)
		}
		names = append(names, name)
	}
	return exprs, names, nil
}

// columnDefault returns the expression that fills column i when an INSERT
// does not name it.
func columnDefault(cat Catalog, t *storage.TableDesc, i int) (plan.Expr, error) {
	c := t.Columns[i]
	if c.Serial {
		return &plan.Call{Op: plan.OpNextVal, Typ: c.Type, Seq: plan.SeqRef{TableID: t.ID, Col: i}}, nil
	}
	if c.Default == "" {
		return plan.NullConst(c.Type), nil
	}
	ast, err := ParseExpr(c.Default)
	if err != nil {
		return nil, err
	}
	b := &binder{cat: cat, sc: &scope{}, noAgg: "DEFAULT expressions"}
	e, err := b.expr(ast)
	if err != nil {
		return nil, err
	}
	return assignCast(e, c.Type, c.Name)
}

// writableTable returns the table a statement writes: one a version of
// a table names ("t@tag") is 25006.
func writableTable(cat Catalog, name string) (*storage.TableDesc, error) {
	t, err := cat.Table(name)
	if err != nil {
		return nil, err
	}
	if err := storage.Writable(t); err != nil {
		return nil, err
	}
	if t.View != "" {
		return nil, pgerror.Newf(pgerror.FeatureNotSupported, "cannot change view %q", name).
			WithDetail("Views are not updatable here: write the tables the view reads.")
	}
	return t, nil
}

// BindInsert binds INSERT ... VALUES / SELECT.
func BindInsert(cat Catalog, s *Insert) (*plan.Insert, error) {
	t, err := writableTable(cat, s.Table)
	if err != nil {
		return nil, err
	}
	// target[i] is the table ordinal of the i-th listed column.
	var target []int
	if len(s.Columns) == 0 {
		for i := range t.Columns {
			target = append(target, i)
		}
	} else {
		seen := make(map[int]bool)
		for _, name := range s.Columns {
			idx := columnIndex(t, name)
			if idx < 0 {
				return nil, pgerror.Newf(pgerror.UndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", name, t.Name)
			}
			if seen[idx] {
				return nil, pgerror.Newf(pgerror.DuplicateColumn, "column \"%s\" specified more than once", name)
			}
			seen[idx] = true
			target = append(target, idx)
		}
	}
	defaults := make([]plan.Expr, len(t.Columns))
	for i := range t.Columns {
		if defaults[i], err = columnDefault(cat, t, i); err != nil {
			return nil, err
		}
	}
	ins := &plan.Insert{Table: t}
	if s.Select != nil {
		// INSERT ... SELECT: the query's columns fill the target columns
		// (with assignment casts), defaults the rest. The query runs to its
		// end before the first row is written, so reading the target table
		// sees none of the new rows.
		q, err := bindSelect(cat, typedLiterals(s.Select, t, target), queryCtx{})
		if err != nil {
			return nil, err
		}
		qc := q.Columns()
		if len(qc) > len(target) {
			return nil, pgerror.New(pgerror.SyntaxError, "INSERT has more expressions than target columns")
		}
		if len(qc) < len(target) {
			return nil, pgerror.New(pgerror.SyntaxError, "INSERT has more target columns than expressions")
		}
		proj := &plan.Project{Input: &plan.Materialize{Input: q}, Exprs: append([]plan.Expr{}, defaults...)}
		for _, c := range t.Columns {
			proj.Names = append(proj.Names, c.Name)
		}
		for j, c := range qc {
			col := t.Columns[target[j]]
			if proj.Exprs[target[j]], err = assignCast(&plan.ColRef{Idx: j, Typ: c.Type, Name: c.Name}, col.Type, col.Name); err != nil {
				return nil, err
			}
		}
		ins.Input = proj
		ins.Returning, ins.RetNames, err = returning(cat, t, "", s.Returning)
		return ins, err
	}
	b := &binder{cat: cat, sc: &scope{}, noAgg: "VALUES"}
	vals := &plan.Values{}
	for i, c := range t.Columns {
		vals.Cols = append(vals.Cols, plan.Column{Name: c.Name, Type: c.Type, TableID: t.ID, Ordinal: i})
	}
	for _, r := range s.Rows {
		if len(r) > len(target) {
			return nil, pgerror.New(pgerror.SyntaxError, "INSERT has more expressions than target columns")
		}
		if len(r) < len(target) {
			return nil, pgerror.New(pgerror.SyntaxError, "INSERT has more target columns than expressions")
		}
		row := make([]plan.Expr, len(t.Columns))
		copy(row, defaults)
		for j, e := range r {
			if e == nil {
				continue // DEFAULT
			}
			x, err := b.expr(e)
			if err != nil {
				return nil, err
			}
			col := t.Columns[target[j]]
			if row[target[j]], err = assignCast(x, col.Type, col.Name); err != nil {
				return nil, err
			}
		}
		vals.Rows = append(vals.Rows, row)
	}
	ins.Input = vals
	ins.Returning, ins.RetNames, err = returning(cat, t, "", s.Returning)
	return ins, err
}

// BindUpdate binds UPDATE ... SET ... WHERE.
func BindUpdate(cat Catalog, s *Update) (*plan.Update, error) {
	t, err := writableTable(cat, s.Table)
	if err != nil {
		return nil, err
	}
	b := &binder{cat: cat, sc: tableScope(t, s.Alias, false), noAgg: "UPDATE"}
	up := &plan.Update{Table: t, Set: make([]plan.Expr, len(t.Columns))}
	for i, c := range t.Columns {
		up.Set[i] = &plan.ColRef{Idx: i, Typ: c.Type, Name: c.Name}
	}
	for _, sc := range s.Set {
		idx := columnIndex(t, sc.Column)
		if idx < 0 {
			return nil, pgerror.Newf(pgerror.UndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", sc.Column, t.Name)
		}
		var e plan.Expr
		if sc.Value == nil {
			if e, err = columnDefault(cat, t, idx); err != nil {
				return nil, err
			}
		} else {
			x, err := b.expr(sc.Value)
			if err != nil {
				return nil, err
			}
			if e, err = assignCast(x, t.Columns[idx].Type, sc.Column); err != nil {
				return nil, err
			}
		}
		up.Set[idx] = e
	}
	if s.Where != nil {
		// WHERE reads the rows of a scan that has _rowid as well.
		w := *b
		w.sc, w.noAgg = tableScope(t, s.Alias, true), "WHERE"
		if up.Where, err = w.boolExpr(s.Where, "WHERE"); err != nil {
			return nil, err
		}
	}
	up.Returning, up.RetNames, err = returning(cat, t, s.Alias, s.Returning)
	return up, err
}

// BindDelete binds DELETE ... WHERE.
func BindDelete(cat Catalog, s *Delete) (*plan.Delete, error) {
	t, err := writableTable(cat, s.Table)
	if err != nil {
		return nil, err
	}
	del := &plan.Delete{Table: t}
	if s.Where != nil {
		b := &binder{cat: cat, sc: tableScope(t, s.Alias, true), noAgg: "WHERE"}
		if del.Where, err = b.boolExpr(s.Where, "WHERE"); err != nil {
			return nil, err
		}
	}
	del.Returning, del.RetNames, err = returning(cat, t, s.Alias, s.Returning)
	return del, err
}

// BindCreateTable validates CREATE TABLE and returns the table descriptor to store.
func BindCreateTable(cat Catalog, s *CreateTable) (*storage.TableDesc, error) {
	if len(s.Columns) == 0 {
		return nil, unsupported("tables without columns")
	}
	t := &storage.TableDesc{Name: s.Name}
	seen := make(map[string]bool)
	for i, c := range s.Columns {
		if seen[c.Name] {
			return nil, pgerror.Newf(pgerror.DuplicateColumn, "column \"%s\" specified more than once", c.Name)
		}
		seen[c.Name] = true
		cd := storage.ColumnDesc{Name: c.Name, Type: c.Type, NotNull: c.NotNull, Serial: c.Serial}
		if c.Serial {
			cd.NotNull = true
		}
		if c.Compression != "" {
			var err error
			if cd.Compression, err = columnCompression(c.Compression); err != nil {
				return nil, err
			}
		}
		if c.Default != nil {
			if c.Serial {
				return nil, pgerror.Newf(pgerror.SyntaxError, "multiple default values specified for column \"%s\" of table \"%s\"", c.Name, s.Name)
			}
			b := &binder{cat: cat, sc: &scope{}, noAgg: "DEFAULT expressions"}
			e, err := b.expr(c.Default)
			if err != nil {
				return nil, err
			}
			if _, err := assignCast(e, c.Type, c.Name); err != nil {
				return nil, err
			}
			cd.Default = c.DefaultSQL
		}
		if c.PrimaryKey {
			if len(t.PrimaryKey) > 0 || len(s.PrimaryKey) > 0 {
				return nil, pgerror.Newf(pgerror.InvalidTableDefinition, "multiple primary keys for table \"%s\" are not allowed", s.Name)
			}
			t.PrimaryKey = []int{i}
		}
		t.Columns = append(t.Columns, cd)
	}
	for _, k := range s.PrimaryKey {
		idx := columnIndex(t, k)
		if idx < 0 {
			return nil, pgerror.Newf(pgerror.UndefinedColumn, "column \"%s\" named in key does not exist", k)
		}
		t.PrimaryKey = append(t.PrimaryKey, idx)
	}
	var err error
	if t.Options, err = tableOptions(s.Options); err != nil {
		return nil, err
	}
	for _, idx := range t.PrimaryKey {
		c := &t.Columns[idx]
		c.NotNull = true
		if k := c.Type.Kind; k == types.Tensor || c.Type.IsVector() || k == types.JSON {
			return nil, pgerror.Newf(pgerror.UndefinedObject, "data type %s has no default operator class for access method \"btree\"", c.Type)
		}
	}
	return t, nil
}

func columnIndex(t *storage.TableDesc, name string) int {
	for i, c := range t.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// StoredType is the type of the column CREATE TABLE AS makes for a query
// column of type t: text for an untyped literal (as PostgreSQL), t
// otherwise.
func StoredType(t types.Type) types.Type {
	if t.Kind == types.Unknown {
		return types.TypText
	}
	return t
}
