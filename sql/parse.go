package sql

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	pg "github.com/pganalyze/pg_query_go/v6"
	pgparser "github.com/pganalyze/pg_query_go/v6/parser"
	"google.golang.org/protobuf/proto"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// Parsed is one statement of a query string with its source text.
type Parsed struct {
	Stmt Stmt
	SQL  string
}

// Parse parses a query string holding zero or more statements under the
// default Limits. Syntax errors are 42601; statements deeplaked does not
// support are 0A000.
func Parse(query string) ([]Parsed, error) { return ParseLimited(query, DefaultLimits()) }

// ParseLimited parses a query string as Parse does, first refusing what
// lim does not allow (Limits.Check): nothing too deep or too large for the
// parser reaches it.
func ParseLimited(query string, lim Limits) ([]Parsed, error) {
	if err := lim.Check(query); err != nil {
		return nil, err
	}
	parsed, explains := blankExplainCopies(query)
	res, err := parseTree(parsed, lim)
	if err != nil {
		return nil, err
	}
	for _, raw := range res.Stmts {
		if _, ok := explainCopyOf(explains, raw, len(parsed)); ok && !tensorCopyTo(raw.Stmt) {
			// EXPLAIN of another COPY is the grammar's syntax error.
			_, err := parseTree(query, lim)
			return nil, err
		}
	}
	out := make([]Parsed, 0, len(res.Stmts))
	for _, raw := range res.Stmts {
		text := stmtText(query, raw)
		var st Stmt
		if e, ok := explainCopyOf(explains, raw, len(parsed)); ok {
			st, err = explainedCopy(e, raw.Stmt, lim)
		} else {
			st, err = convertStmt(raw.Stmt, text)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Parsed{Stmt: st, SQL: text})
	}
	return out, nil
}

// parseTree runs the PostgreSQL grammar. The protobuf decoder's nesting
// limit follows max_stack_depth, so that what the prescan lets through
// decodes (its default, 10,000 messages, is about 5,000 operators).
func parseTree(query string, lim Limits) (*pg.ParseResult, error) {
	buf, err := pgparser.ParseToProtobuf(query)
	if err != nil {
		var pe *pgparser.Error
		if errors.As(err, &pe) {
			// The grammar's own stack (bison's, 10,000 entries) is the
			// other limit on nesting.
			if pe.Message == "stack depth limit exceeded" || strings.HasPrefix(pe.Message, "memory exhausted") {
				return nil, lim.StackDepthError()
			}
			return nil, pgerror.New(pgerror.SyntaxError, pe.Message)
		}
		return nil, pgerror.Wrapf(err, pgerror.SyntaxError, "parse error")
	}
	res := &pg.ParseResult{}
	opts := proto.UnmarshalOptions{RecursionLimit: int(lim.maxStackDepth()/100) + 1000}
	if err := opts.Unmarshal(buf, res); err != nil {
		return nil, pgerror.Wrapf(err, pgerror.InternalError, "decoding the parse tree")
	}
	return res, nil
}

func stmtText(query string, raw *pg.RawStmt) string {
	start := int(raw.StmtLocation)
	end := len(query)
	if raw.StmtLen > 0 {
		end = start + int(raw.StmtLen)
	}
	if start < 0 || start > len(query) || end > len(query) || start > end {
		return query
	}
	return strings.TrimSpace(query[start:end])
}

// ParseExpr parses a single scalar expression (a stored DEFAULT, say).
func ParseExpr(src string) (Expr, error) {
	ps, err := Parse("SELECT " + src)
	if err != nil {
		return nil, err
	}
	if len(ps) != 1 {
		return nil, pgerror.Newf(pgerror.SyntaxError, "invalid expression %q", src)
	}
	sel, ok := ps[0].Stmt.(*Select)
	if !ok || len(sel.Items) != 1 || sel.Items[0].Star {
		return nil, pgerror.Newf(pgerror.SyntaxError, "invalid expression %q", src)
	}
	return sel.Items[0].Expr, nil
}

func unsupported(what string) error {
	return pgerror.Unimplementedf("%s is not supported yet", what)
}

