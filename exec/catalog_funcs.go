package exec

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// funcEval evaluates a plan.Func row by row. Functions are strict (NULL in,
// NULL out) unless listed in lenientFuncs.
type funcEval struct {
	env *Env
	// valAcc holds a large result's bytes (Env.checkValue).
	valAcc *MemAccount
	fn     *plan.Func
	args   []evaluator
	vals   []*types.Vec
	out    *types.Vec
	// re caches the compiled pattern of a regular expression match.
	re     *regexp.Regexp
	rePat  string
	reFold bool
	// elem holds the parsed elements of array_any/array_all's array,
	// whose text elemText is (elemNull: it has a NULL element): a
	// constant array is parsed once, not per row.
	elem     *types.Vec
	elemText []byte
	elemNull bool
	elemOK   bool
	buf, tmp []byte
	// now is the statement's time, taken at the first row (now()).
	now time.Time
}

var comparisonByName = map[string]plan.Op{
	"=": plan.OpEq, "<>": plan.OpNe, "!=": plan.OpNe, "<": plan.OpLt, "<=": plan.OpLe, ">": plan.OpGt, ">=": plan.OpGe,
}

var lenientFuncs = map[string]bool{"format_type": true, "current_setting": true, "set_config": true, "array_to_string": true, "json_build_object": true,
	"isdistinct": true, "greatest": true, "least": true, "concat": true, "concat_ws": true, "deeplake_merge": true}

func (e *Env) compileFunc(x *plan.Func) (evaluator, error) {
	f := &funcEval{env: e, fn: x, out: types.NewVec(x.Typ, types.BatchSize), vals: make([]*types.Vec, len(x.Args))}
	for _, a := range x.Args {
		ev, err := e.compile(a)
		if err != nil {
			return nil, err
		}
		f.args = append(f.args, ev)
	}
	return f, nil
}

func (f *funcEval) eval(b *types.Batch) (*types.Vec, error) {
	for i, a := range f.args {
		v, err := a.eval(b)
		if err != nil {
			return nil, err
		}
		f.vals[i] = v
	}
	n := b.Len()
	f.out.Reset()
	cat, err := f.env.catalog()
	if err != nil {
		return nil, err
	}
rows:
	for i := 0; i < n; i++ {
		if !lenientFuncs[f.fn.Name] {
			for _, v := range f.vals {
				if v.Nulls[i] {
					f.out.AppendNull()
					continue rows
				}
			}
		}
		if err := f.one(cat, i); err != nil {
			return nil, err
		}
	}
	return f.out, nil
}

func (f *funcEval) str(k, i int) string { return string(f.vals[k].GetBytes(i)) }
func (f *funcEval) oid(k, i int) uint32 { return uint32(f.vals[k].Ints[i]) }
func (f *funcEval) null(k, i int) bool  { return k >= len(f.vals) || f.vals[k].Nulls[i] }

