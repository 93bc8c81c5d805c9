package sql

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// ArrayExpr is ARRAY[e, ...]; an element may be an ArrayExpr itself.
type ArrayExpr struct{ Elems []Expr }

func (*ArrayExpr) expr() {}

func convertArrayExpr(a *pg.A_ArrayExpr) (Expr, error) {
	elems, err := convertExprs(a.Elements)
	if err != nil {
		return nil, err
	}
	return &ArrayExpr{Elems: elems}, nil
}

// arrayExpr binds an ARRAY constructor of constants (psycopg2 sends Python
// lists so) to an untyped constant holding PostgreSQL's array text, which
// takes its type from where it is used, as a quoted '{...}' would: a
// tensor column, or a vector one (pgvector casts arrays to vectors).
func (b *binder) arrayExpr(e *ArrayExpr) (plan.Expr, error) {
	text, err := b.arrayText(nil, e)
	if err != nil {
		return nil, err
	}
	c := plan.StringConst(types.TypUnknown, string(text))
	c.Array = true
	return c, nil
}

func (b *binder) arrayText(dst []byte, e *ArrayExpr) ([]byte, error) {
	dst = append(dst, '{')
	for i, el := range e.Elems {
		if i > 0 {
			dst = append(dst, ',')
		}
		if sub, ok := el.(*ArrayExpr); ok {
			var err error
			if dst, err = b.arrayText(dst, sub); err != nil {
				return nil, err
			}
			continue
		}
		x, err := b.expr(el)
		if err != nil {
			return nil, err
		}
		c, ok := x.(*plan.Const)
		switch {
		case !ok || c.Param != nil:
			return nil, unsupported("ARRAY[...] of elements other than constants")
		case c.Null:
			dst = append(dst, "NULL"...)
		case c.Typ.Kind == types.Unknown || c.Typ.IsTextual():
			dst = append(dst, '"')
			for _, ch := range c.Val.Bytes.Get(0) {
				if ch == '"' || ch == '\\' {
					dst = append(dst, '\\')
				}
				dst = append(dst, ch)
			}
			dst = append(dst, '"')
		default:
			dst = types.AppendText(dst, c.Val, 0)
		}
	}
	return append(dst, '}'), nil
}

// arrayAsVector rewrites the text of a one-dimensional ARRAY constant in
// vector syntax, [1,2,3].
func arrayAsVector(c *plan.Const) *plan.Const {
	s := c.Val.Bytes.Get(0)
	if len(s) < 2 || s[1] == '{' {
		return c
	}
	out := append([]byte{'['}, s[1:len(s)-1]...)
	return plan.StringConst(types.TypUnknown, string(append(out, ']')))
}