func convertStmt(n *pg.Node, text string) (Stmt, error) {
	switch s := n.Node.(type) {
	case *pg.Node_CreateStmt:
		return convertCreate(s.CreateStmt, text)
	case *pg.Node_DropStmt:
		return convertDrop(s.DropStmt)
	case *pg.Node_InsertStmt:
		return convertInsert(s.InsertStmt)
	case *pg.Node_UpdateStmt:
		return convertUpdate(s.UpdateStmt)
	case *pg.Node_DeleteStmt:
		return convertDelete(s.DeleteStmt)
	case *pg.Node_SelectStmt:
		if into := selectInto(s.SelectStmt); into != nil {
			return convertSelectInto(s.SelectStmt, into)
		}
		sel, err := convertSelect(s.SelectStmt)
		if err != nil {
			return nil, err
		}
		sel.Locking = len(s.SelectStmt.LockingClause) > 0
		return sel, nil
	case *pg.Node_CreateTableAsStmt:
		return convertCreateTableAs(s.CreateTableAsStmt)
	case *pg.Node_ViewStmt:
		return convertCreateView(s.ViewStmt)
	case *pg.Node_TruncateStmt:
		return convertTruncate(s.TruncateStmt)
	case *pg.Node_TransactionStmt:
		switch s.TransactionStmt.Kind {
		case pg.TransactionStmtKind_TRANS_STMT_BEGIN:
			return &TxStmt{Kind: TxBegin}, nil
		case pg.TransactionStmtKind_TRANS_STMT_START:
			return &TxStmt{Kind: TxBegin, Start: true}, nil
		case pg.TransactionStmtKind_TRANS_STMT_COMMIT:
			return &TxStmt{Kind: TxCommit}, nil
		case pg.TransactionStmtKind_TRANS_STMT_ROLLBACK:
			return &TxStmt{Kind: TxRollback}, nil
		}
		return nil, unsupported("this transaction statement (savepoints, prepared transactions)")
	case *pg.Node_VariableSetStmt:
		return convertSet(s.VariableSetStmt)
	case *pg.Node_VariableShowStmt:
		return &ShowVar{Name: strings.ToLower(s.VariableShowStmt.Name)}, nil
	case *pg.Node_DiscardStmt:
		return convertDiscard(s.DiscardStmt)
	case *pg.Node_CopyStmt:
		return convertCopy(s.CopyStmt)
	case *pg.Node_VacuumStmt:
		return convertVacuum(s.VacuumStmt)
	case *pg.Node_CreateRoleStmt:
		return convertCreateRole(s.CreateRoleStmt)
	case *pg.Node_AlterRoleStmt:
		return convertAlterRole(s.AlterRoleStmt)
	case *pg.Node_DropRoleStmt:
		return convertDropRole(s.DropRoleStmt)
	case *pg.Node_DeclareCursorStmt, *pg.Node_FetchStmt, *pg.Node_ClosePortalStmt, *pg.Node_DeallocateStmt:
		return convertCursorStmt(n)
	case *pg.Node_ExplainStmt:
		return convertExplain(s.ExplainStmt)
	case *pg.Node_IndexStmt:
		return convertCreateIndex(s.IndexStmt)
	case *pg.Node_CreateExtensionStmt:
		return convertCreateExtension(s.CreateExtensionStmt)
	case *pg.Node_ReindexStmt:
		return convertReindex(s.ReindexStmt)
	case *pg.Node_GrantStmt:
		if g, err := convertGrant(s.GrantStmt); err != nil {
			return nil, err
		} else {
			return g, nil
		}
	case *pg.Node_GrantRoleStmt:
		return convertGrantRole(s.GrantRoleStmt)
	case *pg.Node_AlterDefaultPrivilegesStmt:
		return convertAlterDefaultPrivileges(s.AlterDefaultPrivilegesStmt)
	case *pg.Node_AlterTableStmt:
		return convertAlterTable(s.AlterTableStmt)
	case *pg.Node_CreatedbStmt, *pg.Node_DropdbStmt, *pg.Node_RenameStmt, *pg.Node_AlterOwnerStmt:
		return convertDatabaseStmt(n, text)
	}
	return nil, unsupported(stmtKind(text))
}

func stmtKind(text string) string {
	f := strings.Fields(text)
	if len(f) >= 2 {
		return strings.ToUpper(f[0] + " " + f[1])
	}
	if len(f) == 1 {
		return strings.ToUpper(f[0])
	}
	return "this statement"
}

func constText(n *pg.Node) string {
	if c := n.GetAConst(); c != nil {
		switch v := c.Val.(type) {
		case *pg.A_Const_Sval:
			return v.Sval.Sval
		case *pg.A_Const_Ival:
			return itoa(int64(v.Ival.Ival))
		case *pg.A_Const_Fval:
			return v.Fval.Fval
		case *pg.A_Const_Boolval:
			if v.Boolval.Boolval {
				return "true"
			}
			return "false"
		}
	}
	if s := n.GetString_(); s != nil {
		return s.Sval
	}
	return ""
}

func convertCreate(c *pg.CreateStmt, text string) (Stmt, error) {
	if c.Relation == nil {
		return nil, pgerror.New(pgerror.SyntaxError, "missing table name")
	}
	if len(c.InhRelations) > 0 || c.Partspec != nil || c.OfTypename != nil {
		return nil, unsupported("CREATE TABLE with inheritance or partitions")
	}
	ct := &CreateTable{Name: c.Relation.Relname, IfNotExists: c.IfNotExists}
	for _, el := range c.TableElts {
		switch e := el.Node.(type) {
		case *pg.Node_ColumnDef:
			cd, err := convertColumnDef(e.ColumnDef, text)
			if err != nil {
				return nil, err
			}
			ct.Columns = append(ct.Columns, cd)
		case *pg.Node_Constraint:
			con := e.Constraint
			switch con.Contype {
			case pg.ConstrType_CONSTR_PRIMARY:
				if len(ct.PrimaryKey) > 0 {
					return nil, pgerror.Newf(pgerror.InvalidTableDefinition, "multiple primary keys for table %q are not allowed", ct.Name)
				}
				for _, k := range con.Keys {
					ct.PrimaryKey = append(ct.PrimaryKey, constText(k))
				}
			default:
				return nil, unsupported("table constraint " + strings.TrimPrefix(con.Contype.String(), "CONSTR_"))
			}
		default:
			return nil, unsupported("this CREATE TABLE element")
		}
	}
	var err error
	ct.Options, err = convertOptions(c.Options)
	return ct, err
}

// convertCreateView converts CREATE [OR REPLACE] VIEW.
func convertCreateView(v *pg.ViewStmt) (Stmt, error) {
	name, err := rangeName(v.View)
	if err != nil {
		return nil, err
	}
	if v.View.Relpersistence == "t" {
		return nil, unsupported("CREATE TEMPORARY VIEW")
	}
	if len(v.Options) > 0 || v.WithCheckOption != pg.ViewCheckOption_NO_CHECK_OPTION {
		return nil, unsupported("CREATE VIEW with options")
	}
	sel := v.Query.GetSelectStmt()
	if sel == nil {
		return nil, pgerror.New(pgerror.SyntaxError, "CREATE VIEW needs a query")
	}
	q, err := convertSelect(sel)
	if err != nil {
		return nil, err
	}
	text, err := pg.Deparse(&pg.ParseResult{Version: parseTreeVersion(), Stmts: []*pg.RawStmt{{Stmt: v.Query}}})
	if err != nil {
		return nil, pgerror.Newf(pgerror.InternalError, "keeping the view's query: %v", err)
	}
	cv := &CreateView{Name: name, Query: q, SQL: text, Replace: v.Replace}
	for _, a := range v.Aliases {
		cv.Columns = append(cv.Columns, constText(a))
	}
	return cv, nil
}

