package sql

import (
	"math"
	"strconv"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// literal types a Literal: integers as int4 (int8 when larger, numeric
// beyond), other numbers as numeric, strings as Unknown until context
// gives them a type.
func literal(l *Literal) (plan.Expr, error) {
	switch l.Kind {
	case LitNull:
		return plan.NullConst(types.TypUnknown), nil
	case LitBool:
		return plan.BoolConst(l.Text == "true"), nil
	case LitInt:
		v, err := strconv.ParseInt(l.Text, 10, 64)
		if err != nil {
			return numericConst(l.Text)
		}
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			return plan.IntConst(types.TypInt4, v), nil
		}
		return plan.IntConst(types.TypInt8, v), nil
	case LitFloat:
		return numericConst(l.Text)
	}
	return plan.StringConst(types.TypUnknown, l.Text), nil
}

// numericConst is the numeric constant s spells.
func numericConst(s string) (*plan.Const, error) {
	v := types.NewVec(types.TypNumeric, 1)
	if err := types.AppendParsed(v, s); err != nil {
		return nil, err
	}
	return &plan.Const{Typ: types.TypNumeric, Val: v}, nil
}

// intFits reports whether v is in the range of the integer type t.
func intFits(t types.Type, v int64) bool {
	switch t.Kind {
	case types.Int2:
		return v >= math.MinInt16 && v <= math.MaxInt16
	case types.Int4:
		return v >= math.MinInt32 && v <= math.MaxInt32
	}
	return true
}

func isUnknown(e plan.Expr) bool { return e.Type().Kind == types.Unknown }

// resolveUnknown gives an untyped literal the type text, as PostgreSQL does
// when no context decides.
func resolveUnknown(e plan.Expr) plan.Expr {
	if isUnknown(e) {
		return castExpr(e, types.TypText)
	}
	return e
}

// castExpr wraps e in a cast to t unless it already has type t. An untyped
// NULL becomes a typed NULL.
func castExpr(e plan.Expr, t types.Type) plan.Expr {
	if e.Type().Equal(t) {
		return e
	}
	if t.Kind == types.Numeric && t.Width == 0 && e.Type().Kind == types.Numeric {
		return e // every numeric is a numeric: no rounding, no check
	}
	if c, ok := e.(*plan.Const); ok && c.Param != nil && c.Typ.Kind == types.Unknown {
		return inferParam(c, t)
	}
	if c, ok := e.(*plan.Const); ok && c.Array && t.IsVector() {
		e = arrayAsVector(c)
	}
	if c, ok := e.(*plan.Const); ok && c.Null {
		return plan.NullConst(t)
	}
	if c, ok := e.(*plan.Const); ok {
		if folded := foldLiteral(c, t); folded != nil {
			return folded
		}
	}
	return &plan.Cast{X: e, Typ: t}
}

// foldLiteral converts a quoted literal to a number, boolean or text
// constant when binding, so that the planner and storage see a typed
// constant (id = '42' can use zone maps and the primary key). A literal
// that does not parse is left to the cast, which fails when it runs, as
// before.
func foldLiteral(c *plan.Const, t types.Type) *plan.Const {
	if c.Typ.Kind != types.Unknown || c.Param != nil || c.Array || c.Val == nil {
		return nil
	}
	switch {
	case t.IsNumeric(), t.Kind == types.Bool, t.Kind == types.Text, t.Kind == types.UUID, t.IsDateTime(), t.Kind == types.Interval:
	default:
		return nil
	}
	v := types.NewVec(t, 1)
	if err := types.AppendParsedBytes(v, c.Val.Bytes.Get(0)); err != nil {
		return nil
	}
	return &plan.Const{Typ: t, Val: v}
}

// canCast reports whether an explicit cast from s to t exists.
func canCast(s, t types.Type) bool {
	if s.Kind == types.Unknown || t.IsTextual() || s.IsTextual() {
		return true
	}
	if s.IsNumeric() && t.IsNumeric() {
		return true
	}
	if (s.Kind == types.Bool && t.Kind == types.Int4) || (s.Kind == types.Int4 && t.Kind == types.Bool) {
		return true
	}
	if (s.Kind == types.JSON || s.Kind == types.JSONB) && (t.Kind == types.JSON || t.Kind == types.JSONB) {
		return true
	}
	if s.IsDateTime() && t.IsDateTime() {
		return true
	}
	if s.Kind == t.Kind && s.Kind != types.Tensor {
		return true // a modifier change: varchar(n), vector(n)
	}
	if (isFloat32Vec(s) || s.Kind == types.HalfVec) && (isFloat32Vec(t) || t.Kind == types.HalfVec) {
		return true
	}
	if s.Kind == types.Tensor && t.Kind == types.Tensor && len(s.Shape) == len(t.Shape) {
		return true
	}
	if s.Kind == types.Tensor && len(s.Shape) == 1 && t.IsVector() {
		return true // integer[], real[], double precision[] to vector or halfvec, as pgvector
	}
	return false
}

