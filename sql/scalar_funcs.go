package sql

import (
	"strconv"
	"strings"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// Scalar functions of numbers and strings that exec evaluates through
// plan.Func (exec/scalar_funcs.go). Of numeric's functions, round, trunc,
// floor, ceil, sign, mod and abs keep numeric; the others (sqrt, exp,
// ln, power, ...) compute in double precision.

// floatFuncs take and return double precision: PostgreSQL's float8
// functions, and those of numeric whose float8 result prints the same.
var floatFuncs = map[string]int{
	"sqrt": 1, "cbrt": 1, "exp": 1, "ln": 1, "log10": 1, "sin": 1, "cos": 1, "tan": 1, "cot": 1,
	"asin": 1, "acos": 1, "atan": 1, "degrees": 1, "radians": 1, "floor": 1, "ceil": 1, "ceiling": 1,
	"sign": 1, "atan2": 2, "power": 2, "pow": 2, "pi": 0,
}

// numericFuncs are the functions of floatFuncs with a numeric form,
// taken for a numeric argument.
var numericFuncs = map[string]bool{"floor": true, "ceil": true, "ceiling": true, "sign": true}

// textFuncs are string functions with a fixed signature (min arguments
// from the left; the rest optional).
var textFuncs = map[string]catalogFunc{
	"lpad":         {args: []types.Type{types.TypText, types.TypInt4, types.TypText}, min: 2, ret: types.TypText},
	"rpad":         {args: []types.Type{types.TypText, types.TypInt4, types.TypText}, min: 2, ret: types.TypText},
	"repeat":       {args: []types.Type{types.TypText, types.TypInt4}, min: 2, ret: types.TypText},
	"reverse":      {args: []types.Type{types.TypText}, min: 1, ret: types.TypText},
	"split_part":   {args: []types.Type{types.TypText, types.TypText, types.TypInt4}, min: 3, ret: types.TypText},
	"chr":          {args: []types.Type{types.TypInt4}, min: 1, ret: types.TypText},
	"ascii":        {args: []types.Type{types.TypText}, min: 1, ret: types.TypInt4},
	"initcap":      {args: []types.Type{types.TypText}, min: 1, ret: types.TypText},
	"md5":          {args: []types.Type{types.TypText}, min: 1, ret: types.TypText},
	"octet_length": {args: []types.Type{types.TypText}, min: 1, ret: types.TypInt4},
	"starts_with":  {args: []types.Type{types.TypText, types.TypText}, min: 2, ret: types.TypBool},
	"translate":    {args: []types.Type{types.TypText, types.TypText, types.TypText}, min: 3, ret: types.TypText},
	"to_hex":       {args: []types.Type{types.TypInt8}, min: 1, ret: types.TypText},
	"position":     {args: []types.Type{types.TypText, types.TypText}, min: 2, ret: types.TypInt4},
}

// scalarCall binds a call of one of these functions; ok is false when name
// is not one.
func scalarCall(name string, args []plan.Expr) (plan.Expr, bool, error) {
	noSuch := func() (plan.Expr, bool, error) {
		ts := make([]string, len(args))
		for i, a := range args {
			ts[i] = a.Type().String()
		}
		return nil, true, pgerror.Newf(pgerror.UndefinedFunction, "function %s(%s) does not exist", name, strings.Join(ts, ", ")).
			WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
	}
	numeric := func(a plan.Expr) (plan.Expr, bool) {
		if isUnknown(a) {
			return castExpr(a, types.TypFloat8), true
		}
		if !a.Type().IsNumeric() {
			return nil, false
		}
		return castExpr(a, types.TypFloat8), true
	}
	if n, ok := floatFuncs[name]; ok {
		if len(args) != n {
			return noSuch()
		}
		if n == 1 && args[0].Type().Kind == types.Numeric && numericFuncs[name] {
			return &plan.Func{Name: name, Args: args, Typ: types.TypNumeric}, true, nil
		}
		out := make([]plan.Expr, n)
		for i, a := range args {
			if out[i], ok = numeric(a); !ok {
				return noSuch()
			}
		}
		return &plan.Func{Name: name, Args: out, Typ: types.TypFloat8}, true, nil
	}
	switch name {
	case "now", "transaction_timestamp", "statement_timestamp", "current_date", "localtimestamp":
		// The transaction's start (the statement's for
		// statement_timestamp), the same for every row.
		if len(args) != 0 {
			return noSuch()
		}
		t := types.Type{Kind: types.TimestampTZ}
		switch name {
		case "current_date":
			t = types.Type{Kind: types.Date}
		case "localtimestamp":
			t = types.Type{Kind: types.Timestamp}
		}
		fn := "now"
		if name == "statement_timestamp" {
			fn = name
		}
		return &plan.Func{Name: fn, Typ: t}, true, nil
	case "date_part", "extract", "date_trunc":
		if len(args) != 2 {
			return noSuch()
		}
		field, x := args[0], args[1]
		if !isUnknown(field) && !field.Type().IsTextual() {
			return noSuch()
		}
		if isUnknown(x) {
			x = castExpr(x, types.Type{Kind: types.TimestampTZ})
		}
		if !x.Type().IsDateTime() {
			return noSuch()
		}
		ret := types.TypFloat8
		if name == "date_trunc" {
			if x.Type().Kind == types.Date {
				x = castExpr(x, types.Type{Kind: types.TimestampTZ})
			}
			ret = x.Type()
		}
		return &plan.Func{Name: name, Args: []plan.Expr{castExpr(field, types.TypText), x}, Typ: ret}, true, nil
	case "pg_typeof":
		// The argument's type as bound (an untyped literal is unknown, as
		// in PostgreSQL); a regtype, printed as the type's name.
		if len(args) != 1 {
			return noSuch()
		}
		oid := args[0].Type().OID()
		if isUnknown(args[0]) {
			oid = types.OIDUnknown
		}
		return plan.IntConst(types.Type{Kind: types.RegType}, int64(oid)), true, nil
	case "gen_random_uuid":
		if len(args) != 0 {
			return noSuch()
		}
		return &plan.Func{Name: name, Typ: types.Type{Kind: types.UUID}}, true, nil
	case "round", "trunc", "log":
		// round(x [, places]), trunc(x [, places]), log(x), log(b, x).
		if len(args) < 1 || len(args) > 2 {
			return noSuch()
		}
		out := make([]plan.Expr, len(args))
		var ok bool
		if name != "log" && (len(args) == 2 || args[0].Type().Kind == types.Numeric) {
			// round(numeric [, places]), trunc(numeric [, places]): the
			// two-argument forms exist for numeric only.
			a := args[0]
			if !isUnknown(a) && !a.Type().IsNumeric() {
				return noSuch()
			}
			out[0] = castExpr(a, types.TypNumeric)
			if len(args) == 2 {
				if !args[1].Type().IsInteger() && !isUnknown(args[1]) {
					return noSuch()
				}
				out[1] = castExpr(args[1], types.TypInt4)
			}
			return &plan.Func{Name: name, Args: out, Typ: types.TypNumeric}, true, nil
		}
		if out[0], ok = numeric(args[0]); !ok {
			return noSuch()
		}
		if len(args) == 2 {
			if name == "log" {
				if out[1], ok = numeric(args[1]); !ok {
					return noSuch()
				}
			} else {
				a := args[1]
				if !a.Type().IsInteger() && !isUnknown(a) {
					return noSuch()
				}
				out[1] = castExpr(a, types.TypInt4)
			}
		}
		return &plan.Func{Name: name, Args: out, Typ: types.TypFloat8}, true, nil
	case "mod":
		if len(args) != 2 {
			return noSuch()
		}
		a, b := args[0], args[1]
		switch {
		case isUnknown(a) && !isUnknown(b) && b.Type().IsNumeric():
			a = castExpr(a, b.Type())
		case isUnknown(b) && !isUnknown(a) && a.Type().IsNumeric():
			b = castExpr(b, a.Type())
		}
		a, b = resolveNumeric(a), resolveNumeric(b)
		if !a.Type().IsNumeric() || !b.Type().IsNumeric() {
			return noSuch()
		}
		t := numericResult(a.Type(), b.Type())
		if t.Kind == types.Float4 {
			t = types.TypFloat8
		}
		return &plan.Func{Name: "mod", Args: []plan.Expr{castExpr(a, t), castExpr(b, t)}, Typ: t}, true, nil
	case "greatest", "least":
		if len(args) == 0 {
			return noSuch()
		}
		t := types.TypUnknown
		for _, a := range args {
			if isUnknown(a) {
				continue // an untyped literal or NULL takes the others' type
			}
			var ok bool
			if t, ok = commonType(t, a.Type()); !ok {
				return nil, true, pgerror.Newf(pgerror.DatatypeMismatch, "%s types %s and %s cannot be matched", strings.ToUpper(name), t, a.Type())
			}
		}
		if t.Kind == types.Unknown {
			t = types.TypText
		}
		if !orderable(t) {
			return nil, true, pgerror.Newf(pgerror.UndefinedFunction, "could not identify a comparison function for type %s", t)
		}
		out := make([]plan.Expr, len(args))
		for i, a := range args {
			out[i] = castExpr(a, t)
		}
		return &plan.Func{Name: name, Args: out, Typ: t}, true, nil
	case "concat", "concat_ws":
		if len(args) == 0 || name == "concat_ws" && len(args) < 2 {
			return noSuch()
		}
		// The values' output functions, as PostgreSQL's concat: a boolean
		// is t or f (a cast to text would say true or false).
		out := make([]plan.Expr, len(args))
		for i, a := range args {
			out[i] = resolveUnknown(a)
			if out[i].Type().IsRegType() {
				out[i] = textOf(out[i])
			}
		}
		if name == "concat_ws" {
			out[0] = textOf(out[0])
		}
		return &plan.Func{Name: name, Args: out, Typ: types.TypText}, true, nil
	}
	cf, ok := textFuncs[name]
	if !ok {
		return nil, false, nil
	}
	if len(args) < cf.min || len(args) > len(cf.args) {
		return noSuch()
	}
	out := make([]plan.Expr, len(args))
	for i, a := range args {
		want, at := cf.args[i], a.Type()
		switch {
		case name == "octet_length" && at.Kind == types.Bpchar:
			out[i] = a // octets as held: character(n)'s padding counts
		case isUnknown(a), at.Equal(want):
			out[i] = castExpr(a, want)
		case want.IsInteger() && at.IsInteger() && (at.Kind != types.Int8 || want.Kind == types.Int8):
			out[i] = a // integers of any width are int64 in a Vec; to_hex reads the width
		case want.IsTextual() && at.IsTextual():
			out[i] = castExpr(a, want)
		case name == "octet_length" && at.Kind == types.Bytea:
			out[i] = a
		default:
			return noSuch()
		}
	}
	return &plan.Func{Name: name, Args: out, Typ: cf.ret}, true, nil
}

// resolveNumeric types an untyped literal argument of a numeric function:
// as an integer when it reads as one, else as double precision.
func resolveNumeric(a plan.Expr) plan.Expr {
	if !isUnknown(a) {
		return a
	}
	if c, ok := a.(*plan.Const); ok && !c.Null && c.Val != nil {
		if _, err := strconv.ParseInt(strings.TrimSpace(string(types.AppendText(nil, c.Val, 0))), 10, 64); err == nil {
			return castExpr(a, types.TypInt8)
		}
	}
	return castExpr(a, types.TypFloat8)
}

// orderable reports whether values of t compare (GREATEST, LEAST).
func orderable(t types.Type) bool {
	return t.IsNumeric() || t.IsTextual() || t.Kind == types.Bool || t.Kind == types.Bytea || t.Kind == types.UUID || t.IsDateTime()
}