// convertCreateTableAs converts CREATE TABLE ... AS query [WITH [NO] DATA].
func convertCreateTableAs(c *pg.CreateTableAsStmt) (Stmt, error) {
	if c.Objtype != pg.ObjectType_OBJECT_TABLE {
		return nil, unsupported("CREATE MATERIALIZED VIEW")
	}
	sel := c.Query.GetSelectStmt()
	if sel == nil {
		return nil, unsupported("CREATE TABLE AS EXECUTE")
	}
	q, err := convertSelect(sel)
	if err != nil {
		return nil, err
	}
	return intoStmt(c.Into, q, c.IfNotExists)
}

// selectInto returns the INTO clause of a SELECT ... INTO: the statement's,
// or in a set operation its leftmost query's (where the grammar puts it),
// nil if none.
func selectInto(s *pg.SelectStmt) *pg.IntoClause {
	for s.IntoClause == nil && s.Larg != nil {
		s = s.Larg
	}
	return s.IntoClause
}

// convertSelectInto converts SELECT ... INTO name ..., which PostgreSQL
// runs as CREATE TABLE name AS SELECT ....
func convertSelectInto(s *pg.SelectStmt, into *pg.IntoClause) (Stmt, error) {
	holder := s
	for holder.IntoClause == nil {
		holder = holder.Larg
	}
	holder.IntoClause = nil // the tree is this statement's alone
	q, err := convertSelect(s)
	holder.IntoClause = into
	if err != nil {
		return nil, err
	}
	return intoStmt(into, q, false)
}

func intoStmt(into *pg.IntoClause, q *Select, ifNotExists bool) (Stmt, error) {
	if into == nil {
		return nil, pgerror.New(pgerror.SyntaxError, "missing table name")
	}
	name, err := rangeName(into.Rel)
	if err != nil {
		return nil, err
	}
	ct := &CreateTableAs{Name: name, IfNotExists: ifNotExists, Query: q, NoData: into.SkipData}
	for _, n := range into.ColNames {
		ct.Columns = append(ct.Columns, constText(n))
	}
	if into.AccessMethod != "" {
		return nil, unsupported("CREATE TABLE ... USING")
	}
	ct.Options, err = convertOptions(into.Options)
	return ct, err
}

func convertColumnDef(c *pg.ColumnDef, text string) (ColumnDef, error) {
	cd := ColumnDef{Name: c.Colname, Compression: c.Compression}
	t, serial, err := convertTypeName(c.TypeName)
	if err != nil {
		return cd, err
	}
	cd.Type, cd.Serial = t, serial
	for _, cn := range c.Constraints {
		con := cn.GetConstraint()
		if con == nil {
			continue
		}
		switch con.Contype {
		case pg.ConstrType_CONSTR_NOTNULL:
			cd.NotNull = true
		case pg.ConstrType_CONSTR_NULL:
		case pg.ConstrType_CONSTR_PRIMARY:
			cd.PrimaryKey = true
			cd.NotNull = true
		case pg.ConstrType_CONSTR_DEFAULT:
			d, err := convertExpr(con.RawExpr)
			if err != nil {
				return cd, err
			}
			cd.Default = d
			if err := checkDeparse(text); err != nil {
				return cd, err
			}
			cd.DefaultSQL = exprSource(text, con.RawExpr)
		default:
			return cd, unsupported("column constraint " + strings.TrimPrefix(con.Contype.String(), "CONSTR_"))
		}
	}
	return cd, nil
}

// exprSource recovers the source text of a DEFAULT expression by deparsing.
func exprSource(_ string, n *pg.Node) string {
	res := &pg.ParseResult{Version: parseTreeVersion(), Stmts: []*pg.RawStmt{{Stmt: &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: &pg.SelectStmt{
		TargetList: []*pg.Node{{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: n}}}},
	}}}}}}
	s, err := pg.Deparse(res)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(s, "SELECT ")
}

var treeVersion = sync.OnceValue(func() int32 {
	r, err := pg.Parse("SELECT 1")
	if err != nil {
		return 0
	}
	return r.Version
})

// parseTreeVersion is the parse tree version Deparse expects.
func parseTreeVersion() int32 { return treeVersion() }

func typeNames(tn *pg.TypeName) (schema, name string) {
	parts := make([]string, 0, 2)
	for _, n := range tn.Names {
		parts = append(parts, strings.ToLower(constText(n)))
	}
	if len(parts) == 2 {
		return parts[0], parts[1]
	}
	if len(parts) == 1 {
		return "", parts[0]
	}
	return "", ""
}

func typmods(tn *pg.TypeName) ([]int, error) {
	var out []int
	for _, m := range tn.Typmods {
		c := m.GetAConst()
		if c == nil || c.GetIval() == nil {
			return nil, pgerror.New(pgerror.SyntaxError, "type modifiers must be simple constants")
		}
		out = append(out, int(c.GetIval().Ival))
	}
	return out, nil
}