// one appends the function's value for row i.
func (f *funcEval) one(cat *sysCatalog, i int) error {
	out, env := f.out, f.env
	switch f.fn.Name {
	case "version":
		out.AppendString("PostgreSQL 15.0 (deeplaked) on x86_64-pc-linux-gnu, compiled by Go, 64-bit")
	case "current_database":
		out.AppendString(env.databaseName())
	case "current_schema":
		out.AppendString("public")
	case "current_schemas":
		if f.vals[0].Bools[i] {
			out.AppendString("{pg_catalog,public}")
		} else {
			out.AppendString("{public}")
		}
	case "current_user", "session_user":
		u := env.User
		if f.fn.Name == "current_user" && env.Role != "" {
			u = env.Role
		}
		if u == "" {
			u, _ = cat.roleName(bootstrapRoleOID)
		}
		out.AppendString(u)
	case "current_setting":
		if f.null(0, i) {
			out.AppendNull()
			return nil
		}
		name := f.str(0, i)
		if env.Setting != nil {
			if v, ok := env.Setting(name); ok {
				out.AppendString(v)
				return nil
			}
		}
		if len(f.vals) > 1 && !f.null(1, i) && f.vals[1].Bools[i] {
			out.AppendNull()
			return nil
		}
		return pgerror.Newf(pgerror.UndefinedObject, "unrecognized configuration parameter \"%s\"", name)
	case "set_config":
		// set_config(name, value, is_local): SET, SET LOCAL, or RESET for
		// a NULL value; PostgreSQL's function is not strict in value.
		if f.null(0, i) {
			return pgerror.New(pgerror.NullValueNotAllowed, "SET requires parameter name")
		}
		if env.SetConfig == nil {
			return pgerror.Newf(pgerror.Code("55P02"), "parameter \"%s\" cannot be changed now", f.str(0, i))
		}
		var value *string
		if !f.null(1, i) {
			v := f.str(1, i)
			value = &v
		}
		local := !f.null(2, i) && f.vals[2].Bools[i]
		v, err := env.SetConfig(f.str(0, i), value, local)
		if err != nil {
			return err
		}
		out.AppendString(v)
	case "pg_char_to_encoding":
		switch strings.ToUpper(strings.ReplaceAll(f.str(0, i), "-", "")) {
		case "UTF8", "UNICODE":
			out.AppendInt(utf8Encoding)
		case "SQL_ASCII":
			out.AppendInt(0)
		default:
			out.AppendInt(-1)
		}
	case "pg_tablespace_location":
		out.AppendString("")
	case "getdatabaseencoding", "pg_client_encoding":
		out.AppendString("UTF8")
	case "pg_backend_pid":
		out.AppendInt(int64(os.Getpid()))
	case "deeplake_commit", "deeplake_tag", "deeplake_drop_tag", "deeplake_branch", "deeplake_drop_branch", "deeplake_merge", "deeplake_reset":
		return f.versionFunc(i)
	case "deeplake_refresh":
		// Applies what other servers of the storage location committed;
		// the next transaction sees it. Returns the log entry applied.
		if env.DB == nil {
			return pgerror.New(pgerror.FeatureNotSupported, "deeplake_refresh() needs a database")
		}
		if err := env.DB.Refresh(env.Ctx); err != nil {
			return err
		}
		out.AppendInt(int64(env.DB.LogSeq()))
	case "pg_export_snapshot":
		// The snapshot of the transaction running the statement, for
		// other sessions' SET TRANSACTION SNAPSHOT while it is open.
		if env.Txn == nil {
			return pgerror.New(pgerror.FeatureNotSupported, "pg_export_snapshot() needs a transaction")
		}
		id, err := env.Txn.ExportSnapshot()
		if err != nil {
			return err
		}
		out.AppendString(id)
	case "pg_is_in_recovery", "pg_relation_is_publishable":
		out.AppendBool(false)
	case "has_table_privilege", "has_schema_privilege", "has_database_privilege", "has_column_privilege",
		"has_any_column_privilege", "pg_has_role":
		res, ok, err := f.privilegeFunc(cat, i)
		if err != nil {
			return err
		}
		if !ok {
			out.AppendNull()
			return nil
		}
		out.AppendBool(res)
	case "has_function_privilege", "pg_type_is_visible", "pg_function_is_visible",
		"pg_operator_is_visible", "pg_opclass_is_visible", "pg_collation_is_visible", "pg_conversion_is_visible",
		"pg_ts_config_is_visible", "pg_ts_parser_is_visible", "pg_ts_dict_is_visible", "pg_ts_template_is_visible":
		out.AppendBool(true)
	case "pg_table_is_visible":
		r, ok := cat.relationByOID(f.oid(0, i))
		if !ok {
			out.AppendNull()
			return nil
		}
		out.AppendBool(r.nsp == plan.NamespaceCatalog || r.nsp == plan.NamespacePublic)
	case "format_type":
		if f.null(0, i) {
			out.AppendNull()
			return nil
		}
		mod := int64(-1)
		if !f.null(1, i) {
			mod = f.vals[1].Ints[i]
		}
		out.AppendString(formatType(f.oid(0, i), mod))
	case "pg_get_userbyid":
		oid := f.oid(0, i)
		if name, ok := cat.roleName(oid); ok {
			out.AppendString(name)
		} else {
			out.AppendString("unknown (OID=" + strconv.FormatUint(uint64(oid), 10) + ")")
		}
	case "pg_encoding_to_char":
		out.AppendString(encodingName(f.vals[0].Ints[i]))
	case "pg_get_indexdef":
		t, vec := cat.indexByOID(f.oid(0, i))
		if t == nil {
			out.AppendNull()
			return nil
		}
		col, pretty := 0, false
		if len(f.vals) > 1 {
			col = int(f.vals[1].Ints[i])
		}
		if len(f.vals) > 2 {
			pretty = f.vals[2].Bools[i]
		}
		out.AppendString(indexDef(t, vec, col, pretty))
	case "pg_get_constraintdef":
		oid := f.oid(0, i)
		for _, t := range cat.tables {
			if len(t.PrimaryKey) > 0 && constraintOID(t.ID) == oid {
				out.AppendString("PRIMARY KEY (" + pkeyCols(t) + ")")
				return nil
			}
		}
		out.AppendNull()
	case "pg_get_expr":
		out.AppendBytes(f.vals[0].GetBytes(i))
	case "obj_description":
		// Schema public is the one object PostgreSQL describes that
		// deeplaked has.
		if f.oid(0, i) == plan.NamespacePublic && (len(f.vals) < 2 || f.str(1, i) == "pg_namespace") {
			out.AppendString("standard public schema")
			return nil
		}
		out.AppendNull()
	case "col_description", "shobj_description", "pg_get_viewdef",
		"pg_get_statisticsobjdef_columns", "pg_get_triggerdef", "pg_get_ruledef", "pg_get_functiondef":
		out.AppendNull()
	case "pg_relation_size", "pg_indexes_size", "pg_total_relation_size":
		// A vector index's size is its graph's; sizes of chunk objects
		// are not tracked per relation yet.
		oid := f.oid(0, i)
		var size int64
		if t, vec := cat.indexByOID(oid); vec != nil {
			size = f.env.DB.IndexSize(t, vec.ID)
		} else if t := cat.tableByOID(oid); t != nil && f.fn.Name != "pg_relation_size" {
			for _, ix := range t.Indexes {
				size += f.env.DB.IndexSize(t, ix.ID)
			}
		}
		out.AppendInt(size)
	case "pg_table_size", "pg_database_size":
		// Sizes of chunk objects are not tracked per relation yet.
		out.AppendInt(0)
	case "pg_size_pretty":
		out.AppendString(sizePretty(f.vals[0].Ints[i]))
	case "pg_get_function_result":
		out.AppendString("text")
	case "pg_get_function_arguments", "pg_get_function_identity_arguments":
		out.AppendString("")
	case "pg_get_serial_sequence":
		oid, ok := cat.relationByName(f.str(0, i))
		t := cat.tableByOID(oid)
		if !ok || t == nil {
			return pgerror.Newf(pgerror.UndefinedTable, "relation \"%s\" does not exist", f.str(0, i))
		}
		col := f.str(1, i)
		for _, c := range t.Columns {
			if c.Name == col {
				if c.Serial {
					out.AppendString("public." + quoteIdent(t.Name+"_"+c.Name+"_seq"))
				} else {
					out.AppendNull()
				}
				return nil
			}
		}
		return pgerror.Newf(pgerror.UndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", col, t.Name)
	case "json_build_object":
		f.buf = append(f.buf[:0], '{')
		for k := 0; k+1 < len(f.vals); k += 2 {
			if k > 0 {
				f.buf = append(f.buf, ", "...)
			}
			if f.vals[k].Nulls[i] {
				return pgerror.New(pgerror.InvalidParameterValue, "argument 1 cannot be null").
					WithHint("Object keys should be text.")
			}
			f.buf = appendJSONString(f.buf, f.vals[k].GetBytes(i))
			f.buf = append(f.buf, " : "...)
			v := f.vals[k+1]
			switch {
			case v.Nulls[i]:
				f.buf = append(f.buf, "null"...)
			case v.Type.Kind == types.Bool:
				if v.Bools[i] {
					f.buf = append(f.buf, "true"...)
				} else {
					f.buf = append(f.buf, "false"...)
				}
			case v.Type.IsNumeric(), v.Type.Kind == types.JSON, v.Type.Kind == types.JSONB:
				f.buf = types.AppendText(f.buf, v, i)
			default:
				f.tmp = types.AppendText(f.tmp[:0], v, i)
				f.buf = appendJSONString(f.buf, f.tmp)
			}
		}
		out.AppendBytes(append(f.buf, '}'))
	case "quote_ident":
		out.AppendString(quoteIdent(f.str(0, i)))
	case "array_to_string":
		if f.null(0, i) || f.null(1, i) {
			out.AppendNull()
			return nil
		}
		out.AppendString(strings.Join(types.ArrayElems(f.str(0, i)), f.str(1, i)))
	case "regclassin", "to_regclass":
		if oid, ok := cat.relationByName(f.str(0, i)); ok {
			out.AppendInt(int64(oid))
		} else if f.fn.Name == "to_regclass" {
			out.AppendNull()
		} else if n, err := strconv.ParseUint(strings.TrimSpace(f.str(0, i)), 10, 32); err == nil {
			out.AppendInt(int64(n))
		} else {
			return pgerror.Newf(pgerror.UndefinedTable, "relation \"%s\" does not exist", f.str(0, i))
		}
	case "regtypein", "to_regtype":
		if oid, ok := typeOIDByName(f.str(0, i)); ok {
			out.AppendInt(int64(oid))
		} else if f.fn.Name == "to_regtype" {
			out.AppendNull()
		} else if n, err := strconv.ParseUint(strings.TrimSpace(f.str(0, i)), 10, 32); err == nil {
			out.AppendInt(int64(n))
		} else {
			return pgerror.Newf(pgerror.UndefinedObject, "type \"%s\" does not exist", f.str(0, i))
		}
	case "regnamespacein", "to_regnamespace":
		if oid, ok := namespaceOID(identPart(f.str(0, i))); ok {
			out.AppendInt(int64(oid))
		} else if f.fn.Name == "to_regnamespace" {
			out.AppendNull()
		} else if n, err := strconv.ParseUint(strings.TrimSpace(f.str(0, i)), 10, 32); err == nil {
			out.AppendInt(int64(n))
		} else {
			return pgerror.Newf(pgerror.Code("3F000"), "schema \"%s\" does not exist", f.str(0, i))
		}
	case "regprocin":
		name := strings.TrimPrefix(strings.TrimSpace(f.str(0, i)), "pg_catalog.")
		if oid, ok := procOID(name); ok {
			out.AppendInt(int64(oid))
			return nil
		}
		n, err := strconv.ParseUint(name, 10, 32)
		if err != nil {
			return pgerror.Newf(pgerror.UndefinedFunction, "function \"%s\" does not exist", f.str(0, i))
		}
		out.AppendInt(int64(n))
	case "regclassout":
		out.AppendString(cat.regclassName(f.oid(0, i)))
	case "regtypeout":
		if _, ok := typeByOID(f.oid(0, i)); ok {
			out.AppendString(formatType(f.oid(0, i), -1))
		} else {
			out.AppendString(strconv.FormatUint(uint64(f.oid(0, i)), 10))
		}
	case "regnamespaceout":
		if n, ok := namespaceName(f.oid(0, i)); ok {
			out.AppendString(quoteIdent(n))
		} else {
			out.AppendString(strconv.FormatUint(uint64(f.oid(0, i)), 10))
		}
	case "regprocout":
		oid := f.oid(0, i)
		if oid == 0 {
			out.AppendString("-")
		} else if oid == arrayInOID {
			out.AppendString("array_in")
		} else if oid >= 90000 && int(oid-90000) < len(procNames) {
			out.AppendString(procNames[oid-90000])
		} else {
			out.AppendString(strconv.FormatUint(uint64(oid), 10))
		}
	case "array_upper", "array_lower":
		t := f.fn.Args[0].Type()
		val := f.vals[0].GetBytes(i)
		if t.IsVector() {
			t = types.TensorOf(types.DTFloat32, len(val)/t.VectorElemSize())
		}
		l, ok := types.ArrayLength(t, val, int(f.vals[1].Ints[i]))
		switch {
		case !ok || l == 0:
			out.AppendNull()
		case f.fn.Name == "array_lower":
			out.AppendInt(1)
		default:
			out.AppendInt(int64(l))
		}
	case "array_upper_text", "array_lower_text":
		n := len(types.ArrayElems(f.str(0, i)))
		switch {
		case n == 0 || f.vals[1].Ints[i] != 1:
			out.AppendNull()
		case f.fn.Name == "array_lower_text":
			out.AppendInt(1)
		default:
			out.AppendInt(int64(n))
		}
	case "array_elem_text":
		elems := types.ArrayElems(f.str(0, i))
		k := f.vals[1].Ints[i]
		if k < 1 || k > int64(len(elems)) {
			out.AppendNull()
		} else {
			out.AppendString(elems[k-1])
		}
	case "isdistinct":
		x, y := f.vals[0], f.vals[1]
		switch {
		case x.Nulls[i] || y.Nulls[i]:
			out.AppendBool(x.Nulls[i] != y.Nulls[i])
		default:
			out.AppendBool(compareAt(x, i, y, i) != 0)
		}
	case "bitand", "bitor", "bitxor", "shiftleft", "shiftright":
		a, b := f.vals[0].Ints[i], f.vals[1].Ints[i]
		var v int64
		switch f.fn.Name {
		case "bitand":
			v = a & b
		case "bitor":
			v = a | b
		case "bitxor":
			v = a ^ b
		case "shiftleft", "shiftright":
			// As PostgreSQL's int2shl/int4shl/int8shl on x86-64: the count
			// is taken modulo the width the C operator shifts in (int2 is
			// promoted to int), so 1 << 32 is 1 for an integer.
			mask := int64(31)
			if out.Type.Kind == types.Int8 {
				mask = 63
			}
			if f.fn.Name == "shiftleft" {
				v = a << uint64(b&mask)
			} else {
				v = a >> uint64(b&mask)
			}
		}
		switch out.Type.Kind {
		case types.Int2:
			v = int64(int16(v))
		case types.Int4:
			v = int64(int32(v))
		}
		out.AppendInt(v)
	case "replace":
		src, from, to := f.vals[0].GetBytes(i), f.vals[1].GetBytes(i), f.vals[2].GetBytes(i)
		if len(from) > 0 && len(to) > len(from) {
			// The result's length first, as PostgreSQL's string buffer
			// would fail to grow past 1 GB.
			n := int64(len(src)) + int64(bytes.Count(src, from))*int64(len(to)-len(from))
			if n > maxFieldBytes {
				return pgerror.New(pgerror.ProgramLimitExceeded, "out of memory").WithDetail(
					"Cannot enlarge string buffer containing %d bytes by %d more bytes.", maxFieldBytes, n-maxFieldBytes)
			}
			if err := f.env.checkValue(&f.valAcc, int64(len(out.Bytes.Data)), n); err != nil {
				return err
			}
		}
		out.AppendString(strings.ReplaceAll(f.str(0, i), f.str(1, i), f.str(2, i)))
	case "strpos":
		k := strings.Index(f.str(0, i), f.str(1, i))
		if k >= 0 {
			k = len([]rune(f.str(0, i)[:k]))
		}
		out.AppendInt(int64(k + 1))
	case "left", "right":
		r := []rune(f.str(0, i))
		n := int(f.vals[1].Ints[i])
		if n < 0 {
			n = max(len(r)+n, 0)
		}
		n = min(n, len(r))
		if f.fn.Name == "left" {
			out.AppendString(string(r[:n]))
		} else {
			out.AppendString(string(r[len(r)-n:]))
		}
	case "btrim", "ltrim", "rtrim":
		cut := " "
		if len(f.vals) > 1 {
			cut = f.str(1, i)
		}
		v := f.str(0, i)
		if f.fn.Name != "rtrim" {
			v = strings.TrimLeft(v, cut)
		}
		if f.fn.Name != "ltrim" {
			v = strings.TrimRight(v, cut)
		}
		out.AppendString(v)
	case "substring", "substr":
		r := []rune(f.str(0, i))
		from := f.vals[1].Ints[i] - 1 // 0-based, may be negative
		end := int64(len(r))
		if len(f.vals) > 2 {
			n := f.vals[2].Ints[i]
			if n < 0 {
				return pgerror.New(pgerror.Code("22011"), "negative substring length not allowed")
			}
			end = from + n
		}
		from = max(from, 0)
		end = min(end, int64(len(r)))
		if from >= end {
			out.AppendString("")
		} else {
			out.AppendString(string(r[from:end]))
		}
	case "record_field":
		// A record held as text, "(a,b)": field k as an integer.
		rec := f.str(0, i)
		if len(rec) >= 2 && rec[0] == '(' && rec[len(rec)-1] == ')' {
			rec = rec[1 : len(rec)-1]
		}
		fields := strings.Split(rec, ",")
		k := int(f.vals[1].Ints[i])
		if k >= len(fields) || fields[k] == "" {
			out.AppendNull()
			return nil
		}
		n, err := strconv.ParseInt(fields[k], 10, 64)
		if err != nil {
			out.AppendNull()
			return nil
		}
		out.AppendInt(n)
	case "array_any", "array_all":
		all := f.fn.Name == "array_all"
		x := f.vals[0]
		op := comparisonByName[f.str(2, i)]
		text := f.vals[1].GetBytes(i)
		if !f.elemOK || !f.elem.Type.Equal(x.Type) || !bytes.Equal(text, f.elemText) {
			if f.elem == nil || !f.elem.Type.Equal(x.Type) {
				f.elem = types.NewVec(x.Type, 1)
			}
			f.elem.Reset()
			f.elemText, f.elemNull, f.elemOK = append(f.elemText[:0], text...), false, false
			for _, s := range types.ArrayElems(string(text)) {
				if s == "NULL" {
					f.elemNull = true
					continue
				}
				if err := types.AppendParsed(f.elem, s); err != nil {
					return err
				}
			}
			f.elemOK = true
		}
		for k := range f.elem.Len() {
			if holds(op, compareAt(x, i, f.elem, k)) != all {
				out.AppendBool(!all)
				return nil
			}
		}
		if f.elemNull {
			out.AppendNull()
		} else {
			out.AppendBool(all)
		}
	case "regexmatch", "regexmatch_i":
		fold := f.fn.Name == "regexmatch_i"
		pat := f.str(1, i)
		if f.re == nil || pat != f.rePat || fold != f.reFold {
			src := pat
			if fold {
				src = "(?i)" + src
			}
			re, err := regexp.Compile(src)
			if err != nil {
				return pgerror.Newf(pgerror.Code("2201B"), "invalid regular expression: %v", err)
			}
			f.re, f.rePat, f.reFold = re, pat, fold
		}
		out.AppendBool(f.re.Match(f.vals[0].GetBytes(i)))
	default:
		if ok, err := f.scalar(i); ok {
			return err
		}
		return pgerror.AssertionFailedf("function %s has no evaluator", f.fn.Name)
	}
	return nil
}

// appendArrayText appends v's rows as the text form of a one-dimensional
// array, quoting elements as PostgreSQL's array output does.
func appendArrayText(dst []byte, v *types.Vec, buf []byte) []byte {
	dst = append(dst, '{')
	for i := 0; i < v.Len(); i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		if v.Nulls[i] {
			dst = append(dst, "NULL"...)
			continue
		}
		buf = types.AppendText(buf[:0], v, i)
		dst = appendArrayElem(dst, buf)
	}
	return append(dst, '}')
}

