package sql

import (
	"strings"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

var (
	typOid  = types.Type{Kind: types.Oid}
	typName = types.Type{Kind: types.Name}
)

// catalogFunc is the signature of a catalog or session function that exec
// evaluates through plan.Func: argument types (the last optional ones from
// min on) and the result type.
type catalogFunc struct {
	args []types.Type
	min  int
	ret  types.Type
}

var catalogFuncs = map[string]catalogFunc{
	"version":                            {ret: types.TypText},
	"current_database":                   {ret: typName},
	"current_schema":                     {ret: typName},
	"current_user":                       {ret: typName},
	"session_user":                       {ret: typName},
	"current_schemas":                    {args: []types.Type{types.TypBool}, min: 1, ret: types.TypText},
	"current_setting":                    {args: []types.Type{types.TypText, types.TypBool}, min: 1, ret: types.TypText},
	"set_config":                         {args: []types.Type{types.TypText, types.TypText, types.TypBool}, min: 3, ret: types.TypText},
	"pg_backend_pid":                     {ret: types.TypInt4},
	"deeplake_refresh":                   {ret: types.TypInt8},
	"deeplake_commit":                    {args: []types.Type{types.TypText, types.TypText}, min: 2, ret: types.TypText},
	"deeplake_tag":                       {args: []types.Type{types.TypText, types.TypText, types.TypText}, min: 2, ret: types.TypText},
	"deeplake_drop_tag":                  {args: []types.Type{types.TypText, types.TypText}, min: 2, ret: types.TypBool},
	"deeplake_branch":                    {args: []types.Type{types.TypText, types.TypText, types.TypText}, min: 2, ret: types.TypText},
	"deeplake_drop_branch":               {args: []types.Type{types.TypText, types.TypText}, min: 2, ret: types.TypBool},
	"deeplake_merge":                     {args: []types.Type{types.TypText, types.TypText, types.TypText, types.TypText}, min: 2, ret: types.TypText},
	"deeplake_reset":                     {args: []types.Type{types.TypText, types.TypText}, min: 2, ret: types.TypText},
	"pg_export_snapshot":                 {ret: types.TypText},
	"pg_is_in_recovery":                  {ret: types.TypBool},
	"pg_table_is_visible":                {args: []types.Type{typOid}, min: 1, ret: types.TypBool},
	"pg_type_is_visible":                 {args: []types.Type{typOid}, min: 1, ret: types.TypBool},
	"pg_function_is_visible":             {args: []types.Type{typOid}, min: 1, ret: types.TypBool},
	"pg_operator_is_visible":             {args: []types.Type{typOid}, min: 1, ret: types.TypBool},
	"pg_opclass_is_visible":              {args: []types.Type{typOid}, min: 1, ret: types.TypBool},
	"pg_collation_is_visible":            {args: []types.Type{typOid}, min: 1, ret: types.TypBool},
	"pg_conversion_is_visible":           {args: []types.Type{typOid}, min: 1, ret: types.TypBool},
	"pg_ts_config_is_visible":            {args: []types.Type{typOid}, min: 1, ret: types.TypBool},
	"pg_ts_parser_is_visible":            {args: []types.Type{typOid}, min: 1, ret: types.TypBool},
	"pg_ts_dict_is_visible":              {args: []types.Type{typOid}, min: 1, ret: types.TypBool},
	"pg_ts_template_is_visible":          {args: []types.Type{typOid}, min: 1, ret: types.TypBool},
	"pg_char_to_encoding":                {args: []types.Type{typName}, min: 1, ret: types.TypInt4},
	"pg_relation_is_publishable":         {args: []types.Type{typOid}, min: 1, ret: types.TypBool},
	"format_type":                        {args: []types.Type{typOid, types.TypInt4}, min: 2, ret: types.TypText},
	"pg_get_userbyid":                    {args: []types.Type{typOid}, min: 1, ret: typName},
	"pg_encoding_to_char":                {args: []types.Type{types.TypInt4}, min: 1, ret: typName},
	"pg_get_indexdef":                    {args: []types.Type{typOid, types.TypInt4, types.TypBool}, min: 1, ret: types.TypText},
	"pg_get_constraintdef":               {args: []types.Type{typOid, types.TypBool}, min: 1, ret: types.TypText},
	"pg_get_expr":                        {args: []types.Type{types.TypText, typOid, types.TypBool}, min: 2, ret: types.TypText},
	"pg_get_viewdef":                     {args: []types.Type{typOid, types.TypBool}, min: 1, ret: types.TypText},
	"pg_get_triggerdef":                  {args: []types.Type{typOid, types.TypBool}, min: 1, ret: types.TypText},
	"pg_get_ruledef":                     {args: []types.Type{typOid, types.TypBool}, min: 1, ret: types.TypText},
	"pg_get_functiondef":                 {args: []types.Type{typOid}, min: 1, ret: types.TypText},
	"pg_get_statisticsobjdef_columns":    {args: []types.Type{typOid}, min: 1, ret: types.TypText},
	"obj_description":                    {args: []types.Type{typOid, typName}, min: 1, ret: types.TypText},
	"shobj_description":                  {args: []types.Type{typOid, typName}, min: 2, ret: types.TypText},
	"col_description":                    {args: []types.Type{typOid, types.TypInt4}, min: 2, ret: types.TypText},
	"has_table_privilege":                {args: []types.Type{types.TypText, types.TypText, types.TypText}, min: 2, ret: types.TypBool},
	"has_schema_privilege":               {args: []types.Type{types.TypText, types.TypText, types.TypText}, min: 2, ret: types.TypBool},
	"has_database_privilege":             {args: []types.Type{types.TypText, types.TypText, types.TypText}, min: 2, ret: types.TypBool},
	"has_function_privilege":             {args: []types.Type{types.TypText, types.TypText, types.TypText}, min: 2, ret: types.TypBool},
	"has_column_privilege":               {args: []types.Type{types.TypText, types.TypText, types.TypText, types.TypText}, min: 3, ret: types.TypBool},
	"has_any_column_privilege":           {args: []types.Type{types.TypText, types.TypText, types.TypText}, min: 2, ret: types.TypBool},
	"pg_has_role":                        {args: []types.Type{types.TypText, types.TypText, types.TypText}, min: 2, ret: types.TypBool},
	"replace":                            {args: []types.Type{types.TypText, types.TypText, types.TypText}, min: 3, ret: types.TypText},
	"strpos":                             {args: []types.Type{types.TypText, types.TypText}, min: 2, ret: types.TypInt4},
	"left":                               {args: []types.Type{types.TypText, types.TypInt4}, min: 2, ret: types.TypText},
	"right":                              {args: []types.Type{types.TypText, types.TypInt4}, min: 2, ret: types.TypText},
	"btrim":                              {args: []types.Type{types.TypText, types.TypText}, min: 1, ret: types.TypText},
	"ltrim":                              {args: []types.Type{types.TypText, types.TypText}, min: 1, ret: types.TypText},
	"rtrim":                              {args: []types.Type{types.TypText, types.TypText}, min: 1, ret: types.TypText},
	"substring":                          {args: []types.Type{types.TypText, types.TypInt4, types.TypInt4}, min: 2, ret: types.TypText},
	"substr":                             {args: []types.Type{types.TypText, types.TypInt4, types.TypInt4}, min: 2, ret: types.TypText},
	"pg_get_serial_sequence":             {args: []types.Type{types.TypText, types.TypText}, min: 2, ret: types.TypText},
	"quote_ident":                        {args: []types.Type{types.TypText}, min: 1, ret: types.TypText},
	"pg_table_size":                      {args: []types.Type{typOid}, min: 1, ret: types.TypInt8},
	"pg_relation_size":                   {args: []types.Type{typOid, types.TypText}, min: 1, ret: types.TypInt8},
	"pg_total_relation_size":             {args: []types.Type{typOid}, min: 1, ret: types.TypInt8},
	"pg_indexes_size":                    {args: []types.Type{typOid}, min: 1, ret: types.TypInt8},
	"pg_tablespace_location":             {args: []types.Type{typOid}, min: 1, ret: types.TypText},
	"getdatabaseencoding":                {ret: typName},
	"pg_client_encoding":                 {ret: typName},
	"pg_database_size":                   {args: []types.Type{types.TypText}, min: 1, ret: types.TypInt8},
	"pg_size_pretty":                     {args: []types.Type{types.TypInt8}, min: 1, ret: types.TypText},
	"pg_get_function_result":             {args: []types.Type{typOid}, min: 1, ret: types.TypText},
	"pg_get_function_arguments":          {args: []types.Type{typOid}, min: 1, ret: types.TypText},
	"pg_get_function_identity_arguments": {args: []types.Type{typOid}, min: 1, ret: types.TypText},
	"array_to_string":                    {args: []types.Type{types.TypText, types.TypText, types.TypText}, min: 2, ret: types.TypText},
	"to_regclass":                        {args: []types.Type{types.TypText}, min: 1, ret: types.Type{Kind: types.RegClass}},
	"to_regtype":                         {args: []types.Type{types.TypText}, min: 1, ret: types.Type{Kind: types.RegType}},
	"to_regnamespace":                    {args: []types.Type{types.TypText}, min: 1, ret: types.Type{Kind: types.RegNamespace}},
}

// catalogCall binds a call of a catalog function; ok is false when name is
// not one.
func catalogCall(name string, args []plan.Expr) (plan.Expr, bool, error) {
	if name == "json_build_object" {
		if len(args)%2 != 0 {
			return nil, true, pgerror.New(pgerror.InvalidParameterValue, "argument list must have even number of elements").
				WithHint("The arguments of json_build_object() must consist of alternating keys and values.")
		}
		for i := range args {
			args[i] = resolveUnknown(args[i])
			if i%2 == 0 {
				args[i] = textOf(args[i])
			}
		}
		return &plan.Func{Name: name, Args: args, Typ: types.TypJSON}, true, nil
	}
	if name == "array_upper" || name == "array_lower" {
		if len(args) != 2 {
			return nil, true, pgerror.Newf(pgerror.UndefinedFunction, "function %s with %d arguments does not exist", name, len(args))
		}
		if args[0].Type().IsTextual() && (args[1].Type().IsInteger() || isUnknown(args[1])) {
			// An array held in its text form (current_schemas()).
			args[1] = castExpr(args[1], types.TypInt4)
			return &plan.Func{Name: name + "_text", Args: args, Typ: types.TypInt4}, true, nil
		}
		if k := args[0].Type().Kind; k != types.Tensor && k != types.Vector || !(args[1].Type().IsInteger() || isUnknown(args[1])) {
			return nil, true, pgerror.Newf(pgerror.UndefinedFunction, "function %s(%s, %s) does not exist", name, args[0].Type(), args[1].Type())
		}
		args[1] = castExpr(args[1], types.TypInt4)
		return &plan.Func{Name: name, Args: args, Typ: types.TypInt4}, true, nil
	}
	cf, ok := catalogFuncs[name]
	if !ok {
		return nil, false, nil
	}
	if len(args) < cf.min || len(args) > len(cf.args) {
		return nil, true, pgerror.Newf(pgerror.UndefinedFunction, "function %s with %d arguments does not exist", name, len(args)).
			WithHint("No function matches the given name and argument types.")
	}
	out := make([]plan.Expr, len(args))
	for i, a := range args {
		want := cf.args[i]
		at := a.Type()
		switch {
		case i == 0 && isUnknown(a) && regclassArg[name]:
			// pg_relation_size('items_embedding_idx'): PostgreSQL's
			// argument is a regclass, so a literal is a relation's name.
			out[i], _ = regCast(a, types.Type{Kind: types.RegClass})
		case privilegeFuncs[name] && want.IsTextual() && (at.IsOID() || at.IsInteger()):
			out[i] = a // a role or object by OID
		case at.Equal(want), isUnknown(a):
			out[i] = castExpr(a, want)
		case want.IsOID() && at.IsInteger(), want.IsInteger() && at.IsInteger():
			out[i] = a // integers of any width are int64 in a Vec
		case want.IsTextual() && (at.IsTextual() || at.IsRegType()):
			out[i] = textOf(a)
		default:
			return nil, true, pgerror.Newf(pgerror.UndefinedFunction, "function %s(%s) does not exist", name, at).
				WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
		}
	}
	return &plan.Func{Name: name, Args: out, Typ: cf.ret}, true, nil
}

// privilegeFuncs name the functions whose role and object arguments are
// a name or an OID, as PostgreSQL's variants of them take.
var privilegeFuncs = map[string]bool{
	"has_table_privilege": true, "has_schema_privilege": true, "has_database_privilege": true,
	"has_column_privilege": true, "has_any_column_privilege": true, "pg_has_role": true,
}

// regclassArg names the functions whose first argument is a regclass in
// PostgreSQL.
var regclassArg = map[string]bool{
	"pg_table_size": true, "pg_relation_size": true, "pg_total_relation_size": true, "pg_indexes_size": true,
}

// textOf converts e to text; a reg* value becomes the object's name.
func textOf(e plan.Expr) plan.Expr {
	if t := e.Type(); t.IsRegType() {
		return &plan.Func{Name: regFuncName(t) + "out", Args: []plan.Expr{e}, Typ: types.TypText}
	}
	return castExpr(e, types.TypText)
}

func regFuncName(t types.Type) string {
	switch t.Kind {
	case types.RegClass:
		return "regclass"
	case types.RegType:
		return "regtype"
	case types.RegNamespace:
		return "regnamespace"
	}
	return "regproc"
}

// regCast binds a cast to or from a reg* type, which reads or prints names
// through the catalog; ok is false for other casts.
func regCast(x plan.Expr, to types.Type) (plan.Expr, bool) {
	from := x.Type()
	switch {
	case to.IsRegType() && (from.IsTextual() || from.Kind == types.Unknown):
		if c, isConst := x.(*plan.Const); isConst && c.Null {
			return plan.NullConst(to), true
		}
		return &plan.Func{Name: regFuncName(to) + "in", Args: []plan.Expr{castExpr(x, types.TypText)}, Typ: to}, true
	case from.IsRegType() && to.IsTextual():
		return castExpr(textOf(x), to), true
	}
	return nil, false
}

// bitOps are the integer bitwise operators, evaluated as plan.Funcs.
var bitOps = map[string]string{"&": "bitand", "|": "bitor", "#": "bitxor", "<<": "shiftleft", ">>": "shiftright"}

// regexOp binds the regular expression match operators ~, ~*, !~ and !~*,
// and the integer bitwise operators.
func regexOp(op string, l, r plan.Expr) (plan.Expr, bool, error) {
	if op == "IS DISTINCT FROM" || op == "IS NOT DISTINCT FROM" {
		l, r, err := unify(resolveUnknownPair(l, r))
		if err != nil {
			return nil, true, err
		}
		var e plan.Expr = &plan.Func{Name: "isdistinct", Args: []plan.Expr{l, r}, Typ: types.TypBool}
		if op == "IS NOT DISTINCT FROM" {
			e = &plan.Call{Op: plan.OpNot, Args: []plan.Expr{e}, Typ: types.TypBool}
		}
		return e, true, nil
	}
	if fn, ok := bitOps[op]; ok {
		if isUnknown(l) {
			l = castExpr(l, r.Type())
		}
		if isUnknown(r) {
			r = castExpr(r, l.Type())
		}
		lt, rt := l.Type(), r.Type()
		if !lt.IsInteger() || !rt.IsInteger() || lt.IsOID() || rt.IsOID() {
			return nil, true, pgerror.Newf(pgerror.UndefinedFunction, "operator does not exist: %s %s %s", lt, op, rt)
		}
		t := numericResult(lt, rt)
		if fn == "shiftleft" || fn == "shiftright" {
			t = lt
		}
		return &plan.Func{Name: fn, Args: []plan.Expr{l, r}, Typ: t}, true, nil
	}
	name := ""
	not := false
	switch op {
	case "~":
		name = "regexmatch"
	case "~*":
		name = "regexmatch_i"
	case "!~":
		name, not = "regexmatch", true
	case "!~*":
		name, not = "regexmatch_i", true
	default:
		return nil, false, nil
	}
	l, r = resolveUnknown(l), resolveUnknown(r)
	if !l.Type().IsTextual() || !r.Type().IsTextual() {
		return nil, true, pgerror.Newf(pgerror.UndefinedFunction, "operator does not exist: %s %s %s", l.Type(), op, r.Type())
	}
	var e plan.Expr = &plan.Func{Name: name, Args: []plan.Expr{l, r}, Typ: types.TypBool}
	if not {
		e = &plan.Call{Op: plan.OpNot, Args: []plan.Expr{e}, Typ: types.TypBool}
	}
	return e, true, nil
}

// arrayCmp binds X op ANY (array) and X op ALL (array). Arrays of scalars
// are held in their text form, so the elements are parsed as X's type.
func (b *binder) arrayCmp(e *ArrayCmpExpr) (plan.Expr, error) {
	if _, ok := comparisonOps[e.Op]; !ok {
		return nil, unsupported("operator " + e.Op + " with ANY/ALL")
	}
	x, err := b.expr(e.X)
	if err != nil {
		return nil, err
	}
	arr, err := b.expr(e.Array)
	if err != nil {
		return nil, err
	}
	x = resolveUnknown(x)
	if c, ok := arr.(*plan.Const); ok && c.Param != nil && isUnknown(c) {
		// x = ANY($1): $1 is an array of x's type, as PostgreSQL infers
		// (bigint[] for a bigint x), where this one has arrays of it.
		if dt, ok := types.DTypeOf(x.Type()); ok {
			arr = castExpr(arr, types.TensorOf(dt, types.Ragged))
		}
	}
	if t := arr.Type(); !t.IsTextual() && t.Kind != types.Unknown && t.Kind != types.Tensor {
		return nil, pgerror.Newf(pgerror.UndefinedFunction, "op ANY/ALL (array) requires array on right side")
	}
	if e.Op == "=" && !e.All {
		// x = ANY(a constant array) is x IN (its elements): a primary
		// key lookup, zone maps, and the IN evaluator's set instead of
		// the array's text parsed per row. psycopg's lists as parameters
		// come so; at execution a parameter is a constant.
		if elems, ok := constArrayElems(arr); ok {
			if len(elems) == 0 {
				return plan.BoolConst(false), nil
			}
			list := make([]plan.Expr, len(elems))
			for i, s := range elems {
				list[i] = plan.StringConst(types.TypUnknown, s)
				if s == "NULL" {
					list[i] = plan.NullConst(types.TypUnknown)
				}
			}
			return inCall(x, list)
		}
	}
	name := "array_any"
	if e.All {
		name = "array_all"
	}
	args := []plan.Expr{x, castExpr(arr, types.TypText), plan.StringConst(types.TypText, e.Op)}
	return &plan.Func{Name: name, Args: args, Typ: types.TypBool}, nil
}

// inCall binds x IN (list), x and the list bound, at the type they share.
func inCall(x plan.Expr, list []plan.Expr) (plan.Expr, error) {
	t := x.Type()
	for _, l := range list {
		var ok bool
		if t, ok = commonType(t, l.Type()); !ok {
			return nil, pgerror.Newf(pgerror.DatatypeMismatch, "IN types %s and %s cannot be matched", x.Type(), l.Type())
		}
	}
	if t.Kind == types.Unknown {
		t = types.TypText
	}
	args := []plan.Expr{castIn(x, t)}
	for _, l := range list {
		args = append(args, castIn(l, t))
	}
	return &plan.Call{Op: plan.OpIn, Args: args, Typ: types.TypBool}, nil
}

// constArrayElems returns the elements of a constant one-dimensional
// array (its text form, or a constant cast to text), ok false for
// anything else.
func constArrayElems(arr plan.Expr) ([]string, bool) {
	if c, ok := arr.(*plan.Cast); ok {
		arr = c.X
	}
	k, ok := arr.(*plan.Const)
	if !ok || k.Null || k.Val == nil || k.Param != nil {
		return nil, false
	}
	text := strings.TrimSpace(string(types.AppendText(nil, k.Val, 0)))
	if len(text) < 2 || text[0] != '{' || strings.HasPrefix(text, "{{") {
		return nil, false
	}
	return types.ArrayElems(text), true
}

// textArraySubscript binds x[i] on an array held in its text form.
func textArraySubscript(x plan.Expr, idx []plan.Expr) (plan.Expr, error) {
	if len(idx) != 1 {
		return nil, unsupported("several subscripts of a text array")
	}
	i := idx[0]
	if isUnknown(i) {
		i = castExpr(i, types.TypInt4)
	}
	if !i.Type().IsInteger() {
		return nil, pgerror.Newf(pgerror.DatatypeMismatch, "array subscript must have type integer")
	}
	return &plan.Func{Name: "array_elem_text", Args: []plan.Expr{x, i}, Typ: types.TypText}, nil
}

// resolveUnknownPair types two untyped operands as text and passes them on
// with the operator name unify reports.
func resolveUnknownPair(l, r plan.Expr) (plan.Expr, plan.Expr, string) {
	if isUnknown(l) && isUnknown(r) {
		l, r = castExpr(l, types.TypText), castExpr(r, types.TypText)
	}
	return l, r, "IS DISTINCT FROM"
}