// convertTypeName resolves a type as written. Inside tensor syntax the bare
// name int8 is the 8-bit dtype; the keyword bigint (pg_catalog.int8) is int64.
func convertTypeName(tn *pg.TypeName) (t types.Type, serial bool, err error) {
	schema, name := typeNames(tn)
	mods, err := typmods(tn)
	if err != nil {
		return t, false, err
	}
	if len(tn.ArrayBounds) > 0 {
		var dt types.DType
		var ok bool
		if name == "int8" && schema == "pg_catalog" {
			dt, ok = types.DTInt64, true
		} else {
			dt, ok = types.DTypeByName(name)
		}
		if !ok {
			if name == "text" || name == "varchar" || name == "bytea" || name == "jsonb" {
				return t, false, pgerror.Newf(pgerror.FeatureNotSupported, "arrays of %s are not supported yet", name)
			}
			return t, false, pgerror.Newf(pgerror.UndefinedObject, "type %q does not exist", name)
		}
		shape := make([]int, len(tn.ArrayBounds))
		for i, b := range tn.ArrayBounds {
			d := int(b.GetInteger().GetIval())
			if d == -1 {
				d = types.Ragged
			} else if d <= 0 {
				return t, false, pgerror.Newf(pgerror.InvalidParameterValue, "tensor dimension must be positive, got %d", d)
			}
			shape[i] = d
		}
		t = types.TensorOf(dt, shape...)
		return t, false, types.CheckDeclared(t)
	}
	switch name {
	case "bool", "boolean":
		return types.TypBool, false, nil
	case "int2", "smallint":
		return types.TypInt2, false, nil
	case "int4", "int", "integer":
		return types.TypInt4, false, nil
	case "int8", "bigint":
		return types.TypInt8, false, nil
	case "serial", "serial4":
		return types.TypInt4, true, nil
	case "bigserial", "serial8":
		return types.TypInt8, true, nil
	case "smallserial", "serial2":
		return types.TypInt2, true, nil
	case "float4", "real":
		return types.TypFloat4, false, nil
	case "float8", "double precision":
		return types.TypFloat8, false, nil
	case "float":
		if len(mods) == 1 && mods[0] <= 24 {
			return types.TypFloat4, false, nil
		}
		return types.TypFloat8, false, nil
	case "numeric", "decimal":
		t := types.TypNumeric
		switch len(mods) {
		case 0:
			return t, false, nil
		case 1, 2:
			t.Width = mods[0]
			if len(mods) == 2 {
				t.Scale = mods[1]
			}
		default:
			return t, false, pgerror.New(pgerror.InvalidParameterValue, "invalid NUMERIC type modifier")
		}
		if t.Width < 1 || t.Width > 1000 {
			return t, false, pgerror.Newf(pgerror.InvalidParameterValue, "NUMERIC precision %d must be between 1 and 1000", t.Width)
		}
		if t.Scale < 0 || t.Scale > t.Width {
			return t, false, pgerror.Newf(pgerror.InvalidParameterValue, "NUMERIC scale %d must be between 0 and precision %d", t.Scale, t.Width)
		}
		return t, false, nil
	case "text":
		return types.TypText, false, nil
	case "oid":
		return types.Type{Kind: types.Oid}, false, nil
	case "regclass":
		return types.Type{Kind: types.RegClass}, false, nil
	case "regtype":
		return types.Type{Kind: types.RegType}, false, nil
	case "regnamespace":
		return types.Type{Kind: types.RegNamespace}, false, nil
	case "regproc":
		return types.Type{Kind: types.RegProc}, false, nil
	case "name":
		return types.Type{Kind: types.Name}, false, nil
	case "char":
		if schema == "pg_catalog" || len(mods) == 0 {
			// "char" (quoted) is the one-byte catalog type; CHAR(n) is bpchar.
			return types.Type{Kind: types.Char}, false, nil
		}
		return types.Type{Kind: types.Bpchar, Width: mods[0]}, false, nil
	case "bpchar", "character":
		// character(n), blank-padded; character alone is character(1),
		// bpchar alone any length.
		t := types.Type{Kind: types.Bpchar}
		switch {
		case len(mods) == 1:
			t.Width = mods[0]
		case name == "character":
			t.Width = 1
		}
		if t.Width > 10485760 || len(mods) == 1 && mods[0] < 1 {
			return t, false, pgerror.Newf(pgerror.InvalidParameterValue, "length for type char must be between 1 and 10485760")
		}
		return t, false, nil
	case "varchar", "character varying":
		t := types.Type{Kind: types.Varchar}
		if len(mods) == 1 {
			t.Width = mods[0]
		}
		return t, false, nil
	case "bytea", "blob":
		return types.TypBytea, false, nil
	case "json":
		return types.TypJSON, false, nil
	case "jsonb":
		return types.TypJSONB, false, nil
	case "vector", "halfvec":
		if len(mods) > 1 {
			return t, false, pgerror.New(pgerror.InvalidParameterValue, "invalid type modifier")
		}
		dim := 0
		if len(mods) == 1 {
			dim = mods[0]
			if dim < 1 {
				return t, false, pgerror.Newf(pgerror.InvalidParameterValue, "dimensions for type %s must be at least 1", name)
			}
			if dim > 16000 {
				return t, false, pgerror.Newf(pgerror.InvalidParameterValue, "dimensions for type %s cannot exceed 16000", name)
			}
		}
		if name == "halfvec" {
			return types.HalfVecOf(dim), false, nil
		}
		return types.VectorOf(dim), false, nil
	case "uuid":
		return types.Type{Kind: types.UUID}, false, nil
	case "date":
		return types.Type{Kind: types.Date}, false, nil
	case "timestamp":
		return types.Type{Kind: types.Timestamp}, false, nil
	case "timestamptz":
		return types.Type{Kind: types.TimestampTZ}, false, nil
	case "interval":
		// The modifier is the fields mask (interval '90' day), then
		// perhaps a precision, which is not kept.
		fields := 0
		if len(mods) > 0 && mods[0] != 0x7FFF {
			fields = mods[0]
		}
		return types.Type{Kind: types.Interval, Width: fields}, false, nil
	case "time":
		return t, false, pgerror.Newf(pgerror.FeatureNotSupported, "type %s is not supported yet", name)
	}
	if dt, ok := types.DTypeByName(name); ok && name != "int8" {
		// A dtype name without dimensions is its scalar SQL type.
		return dt.SQLType(), false, nil
	}
	return t, false, pgerror.Newf(pgerror.UndefinedObject, "type %q does not exist", name)
}

func rangeName(rv *pg.RangeVar) (string, error) {
	if rv == nil {
		return "", pgerror.New(pgerror.SyntaxError, "missing table name")
	}
	if rv.Schemaname != "" && rv.Schemaname != "public" {
		return "", pgerror.Newf(pgerror.UndefinedTable, "relation \"%s.%s\" does not exist", rv.Schemaname, rv.Relname)
	}
	return rv.Relname, nil
}