func appendArrayElem(dst, e []byte) []byte {
	quote := len(e) == 0 || strings.EqualFold(string(e), "null")
	for _, c := range e {
		if c == ',' || c == '{' || c == '}' || c == '"' || c == '\\' || c == ' ' || c == '\t' || c == '\n' {
			quote = true
			break
		}
	}
	if !quote {
		return append(dst, e...)
	}
	dst = append(dst, '"')
	for _, c := range e {
		if c == '"' || c == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}

// sizePretty is pg_size_pretty: bytes, kB, MB, GB, TB, rounding half up
// once a value passes 10240 of a unit, as PostgreSQL does.
func sizePretty(n int64) string {
	units := []string{"bytes", "kB", "MB", "GB", "TB", "PB"}
	neg := n < 0
	if neg {
		n = -n
	}
	u := 0
	for u < len(units)-1 && n >= 10*1024-512 {
		n = (n + 512) / 1024
		u++
		if n < 10*1024 {
			break
		}
	}
	if neg {
		n = -n
	}
	return strconv.FormatInt(n, 10) + " " + units[u]
}

// appendJSONString appends s as a JSON string literal.
func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	for _, c := range s {
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			if c < 0x20 {
				dst = append(dst, '\\', 'u', '0', '0', "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
			} else {
				dst = append(dst, c)
			}
		}
	}
	return append(dst, '"')
}

// arrayInOID is PostgreSQL's OID of array_in, the input function of every
// array type (clients test typinput = 'array_in'::regproc).
const arrayInOID uint32 = 750

// procOID resolves a function name as regproc input does.
func procOID(name string) (uint32, bool) {
	if name == "array_in" {
		return arrayInOID, true
	}
	for i, n := range procNames {
		if n == name {
			return uint32(90000 + i), true
		}
	}
	return 0, false
}
