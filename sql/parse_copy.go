package sql

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/deeplaked/deeplaked/pgerror"
)

// CopyTo is COPY table [(cols)] TO STDOUT or COPY (query) TO STDOUT [WITH
// (options)]. FORCE_QUOTE's column list, which the common option list cannot
// hold, is kept apart: ForceQuote names columns, ForceQuoteAll is FORCE_QUOTE *.
type CopyTo struct {
	Table   string
	Columns []string
	// Query is the SELECT of COPY (query) TO; nil for a table.
	Query   *Select
	Options []Option
	// ForceQuote and ForceQuoteAll are set by the FORCE_QUOTE option, which
	// also appears in Options (without a value) to keep its position.
	ForceQuote    []string
	ForceQuoteAll bool
}

func (*CopyTo) stmt() {}

func convertCopy(c *pg.CopyStmt) (Stmt, error) {
	if !c.IsFrom {
		return convertCopyTo(c)
	}
	switch {
	case c.IsProgram || c.Filename != "":
		return nil, pgerror.New(pgerror.FeatureNotSupported, "COPY FROM a file or program is not supported").
			WithHint("Use COPY ... FROM STDIN, or a client-side facility such as psql's \\\\copy.")
	case c.WhereClause != nil:
		return nil, unsupported("COPY FROM ... WHERE")
	}
	name, err := rangeName(c.Relation)
	if err != nil {
		return nil, err
	}
	cp := &Copy{Table: name}
	for _, a := range c.Attlist {
		cp.Columns = append(cp.Columns, constText(a))
	}
	if cp.Options, err = convertOptions(c.Options); err != nil {
		return nil, err
	}
	return cp, nil
}

func convertCopyTo(c *pg.CopyStmt) (Stmt, error) {
	switch {
	case c.IsProgram || c.Filename != "":
		return nil, pgerror.New(pgerror.FeatureNotSupported, "COPY TO a file or program is not supported").
			WithHint("Use COPY ... TO STDOUT, or a client-side facility such as psql's \\\\copy.")
	case c.WhereClause != nil:
		return nil, pgerror.New(pgerror.FeatureNotSupported, "WHERE clause not allowed with COPY TO")
	}
	cp := &CopyTo{}
	if c.Query != nil {
		sel := c.Query.GetSelectStmt()
		if sel == nil {
			return nil, unsupported("COPY of a statement other than SELECT")
		}
		q, err := convertSelect(sel)
		if err != nil {
			return nil, err
		}
		cp.Query = q
	} else {
		name, err := rangeName(c.Relation)
		if err != nil {
			return nil, err
		}
		cp.Table = name
		for _, a := range c.Attlist {
			cp.Columns = append(cp.Columns, constText(a))
		}
	}
	// FORCE_QUOTE takes a column list or *, which convertOptions refuses.
	rest := make([]*pg.Node, 0, len(c.Options))
	for _, n := range c.Options {
		d := n.GetDefElem()
		if d == nil || d.Defname != "force_quote" || d.Arg == nil {
			rest = append(rest, n)
			continue
		}
		switch a := d.Arg.Node.(type) {
		case *pg.Node_AStar:
			cp.ForceQuoteAll = true
		case *pg.Node_List:
			for _, item := range a.List.Items {
				cp.ForceQuote = append(cp.ForceQuote, constText(item))
			}
		default:
			return nil, pgerror.Newf(pgerror.InvalidParameterValue, "argument to option \"%s\" must be a list of column names", d.Defname)
		}
		rest = append(rest, &pg.Node{Node: &pg.Node_DefElem{DefElem: &pg.DefElem{Defname: d.Defname}}})
	}
	var err error
	if cp.Options, err = convertOptions(rest); err != nil {
		return nil, err
	}
	return cp, nil
}

// vacuumOptions are PostgreSQL's VACUUM options; deeplaked accepts and
// ignores them.
var vacuumOptions = map[string]bool{
	"full": true, "freeze": true, "verbose": true, "analyze": true, "disable_page_skipping": true,
	"skip_locked": true, "index_cleanup": true, "process_main": true, "process_toast": true,
	"truncate": true, "parallel": true, "skip_database_stats": true, "only_database_stats": true,
	"buffer_usage_limit": true,
}

func convertVacuum(v *pg.VacuumStmt) (Stmt, error) {
	if !v.IsVacuumcmd {
		return nil, unsupported("ANALYZE")
	}
	for _, o := range v.Options {
		if d := o.GetDefElem(); d != nil && !vacuumOptions[d.Defname] {
			return nil, pgerror.Newf(pgerror.SyntaxError, "unrecognized VACUUM option \"%s\"", d.Defname)
		}
	}
	vac := &Vacuum{}
	for _, r := range v.Rels {
		vr := r.GetVacuumRelation()
		if vr == nil {
			return nil, unsupported("this VACUUM target")
		}
		if len(vr.VaCols) > 0 {
			return nil, unsupported("VACUUM with a column list")
		}
		name, err := rangeName(vr.Relation)
		if err != nil {
			return nil, err
		}
		vac.Tables = append(vac.Tables, name)
	}
	return vac, nil
}

// convertOptions converts a DefElem list (WITH (...) of COPY or CREATE
// TABLE). A namespaced name keeps its namespace ("toast.fillfactor").
func convertOptions(list []*pg.Node) ([]Option, error) {
	var out []Option
	for _, n := range list {
		d := n.GetDefElem()
		if d == nil {
			return nil, pgerror.New(pgerror.SyntaxError, "invalid option list")
		}
		o := Option{Name: d.Defname}
		if d.Defnamespace != "" {
			o.Name = d.Defnamespace + "." + d.Defname
		}
		if d.Arg != nil {
			v, ok := optionValue(d.Arg)
			if !ok {
				return nil, unsupported("option " + strings.ToUpper(o.Name) + " with a column list")
			}
			o.Value, o.HasValue = v, true
		}
		out = append(out, o)
	}
	return out, nil
}

// optionValue returns an option argument as text; ok is false for lists
// and *.
func optionValue(n *pg.Node) (v string, ok bool) {
	switch a := n.Node.(type) {
	case *pg.Node_String_:
		return a.String_.Sval, true
	case *pg.Node_Integer:
		return itoa(int64(a.Integer.Ival)), true
	case *pg.Node_Float:
		return a.Float.Fval, true
	case *pg.Node_Boolean:
		if a.Boolean.Boolval {
			return "true", true
		}
		return "false", true
	case *pg.Node_TypeName:
		// An unquoted word such as zstd in compression = zstd.
		_, name := typeNames(a.TypeName)
		return name, true
	}
	return "", false
}