func convertDrop(d *pg.DropStmt) (Stmt, error) {
	if d.RemoveType == pg.ObjectType_OBJECT_INDEX {
		return convertDropIndex(d)
	}
	if d.RemoveType == pg.ObjectType_OBJECT_EXTENSION {
		return convertDropExtension(d)
	}
	if d.RemoveType != pg.ObjectType_OBJECT_TABLE && d.RemoveType != pg.ObjectType_OBJECT_VIEW {
		return nil, unsupported("DROP " + strings.TrimPrefix(d.RemoveType.String(), "OBJECT_"))
	}
	dt := &DropTable{IfExists: d.MissingOk, View: d.RemoveType == pg.ObjectType_OBJECT_VIEW}
	for _, o := range d.Objects {
		l := o.GetList()
		if l == nil || len(l.Items) == 0 {
			continue
		}
		dt.Names = append(dt.Names, constText(l.Items[len(l.Items)-1]))
	}
	return dt, nil
}

func convertInsert(s *pg.InsertStmt) (Stmt, error) {
	name, err := rangeName(s.Relation)
	if err != nil {
		return nil, err
	}
	if s.OnConflictClause != nil {
		return nil, unsupported("INSERT ... ON CONFLICT")
	}
	ins := &Insert{Table: name}
	for _, c := range s.Cols {
		rt := c.GetResTarget()
		if len(rt.Indirection) > 0 {
			return nil, unsupported("INSERT into subscripted columns")
		}
		ins.Columns = append(ins.Columns, rt.Name)
	}
	if s.SelectStmt == nil {
		return nil, unsupported("INSERT ... DEFAULT VALUES")
	}
	sel := s.SelectStmt.GetSelectStmt()
	if sel == nil {
		return nil, unsupported("this INSERT source")
	}
	if len(sel.ValuesLists) > 0 {
		for _, vl := range sel.ValuesLists {
			var row []Expr
			for _, v := range vl.GetList().Items {
				if v.GetSetToDefault() != nil {
					row = append(row, nil)
					continue
				}
				e, err := convertExpr(v)
				if err != nil {
					return nil, err
				}
				row = append(row, e)
			}
			ins.Rows = append(ins.Rows, row)
		}
	} else {
		q, err := convertSelect(sel)
		if err != nil {
			return nil, err
		}
		ins.Select = q
	}
	ins.Returning, err = convertTargets(s.ReturningList)
	return ins, err
}

func convertUpdate(s *pg.UpdateStmt) (Stmt, error) {
	name, err := rangeName(s.Relation)
	if err != nil {
		return nil, err
	}
	if len(s.FromClause) > 0 {
		return nil, unsupported("UPDATE ... FROM")
	}
	up := &Update{Table: name}
	if s.Relation.Alias != nil {
		up.Alias = s.Relation.Alias.Aliasname
	}
	for _, t := range s.TargetList {
		rt := t.GetResTarget()
		if len(rt.Indirection) > 0 {
			return nil, unsupported("UPDATE of subscripted columns")
		}
		var v Expr
		if rt.Val.GetSetToDefault() == nil {
			if v, err = convertExpr(rt.Val); err != nil {
				return nil, err
			}
		}
		up.Set = append(up.Set, SetClause{Column: rt.Name, Value: v})
	}
	if up.Where, err = convertOptExpr(s.WhereClause); err != nil {
		return nil, err
	}
	up.Returning, err = convertTargets(s.ReturningList)
	return up, err
}

// convertTruncate converts TRUNCATE: the tables' rows are deleted in the
// statement's transaction. RESTART IDENTITY (resetting the serial
// columns' sequences) is 0A000; CASCADE and RESTRICT have nothing to do
// (there are no foreign keys).
func convertTruncate(s *pg.TruncateStmt) (Stmt, error) {
	if s.RestartSeqs {
		return nil, unsupported("TRUNCATE ... RESTART IDENTITY")
	}
	t := &Truncate{}
	for _, n := range s.Relations {
		name, err := rangeName(n.GetRangeVar())
		if err != nil {
			return nil, err
		}
		t.Tables = append(t.Tables, name)
	}
	return t, nil
}

func convertDelete(s *pg.DeleteStmt) (Stmt, error) {
	name, err := rangeName(s.Relation)
	if err != nil {
		return nil, err
	}
	if len(s.UsingClause) > 0 {
		return nil, unsupported("DELETE ... USING")
	}
	del := &Delete{Table: name}
	if s.Relation.Alias != nil {
		del.Alias = s.Relation.Alias.Aliasname
	}
	if del.Where, err = convertOptExpr(s.WhereClause); err != nil {
		return nil, err
	}
	del.Returning, err = convertTargets(s.ReturningList)
	return del, err
}

