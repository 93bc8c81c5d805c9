package sql

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/deeplaked/deeplaked/pgerror"
)

// convertFrom turns a FROM list into one TableRef: the items of a comma
// list are cross-joined left to right, as PostgreSQL reads them.
func convertFrom(items []*pg.Node) (*TableRef, error) {
	var from *TableRef
	for _, it := range items {
		r, err := convertFromItem(it)
		if err != nil {
			return nil, err
		}
		if from == nil {
			from = r
			continue
		}
		from = &TableRef{Join: &JoinClause{Kind: JoinCross, Left: from, Right: r}}
	}
	return from, nil
}

func convertFromItem(n *pg.Node) (*TableRef, error) {
	switch x := n.Node.(type) {
	case *pg.Node_RangeVar:
		rv := x.RangeVar
		r := &TableRef{Schema: rv.Schemaname, Name: rv.Relname}
		if rv.Catalogname != "" {
			return nil, unsupported("cross-database references")
		}
		if rv.Alias != nil {
			r.Alias, r.ColAliases = rv.Alias.Aliasname, aliasNames(rv.Alias)
		}
		return r, nil
	case *pg.Node_JoinExpr:
		j := x.JoinExpr
		if j.Alias != nil || j.JoinUsingAlias != nil {
			return nil, unsupported("aliases of joins")
		}
		l, err := convertFromItem(j.Larg)
		if err != nil {
			return nil, err
		}
		r, err := convertFromItem(j.Rarg)
		if err != nil {
			return nil, err
		}
		jc := &JoinClause{Left: l, Right: r, Natural: j.IsNatural}
		switch j.Jointype {
		case pg.JoinType_JOIN_INNER:
			jc.Kind = JoinInner
			if j.Quals == nil && len(j.UsingClause) == 0 && !j.IsNatural {
				jc.Kind = JoinCross
			}
		case pg.JoinType_JOIN_LEFT:
			jc.Kind = JoinLeft
		case pg.JoinType_JOIN_RIGHT:
			jc.Kind = JoinRight
		case pg.JoinType_JOIN_FULL:
			jc.Kind = JoinFull
		default:
			return nil, unsupported("this join type")
		}
		for _, u := range j.UsingClause {
			jc.Using = append(jc.Using, constText(u))
		}
		if jc.On, err = convertOptExpr(j.Quals); err != nil {
			return nil, err
		}
		return &TableRef{Join: jc}, nil
	case *pg.Node_RangeSubselect:
		rs := x.RangeSubselect
		sel := rs.Subquery.GetSelectStmt()
		if sel == nil {
			return nil, unsupported("this subquery in FROM")
		}
		q, err := convertSelect(sel)
		if err != nil {
			return nil, err
		}
		if rs.Alias == nil {
			return nil, pgerror.New(pgerror.SyntaxError, "subquery in FROM must have an alias")
		}
		return &TableRef{Subquery: q, Alias: rs.Alias.Aliasname, ColAliases: aliasNames(rs.Alias), Lateral: rs.Lateral}, nil
	case *pg.Node_RangeFunction:
		rf := x.RangeFunction
		if rf.Ordinality || rf.IsRowsfrom || len(rf.Functions) != 1 || len(rf.Coldeflist) > 0 {
			return nil, unsupported("this function in FROM")
		}
		items := rf.Functions[0].GetList()
		if items == nil || len(items.Items) == 0 {
			return nil, unsupported("this function in FROM")
		}
		e, err := convertExpr(items.Items[0])
		if err != nil {
			return nil, err
		}
		fc, ok := e.(*FuncCall)
		if !ok {
			return nil, unsupported("this function in FROM")
		}
		// A function in FROM is lateral, LATERAL written or not.
		r := &TableRef{Func: fc, Name: fc.Name, Alias: fc.Name, Lateral: true}
		if rf.Alias != nil {
			r.Alias, r.ColAliases = rf.Alias.Aliasname, aliasNames(rf.Alias)
		}
		return r, nil
	}
	return nil, unsupported("this FROM item")
}

