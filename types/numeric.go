package types

// Numeric is PostgreSQL's exact numeric: a decimal coefficient and a
// display scale (the digits after the point it prints, PostgreSQL's
// dscale), or one of the special values NaN, Infinity and -Infinity.
// A Vec holds each value in Bytes, in this encoding:
//
//	small:   [0] 0, [1:3] dscale (uint16, little-endian), [3:11] coefficient (int64, little-endian)
//	big:     [0] 1, [1:3] dscale, [3] sign (0 or 1 for negative), [4:] magnitude (big-endian, no leading zero byte)
//	special: [0] 2 (NaN), 3 (Infinity) or 4 (-Infinity), nothing else
//
// The value is coefficient × 10^-dscale. The small form is used whenever
// the coefficient fits an int64 (the big form never holds one that does),
// so a value with a given coefficient and dscale has exactly one encoding.
// 1.5 and 1.50 are equal numbers with different encodings:
// AppendNumericKey gives equal numbers equal bytes, for hashing and
// grouping, and NumericCompare orders them.
//
// Hot loops read the small form in place with NumericSmall and write it
// with AppendNumericSmall; everything else goes through the functions
// below, which follow PostgreSQL's numeric.c: the result display scales
// of +, -, *, / (select_div_scale), rounding half away from zero, the
// error codes and messages.

// Forms of the numeric encoding.
const (
	numSmall   = 0
	numBig     = 1
	numNaN     = 2
	numPosInf  = 3
	numNegInf  = 4
	numSmallSz = 11
)

// NumericMaxDisplayScale is PostgreSQL's NUMERIC_MAX_DISPLAY_SCALE.
const NumericMaxDisplayScale = 1000

// NumericSmall returns the coefficient and display scale of v when v is
// in the small form.
func NumericSmall(v []byte) (coef int64, dscale int, ok bool) {
	panic("unimplemented")
}

// AppendNumericSmall appends the small form of coef × 10^-dscale.
func AppendNumericSmall(dst []byte, coef int64, dscale int) []byte {
	panic("unimplemented")
}

// AppendNumericInt128 appends (hi<<64 | lo) × 10^-dscale, a signed
// 128-bit coefficient (the sum accumulators' form).
func AppendNumericInt128(dst []byte, hi int64, lo uint64, dscale int) []byte {
	panic("unimplemented")
}

// ParseNumeric appends the numeric s spells, as numeric_in reads it:
// leading and trailing spaces, a sign, digits with an optional point,
// an exponent (1.5e-3 has dscale 4), NaN, Infinity, -Infinity, inf (any
// case). Errors: 22P02 invalid input syntax for type numeric: "s".
func ParseNumeric(dst []byte, s string) ([]byte, error) {
	panic("unimplemented")
}

// AppendNumericText appends v as numeric_out prints it: exactly dscale
// digits after the point ("0.00", "-1.50", "NaN", "Infinity").
func AppendNumericText(dst, v []byte) []byte {
	panic("unimplemented")
}

// AppendNumericBinary appends v in PostgreSQL's binary wire format
// (ndigits, weight, sign, dscale, base-10000 digits, all int16
// big-endian).
func AppendNumericBinary(dst, v []byte) []byte {
	panic("unimplemented")
}

// NumericFromBinary appends the value of b, PostgreSQL's binary wire
// format. Errors: 22P03 invalid_binary_representation.
func NumericFromBinary(dst, b []byte) ([]byte, error) {
	panic("unimplemented")
}

// AppendNumericInt appends i with display scale 0.
func AppendNumericInt(dst []byte, i int64) []byte {
	panic("unimplemented")
}

// AppendNumericFloat appends f as float8_numeric converts it (digits
// significant digits, 15 for float8 and 6 for float4, as its %.*g
// does); NaN and the infinities become numeric's.
func AppendNumericFloat(dst []byte, f float64, digits int) []byte {
	panic("unimplemented")
}

// NumericToInt converts v to the integer kind k (Int2, Int4 or Int8),
// rounding half away from zero. Errors: 22003 "smallint out of range",
// "integer out of range", "bigint out of range"; 0A000 "cannot convert
// NaN to integer" ("smallint", "bigint"), "cannot convert infinity to
// integer".
func NumericToInt(v []byte, k Kind) (int64, error) {
	panic("unimplemented")
}