func isFloat32Vec(t types.Type) bool {
	return t.Kind == types.Vector || (t.Kind == types.Tensor && t.DType == types.DTFloat32 && len(t.Shape) == 1)
}

// assignCast converts e for storing into a column of type t, with
// PostgreSQL's assignment rules: untyped literals parse, numbers convert
// with range checks, and other type changes are 42804.
func assignCast(e plan.Expr, t types.Type, col string) (plan.Expr, error) {
	s := e.Type()
	if s.Equal(t) || s.Kind == types.Unknown {
		return castExpr(e, t), nil
	}
	// Any type goes into a text column by its output function, as
	// PostgreSQL's I/O conversion casts to string types are assignment
	// casts (the way back is explicit only).
	ok := (s.IsNumeric() && t.IsNumeric()) || t.IsTextual() ||
		(s.Kind == t.Kind) || ((s.Kind == types.JSON || s.Kind == types.JSONB) && (t.Kind == types.JSON || t.Kind == types.JSONB)) ||
		(isFloat32Vec(s) && isFloat32Vec(t)) || (s.Kind == types.Tensor && t.Kind == types.Tensor && len(s.Shape) == len(t.Shape)) ||
		(s.IsDateTime() && t.IsDateTime())
	if !ok {
		return nil, pgerror.Newf(pgerror.DatatypeMismatch, "column \"%s\" is of type %s but expression is of type %s", col, t, s).
			WithHint("You will need to rewrite or cast the expression.")
	}
	return castExpr(e, t), nil
}

// numericResult returns the type arithmetic on a and b produces.
func numericResult(a, b types.Type) types.Type {
	if a.IsInteger() && b.IsInteger() {
		if a.Kind == types.Int8 || b.Kind == types.Int8 {
			return types.TypInt8
		}
		if a.Kind == types.Int4 || b.Kind == types.Int4 {
			return types.TypInt4
		}
		return types.TypInt2
	}
	// real with real stays real; real with an integer or numeric is
	// double precision, PostgreSQL's preferred type of the numeric
	// category; integers with numeric are numeric.
	switch {
	case a.Kind == types.Float4 && b.Kind == types.Float4:
		return types.TypFloat4
	case a.Kind == types.Float4 || a.Kind == types.Float8 || b.Kind == types.Float4 || b.Kind == types.Float8:
		return types.TypFloat8
	}
	return types.TypNumeric
}

// operandType is the type an operator takes for an operand of type t:
// numeric's operators take numeric of any precision and scale.
func operandType(t types.Type) types.Type {
	if t.Kind == types.Numeric {
		return types.TypNumeric
	}
	return t
}

// sumAvgType returns the result type of sum (avg when avg is set) over
// values of type t, as PostgreSQL's: sum of smallint or integer is
// bigint, of bigint numeric; avg of any integer or numeric is numeric, of
// floats double precision; ok is false when t has no sum.
func sumAvgType(t types.Type, avg bool) (types.Type, bool) {
	switch {
	case t.IsVector():
		return types.Type{Kind: t.Kind}, true
	case t.Kind == types.Float4 || t.Kind == types.Float8:
		if avg {
			return types.TypFloat8, true
		}
		return t, true
	case t.Kind == types.Int2 || t.Kind == types.Int4:
		if avg {
			return types.TypNumeric, true
		}
		return types.TypInt8, true
	case t.Kind == types.Int8, t.Kind == types.Numeric:
		return types.TypNumeric, true
	}
	return types.Type{}, false
}

// commonType returns the type two compared or combined values are converted
// to, or ok=false when they cannot be compared.
func commonType(a, b types.Type) (types.Type, bool) {
	switch {
	case a.Kind == types.Unknown && b.Kind == types.Unknown:
		return types.TypText, true
	case a.Kind == types.Unknown:
		return operandType(b), true
	case b.Kind == types.Unknown:
		return operandType(a), true
	case a.IsNumeric() && b.IsNumeric():
		return numericResult(a, b), true
	case a.IsTextual() && b.IsTextual():
		return types.TypText, true
	case a.IsDateTime() && b.IsDateTime() && a.Kind != b.Kind:
		// date < timestamp < timestamptz, as PostgreSQL promotes them.
		if a.Kind == types.TimestampTZ || b.Kind == types.TimestampTZ {
			return types.Type{Kind: types.TimestampTZ}, true
		}
		return types.Type{Kind: types.Timestamp}, true
	case a.Kind == b.Kind && a.Kind != types.Tensor:
		return a, true
	case a.Kind == types.Tensor && b.Kind == types.Tensor && a.Equal(b):
		return a, true
	}
	return types.Type{}, false
}

