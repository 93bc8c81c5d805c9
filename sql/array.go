package sql

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/deeplaked/deeplaked/pgerror"
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
//
// ARRAY[...] with elements that are not constants (columns, expressions)
// is a tensor built per row (OpArray): its dtype is the elements' common
// type (bool, int16, int32, int64, float32 or float64), its shape the
// nesting's (ARRAY[ARRAY[a, b], ARRAY[c, d]] is [2][2]).
func (b *binder) arrayExpr(e *ArrayExpr) (plan.Expr, error) {
	shape, leaves, err := b.arrayLeaves(e)
	if err != nil {
		return nil, err
	}
	constant := true
	for _, x := range leaves {
		if c, ok := x.(*plan.Const); !ok || c.Param != nil {
			constant = false
		}
	}
	if !constant {
		return arrayBuild(shape, leaves)
	}
	text, _ := appendArrayText(nil, shape, leaves)
	c := plan.StringConst(types.TypUnknown, string(text))
	c.Array = true
	return c, nil
}

// appendArrayText appends the array text of constant leaves in the
// nesting shape gives, and returns the leaves left.
func appendArrayText(dst []byte, shape []int, leaves []plan.Expr) ([]byte, []plan.Expr) {
	dst = append(dst, '{')
	for i := range shape[0] {
		if i > 0 {
			dst = append(dst, ',')
		}
		if len(shape) > 1 {
			dst, leaves = appendArrayText(dst, shape[1:], leaves)
			continue
		}
		c := leaves[0].(*plan.Const)
		leaves = leaves[1:]
		switch {
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
	return append(dst, '}'), leaves
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

// arrayLeaves binds the elements of e, at any depth, in row-major order,
// and returns the nesting's shape: each level's length, the same for every
// array of a level (else 2202E, as PostgreSQL).
func (b *binder) arrayLeaves(e *ArrayExpr) (shape []int, leaves []plan.Expr, err error) {
	leafDepth := -1
	var walk func(e *ArrayExpr, depth int) error
	walk = func(e *ArrayExpr, depth int) error {
		switch {
		case depth == len(shape) && leafDepth < 0:
			shape = append(shape, len(e.Elems))
		case depth >= len(shape) || shape[depth] != len(e.Elems):
			return mismatchedArray()
		}
		for _, el := range e.Elems {
			if sub, ok := el.(*ArrayExpr); ok {
				if err := walk(sub, depth+1); err != nil {
					return err
				}
				continue
			}
			// Every element sits at the same depth, the deepest.
			if leafDepth < 0 {
				leafDepth = depth
			}
			if depth != leafDepth || depth != len(shape)-1 {
				return mismatchedArray()
			}
			x, err := b.expr(el)
			if err != nil {
				return err
			}
			leaves = append(leaves, x)
		}
		return nil
	}
	if len(e.Elems) == 0 {
		return []int{0}, nil, nil
	}
	if err := walk(e, 0); err != nil {
		return nil, nil, err
	}
	return shape, leaves, nil
}

// arrayBuild is ARRAY[...] of leaves that are not all constants (see
// arrayExpr).
func arrayBuild(shape []int, leaves []plan.Expr) (plan.Expr, error) {
	if len(leaves) == 0 {
		return nil, pgerror.New(pgerror.IndeterminateDatatype, "cannot determine type of empty array").
			WithHint("Explicitly cast to the desired type, for example ARRAY[]::integer[].")
	}
	elem := types.TypUnknown
	for _, x := range leaves {
		t, ok := commonType(elem, x.Type())
		if !ok {
			return nil, pgerror.Newf(pgerror.DatatypeMismatch, "ARRAY types %s and %s cannot be matched", elem, x.Type())
		}
		elem = t
	}
	if elem.Kind == types.Numeric {
		elem = types.TypFloat8 // a tensor of numerics holds float64s
	}
	dt, ok := types.DTypeOf(elem)
	if !ok {
		return nil, unsupported("ARRAY[...] of " + elem.String() + " elements other than constants (a tensor holds numbers or booleans)")
	}
	for i, x := range leaves {
		leaves[i] = castExpr(x, elem)
	}
	return &plan.Call{Op: plan.OpArray, Args: leaves, Typ: types.TensorOf(dt, shape...)}, nil
}

func mismatchedArray() error {
	return pgerror.New(pgerror.ArraySubscriptError, "multidimensional arrays must have array expressions with matching dimensions")
}
