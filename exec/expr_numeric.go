package exec

import (
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// The numeric kernels: + - * / % over numeric columns. Values whose
// coefficients fit an int64 (numeric.go's small form) add, subtract and
// multiply here in place, without decoding into a general decimal; other
// values and division go through the types package, which follows
// PostgreSQL's numeric.c.

// numericArith sets out (empty, numeric) to x op y for the first n rows,
// NULL where either is NULL.
func numericArith(op plan.Op, x, y, out *types.Vec, n int) error {
	out.Bytes.Data = out.Bytes.Data[:0]
	for i := 0; i < n; i++ {
		if x.Nulls[i] || y.Nulls[i] {
			out.AppendNull()
			continue
		}
		a, b := x.Bytes.Get(i), y.Bytes.Get(i)
		if d, ok := smallArith(op, out.Bytes.Data, a, b); ok {
			out.Bytes.Data = d
			out.AppendedBytes()
			continue
		}
		var err error
		d := out.Bytes.Data
		switch op {
		case plan.OpAdd:
			d, err = types.NumericAdd(d, a, b)
		case plan.OpSub:
			d, err = types.NumericSub(d, a, b)
		case plan.OpMul:
			d, err = types.NumericMul(d, a, b)
		case plan.OpDiv:
			d, err = types.NumericDiv(d, a, b)
		default:
			d, err = types.NumericMod(d, a, b)
		}
		if err != nil {
			return err
		}
		out.Bytes.Data = d
		out.AppendedBytes()
	}
	return nil
}

// pow10 holds the powers of ten an int64 holds.
var pow10 = func() (p [19]int64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return
}()

// smallArith appends a op b when both are in the small form and the
// result fits one: + and - at the larger display scale, * at the sum of
// the two (when it is within numeric's display limit). ok is false
// otherwise, with dst unchanged.
func smallArith(op plan.Op, dst, a, b []byte) ([]byte, bool) {
	if op != plan.OpAdd && op != plan.OpSub && op != plan.OpMul {
		return dst, false
	}
	ca, sa, ok := types.NumericSmall(a)
	if !ok {
		return dst, false
	}
	cb, sb, ok := types.NumericSmall(b)
	if !ok {
		return dst, false
	}
	if op == plan.OpMul {
		s := sa + sb
		if s > types.NumericMaxDisplayScale || mulOverflows(ca, cb) {
			return dst, false
		}
		return types.AppendNumericSmall(dst, ca*cb, s), true
	}
	// Align the scales: the operand of the smaller scale is multiplied up.
	for sa < sb {
		k := min(sb-sa, len(pow10)-1)
		if mulOverflows(ca, pow10[k]) {
			return dst, false
		}
		ca, sa = ca*pow10[k], sa+k
	}
	for sb < sa {
		k := min(sa-sb, len(pow10)-1)
		if mulOverflows(cb, pow10[k]) {
			return dst, false
		}
		cb, sb = cb*pow10[k], sb+k
	}
	var r int64
	if op == plan.OpAdd {
		r = ca + cb
		if (r^ca)&(r^cb) < 0 {
			return dst, false
		}
	} else {
		r = ca - cb
		if (ca^cb)&(r^ca) < 0 {
			return dst, false
		}
	}
	return types.AppendNumericSmall(dst, r, sa), true
}

// numericNegate sets out to -x (|x| when abs is set) for the first n rows.
func numericNegate(x, out *types.Vec, n int, abs bool) {
	out.Bytes.Data = out.Bytes.Data[:0]
	for i := 0; i < n; i++ {
		if x.Nulls[i] {
			out.AppendNull()
			continue
		}
		if abs {
			out.Bytes.Data = types.NumericAbs(out.Bytes.Data, x.Bytes.Get(i))
		} else {
			out.Bytes.Data = types.NumericNeg(out.Bytes.Data, x.Bytes.Get(i))
		}
		out.AppendedBytes()
	}
}

// compareNumerics orders two numerics; both in the small form at one
// display scale (a column of numeric(p, s), say) compare as integers.
func compareNumerics(a, b []byte) int {
	ca, sa, oka := types.NumericSmall(a)
	cb, sb, okb := types.NumericSmall(b)
	if oka && okb && sa == sb {
		switch {
		case ca < cb:
			return -1
		case ca > cb:
			return 1
		}
		return 0
	}
	return types.NumericCompare(a, b)
}