// unify converts a and b to their common type for comparison.
func unify(a, b plan.Expr, op string) (plan.Expr, plan.Expr, error) {
	t, ok := commonType(a.Type(), b.Type())
	if !ok {
		return nil, nil, pgerror.Newf(pgerror.UndefinedFunction, "operator does not exist: %s %s %s", a.Type(), op, b.Type()).
			WithHint("No operator matches the given name and argument types. You might need to add explicit type casts.")
	}
	// Integers of any width compare directly (all are int64 in a Vec).
	if a.Type().IsInteger() && b.Type().IsInteger() {
		return a, b, nil
	}
	return castExpr(a, t), castExpr(b, t), nil
}

// dateTimeArith binds the arithmetic of dates, timestamps and intervals as
// PostgreSQL's operators do: date ± integer is a date and date - date an
// integer; date or timestamp ± interval a timestamp (of the timestamp's
// kind); timestamp - timestamp an interval; interval ± interval an
// interval, interval × or ÷ a number an interval. ok is false when
// neither side is one of these types.
func dateTimeArith(op string, l, r plan.Expr) (plan.Expr, bool, error) {
	lt, rt := l.Type(), r.Type()
	isDT := func(t types.Type) bool { return t.IsDateTime() || t.Kind == types.Interval }
	if !isDT(lt) && !isDT(rt) || op != "+" && op != "-" && op != "*" && op != "/" {
		return nil, false, nil
	}
	// An untyped literal beside a date is an integer, beside a timestamp
	// or an interval an interval.
	resolve := func(u, other plan.Expr) plan.Expr {
		if !isUnknown(u) {
			return u
		}
		switch k := other.Type().Kind; {
		case k == types.Date && (op == "+" || op == "-"):
			return castExpr(u, types.TypInt4)
		case op == "*" || op == "/":
			return castExpr(u, types.TypFloat8)
		default:
			return castExpr(u, types.Type{Kind: types.Interval})
		}
	}
	l, r = resolve(l, r), resolve(r, l)
	lt, rt = l.Type(), r.Type()
	call := func(name string, t types.Type, args ...plan.Expr) (plan.Expr, bool, error) {
		return &plan.Func{Name: name, Args: args, Typ: t}, true, nil
	}
	ts := types.Type{Kind: types.Timestamp}
	iv := types.Type{Kind: types.Interval}
	toTS := func(e plan.Expr) plan.Expr {
		if e.Type().Kind == types.Date {
			return castExpr(e, ts)
		}
		return e
	}
	switch {
	case op == "+" && lt.Kind == types.Date && rt.IsInteger():
		return call("date_pli", lt, l, castExpr(r, types.TypInt8))
	case op == "+" && lt.IsInteger() && rt.Kind == types.Date:
		return call("date_pli", rt, r, castExpr(l, types.TypInt8))
	case op == "-" && lt.Kind == types.Date && rt.IsInteger():
		return call("date_mii", lt, l, castExpr(r, types.TypInt8))
	case op == "-" && lt.Kind == types.Date && rt.Kind == types.Date:
		return call("date_mi", types.TypInt4, l, r)
	case (op == "+" || op == "-") && lt.IsDateTime() && rt.Kind == types.Interval:
		l = toTS(l)
		name := "timestamp_pl_interval"
		if op == "-" {
			name = "timestamp_mi_interval"
		}
		return call(name, l.Type(), l, r)
	case op == "+" && lt.Kind == types.Interval && rt.IsDateTime():
		r = toTS(r)
		return call("timestamp_pl_interval", r.Type(), r, l)
	case op == "-" && lt.IsDateTime() && rt.IsDateTime():
		t, _ := commonType(lt, rt)
		if t.Kind == types.Date {
			t = ts
		}
		return call("timestamp_mi", iv, castExpr(l, t), castExpr(r, t))
	case (op == "+" || op == "-") && lt.Kind == types.Interval && rt.Kind == types.Interval:
		if op == "+" {
			return call("interval_pl", iv, l, r)
		}
		return call("interval_mi", iv, l, r)
	case op == "*" && lt.Kind == types.Interval && rt.IsNumeric():
		return call("interval_mul", iv, l, castExpr(r, types.TypFloat8))
	case op == "*" && lt.IsNumeric() && rt.Kind == types.Interval:
		return call("interval_mul", iv, r, castExpr(l, types.TypFloat8))
	case op == "/" && lt.Kind == types.Interval && rt.IsNumeric():
		return call("interval_div", iv, l, castExpr(r, types.TypFloat8))
	}
	return nil, true, pgerror.Newf(pgerror.UndefinedFunction, "operator does not exist: %s %s %s", lt, op, rt).
		WithHint("No operator matches the given name and argument types. You might need to add explicit type casts.")
}