func convertSelect(s *pg.SelectStmt) (*Select, error) {
	if s.WithClause != nil {
		return convertWith(s)
	}
	if s.Op != pg.SetOperation_SETOP_NONE && s.Op != pg.SetOperation_SET_OPERATION_UNDEFINED {
		return convertSetOp(s)
	}
	if s.IntoClause != nil {
		// A top-level SELECT ... INTO (and the first query of a set
		// operation) is CREATE TABLE AS: convertSelectInto takes the
		// clause off before it comes here.
		return nil, pgerror.New(pgerror.SyntaxError, "SELECT ... INTO is not allowed here").
			WithHint("INTO is allowed only in the first SELECT of a statement; use CREATE TABLE ... AS.")
	}
	sel := &Select{}
	var err error
	if sel.Windows, err = convertWindowClause(s.WindowClause); err != nil {
		return nil, err
	}
	if len(s.ValuesLists) > 0 {
		for _, vl := range s.ValuesLists {
			var row []Expr
			for _, v := range vl.GetList().Items {
				e, err := convertExpr(v)
				if err != nil {
					return nil, err
				}
				row = append(row, e)
			}
			sel.Values = append(sel.Values, row)
		}
	}
	if len(s.DistinctClause) > 0 {
		if s.DistinctClause[0] != nil && s.DistinctClause[0].Node != nil {
			return nil, unsupported("SELECT DISTINCT ON")
		}
		sel.Distinct = true
	}
	if sel.Items, err = convertTargets(s.TargetList); err != nil {
		return nil, err
	}
	if sel.From, err = convertFrom(s.FromClause); err != nil {
		return nil, err
	}
	if sel.Where, err = convertOptExpr(s.WhereClause); err != nil {
		return nil, err
	}
	for _, g := range s.GroupClause {
		e, err := convertExpr(g)
		if err != nil {
			return nil, err
		}
		sel.GroupBy = append(sel.GroupBy, e)
	}
	if sel.Having, err = convertOptExpr(s.HavingClause); err != nil {
		return nil, err
	}
	for _, o := range s.SortClause {
		sb := o.GetSortBy()
		e, err := convertExpr(sb.Node)
		if err != nil {
			return nil, err
		}
		item := OrderItem{Expr: e, Desc: sb.SortbyDir == pg.SortByDir_SORTBY_DESC}
		if sb.SortbyDir == pg.SortByDir_SORTBY_USING {
			return nil, unsupported("ORDER BY ... USING")
		}
		switch sb.SortbyNulls {
		case pg.SortByNulls_SORTBY_NULLS_FIRST:
			item.Nulls = 1
		case pg.SortByNulls_SORTBY_NULLS_LAST:
			item.Nulls = 2
		}
		sel.OrderBy = append(sel.OrderBy, item)
	}
	if s.LimitOption == pg.LimitOption_LIMIT_OPTION_WITH_TIES {
		return nil, unsupported("FETCH ... WITH TIES")
	}
	if sel.Limit, err = convertOptExpr(s.LimitCount); err != nil {
		return nil, err
	}
	if sel.Offset, err = convertOptExpr(s.LimitOffset); err != nil {
		return nil, err
	}
	return sel, nil
}

func convertTargets(list []*pg.Node) ([]SelectItem, error) {
	var items []SelectItem
	for _, t := range list {
		rt := t.GetResTarget()
		if rt == nil {
			return nil, unsupported("this target list entry")
		}
		if cr := rt.Val.GetColumnRef(); cr != nil {
			last := cr.Fields[len(cr.Fields)-1]
			if last.GetAStar() != nil {
				it := SelectItem{Star: true}
				if len(cr.Fields) >= 2 {
					it.StarTable = constText(cr.Fields[len(cr.Fields)-2])
				}
				items = append(items, it)
				continue
			}
		}
		e, err := convertExpr(rt.Val)
		if err != nil {
			return nil, err
		}
		items = append(items, SelectItem{Expr: e, Alias: rt.Name})
	}
	return items, nil
}

func convertOptExpr(n *pg.Node) (Expr, error) {
	if n == nil || n.Node == nil {
		return nil, nil
	}
	return convertExpr(n)
}