// NumericToFloat converts v to the nearest float64 (NaN and the
// infinities to float's).
func NumericToFloat(v []byte) float64 {
	panic("unimplemented")
}

// NumericApplyTypmod appends v rounded to scale digits after the point
// (half away from zero), as a value of numeric(precision, scale) holds
// it; dscale becomes scale. precision 0 means unconstrained (v
// unchanged). Errors: 22003 "numeric field overflow" with PostgreSQL's
// detail ("A field with precision 15, scale 2 must round to an absolute
// value less than 10^13."); NaN is allowed, infinities are 22003 ("A
// field with precision 15, scale 2 cannot hold an infinite value.").
func NumericApplyTypmod(dst, v []byte, precision, scale int) ([]byte, error) {
	panic("unimplemented")
}

// NumericAdd appends a + b (display scale: the larger of the two).
// Errors: 22003 value overflows numeric format.
func NumericAdd(dst, a, b []byte) ([]byte, error) {
	panic("unimplemented")
}

// NumericSub appends a - b.
func NumericSub(dst, a, b []byte) ([]byte, error) {
	panic("unimplemented")
}

// NumericMul appends a × b (display scale: the sum of the two, at most
// NumericMaxDisplayScale).
func NumericMul(dst, a, b []byte) ([]byte, error) {
	panic("unimplemented")
}

// NumericDiv appends a / b rounded to the display scale PostgreSQL's
// select_div_scale picks (at least 16 significant digits, at least
// either operand's display scale). Errors: 22012 division by zero.
func NumericDiv(dst, a, b []byte) ([]byte, error) {
	panic("unimplemented")
}

// NumericMod appends a % b (the sign of a; display scale the larger of
// the two). Errors: 22012 division by zero.
func NumericMod(dst, a, b []byte) ([]byte, error) {
	panic("unimplemented")
}

// NumericNeg appends -v.
func NumericNeg(dst, v []byte) []byte {
	panic("unimplemented")
}

// NumericAbs appends |v|.
func NumericAbs(dst, v []byte) []byte {
	panic("unimplemented")
}

// NumericSign appends sign(v): -1, 0 or 1 (NaN for NaN).
func NumericSign(dst, v []byte) []byte {
	panic("unimplemented")
}

// NumericRound appends round(v, scale): half away from zero; display
// scale max(scale, 0); a negative scale rounds left of the point.
func NumericRound(dst, v []byte, scale int) ([]byte, error) {
	panic("unimplemented")
}

// NumericTrunc appends trunc(v, scale).
func NumericTrunc(dst, v []byte, scale int) ([]byte, error) {
	panic("unimplemented")
}

// NumericCeil appends ceil(v) (display scale 0).
func NumericCeil(dst, v []byte) []byte {
	panic("unimplemented")
}

// NumericFloor appends floor(v) (display scale 0).
func NumericFloor(dst, v []byte) []byte {
	panic("unimplemented")
}

// NumericCompare orders a and b as numbers, whatever their display
// scales: -Infinity < finite values < Infinity < NaN (NaN equals NaN).
func NumericCompare(a, b []byte) int {
	panic("unimplemented")
}

// AppendNumericKey appends a form of v that equal numbers share (1.5 and
// 1.50 alike): for hashing, grouping and equality, not for display.
func AppendNumericKey(dst, v []byte) []byte {
	panic("unimplemented")
}

// NumericSum is the running sum of numerics and integers: a 128-bit
// coefficient at the largest display scale added so far, beyond that an
// arbitrary-precision one. Its zero value is the empty sum; it
// allocates only when the sum leaves 128 bits.
type NumericSum struct{}

// Add adds v.
func (s *NumericSum) Add(v []byte) {
	panic("unimplemented")
}

// AddInt adds the integer i (display scale 0).
func (s *NumericSum) AddInt(i int64) {
	panic("unimplemented")
}

// Merge adds the sum o.
func (s *NumericSum) Merge(o *NumericSum) {
	panic("unimplemented")
}

// AppendSum appends the sum (0 with display scale 0 when empty; NaN if a
// NaN was added, or both infinities).
func (s *NumericSum) AppendSum(dst []byte) []byte {
	panic("unimplemented")
}

// AppendAvg appends the sum divided by count as numeric_avg does
// (NumericDiv's display scale). count > 0.
func (s *NumericSum) AppendAvg(dst []byte, count int64) []byte {
	panic("unimplemented")
}