// convertSubLink converts a subquery used in an expression.
func convertSubLink(s *pg.SubLink) (Expr, error) {
	sel := s.Subselect.GetSelectStmt()
	if sel == nil {
		return nil, unsupported("this subquery")
	}
	q, err := convertSelect(sel)
	if err != nil {
		return nil, err
	}
	se := &SubqueryExpr{Query: q}
	switch s.SubLinkType {
	case pg.SubLinkType_EXPR_SUBLINK:
		se.Kind = SubScalar
	case pg.SubLinkType_EXISTS_SUBLINK:
		se.Kind = SubExists
	case pg.SubLinkType_ARRAY_SUBLINK:
		se.Kind = SubArray
	case pg.SubLinkType_ANY_SUBLINK, pg.SubLinkType_ALL_SUBLINK:
		se.Kind = SubAny
		if s.SubLinkType == pg.SubLinkType_ALL_SUBLINK {
			se.Kind = SubAll
		}
		se.Op = "="
		if len(s.OperName) > 0 {
			se.Op = opName(s.OperName)
		}
		if se.X, err = convertExpr(s.Testexpr); err != nil {
			return nil, err
		}
	default:
		return nil, unsupported("this kind of subquery")
	}
	return se, nil
}

// sqlValueFunction maps CURRENT_USER and friends onto function calls.
func sqlValueFunction(f *pg.SQLValueFunction) (Expr, error) {
	switch f.Op {
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_USER, pg.SQLValueFunctionOp_SVFOP_CURRENT_ROLE, pg.SQLValueFunctionOp_SVFOP_USER:
		return &FuncCall{Name: "current_user"}, nil
	case pg.SQLValueFunctionOp_SVFOP_SESSION_USER:
		return &FuncCall{Name: "session_user"}, nil
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG:
		return &FuncCall{Name: "current_database"}, nil
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:
		return &FuncCall{Name: "current_schema"}, nil
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP, pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N:
		return &FuncCall{Name: "now"}, nil
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_DATE:
		return &FuncCall{Name: "current_date"}, nil
	case pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP, pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N:
		return &FuncCall{Name: "localtimestamp"}, nil
	}
	return nil, unsupported("the time of day types (CURRENT_TIME, LOCALTIME)")
}

// convertSetOp converts UNION, INTERSECT and EXCEPT [ALL] with the ORDER BY,
// LIMIT and OFFSET of the whole.
func convertSetOp(s *pg.SelectStmt) (*Select, error) {
	sel := &Select{SetOp: SetUnion, SetAll: s.All}
	switch s.Op {
	case pg.SetOperation_SETOP_INTERSECT:
		sel.SetOp = SetIntersect
	case pg.SetOperation_SETOP_EXCEPT:
		sel.SetOp = SetExcept
	}
	var err error
	if sel.Larg, err = convertSelect(s.Larg); err != nil {
		return nil, err
	}
	if sel.Rarg, err = convertSelect(s.Rarg); err != nil {
		return nil, err
	}
	// The whole's ORDER BY and LIMIT: convert a copy holding only them.
	tail, err := convertSelect(&pg.SelectStmt{SortClause: s.SortClause, LimitCount: s.LimitCount, LimitOffset: s.LimitOffset, LimitOption: s.LimitOption})
	if err != nil {
		return nil, err
	}
	sel.OrderBy, sel.Limit, sel.Offset = tail.OrderBy, tail.Limit, tail.Offset
	return sel, nil
}

// aliasNames returns the column names of AS alias (a, b, ...).
func aliasNames(a *pg.Alias) []string {
	var out []string
	for _, c := range a.Colnames {
		out = append(out, constText(c))
	}
	return out
}

// convertWith converts WITH [RECURSIVE] name AS (query), ... followed by
// the query. Data-modifying CTEs are not supported.
func convertWith(s *pg.SelectStmt) (*Select, error) {
	w := s.WithClause
	var ctes []CTE
	for _, n := range w.Ctes {
		c := n.GetCommonTableExpr()
		if c == nil {
			return nil, unsupported("this WITH clause")
		}
		q := c.Ctequery.GetSelectStmt()
		if q == nil {
			return nil, unsupported("data-modifying statements in WITH")
		}
		sel, err := convertSelect(q)
		if err != nil {
			return nil, err
		}
		if c.SearchClause != nil || c.CycleClause != nil {
			return nil, unsupported("SEARCH and CYCLE clauses")
		}
		cte := CTE{Name: c.Ctename, Query: sel, Recursive: w.Recursive}
		for _, a := range c.Aliascolnames {
			cte.Cols = append(cte.Cols, constText(a))
		}
		for _, prev := range ctes {
			if prev.Name == cte.Name {
				return nil, pgerror.Newf(pgerror.Code("42712"), "WITH query name \"%s\" specified more than once", cte.Name)
			}
		}
		ctes = append(ctes, cte)
	}
	s.WithClause = nil
	sel, err := convertSelect(s)
	s.WithClause = w
	if err != nil {
		return nil, err
	}
	sel.With = ctes
	return sel, nil
}
