package exec

import (
	"math"
	"math/bits"
	"slices"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// The arithmetic kernels: + - * / % over integer and float columns,
// unary minus and abs, with PostgreSQL's checks. An integer result outside
// its type (smallint, integer or bigint, whatever the operands' widths)
// is 22003 "<type> out of range"; a float result that is infinite from
// finite operands is 22003 "value out of range: overflow", and a product
// or quotient that rounds to zero from non-zero operands "value out of
// range: underflow", as float8_mul and float8_div report them; a zero
// divisor is 22012. Each kernel runs one tight loop per operator over the
// whole batch, noting whether any row might fail; only then does it look
// at the rows again, skipping NULLs, to report the first that does.

var (
	errSmallintRange = pgerror.New(pgerror.NumericValueOutOfRange, "smallint out of range")
	errIntegerRange  = pgerror.New(pgerror.NumericValueOutOfRange, "integer out of range")
	errBigintRange   = pgerror.New(pgerror.NumericValueOutOfRange, "bigint out of range")
	errFloatOverflow = pgerror.New(pgerror.NumericValueOutOfRange, "value out of range: overflow")
	errFloatUnder    = pgerror.New(pgerror.NumericValueOutOfRange, "value out of range: underflow")
	errDivByZero     = pgerror.New(pgerror.DivisionByZero, "division by zero")
)

// intRange returns the bounds of integer kind k and the error for a value
// outside them.
func intRange(k types.Kind) (lo, hi int64, err error) {
	switch k {
	case types.Int2:
		return math.MinInt16, math.MaxInt16, errSmallintRange
	case types.Int4:
		return math.MinInt32, math.MaxInt32, errIntegerRange
	}
	return math.MinInt64, math.MaxInt64, errBigintRange
}

// resetNulls sizes out for n rows and sets each row's NULL flag from the
// operands; it reports whether any row is NULL.
func resetNulls(out *types.Vec, n int, x, y *types.Vec) bool {
	out.Nulls = slices.Grow(out.Nulls[:0], n)[:n]
	nulls := out.Nulls
	xn := x.Nulls[:n]
	if y == nil {
		copy(nulls, xn)
		return anyTrue(nulls)
	}
	yn := y.Nulls[:n]
	some := false
	for i := range nulls {
		nl := xn[i] || yn[i]
		nulls[i] = nl
		some = some || nl
	}
	return some
}

// arith sets out (empty) to x op y for the first n rows, NULL where either
// is NULL. out's type is the result's: an integer kind or float4/float8.
func arith(op plan.Op, x, y, out *types.Vec, n int) error {
	if out.Type.Kind == types.Numeric {
		return numericArith(op, x, y, out, n)
	}
	if out.Type.Phys() == types.PhysInt {
		return intArith(op, x, y, out, n)
	}
	return floatArith(op, x, y, out, n)
}

// mulOverflows reports whether a*b overflows int64: the high word of the
// 128-bit product is not the sign extension of the low one.
func mulOverflows(a, b int64) bool {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	// The unsigned product's high word, corrected to the signed one.
	shi := int64(hi) - (a>>63)&b - (b>>63)&a
	return shi != int64(lo)>>63
}

// intOpFails reports whether a op b is outside [lo, hi] or divides by
// zero, for one non-NULL row; it returns that row's error.
func intOpFails(op plan.Op, a, b, lo, hi int64, rangeErr error) error {
	var r int64
	switch op {
	case plan.OpAdd:
		r = a + b
		if (r^a)&(r^b) < 0 {
			return rangeErr
		}
	case plan.OpSub:
		r = a - b
		if (a^b)&(r^a) < 0 {
			return rangeErr
		}
	case plan.OpMul:
		if mulOverflows(a, b) {
			return rangeErr
		}
		r = a * b
	case plan.OpDiv, plan.OpMod:
		if b == 0 {
			return errDivByZero
		}
		if b == -1 {
			if op == plan.OpMod {
				return nil // INT_MIN % -1 is 0
			}
			if a == math.MinInt64 {
				return rangeErr
			}
			r = -a
		} else if op == plan.OpDiv {
			r = a / b
		} else {
			r = a % b
		}
	}
	if r < lo || r > hi {
		return rangeErr
	}
	return nil
}

func intArith(op plan.Op, x, y, out *types.Vec, n int) error {
	hasNull := resetNulls(out, n, x, y)
	out.Ints = slices.Grow(out.Ints[:0], n)[:n]
	r, a, b := out.Ints[:n], x.Ints[:n], y.Ints[:n]
	lo, hi, rangeErr := intRange(out.Type.Kind)
	bad := false
	switch op {
	case plan.OpAdd:
		for i := range r {
			s := a[i] + b[i]
			r[i] = s
			bad = bad || (s^a[i])&(s^b[i]) < 0 || s < lo || s > hi
		}
	case plan.OpSub:
		for i := range r {
			s := a[i] - b[i]
			r[i] = s
			bad = bad || (a[i]^b[i])&(s^a[i]) < 0 || s < lo || s > hi
		}
	case plan.OpMul:
		if out.Type.Kind == types.Int8 {
			for i := range r {
				r[i] = a[i] * b[i]
				bad = bad || mulOverflows(a[i], b[i])
			}
		} else {
			// Operands of a smallint or integer product fit in 32 bits,
			// so the product fits in 64.
			for i := range r {
				p := a[i] * b[i]
				r[i] = p
				bad = bad || p < lo || p > hi
			}
		}
	case plan.OpDiv, plan.OpMod:
		for i := range r {
			d := b[i]
			switch {
			case d == 0 || (d == -1 && a[i] == math.MinInt64):
				// Checked below (a NULL row's slot may hold anything).
				r[i] = 0
				bad = true
				continue
			case d == -1:
				r[i] = -a[i]
				if op == plan.OpMod {
					r[i] = 0
				}
			case op == plan.OpDiv:
				r[i] = a[i] / d
			default:
				r[i] = a[i] % d
			}
			bad = bad || r[i] < lo || r[i] > hi
		}
	default:
		return pgerror.AssertionFailedf("operator %s is not arithmetic", op)
	}
	if !bad {
		return nil
	}
	nulls := out.Nulls
	for i := range r {
		if hasNull && nulls[i] {
			r[i] = 0
			continue
		}
		if err := intOpFails(op, a[i], b[i], lo, hi, rangeErr); err != nil {
			return err
		}
	}
	return nil
}

// floatOpFails returns the error a op b gives (r its result, rounded to
// float4 where the type is), for one non-NULL row.
func floatOpFails(op plan.Op, a, b, r float64) error {
	switch op {
	case plan.OpDiv, plan.OpMod:
		if b == 0 && !math.IsNaN(a) {
			return errDivByZero
		}
	}
	switch op {
	case plan.OpAdd, plan.OpSub, plan.OpMul:
		if math.IsInf(r, 0) && !math.IsInf(a, 0) && !math.IsInf(b, 0) {
			return errFloatOverflow
		}
	case plan.OpDiv:
		if math.IsInf(r, 0) && !math.IsInf(a, 0) {
			return errFloatOverflow
		}
	}
	switch op {
	case plan.OpMul:
		if r == 0 && a != 0 && b != 0 {
			return errFloatUnder
		}
	case plan.OpDiv:
		if r == 0 && a != 0 && !math.IsInf(b, 0) {
			return errFloatUnder
		}
	}
	return nil
}

func floatArith(op plan.Op, x, y, out *types.Vec, n int) error {
	hasNull := resetNulls(out, n, x, y)
	out.Floats = slices.Grow(out.Floats[:0], n)[:n]
	r, a, b := out.Floats[:n], x.Floats[:n], y.Floats[:n]
	f32 := out.Type.Kind == types.Float4
	bad := false
	inf := math.IsInf
	switch op {
	case plan.OpAdd:
		for i := range r {
			v := a[i] + b[i]
			if f32 {
				v = float64(float32(v))
			}
			r[i] = v
			bad = bad || inf(v, 0) && !inf(a[i], 0) && !inf(b[i], 0)
		}
	case plan.OpSub:
		for i := range r {
			v := a[i] - b[i]
			if f32 {
				v = float64(float32(v))
			}
			r[i] = v
			bad = bad || inf(v, 0) && !inf(a[i], 0) && !inf(b[i], 0)
		}
	case plan.OpMul:
		for i := range r {
			v := a[i] * b[i]
			if f32 {
				v = float64(float32(v))
			}
			r[i] = v
			bad = bad || inf(v, 0) && !inf(a[i], 0) && !inf(b[i], 0) || v == 0 && a[i] != 0 && b[i] != 0
		}
	case plan.OpDiv:
		for i := range r {
			v := a[i] / b[i]
			if f32 {
				v = float64(float32(v))
			}
			r[i] = v
			bad = bad || b[i] == 0 || inf(v, 0) && !inf(a[i], 0) || v == 0 && a[i] != 0 && !inf(b[i], 0)
		}
	case plan.OpMod:
		for i := range r {
			v := math.Mod(a[i], b[i])
			if f32 {
				v = float64(float32(v))
			}
			r[i] = v
			bad = bad || b[i] == 0
		}
	default:
		return pgerror.AssertionFailedf("operator %s is not arithmetic", op)
	}
	if !bad {
		return nil
	}
	nulls := out.Nulls
	for i := range r {
		if hasNull && nulls[i] {
			r[i] = 0
			continue
		}
		if err := floatOpFails(op, a[i], b[i], r[i]); err != nil {
			return err
		}
	}
	return nil
}

// negate sets out (empty) to -x for the first n rows; abs to |x|.
func negate(x, out *types.Vec, n int, abs bool) error {
	if out.Type.Kind == types.Numeric {
		numericNegate(x, out, n, abs)
		return nil
	}
	hasNull := resetNulls(out, n, x, nil)
	if out.Type.Phys() == types.PhysFloat {
		out.Floats = slices.Grow(out.Floats[:0], n)[:n]
		r, a := out.Floats[:n], x.Floats[:n]
		if abs {
			for i := range r {
				r[i] = math.Abs(a[i])
			}
		} else {
			for i := range r {
				r[i] = -a[i]
			}
		}
		return nil
	}
	out.Ints = slices.Grow(out.Ints[:0], n)[:n]
	r, a := out.Ints[:n], x.Ints[:n]
	lo, _, rangeErr := intRange(out.Type.Kind)
	// -v fits unless v is its type's minimum; the operand's type is the
	// result's.
	bad := false
	for i := range r {
		v := a[i]
		if !abs || v < 0 {
			v = -v
		}
		r[i] = v
		bad = bad || a[i] <= lo
	}
	if !bad {
		return nil
	}
	for i := range r {
		if hasNull && out.Nulls[i] {
			r[i] = 0
			continue
		}
		if a[i] <= lo {
			return rangeErr
		}
	}
	return nil
}