func convertExprs(ns []*pg.Node) ([]Expr, error) {
	out := make([]Expr, 0, len(ns))
	for _, n := range ns {
		e, err := convertExpr(n)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func opName(names []*pg.Node) string {
	if len(names) == 0 {
		return ""
	}
	return constText(names[len(names)-1])
}

func convertExpr(n *pg.Node) (Expr, error) {
	if n == nil || n.Node == nil {
		return nil, pgerror.New(pgerror.SyntaxError, "missing expression")
	}
	switch e := n.Node.(type) {
	case *pg.Node_AConst:
		c := e.AConst
		if c.Isnull {
			return &Literal{Kind: LitNull}, nil
		}
		switch v := c.Val.(type) {
		case *pg.A_Const_Ival:
			return &Literal{Kind: LitInt, Text: itoa(int64(v.Ival.Ival))}, nil
		case *pg.A_Const_Fval:
			// pg_query reports integers too large for int32 as Fval.
			if isIntegerText(v.Fval.Fval) {
				return &Literal{Kind: LitInt, Text: v.Fval.Fval}, nil
			}
			return &Literal{Kind: LitFloat, Text: v.Fval.Fval}, nil
		case *pg.A_Const_Sval:
			return &Literal{Kind: LitString, Text: v.Sval.Sval}, nil
		case *pg.A_Const_Boolval:
			if v.Boolval.Boolval {
				return &Literal{Kind: LitBool, Text: "true"}, nil
			}
			return &Literal{Kind: LitBool, Text: "false"}, nil
		case *pg.A_Const_Bsval:
			return nil, unsupported("bit-string literals")
		}
		return &Literal{Kind: LitNull}, nil
	case *pg.Node_ColumnRef:
		var parts []string
		for _, f := range e.ColumnRef.Fields {
			if f.GetAStar() != nil {
				return nil, unsupported("* in this position")
			}
			parts = append(parts, constText(f))
		}
		switch len(parts) {
		case 1:
			return &ColumnRef{Name: parts[0]}, nil
		case 2:
			return &ColumnRef{Table: parts[0], Name: parts[1]}, nil
		case 3:
			// schema.table.column: tables are named by alias or name alone.
			return &ColumnRef{Table: parts[1], Name: parts[2]}, nil
		}
		return nil, unsupported("cross-database column references")
	case *pg.Node_AExpr:
		return convertAExpr(e.AExpr)
	case *pg.Node_BoolExpr:
		args, err := convertExprs(e.BoolExpr.Args)
		if err != nil {
			return nil, err
		}
		switch e.BoolExpr.Boolop {
		case pg.BoolExprType_AND_EXPR:
			return &AndExpr{Args: args}, nil
		case pg.BoolExprType_OR_EXPR:
			return &OrExpr{Args: args}, nil
		default:
			return &NotExpr{X: args[0]}, nil
		}
	case *pg.Node_NullTest:
		x, err := convertExpr(e.NullTest.Arg)
		if err != nil {
			return nil, err
		}
		return &IsNullExpr{X: x, Not: e.NullTest.Nulltesttype == pg.NullTestType_IS_NOT_NULL}, nil
	case *pg.Node_BooleanTest:
		x, err := convertExpr(e.BooleanTest.Arg)
		if err != nil {
			return nil, err
		}
		switch e.BooleanTest.Booltesttype {
		case pg.BoolTestType_IS_TRUE:
			return &BoolTest{X: x, Value: true}, nil
		case pg.BoolTestType_IS_NOT_TRUE:
			return &BoolTest{X: x, Value: true, Not: true}, nil
		case pg.BoolTestType_IS_FALSE:
			return &BoolTest{X: x, Value: false}, nil
		case pg.BoolTestType_IS_NOT_FALSE:
			return &BoolTest{X: x, Value: false, Not: true}, nil
		}
		return nil, unsupported("IS [NOT] UNKNOWN")
	case *pg.Node_FuncCall:
		f := e.FuncCall
		var over *WindowSpec
		if f.Over != nil {
			var err error
			if over, err = convertWindowDef(f.Over); err != nil {
				return nil, err
			}
		}
		if len(f.AggOrder) > 0 {
			return nil, unsupported("ordered aggregates")
		}
		args, err := convertExprs(f.Args)
		if err != nil {
			return nil, err
		}
		name := strings.ToLower(opName(f.Funcname))
		call := &FuncCall{Name: name, Args: args, Star: f.AggStar, Distinct: f.AggDistinct, Over: over}
		if f.AggFilter != nil {
			return filteredAggregate(call, f.AggFilter)
		}
		return call, nil
	case *pg.Node_AArrayExpr:
		return convertArrayExpr(e.AArrayExpr)
	case *pg.Node_TypeCast:
		x, err := convertExpr(e.TypeCast.Arg)
		if err != nil {
			return nil, err
		}
		t, serial, err := convertTypeName(e.TypeCast.TypeName)
		if err != nil {
			return nil, err
		}
		if serial {
			return nil, pgerror.New(pgerror.UndefinedObject, "type \"serial\" does not exist")
		}
		return &CastExpr{X: x, Type: t}, nil
	case *pg.Node_AIndirection:
		x, err := convertExpr(e.AIndirection.Arg)
		if err != nil {
			return nil, err
		}
		if ind := e.AIndirection.Indirection; len(ind) == 1 && ind[0].GetString_() != nil {
			return &FieldSelect{X: x, Field: ind[0].GetString_().Sval}, nil
		}
		sub := &SubscriptExpr{X: x}
		for _, ind := range e.AIndirection.Indirection {
			ai := ind.GetAIndices()
			if ai == nil {
				return nil, unsupported("field selection")
			}
			if ai.IsSlice {
				return nil, unsupported("array slices")
			}
			idx, err := convertExpr(ai.Uidx)
			if err != nil {
				return nil, err
			}
			sub.Indexes = append(sub.Indexes, idx)
		}
		return sub, nil
	case *pg.Node_CaseExpr:
		c := e.CaseExpr
		ce := &CaseExpr{}
		var err error
		if c.Arg != nil {
			if ce.Arg, err = convertExpr(c.Arg); err != nil {
				return nil, err
			}
		}
		for _, w := range c.Args {
			cw := w.GetCaseWhen()
			cond, err := convertExpr(cw.Expr)
			if err != nil {
				return nil, err
			}
			res, err := convertExpr(cw.Result)
			if err != nil {
				return nil, err
			}
			ce.Whens = append(ce.Whens, CaseWhen{Cond: cond, Result: res})
		}
		if ce.Else, err = convertOptExpr(c.Defresult); err != nil {
			return nil, err
		}
		return ce, nil
	case *pg.Node_CoalesceExpr:
		args, err := convertExprs(e.CoalesceExpr.Args)
		if err != nil {
			return nil, err
		}
		return &FuncCall{Name: "coalesce", Args: args}, nil
	case *pg.Node_MinMaxExpr:
		args, err := convertExprs(e.MinMaxExpr.Args)
		if err != nil {
			return nil, err
		}
		name := "greatest"
		if e.MinMaxExpr.Op == pg.MinMaxOp_IS_LEAST {
			name = "least"
		}
		return &FuncCall{Name: name, Args: args}, nil
	case *pg.Node_SubLink:
		return convertSubLink(e.SubLink)
	case *pg.Node_CollateClause:
		// Collations are not modelled: text compares bytewise (C).
		return convertExpr(e.CollateClause.Arg)
	case *pg.Node_ParamRef:
		return &Param{N: int(e.ParamRef.Number)}, nil
	case *pg.Node_SqlvalueFunction:
		return sqlValueFunction(e.SqlvalueFunction)
	}
	return nil, unsupported(exprFeature(n))
}

// filteredAggregate rewrites agg(x) FILTER (WHERE cond) as
// agg(CASE WHEN cond THEN x END): every aggregate here skips NULL inputs,
// so the rows the filter drops count for nothing (count(*) counts
// CASE WHEN cond THEN 1 END).
func filteredAggregate(call *FuncCall, filter *pg.Node) (Expr, error) {
	if _, ok := aggFuncs[call.Name]; !ok {
		return nil, pgerror.Newf(pgerror.WrongObjectType, "FILTER specified, but %s is not an aggregate function", call.Name)
	}
	cond, err := convertExpr(filter)
	if err != nil {
		return nil, err
	}
	when := func(x Expr) Expr { return &CaseExpr{Whens: []CaseWhen{{Cond: cond, Result: x}}} }
	switch {
	case call.Star:
		call.Star = false
		call.Args = []Expr{when(&Literal{Kind: LitInt, Text: "1"})}
	case len(call.Args) > 0:
		call.Args[0] = when(call.Args[0]) // string_agg's separator stays
	}
	return call, nil
}

// exprFeatures names the expressions deeplaked does not take, as error
// messages say them.
var exprFeatures = map[string]string{
	"RowExpr":                   "ROW(...)",
	"XmlExpr":                   "XML",
	"XmlSerialize":              "XMLSERIALIZE",
	"GroupingFunc":              "GROUPING",
	"MergeSupportFunc":          "MERGE_ACTION",
	"JsonObjectConstructor":     "JSON_OBJECT",
	"JsonArrayConstructor":      "JSON_ARRAY",
	"JsonIsPredicate":           "IS JSON",
	"JsonFuncExpr":              "JSON_QUERY/JSON_VALUE/JSON_EXISTS",
	"JsonParseExpr":             "JSON()",
	"JsonScalarExpr":            "JSON_SCALAR",
	"JsonSerializeExpr":         "JSON_SERIALIZE",
	"JsonArrayQueryConstructor": "JSON_ARRAY (query)",
	"JsonObjectAgg":             "JSON_OBJECTAGG",
	"JsonArrayAgg":              "JSON_ARRAYAGG",
	"MultiAssignRef":            "a multiple-column assignment",
	"SetToDefault":              "DEFAULT here",
	"CurrentOfExpr":             "WHERE CURRENT OF",
	"NamedArgExpr":              "a named function argument",
}

// exprFeature names the expression n for an "is not supported" error:
// from the table above, else after its parse node ("RowExpr expressions").
func exprFeature(n *pg.Node) string {
	name := strings.TrimPrefix(fmt.Sprintf("%T", n.Node), "*pg_query.Node_")
	if f, ok := exprFeatures[name]; ok {
		return f
	}
	return "the expression " + name
}

// convertOperands converts both operands of a binary operator.
func convertOperands(a *pg.A_Expr) (l, r Expr, err error) {
	if l, err = convertExpr(a.Lexpr); err != nil {
		return nil, nil, err
	}
	if r, err = convertExpr(a.Rexpr); err != nil {
		return nil, nil, err
	}
	return l, r, nil
}

func convertAExpr(a *pg.A_Expr) (Expr, error) {
	name := opName(a.Name)
	switch a.Kind {
	case pg.A_Expr_Kind_AEXPR_OP:
		r, err := convertExpr(a.Rexpr)
		if err != nil {
			return nil, err
		}
		if a.Lexpr == nil {
			return &UnaryExpr{Op: name, X: r}, nil
		}
		l, err := convertExpr(a.Lexpr)
		if err != nil {
			return nil, err
		}
		return &BinaryExpr{Op: name, L: l, R: r}, nil
	case pg.A_Expr_Kind_AEXPR_IN:
		x, err := convertExpr(a.Lexpr)
		if err != nil {
			return nil, err
		}
		l := a.Rexpr.GetList()
		if l == nil {
			return nil, unsupported("IN (subquery)")
		}
		list, err := convertExprs(l.Items)
		if err != nil {
			return nil, err
		}
		return &InExpr{X: x, List: list, Not: name == "<>"}, nil
	case pg.A_Expr_Kind_AEXPR_LIKE, pg.A_Expr_Kind_AEXPR_ILIKE:
		x, p, err := convertOperands(a)
		if err != nil {
			return nil, err
		}
		return &LikeExpr{X: x, Pattern: p, Not: strings.HasPrefix(name, "!"), ILike: a.Kind == pg.A_Expr_Kind_AEXPR_ILIKE}, nil
	case pg.A_Expr_Kind_AEXPR_BETWEEN, pg.A_Expr_Kind_AEXPR_NOT_BETWEEN:
		x, err := convertExpr(a.Lexpr)
		if err != nil {
			return nil, err
		}
		l := a.Rexpr.GetList()
		bounds, err := convertExprs(l.Items)
		if err != nil {
			return nil, err
		}
		return &BetweenExpr{X: x, Lo: bounds[0], Hi: bounds[1], Not: a.Kind == pg.A_Expr_Kind_AEXPR_NOT_BETWEEN}, nil
	case pg.A_Expr_Kind_AEXPR_NULLIF:
		l, r, err := convertOperands(a)
		if err != nil {
			return nil, err
		}
		return &FuncCall{Name: "nullif", Args: []Expr{l, r}}, nil
	case pg.A_Expr_Kind_AEXPR_OP_ANY, pg.A_Expr_Kind_AEXPR_OP_ALL:
		x, arr, err := convertOperands(a)
		if err != nil {
			return nil, err
		}
		return &ArrayCmpExpr{X: x, Array: arr, Op: name, All: a.Kind == pg.A_Expr_Kind_AEXPR_OP_ALL}, nil
	case pg.A_Expr_Kind_AEXPR_DISTINCT, pg.A_Expr_Kind_AEXPR_NOT_DISTINCT:
		l, r, err := convertOperands(a)
		if err != nil {
			return nil, err
		}
		op := "IS DISTINCT FROM"
		if a.Kind == pg.A_Expr_Kind_AEXPR_NOT_DISTINCT {
			op = "IS NOT DISTINCT FROM"
		}
		return &BinaryExpr{Op: op, L: l, R: r}, nil
	case pg.A_Expr_Kind_AEXPR_SIMILAR:
		return nil, unsupported("SIMILAR TO")
	}
	return nil, unsupported("this operator form (" + strings.TrimPrefix(a.Kind.String(), "AEXPR_") + ")")
}

func isIntegerText(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c == '-' && i == 0 {
			continue
		}
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func itoa(v int64) string {
	var buf [20]byte
	i := len(buf)
	neg := v < 0
	u := uint64(v)
	if neg {
		u = uint64(-v)
	}
	for {
		i--
		buf[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	if neg {
		i--
		buf[i] = '-'
	}
	return string(buf[i:])
}
