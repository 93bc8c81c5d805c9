package sql

import (
	"slices"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// pgvector's surface: the distance operators <-> <#> <=> <+>, the
// functions l2_distance, inner_product, cosine_distance, l1_distance,
// vector_norm and l2_normalize, over vectors and one-dimensional float32
// tensors. Dimensions are checked per row (22000), as pgvector does.

var distanceOps = map[string]plan.Op{
	"<->": plan.OpL2Distance, "<#>": plan.OpNegInnerProduct, "<=>": plan.OpCosineDistance, "<+>": plan.OpL1Distance,
}

var distanceFuncs = map[string]plan.Op{
	"l2_distance": plan.OpL2Distance, "inner_product": plan.OpInnerProduct,
	"cosine_distance": plan.OpCosineDistance, "l1_distance": plan.OpL1Distance,
}

// isVectorType reports whether values of t are vectors for the distance
// operators: vector, halfvec, or a float32 tensor of one dimension.
func isVectorType(t types.Type) bool {
	switch t.Kind {
	case types.Vector, types.HalfVec:
		return true
	case types.Tensor:
		return t.DType == types.DTFloat32 && len(t.Shape) == 1
	}
	return false
}

// vectorsMatch reports whether a distance between l and r exists: halfvec
// pairs with halfvec only, as in pgvector; vector and float32 tensors mix.
func vectorsMatch(l, r types.Type) bool {
	return (l.Kind == types.HalfVec) == (r.Kind == types.HalfVec)
}

// vectorOperands types an untyped literal by the other operand (a vector
// literal against a tensor column becomes a one-dimensional float32
// tensor of any length, so either '[1,2]' or '{1,2}' reads) and checks
// that both are vectors. what names the operator or function for errors.
func vectorOperands(l, r plan.Expr, what func() error) (plan.Expr, plan.Expr, error) {
	anyLen := func(t types.Type) types.Type {
		switch t.Kind {
		case types.Tensor:
			return types.TensorOf(types.DTFloat32, types.Ragged)
		case types.HalfVec:
			return types.HalfVecOf(0)
		}
		return types.VectorOf(0)
	}
	switch {
	case isUnknown(l) && isUnknown(r):
		l, r = castExpr(l, types.VectorOf(0)), castExpr(r, types.VectorOf(0))
	case isUnknown(l) && isVectorType(r.Type()):
		l = castExpr(l, anyLen(r.Type()))
	case isUnknown(r) && isVectorType(l.Type()):
		r = castExpr(r, anyLen(l.Type()))
	}
	if !isVectorType(l.Type()) || !isVectorType(r.Type()) || !vectorsMatch(l.Type(), r.Type()) {
		return nil, nil, what()
	}
	return l, r, nil
}

// vectorOp binds `l op r` for a distance operator; ok is false for other
// operators.
func vectorOp(op string, l, r plan.Expr) (plan.Expr, bool, error) {
	o, ok := distanceOps[op]
	if !ok {
		return nil, false, nil
	}
	l, r, err := vectorOperands(l, r, func() error {
		return pgerror.Newf(pgerror.UndefinedFunction, "operator does not exist: %s %s %s", opTypeName(l.Type()), op, opTypeName(r.Type())).
			WithHint("No operator matches the given name and argument types. You might need to add explicit type casts.")
	})
	if err != nil {
		return nil, true, err
	}
	return &plan.Call{Op: o, Args: []plan.Expr{l, r}, Typ: types.TypFloat8}, true, nil
}

// vectorFunc binds pgvector's functions; ok is false for other names.
func vectorFunc(name string, args []plan.Expr) (plan.Expr, bool, error) {
	noFunc := func() error {
		var ts []byte
		for i, a := range args {
			if i > 0 {
				ts = append(ts, ", "...)
			}
			ts = append(ts, opTypeName(a.Type())...)
		}
		return pgerror.Newf(pgerror.UndefinedFunction, "function %s(%s) does not exist", name, ts).
			WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
	}
	if o, ok := distanceFuncs[name]; ok {
		if len(args) != 2 {
			return nil, true, noFunc()
		}
		l, r, err := vectorOperands(args[0], args[1], noFunc)
		if err != nil {
			return nil, true, err
		}
		return &plan.Call{Op: o, Args: []plan.Expr{l, r}, Typ: types.TypFloat8}, true, nil
	}
	// vector_norm takes a vector, l2_norm a halfvec, l2_normalize either.
	var o plan.Op
	kinds := []types.Kind{types.Vector}
	switch name {
	case "vector_norm":
		o = plan.OpVectorNorm
	case "l2_norm":
		o, kinds = plan.OpVectorNorm, []types.Kind{types.HalfVec}
	case "l2_normalize":
		o, kinds = plan.OpL2Normalize, []types.Kind{types.Vector, types.HalfVec}
	default:
		return nil, false, nil
	}
	if len(args) != 1 {
		return nil, true, noFunc()
	}
	x := args[0]
	if isUnknown(x) {
		x = castExpr(x, types.Type{Kind: kinds[0]})
	}
	if !slices.Contains(kinds, x.Type().Kind) {
		return nil, true, noFunc()
	}
	if o == plan.OpVectorNorm {
		return &plan.Call{Op: o, Args: []plan.Expr{x}, Typ: types.TypFloat8}, true, nil
	}
	return &plan.Call{Op: o, Args: []plan.Expr{x}, Typ: types.Type{Kind: x.Type().Kind}}, true, nil
}

// opTypeName is a type as PostgreSQL names it in "operator does not exist"
// and "function does not exist" errors: without modifiers.
func opTypeName(t types.Type) string {
	switch t.Kind {
	case types.Vector:
		return "vector"
	case types.HalfVec:
		return "halfvec"
	case types.Varchar:
		return "character varying"
	}
	return t.String()
}

// vectorArithOps are pgvector's element-wise operators and concatenation,
// between two vectors or two halfvecs.
var vectorArithOps = map[string]plan.Op{
	"+": plan.OpVectorAdd, "-": plan.OpVectorSub, "*": plan.OpVectorMul, "||": plan.OpVectorConcat,
}

// vectorArith binds `l op r` for pgvector's element-wise operators when an
// operand is a vector or a halfvec (an untyped literal takes the other's
// type); ok is false otherwise, for the numeric and text operators.
func vectorArith(op string, l, r plan.Expr) (plan.Expr, bool, error) {
	o, ok := vectorArithOps[op]
	if !ok {
		return nil, false, nil
	}
	isVec := func(t types.Type) bool { return t.Kind == types.Vector || t.Kind == types.HalfVec }
	if !isVec(l.Type()) && !isVec(r.Type()) {
		return nil, false, nil
	}
	switch {
	case isUnknown(l):
		l = castExpr(l, types.Type{Kind: r.Type().Kind})
	case isUnknown(r):
		r = castExpr(r, types.Type{Kind: l.Type().Kind})
	}
	lt, rt := l.Type(), r.Type()
	if lt.Kind != rt.Kind || !isVec(lt) {
		return nil, true, pgerror.Newf(pgerror.UndefinedFunction, "operator does not exist: %s %s %s", opTypeName(lt), op, opTypeName(rt)).
			WithHint("No operator matches the given name and argument types. You might need to add explicit type casts.")
	}
	return &plan.Call{Op: o, Args: []plan.Expr{l, r}, Typ: types.Type{Kind: lt.Kind}}, true, nil
}

// subvectorFunc binds subvector(v, start, count) over a vector or a
// halfvec; ok is false for other names.
func subvectorFunc(name string, args []plan.Expr) (plan.Expr, bool, error) {
	if name != "subvector" {
		return nil, false, nil
	}
	if len(args) == 3 {
		v := args[0]
		if isUnknown(v) {
			v = castExpr(v, types.VectorOf(0))
		}
		start, count := resolveUnknown(args[1]), resolveUnknown(args[2])
		if isUnknown(args[1]) {
			start = castExpr(args[1], types.TypInt4)
		}
		if isUnknown(args[2]) {
			count = castExpr(args[2], types.TypInt4)
		}
		if k := v.Type().Kind; (k == types.Vector || k == types.HalfVec) && start.Type().IsInteger() && count.Type().IsInteger() {
			return &plan.Call{Op: plan.OpSubvector, Args: []plan.Expr{v, start, count}, Typ: types.Type{Kind: k}}, true, nil
		}
	}
	var ts []byte
	for i, a := range args {
		if i > 0 {
			ts = append(ts, ", "...)
		}
		ts = append(ts, opTypeName(a.Type())...)
	}
	return nil, true, pgerror.Newf(pgerror.UndefinedFunction, "function subvector(%s) does not exist", ts).
		WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
}
