package sql

import (
	"math"
	"strconv"
	"strings"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

// Catalog is what binding needs to know about tables.
type Catalog interface {
	Table(name string) (*storage.TableDesc, error)
}

// scope is the set of columns an expression can name: the columns of the
// FROM items, in the order of the operator input they are read from.
type scope struct {
	table   string // name or alias of a single FROM table; "" if none or several
	names   []string
	types   []types.Type
	ordinal []int // base-table ordinal, for ColRef names
	// rels[i] is the name or alias of the FROM item column i comes from;
	// nil means table for every column.
	rels []string
	// hidden[i] hides column i from unqualified references and *: the
	// right-hand copy of a USING column. nil means none hidden.
	hidden []bool
	// star lists the columns * expands to, when not all visible ones in
	// order (USING columns come first).
	star []int
	// outer is the scope of the enclosing query of a subquery; outer
	// columns read through args as plan.Params.
	outer *scope
	args  *[]plan.Expr
	// ctes are the common table expressions FROM may name.
	ctes *cteScope
}

// tableScope returns the scope of table t's columns, followed, when rowID
// is set and no column of t has its name, by the system column _rowid
// (storage.RowIDColumn).
func tableScope(t *storage.TableDesc, alias string, rowID bool) *scope {
	sc := &scope{table: t.Name}
	if alias != "" {
		sc.table = alias
	}
	for i, c := range t.Columns {
		sc.names = append(sc.names, c.Name)
		sc.types = append(sc.types, c.Type)
		sc.ordinal = append(sc.ordinal, i)
	}
	if rowID && hasRowID(t) {
		sc.names = append(sc.names, storage.RowIDName)
		sc.types = append(sc.types, types.TypInt8)
		sc.ordinal = append(sc.ordinal, systemOrdinal)
	}
	return sc
}

// hasRowID reports whether t's scope names the system column _rowid: no
// column of t has its name.
func hasRowID(t *storage.TableDesc) bool { return columnIndex(t, storage.RowIDName) < 0 }

// systemOrdinal marks a system column in scope.ordinal: references name
// it, qualified or not, but * (or t.*) and NATURAL joins leave it out.
const systemOrdinal = -2

func (sc *scope) isSystem(i int) bool { return i < len(sc.ordinal) && sc.ordinal[i] == systemOrdinal }

func (sc *scope) rel(i int) string {
	if sc.rels != nil {
		return sc.rels[i]
	}
	return sc.table
}

func (sc *scope) isHidden(i int) bool { return sc.hidden != nil && sc.hidden[i] }

// hasRel reports whether a FROM item of this scope is named rel.
func (sc *scope) hasRel(rel string) bool {
	if sc.rels == nil {
		return sc.table == rel
	}
	for _, r := range sc.rels {
		if r == rel {
			return true
		}
	}
	return false
}

// lookup finds ref among this scope's own columns: its index, or -1.
func (sc *scope) lookup(ref *ColumnRef) (int, error) {
	found := -1
	for i, n := range sc.names {
		if n != ref.Name {
			continue
		}
		if ref.Table != "" {
			if sc.rel(i) != ref.Table {
				continue
			}
		} else if sc.isHidden(i) {
			continue
		}
		if found >= 0 {
			return -1, pgerror.Newf(pgerror.AmbiguousColumn, "column reference \"%s\" is ambiguous", ref.Name)
		}
		found = i
	}
	return found, nil
}

func (sc *scope) resolve(ref *ColumnRef) (plan.Expr, error) {
	if sc == nil {
		return nil, undefinedColumn(ref)
	}
	i, err := sc.lookup(ref)
	if err != nil {
		return nil, err
	}
	if i >= 0 {
		return &plan.ColRef{Idx: i, Typ: sc.types[i], Name: sc.names[i]}, nil
	}
	if ref.Table == "" || !sc.hasRel(ref.Table) {
		if sc.outer != nil && sc.args != nil {
			if oe, err := sc.outer.resolve(ref); err == nil {
				return sc.param(oe), nil
			}
		}
	}
	if ref.Table != "" && !sc.hasRel(ref.Table) {
		return nil, pgerror.Newf(pgerror.UndefinedTable, "missing FROM-clause entry for table \"%s\"", ref.Table)
	}
	return nil, undefinedColumn(ref)
}

// param returns the Param that reads outer expression oe, adding it to the
// subquery's arguments once.
func (sc *scope) param(oe plan.Expr) plan.Expr {
	k := oe.String()
	for i, a := range *sc.args {
		if a.String() == k {
			return &plan.Param{Idx: i, Typ: oe.Type()}
		}
	}
	*sc.args = append(*sc.args, oe)
	return &plan.Param{Idx: len(*sc.args) - 1, Typ: oe.Type()}
}

func undefinedColumn(ref *ColumnRef) error {
	if ref.Table != "" {
		return pgerror.Newf(pgerror.UndefinedColumn, "column %s.%s does not exist", ref.Table, ref.Name)
	}
	return pgerror.Newf(pgerror.UndefinedColumn, "column \"%s\" does not exist", ref.Name)
}

// binder binds expressions. In aggregate context (agg != nil) column
// references must go through a GROUP BY expression or an aggregate.
type binder struct {
	cat Catalog
	sc  *scope
	agg *aggContext
	// noAgg names the clause where aggregates are not allowed ("" = allowed).
	noAgg string
	// win collects window function calls where they are allowed.
	win *winContext
}

type aggContext struct {
	input  *binder
	groups []plan.Expr
	keys   []string
	aggs   []plan.AggCall
	aggKey []string
}

func (b *binder) exprs(es []Expr) ([]plan.Expr, error) {
	out := make([]plan.Expr, len(es))
	for i, e := range es {
		pe, err := b.expr(e)
		if err != nil {
			return nil, err
		}
		out[i] = pe
	}
	return out, nil
}

func (b *binder) boolExpr(e Expr, clause string) (plan.Expr, error) {
	pe, err := b.expr(e)
	if err != nil {
		return nil, err
	}
	if isUnknown(pe) {
		pe = castExpr(pe, types.TypBool)
	}
	if pe.Type().Kind != types.Bool {
		return nil, pgerror.Newf(pgerror.DatatypeMismatch, "argument of %s must be type boolean, not type %s", clause, pe.Type())
	}
	return pe, nil
}

func (b *binder) expr(e Expr) (plan.Expr, error) {
	if b.agg != nil {
		// An expression equal to a GROUP BY key reads the key's column.
		if _, isLit := e.(*Literal); !isLit {
			if in, err := b.agg.input.expr(e); err == nil {
				k := in.String()
				for i, g := range b.agg.keys {
					if g == k {
						return &plan.ColRef{Idx: i, Typ: b.agg.groups[i].Type(), Name: exprName(e)}, nil
					}
				}
			}
		}
	}
	switch e := e.(type) {
	case *Literal:
		return literal(e)
	case *Param:
		return b.param(e)
	case *ArrayExpr:
		return b.arrayExpr(e)
	case *ColumnRef:
		if b.agg != nil {
			x, err := b.agg.input.sc.resolve(e)
			if err != nil {
				return nil, err
			}
			if p, ok := x.(*plan.Param); ok {
				// A column of an outer query is one value for all
				// the groups, as in PostgreSQL.
				return p, nil
			}
			return nil, pgerror.Newf(pgerror.GroupingError, "column \"%s.%s\" must appear in the GROUP BY clause or be used in an aggregate function", b.agg.input.sc.table, e.Name)
		}
		return b.sc.resolve(e)
	case *SubqueryExpr:
		return b.subquery(e)
	case *ArrayCmpExpr:
		return b.arrayCmp(e)
	case *FieldSelect:
		return b.fieldSelect(e)
	case *BinaryExpr:
		return b.binary(e)
	case *UnaryExpr:
		x, err := b.expr(e.X)
		if err != nil {
			return nil, err
		}
		if isUnknown(x) {
			x = castExpr(x, types.TypFloat8)
		}
		if !x.Type().IsNumeric() {
			return nil, pgerror.Newf(pgerror.UndefinedFunction, "operator does not exist: %s %s", e.Op, x.Type())
		}
		switch e.Op {
		case "+":
			return x, nil
		case "@":
			return &plan.Call{Op: plan.OpAbs, Args: []plan.Expr{x}, Typ: operandType(x.Type())}, nil
		case "-":
		default:
			return nil, unsupported("prefix operator " + e.Op)
		}
		// A constant is negated here only when the result fits its type:
		// -(-2147483648)::int4 is left to the evaluator, which reports
		// 22003 where the value is computed, as PostgreSQL does.
		if c, ok := x.(*plan.Const); ok && !c.Null && c.Param == nil && c.Typ.IsInteger() {
			if v := c.Val.Ints[0]; v != math.MinInt64 && intFits(c.Typ, -v) {
				return plan.IntConst(c.Typ, -v), nil
			}
		}
		if c, ok := x.(*plan.Const); ok && !c.Null && c.Param == nil && c.Typ.Kind == types.Float8 {
			return plan.FloatConst(-c.Val.Floats[0]), nil
		}
		if c, ok := x.(*plan.Const); ok && !c.Null && c.Param == nil && c.Typ.Kind == types.Numeric {
			v := types.NewVec(c.Typ, 1)
			v.Bytes.Data = types.NumericNeg(v.Bytes.Data, c.Val.Bytes.Get(0))
			v.AppendedBytes()
			return &plan.Const{Typ: c.Typ, Val: v}, nil
		}
		return &plan.Call{Op: plan.OpNeg, Args: []plan.Expr{x}, Typ: operandType(x.Type())}, nil
	case *AndExpr:
		return b.logic(plan.OpAnd, e.Args, "AND")
	case *OrExpr:
		return b.logic(plan.OpOr, e.Args, "OR")
	case *NotExpr:
		x, err := b.boolExpr(e.X, "NOT")
		if err != nil {
			return nil, err
		}
		return &plan.Call{Op: plan.OpNot, Args: []plan.Expr{x}, Typ: types.TypBool}, nil
	case *IsNullExpr:
		x, err := b.expr(e.X)
		if err != nil {
			return nil, err
		}
		op := plan.OpIsNull
		if e.Not {
			op = plan.OpIsNotNull
		}
		return &plan.Call{Op: op, Args: []plan.Expr{x}, Typ: types.TypBool}, nil
	case *BoolTest:
		x, err := b.boolExpr(e.X, "IS TRUE")
		if err != nil {
			return nil, err
		}
		// x IS TRUE = coalesce(x = true, false)
		eq := &plan.Call{Op: plan.OpEq, Args: []plan.Expr{x, plan.BoolConst(e.Value)}, Typ: types.TypBool}
		var res plan.Expr = &plan.Call{Op: plan.OpCoalesce, Args: []plan.Expr{eq, plan.BoolConst(false)}, Typ: types.TypBool}
		if e.Not {
			res = &plan.Call{Op: plan.OpNot, Args: []plan.Expr{res}, Typ: types.TypBool}
		}
		return res, nil
	case *InExpr:
		x, err := b.expr(e.X)
		if err != nil {
			return nil, err
		}
		list, err := b.exprs(e.List)
		if err != nil {
			return nil, err
		}
		res, err := inCall(x, list)
		if err != nil || !e.Not {
			return res, err
		}
		return &plan.Call{Op: plan.OpNot, Args: []plan.Expr{res}, Typ: types.TypBool}, nil
	case *BetweenExpr:
		lo := &BinaryExpr{Op: ">=", L: e.X, R: e.Lo}
		hi := &BinaryExpr{Op: "<=", L: e.X, R: e.Hi}
		var x Expr = &AndExpr{Args: []Expr{lo, hi}}
		if e.Not {
			x = &NotExpr{X: x}
		}
		return b.expr(x)
	case *LikeExpr:
		x, err := b.expr(e.X)
		if err != nil {
			return nil, err
		}
		p, err := b.expr(e.Pattern)
		if err != nil {
			return nil, err
		}
		x, p = resolveUnknown(x), resolveUnknown(p)
		if !x.Type().IsTextual() || !p.Type().IsTextual() {
			return nil, pgerror.Newf(pgerror.UndefinedFunction, "operator does not exist: %s ~~ %s", x.Type(), p.Type())
		}
		op := plan.OpLike
		if e.ILike {
			op = plan.OpILike
		}
		var res plan.Expr = &plan.Call{Op: op, Args: []plan.Expr{x, p}, Typ: types.TypBool}
		if e.Not {
			res = &plan.Call{Op: plan.OpNot, Args: []plan.Expr{res}, Typ: types.TypBool}
		}
		return res, nil
	case *CastExpr:
		x, err := b.expr(e.X)
		if err != nil {
			return nil, err
		}
		if c, ok := x.(*plan.Const); ok && c.Param != nil && isUnknown(c) {
			if !e.Type.IsRegType() {
				return inferParam(c, e.Type), nil
			}
			// $1::regclass: the parameter is the name, as text; the
			// catalog looks it up when the statement runs.
			x = inferParam(c, types.TypText)
		}
		if rc, ok := regCast(x, e.Type); ok {
			return rc, nil
		}
		if c, ok := x.(*plan.Const); ok && c.Array && e.Type.IsVector() {
			x = arrayAsVector(c) // ARRAY[1,2,3]::vector, as pgvector casts arrays
		}
		if !canCast(x.Type(), e.Type) {
			return nil, pgerror.Newf(pgerror.CannotCoerce, "cannot cast type %s to %s", x.Type(), e.Type)
		}
		if x.Type().Equal(e.Type) {
			return x, nil
		}
		return &plan.Cast{X: x, Typ: e.Type}, nil
	case *SubscriptExpr:
		return b.subscript(e)
	case *FuncCall:
		return b.funcCall(e)
	case *CaseExpr:
		return b.caseExpr(e)
	}
	return nil, unsupported("this expression")
}

func castIn(e plan.Expr, t types.Type) plan.Expr {
	if e.Type().IsInteger() && t.IsInteger() {
		return e
	}
	return castExpr(e, t)
}

func (b *binder) logic(op plan.Op, args []Expr, name string) (plan.Expr, error) {
	out := make([]plan.Expr, len(args))
	for i, a := range args {
		x, err := b.boolExpr(a, name)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return &plan.Call{Op: op, Args: out, Typ: types.TypBool}, nil
}

var comparisonOps = map[string]plan.Op{
	"=": plan.OpEq, "<>": plan.OpNe, "!=": plan.OpNe, "<": plan.OpLt, "<=": plan.OpLe, ">": plan.OpGt, ">=": plan.OpGe,
}

var arithmeticOps = map[string]plan.Op{
	"+": plan.OpAdd, "-": plan.OpSub, "*": plan.OpMul, "/": plan.OpDiv, "%": plan.OpMod,
}

func (b *binder) binary(e *BinaryExpr) (plan.Expr, error) {
	l, err := b.expr(e.L)
	if err != nil {
		return nil, err
	}
	r, err := b.expr(e.R)
	if err != nil {
		return nil, err
	}
	if ve, ok, err := vectorArith(e.Op, l, r); ok {
		return ve, err
	}
	if op, ok := comparisonOps[e.Op]; ok {
		l, r, err = unify(l, r, e.Op)
		if err != nil {
			return nil, err
		}
		return &plan.Call{Op: op, Args: []plan.Expr{l, r}, Typ: types.TypBool}, nil
	}
	if de, ok, err := dateTimeArith(e.Op, l, r); ok {
		return de, err
	}
	if op, ok := arithmeticOps[e.Op]; ok {
		if isUnknown(l) && isUnknown(r) {
			l, r = castExpr(l, types.TypFloat8), castExpr(r, types.TypFloat8)
		} else if isUnknown(l) {
			l = castExpr(l, operandType(r.Type()))
		} else if isUnknown(r) {
			r = castExpr(r, operandType(l.Type()))
		}
		lt, rt := l.Type(), r.Type()
		if !lt.IsNumeric() || !rt.IsNumeric() {
			return nil, pgerror.Newf(pgerror.UndefinedFunction, "operator does not exist: %s %s %s", lt, e.Op, rt).
				WithHint("No operator matches the given name and argument types. You might need to add explicit type casts.")
		}
		t := numericResult(lt, rt)
		if !t.IsInteger() {
			l, r = castExpr(l, t), castExpr(r, t)
		}
		return &plan.Call{Op: op, Args: []plan.Expr{l, r}, Typ: t}, nil
	}
	switch e.Op {
	case "||":
		l, r = resolveUnknown(l), resolveUnknown(r)
		if !l.Type().IsTextual() && !r.Type().IsTextual() {
			return nil, pgerror.Newf(pgerror.UndefinedFunction, "operator does not exist: %s || %s", l.Type(), r.Type())
		}
		return &plan.Call{Op: plan.OpConcat, Args: []plan.Expr{castExpr(l, types.TypText), castExpr(r, types.TypText)}, Typ: types.TypText}, nil
	case "->", "->>":
		if isUnknown(l) {
			l = castExpr(l, types.TypJSONB)
		}
		if k := l.Type().Kind; k != types.JSON && k != types.JSONB {
			return nil, pgerror.Newf(pgerror.UndefinedFunction, "operator does not exist: %s %s %s", l.Type(), e.Op, r.Type())
		}
		r = resolveUnknown(r)
		if !r.Type().IsTextual() && !r.Type().IsInteger() {
			return nil, pgerror.Newf(pgerror.UndefinedFunction, "operator does not exist: %s %s %s", l.Type(), e.Op, r.Type())
		}
		if e.Op == "->" {
			return &plan.Call{Op: plan.OpJSONGet, Args: []plan.Expr{l, r}, Typ: l.Type()}, nil
		}
		return &plan.Call{Op: plan.OpJSONGetText, Args: []plan.Expr{l, r}, Typ: types.TypText}, nil
	case "@>", "<@":
		if isUnknown(l) {
			l = castExpr(l, types.TypJSONB)
		}
		if isUnknown(r) {
			r = castExpr(r, types.TypJSONB)
		}
		if l.Type().Kind != types.JSONB || r.Type().Kind != types.JSONB {
			return nil, pgerror.Newf(pgerror.UndefinedFunction, "operator does not exist: %s %s %s", l.Type(), e.Op, r.Type())
		}
		if e.Op == "<@" {
			l, r = r, l
		}
		return &plan.Call{Op: plan.OpJSONContains, Args: []plan.Expr{l, r}, Typ: types.TypBool}, nil
	}
	if re, ok, err := regexOp(e.Op, l, r); ok {
		return re, err
	}
	if ve, ok, err := vectorOp(e.Op, l, r); ok {
		return ve, err
	}
	return nil, pgerror.Newf(pgerror.UndefinedFunction, "operator does not exist: %s %s %s", l.Type(), e.Op, r.Type())
}

func (b *binder) subscript(e *SubscriptExpr) (plan.Expr, error) {
	x, err := b.expr(e.X)
	if err != nil {
		return nil, err
	}
	xt := x.Type()
	if xt.IsTextual() {
		idx, err := b.exprs(e.Indexes)
		if err != nil {
			return nil, err
		}
		return textArraySubscript(x, idx)
	}
	if xt.Kind != types.Tensor && xt.Kind != types.Vector {
		return nil, pgerror.Newf(pgerror.DatatypeMismatch, "cannot subscript type %s because it does not support subscripting", xt)
	}
	if xt.Kind == types.Vector {
		// A vector subscripts like a one-dimensional float32 tensor.
		x = castExpr(x, types.TensorOf(types.DTFloat32, xt.Width))
		if xt.Width == 0 {
			x = castExpr(x, types.TensorOf(types.DTFloat32, types.Ragged))
		}
		xt = x.Type()
	}
	rt, err := types.SubscriptType(xt, len(e.Indexes))
	if err != nil {
		return nil, err
	}
	args := []plan.Expr{x}
	for _, ix := range e.Indexes {
		i, err := b.expr(ix)
		if err != nil {
			return nil, err
		}
		if isUnknown(i) {
			i = castExpr(i, types.TypInt4)
		}
		if !i.Type().IsInteger() {
			return nil, pgerror.Newf(pgerror.DatatypeMismatch, "array subscript must have type integer")
		}
		args = append(args, i)
	}
	return &plan.Call{Op: plan.OpSubscript, Args: args, Typ: rt}, nil
}

func (b *binder) caseExpr(e *CaseExpr) (plan.Expr, error) {
	c := &plan.Case{}
	var arg plan.Expr
	var err error
	if e.Arg != nil {
		if arg, err = b.expr(e.Arg); err != nil {
			return nil, err
		}
	}
	var results []plan.Expr
	t := types.TypUnknown
	for _, w := range e.Whens {
		var cond plan.Expr
		if arg != nil {
			cond, err = b.expr(&BinaryExpr{Op: "=", L: e.Arg, R: w.Cond})
		} else {
			cond, err = b.boolExpr(w.Cond, "CASE/WHEN")
		}
		if err != nil {
			return nil, err
		}
		res, err := b.expr(w.Result)
		if err != nil {
			return nil, err
		}
		c.Whens = append(c.Whens, plan.When{Cond: cond})
		results = append(results, res)
		nt, ok := mergeType(t, res.Type())
		if !ok {
			return nil, pgerror.Newf(pgerror.DatatypeMismatch, "CASE types %s and %s cannot be matched", t, res.Type())
		}
		t = nt
	}
	if e.Else != nil {
		el, err := b.expr(e.Else)
		if err != nil {
			return nil, err
		}
		nt, ok := mergeType(t, el.Type())
		if !ok {
			return nil, pgerror.Newf(pgerror.DatatypeMismatch, "CASE types %s and %s cannot be matched", t, el.Type())
		}
		t = nt
		results = append(results, el)
	}
	if t.Kind == types.Unknown {
		t = types.TypText
	}
	for i := range c.Whens {
		c.Whens[i].Result = castExpr(results[i], t)
	}
	if e.Else != nil {
		c.Else = castExpr(results[len(results)-1], t)
	}
	c.Typ = t
	return c, nil
}

var aggFuncs = map[string]plan.AggFunc{
	"count": plan.AggCount, "sum": plan.AggSum, "avg": plan.AggAvg, "min": plan.AggMin, "max": plan.AggMax,
	"string_agg": plan.AggStringAgg,
}

func isAggCall(e Expr) bool {
	f, ok := e.(*FuncCall)
	if !ok {
		return false
	}
	_, ok = aggFuncs[f.Name]
	return ok && f.Over == nil
}

func (b *binder) funcCall(f *FuncCall) (plan.Expr, error) {
	if f.Over != nil {
		return b.windowCall(f)
	}
	if fn, ok := aggFuncs[f.Name]; ok {
		if b.agg == nil {
			if b.noAgg != "" {
				return nil, pgerror.Newf(pgerror.GroupingError, "aggregate functions are not allowed in %s", b.noAgg)
			}
			return nil, pgerror.AssertionFailedf("aggregate %s outside aggregate context", f.Name)
		}
		return b.agg.add(fn, f)
	}
	if f.Star || f.Distinct {
		return nil, pgerror.Newf(pgerror.WrongObjectType, "%s is not an aggregate function", f.Name)
	}
	args, err := b.exprs(f.Args)
	if err != nil {
		return nil, err
	}
	nargs := func(n int) error {
		if len(args) != n {
			return pgerror.Newf(pgerror.UndefinedFunction, "function %s with %d arguments does not exist", f.Name, len(args))
		}
		return nil
	}
	switch f.Name {
	case "pg_sleep":
		return bindPgSleep(args)
	case "random":
		if err := nargs(0); err != nil {
			return nil, err
		}
		return &plan.Call{Op: plan.OpRandom, Typ: types.TypFloat8}, nil
	case "cardinality", "array_length", "vector_dims":
		want := 1
		if f.Name == "array_length" {
			want = 2
		}
		if err := nargs(want); err != nil {
			return nil, err
		}
		at := args[0].Type()
		if (at.Kind != types.Tensor && !at.IsVector()) || (f.Name == "vector_dims" && !at.IsVector()) {
			return nil, pgerror.Newf(pgerror.UndefinedFunction, "function %s(%s) does not exist", f.Name, args[0].Type())
		}
		op := map[string]plan.Op{"cardinality": plan.OpCardinality, "array_length": plan.OpArrayLength, "vector_dims": plan.OpVectorDims}[f.Name]
		if f.Name == "array_length" {
			args[1] = castExpr(args[1], types.TypInt4)
			if !args[1].Type().IsInteger() {
				return nil, pgerror.Newf(pgerror.UndefinedFunction, "function array_length(%s, %s) does not exist", args[0].Type(), args[1].Type())
			}
		}
		return &plan.Call{Op: op, Args: args, Typ: types.TypInt4}, nil
	case "abs":
		if err := nargs(1); err != nil {
			return nil, err
		}
		if isUnknown(args[0]) {
			args[0] = castExpr(args[0], types.TypFloat8)
		}
		if !args[0].Type().IsNumeric() {
			return nil, pgerror.Newf(pgerror.UndefinedFunction, "function abs(%s) does not exist", args[0].Type())
		}
		return &plan.Call{Op: plan.OpAbs, Args: args, Typ: operandType(args[0].Type())}, nil
	case "lower", "upper", "length", "char_length":
		if err := nargs(1); err != nil {
			return nil, err
		}
		args[0] = resolveUnknown(args[0])
		// length(bytea) counts octets; the others take text only.
		octets := f.Name == "length" && args[0].Type().Kind == types.Bytea
		if !args[0].Type().IsTextual() && !octets {
			return nil, pgerror.Newf(pgerror.UndefinedFunction, "function %s(%s) does not exist", f.Name, args[0].Type())
		}
		if args[0].Type().Kind == types.Bpchar {
			args[0] = castExpr(args[0], types.TypText) // without its padding
		}
		switch f.Name {
		case "lower":
			return &plan.Call{Op: plan.OpLower, Args: args, Typ: types.TypText}, nil
		case "upper":
			return &plan.Call{Op: plan.OpUpper, Args: args, Typ: types.TypText}, nil
		}
		return &plan.Call{Op: plan.OpLength, Args: args, Typ: types.TypInt4}, nil
	case "coalesce", "nullif":
		if len(args) == 0 || (f.Name == "nullif" && len(args) != 2) {
			return nil, pgerror.Newf(pgerror.UndefinedFunction, "function %s with %d arguments does not exist", f.Name, len(args))
		}
		t := types.TypUnknown
		for _, a := range args {
			var ok bool
			if t, ok = commonType(t, a.Type()); !ok {
				return nil, pgerror.Newf(pgerror.DatatypeMismatch, "%s types %s and %s cannot be matched", strings.ToUpper(f.Name), t, a.Type())
			}
		}
		if t.Kind == types.Unknown {
			t = types.TypText
		}
		if f.Name == "nullif" {
			t = args[0].Type()
			if t.Kind == types.Unknown {
				t = types.TypText
			}
		}
		for i := range args {
			args[i] = castExpr(args[i], t)
		}
		op := plan.OpCoalesce
		if f.Name == "nullif" {
			op = plan.OpNullIf
		}
		return &plan.Call{Op: op, Args: args, Typ: t}, nil
	}
	if fe, ok, err := subvectorFunc(f.Name, args); ok {
		return fe, err
	}
	if fe, ok, err := vectorFunc(f.Name, args); ok {
		return fe, err
	}
	if fe, ok, err := scalarCall(f.Name, args); ok {
		return fe, err
	}
	if fe, ok, err := catalogCall(f.Name, args); ok {
		return fe, err
	}
	return nil, pgerror.Newf(pgerror.UndefinedFunction, "function %s does not exist", f.Name).
		WithHint("No function matches the given name and argument types.")
}

// add registers an aggregate call and returns a reference to its output.
func (a *aggContext) add(fn plan.AggFunc, f *FuncCall) (plan.Expr, error) {
	call := plan.AggCall{Func: fn, Distinct: f.Distinct, Name: f.Name}
	in := *a.input
	in.noAgg = "aggregate function calls"
	switch {
	case f.Star:
		if fn != plan.AggCount {
			return nil, pgerror.Newf(pgerror.SyntaxError, "%s(*) is not allowed", f.Name)
		}
		call.Func = plan.AggCountStar
		call.Typ = types.TypInt8
	case fn == plan.AggStringAgg:
		sep, ok := f.Args[len(f.Args)-1].(*Literal)
		if len(f.Args) != 2 || !ok || sep.Kind != LitString {
			return nil, unsupported("string_agg without a constant separator")
		}
		arg, err := in.expr(f.Args[0])
		if err != nil {
			return nil, err
		}
		arg = resolveUnknown(arg)
		if !arg.Type().IsTextual() {
			return nil, pgerror.Newf(pgerror.UndefinedFunction, "function string_agg(%s, unknown) does not exist", arg.Type())
		}
		call.Arg, call.Typ, call.Sep = castExpr(arg, types.TypText), types.TypText, sep.Text
	case len(f.Args) != 1:
		return nil, pgerror.Newf(pgerror.UndefinedFunction, "function %s with %d arguments does not exist", f.Name, len(f.Args))
	default:
		arg, err := in.expr(f.Args[0])
		if err != nil {
			return nil, err
		}
		arg = resolveUnknown(arg)
		at := arg.Type()
		switch fn {
		case plan.AggCount:
			call.Typ = types.TypInt8
		case plan.AggSum, plan.AggAvg:
			t, ok := sumAvgType(at, fn == plan.AggAvg)
			if !ok {
				return nil, pgerror.Newf(pgerror.UndefinedFunction, "function %s(%s) does not exist", f.Name, at)
			}
			call.Typ = t
		case plan.AggMin, plan.AggMax:
			if at.Kind == types.Tensor || at.IsVector() || at.Kind == types.JSON {
				return nil, pgerror.Newf(pgerror.UndefinedFunction, "function %s(%s) does not exist", f.Name, at)
			}
			call.Typ = at
		}
		call.Arg = arg
	}
	key := call.Name + "|" + strconv.FormatBool(call.Distinct) + "|" + call.Sep + "|"
	if call.Arg != nil {
		key += call.Arg.String()
	}
	for i, k := range a.aggKey {
		if k == key {
			return &plan.ColRef{Idx: len(a.groups) + i, Typ: a.aggs[i].Typ, Name: call.Name}, nil
		}
	}
	a.aggs = append(a.aggs, call)
	a.aggKey = append(a.aggKey, key)
	return &plan.ColRef{Idx: len(a.groups) + len(a.aggs) - 1, Typ: call.Typ, Name: call.Name}, nil
}

// exprName is the output column name PostgreSQL gives an expression.
func exprName(e Expr) string {
	switch e := e.(type) {
	case *ColumnRef:
		return e.Name
	case *FieldSelect:
		return e.Field
	case *FuncCall:
		return e.Name
	case *CastExpr:
		if n := exprName(e.X); n != "?column?" {
			return n
		}
		return pgTypeName(e.Type)
	case *SubscriptExpr:
		return exprName(e.X)
	case *CaseExpr:
		return "case"
	case *Literal:
		if e.Kind == LitBool {
			return "bool"
		}
	case *ArrayExpr:
		return "array"
	case *SubqueryExpr:
		switch e.Kind {
		case SubExists:
			return "exists"
		case SubArray:
			return "array"
		case SubScalar:
			// A scalar subquery is named after its one output column.
			if q := e.Query; q != nil && len(q.Items) == 1 && !q.Items[0].Star {
				if q.Items[0].Alias != "" {
					return q.Items[0].Alias
				}
				return exprName(q.Items[0].Expr)
			}
		}
	}
	return "?column?"
}

func pgTypeName(t types.Type) string {
	switch t.Kind {
	case types.Bool:
		return "bool"
	case types.Int2:
		return "int2"
	case types.Int4:
		return "int4"
	case types.Int8:
		return "int8"
	case types.Float4:
		return "float4"
	case types.Float8:
		return "float8"
	case types.Varchar:
		return "varchar"
	case types.Vector:
		return "vector"
	case types.HalfVec:
		return "halfvec"
	case types.Tensor:
		return t.DType.String()
	case types.Timestamp:
		return "timestamp"
	case types.TimestampTZ:
		return "timestamptz"
	}
	return t.String()
}
