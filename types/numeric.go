package types

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/bits"
	"slices"
	"strconv"

	"github.com/deeplaked/deeplaked/pgerror"
)

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
//
// Operations on small operands work in 128-bit integers (math/bits) and
// allocate nothing; they fall back to math/big only when an aligned or
// scaled coefficient leaves 128 bits.

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

// Limits of PostgreSQL's storage format, which the values here share so
// that every result PostgreSQL refuses is refused here too.
const (
	// numMaxDscale is NUMERIC_DSCALE_MAX: the stored dscale has 14 bits.
	numMaxDscale = 0x3FFF
	// numMaxIntDigits is the most digits before the point: the stored
	// weight is an int16 count of base-10000 digits.
	numMaxIntDigits = 4 * 32768
	// numMinSigDigits is NUMERIC_MIN_SIG_DIGITS, the significant digits
	// select_div_scale aims for (float8's, and then one).
	numMinSigDigits = 16
	// numMinRoundScale is the lowest scale round and trunc use: every
	// value rounds to zero there (numeric_round clamps the same way).
	numMinRoundScale = -numMaxIntDigits - 1
)

var (
	errNumOverflow = pgerror.New(pgerror.NumericValueOutOfRange, "value overflows numeric format")
	errNumDivZero  = pgerror.New(pgerror.DivisionByZero, "division by zero")
)

// pow10u64[k] is 10^k; 10^19 is the largest power of ten in a uint64.
var pow10u64 = [20]uint64{
	1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
}

// pow10f64[k] is 10^k exactly; 10^22 is the largest exact float64 power.
var pow10f64 = [23]float64{
	1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
}

// NumericSmall returns the coefficient and display scale of v when v is
// in the small form.
func NumericSmall(v []byte) (coef int64, dscale int, ok bool) {
	if len(v) != numSmallSz || v[0] != numSmall {
		return 0, 0, false
	}
	return int64(binary.LittleEndian.Uint64(v[3:])), int(binary.LittleEndian.Uint16(v[1:])), true
}

// AppendNumericSmall appends the small form of coef × 10^-dscale.
func AppendNumericSmall(dst []byte, coef int64, dscale int) []byte {
	dst = append(dst, numSmall, byte(dscale), byte(dscale>>8))
	return binary.LittleEndian.AppendUint64(dst, uint64(coef))
}

// AppendNumericInt128 appends (hi<<64 | lo) × 10^-dscale, a signed
// 128-bit coefficient (the sum accumulators' form).
func AppendNumericInt128(dst []byte, hi int64, lo uint64, dscale int) []byte {
	neg, mh, ml := i128Mag(hi, lo)
	return appendMag(dst, neg, mh, ml, dscale)
}

// numDscale is the display scale of a finite v.
func numDscale(v []byte) int { return int(binary.LittleEndian.Uint16(v[1:3])) }

// smallParts reads a small-form v as sign and magnitude, the form the
// 128-bit paths work in (the magnitude of MinInt64 is 2^63).
func smallParts(v []byte) (neg bool, mag uint64, dscale int) {
	c := int64(binary.LittleEndian.Uint64(v[3:]))
	if c < 0 {
		return true, uint64(-c), numDscale(v)
	}
	return false, uint64(c), numDscale(v)
}

// appendMag appends ±(hi<<64 | lo) × 10^-dscale in the form its size
// calls for, without allocating. A zero magnitude is positive zero.
func appendMag(dst []byte, neg bool, hi, lo uint64, dscale int) []byte {
	if hi == 0 && (lo < 1<<63 || neg && lo == 1<<63) {
		c := int64(lo)
		if neg {
			c = -c
		}
		return AppendNumericSmall(dst, c, dscale)
	}
	var sign byte
	if neg {
		sign = 1
	}
	dst = append(dst, numBig, byte(dscale), byte(dscale>>8), sign)
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], lo)
	i := 0
	for b[i] == 0 {
		i++
	}
	return append(dst, b[i:]...)
}

// appendBigInt appends x × 10^-dscale without checking numeric's range.
func appendBigInt(dst []byte, x *big.Int, dscale int) []byte {
	if x.IsInt64() {
		return AppendNumericSmall(dst, x.Int64(), dscale)
	}
	var sign byte
	if x.Sign() < 0 {
		sign = 1
	}
	dst = append(dst, numBig, byte(dscale), byte(dscale>>8), sign)
	n := (x.BitLen() + 7) / 8
	dst = slices.Grow(dst, n)[:len(dst)+n]
	x.FillBytes(dst[len(dst)-n:])
	return dst
}

// appendChecked appends x × 10^-dscale, or fails as make_result does
// when it has more digits before the point than numeric holds.
func appendChecked(dst []byte, x *big.Int, dscale int) ([]byte, error) {
	if bigOverflows(x, dscale) {
		return dst, errNumOverflow
	}
	return appendBigInt(dst, x, dscale), nil
}

// bigOverflows reports whether |x| × 10^-dscale ≥ 10^131072.
func bigOverflows(x *big.Int, dscale int) bool {
	limit := numMaxIntDigits + dscale
	// |x| < 2^BitLen, and 3.3219 < log2(10): a shorter x is in range
	// without computing the power of ten.
	if float64(x.BitLen()) < float64(limit)*3.3219 {
		return false
	}
	return new(big.Int).Abs(x).Cmp(bigPow10(limit)) >= 0
}

// numBigOf returns the coefficient and display scale of a finite v.
func numBigOf(v []byte) (*big.Int, int) {
	if v[0] == numSmall {
		return big.NewInt(int64(binary.LittleEndian.Uint64(v[3:]))), numDscale(v)
	}
	x := new(big.Int).SetBytes(v[4:])
	if v[3] == 1 {
		x.Neg(x)
	}
	return x, numDscale(v)
}

// bigPow10Tab caches the powers of ten the big paths use most.
var bigPow10Tab = func() (t [64]*big.Int) {
	t[0] = big.NewInt(1)
	for i := 1; i < len(t); i++ {
		t[i] = new(big.Int).Mul(t[i-1], big.NewInt(10))
	}
	return t
}()

// bigPow10 returns 10^n; small powers are shared, so the result is only
// ever an operand, never a receiver.
func bigPow10(n int) *big.Int {
	if n < len(bigPow10Tab) {
		return bigPow10Tab[n]
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// u64Digits is the count of decimal digits of x (1 for 0).
func u64Digits(x uint64) int {
	n := 1
	for n < len(pow10u64) && x >= pow10u64[n] {
		n++
	}
	return n
}

// Unsigned 128-bit helpers: (hi, lo) pairs. ok is false on overflow.

func mul128x64(hi, lo, m uint64) (h, l uint64, ok bool) {
	h1, l1 := bits.Mul64(lo, m)
	h2, l2 := bits.Mul64(hi, m)
	if h2 != 0 {
		return 0, 0, false
	}
	h, c := bits.Add64(h1, l2, 0)
	return h, l1, c == 0
}

// mulPow10 is (hi, lo) × 10^k.
func mulPow10(hi, lo uint64, k int) (uint64, uint64, bool) {
	if hi == 0 && lo == 0 {
		return 0, 0, true
	}
	for k > 0 {
		s := min(k, 19)
		var ok bool
		if hi, lo, ok = mul128x64(hi, lo, pow10u64[s]); !ok {
			return 0, 0, false
		}
		k -= s
	}
	return hi, lo, true
}

// div128 divides (hi, lo) by d: the quotient and the remainder.
func div128(hi, lo, d uint64) (qh, ql, r uint64) {
	qh, r = hi/d, hi%d
	ql, r = bits.Div64(r, lo, d)
	return qh, ql, r
}

func cmp128(ah, al, bh, bl uint64) int {
	switch {
	case ah != bh:
		if ah < bh {
			return -1
		}
		return 1
	case al != bl:
		if al < bl {
			return -1
		}
		return 1
	}
	return 0
}

func inc128(hi, lo uint64) (uint64, uint64) {
	lo++
	if lo == 0 {
		hi++
	}
	return hi, lo
}

// Signed (two's complement) 128-bit helpers, the sum's coefficient.

// i128Mag splits a signed 128-bit value into sign and magnitude.
func i128Mag(hi int64, lo uint64) (neg bool, mh, ml uint64) {
	if hi >= 0 {
		return false, uint64(hi), lo
	}
	l, b := bits.Sub64(0, lo, 0)
	h, _ := bits.Sub64(0, uint64(hi), b)
	return true, h, l
}

// i128FromMag is ±(mh, ml) in two's complement, if it fits.
func i128FromMag(neg bool, mh, ml uint64) (int64, uint64, bool) {
	if !neg {
		return int64(mh), ml, mh < 1<<63
	}
	if mh > 1<<63 || mh == 1<<63 && ml != 0 {
		return 0, 0, false
	}
	l, b := bits.Sub64(0, ml, 0)
	h, _ := bits.Sub64(0, mh, b)
	return int64(h), l, true
}

func i128Add(ah int64, al uint64, bh int64, bl uint64) (int64, uint64, bool) {
	lo, c := bits.Add64(al, bl, 0)
	hi := int64(uint64(ah) + uint64(bh) + c)
	if (ah < 0) == (bh < 0) && (hi < 0) != (ah < 0) {
		return 0, 0, false
	}
	return hi, lo, true
}

func i128MulPow10(hi int64, lo uint64, k int) (int64, uint64, bool) {
	neg, mh, ml := i128Mag(hi, lo)
	mh, ml, ok := mulPow10(mh, ml, k)
	if !ok {
		return 0, 0, false
	}
	return i128FromMag(neg, mh, ml)
}

func i128Big(hi int64, lo uint64) *big.Int {
	neg, mh, ml := i128Mag(hi, lo)
	x := new(big.Int).SetUint64(mh)
	x.Lsh(x, 64).Or(x, new(big.Int).SetUint64(ml))
	if neg {
		x.Neg(x)
	}
	return x
}

// isCSpace is C's isspace in the C locale, what numeric_in skips.
func isCSpace(c byte) bool {
	return c == ' ' || c >= '\t' && c <= '\r'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func allCSpace(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isCSpace(s[i]) {
			return false
		}
	}
	return true
}

// hasPrefixFold is pg_strncasecmp(s, p, len(p)) == 0 for ASCII p.
func hasPrefixFold(s, p string) bool {
	if len(s) < len(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		a, b := s[i], p[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// numSpecialSpellings are the spellings numeric_in accepts for the
// special values, in the order it tries them.
var numSpecialSpellings = [...]struct {
	s    string
	form byte
}{
	{"NaN", numNaN},
	{"Infinity", numPosInf},
	{"+Infinity", numPosInf},
	{"-Infinity", numNegInf},
	{"inf", numPosInf},
	{"+inf", numPosInf},
	{"-inf", numNegInf},
}

func numSyntaxError(s string) error {
	return pgerror.Newf(pgerror.InvalidTextRepresentation, "invalid input syntax for type numeric: \"%s\"", s)
}

// ParseNumeric appends the numeric s spells, as numeric_in reads it:
// leading and trailing spaces, a sign, digits with an optional point,
// an exponent (1.5e-3 has dscale 4), NaN, Infinity, -Infinity, inf (any
// case). Errors: 22P02 invalid input syntax for type numeric: "s";
// 22003 value overflows numeric format (more than 131072 digits before
// the point, more than 16383 after it, or an exponent beyond ±2^30).
func ParseNumeric(dst []byte, s string) ([]byte, error) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	for _, sp := range numSpecialSpellings {
		if hasPrefixFold(s[i:], sp.s) {
			if !allCSpace(s[i+len(sp.s):]) {
				return dst, numSyntaxError(s)
			}
			return append(dst, sp.form), nil
		}
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	start := i
	havePoint := false
	if i < len(s) && s[i] == '.' {
		havePoint = true
		i++
	}
	if i >= len(s) || !isDigit(s[i]) {
		return dst, numSyntaxError(s)
	}
	// The digits accumulate in 128 bits while they fit; wide marks
	// a coefficient that needs the big path.
	var hi, lo uint64
	wide := false
	sig, frac := 0, 0 // significant digits (from the first non-zero), digits after the point
	for i < len(s) {
		c := s[i]
		if isDigit(c) {
			if havePoint {
				frac++
			}
			if sig > 0 || c != '0' {
				sig++
			}
			if !wide {
				h, l, ok := mul128x64(hi, lo, 10)
				var carry uint64
				l, carry = bits.Add64(l, uint64(c-'0'), 0)
				h, carry = bits.Add64(h, 0, carry)
				if ok && carry == 0 {
					hi, lo = h, l
				} else {
					wide = true
				}
			}
		} else if c == '.' {
			if havePoint {
				return dst, numSyntaxError(s)
			}
			havePoint = true
		} else {
			break
		}
		i++
	}
	end := i
	exp := int64(0)
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		// The exponent is read as strtol reads it: leading spaces and a
		// sign, saturating rather than wrapping.
		j := i + 1
		for j < len(s) && isCSpace(s[j]) {
			j++
		}
		eneg := false
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			eneg = s[j] == '-'
			j++
		}
		if j >= len(s) || !isDigit(s[j]) {
			return dst, numSyntaxError(s)
		}
		for ; j < len(s) && isDigit(s[j]); j++ {
			if exp < 1<<40 {
				exp = exp*10 + int64(s[j]-'0')
			}
		}
		if eneg {
			exp = -exp
		}
		if exp >= math.MaxInt32/2 || exp <= -(math.MaxInt32/2) {
			return dst, errNumOverflow
		}
		i = j
	}
	if !allCSpace(s[i:]) {
		return dst, numSyntaxError(s)
	}
	dscale := max(int64(frac)-exp, 0)
	if dscale > numMaxDscale || sig > 0 && int64(sig)-int64(frac)+exp > numMaxIntDigits {
		return dst, errNumOverflow
	}
	// The digits are the coefficient at scale frac-exp; a smaller
	// dscale (never below 0) means trailing zeros to add.
	shift := int(dscale - int64(frac) + exp)
	if !wide {
		if h, l, ok := mulPow10(hi, lo, shift); ok {
			return appendMag(dst, neg, h, l, int(dscale)), nil
		}
	}
	digits := make([]byte, 0, end-start+shift)
	for k := start; k < end; k++ {
		if s[k] != '.' {
			digits = append(digits, s[k])
		}
	}
	for k := 0; k < shift; k++ {
		digits = append(digits, '0')
	}
	x, _ := new(big.Int).SetString(string(digits), 10)
	if neg {
		x.Neg(x)
	}
	return appendBigInt(dst, x, int(dscale)), nil
}

// numMagDigits returns the decimal digits of v's magnitude (no leading
// zeros, "0" for zero), using buf when they fit it.
func numMagDigits(buf []byte, v []byte) (neg bool, digits []byte) {
	if v[0] == numSmall {
		neg, m, _ := smallParts(v)
		return neg, strconv.AppendUint(buf, m, 10)
	}
	return v[3] == 1, new(big.Int).SetBytes(v[4:]).Append(buf, 10)
}

// AppendNumericText appends v as numeric_out prints it: exactly dscale
// digits after the point ("0.00", "-1.50", "NaN", "Infinity").
func AppendNumericText(dst, v []byte) []byte {
	switch v[0] {
	case numNaN:
		return append(dst, "NaN"...)
	case numPosInf:
		return append(dst, "Infinity"...)
	case numNegInf:
		return append(dst, "-Infinity"...)
	}
	var buf [40]byte
	neg, digits := numMagDigits(buf[:0], v)
	d := numDscale(v)
	if neg {
		dst = append(dst, '-')
	}
	n := len(digits)
	if n > d {
		dst = append(dst, digits[:n-d]...)
		if d > 0 {
			dst = append(dst, '.')
			dst = append(dst, digits[n-d:]...)
		}
		return dst
	}
	dst = append(dst, '0')
	if d > 0 {
		dst = append(dst, '.')
		for k := n; k < d; k++ {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	}
	return dst
}

// Signs of PostgreSQL's binary numeric format.
const (
	numWirePos    = 0x0000
	numWireNeg    = 0x4000
	numWireNaN    = 0xC000
	numWirePosInf = 0xD000
	numWireNegInf = 0xF000
	// numWireInfDscale is the dscale numeric_send sends with an
	// infinity: it reads the special header's bits as a short-form
	// dscale, (0xD000 & 0x1F80) >> 7 = 32 (0xF000 gives the same).
	numWireInfDscale = 32
)

// appendNumWireHeader appends the four int16 fields before the digits.
func appendNumWireHeader(dst []byte, ndigits, weight int, sign uint16, dscale int) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(ndigits))
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(weight)))
	dst = binary.BigEndian.AppendUint16(dst, sign)
	return binary.BigEndian.AppendUint16(dst, uint16(dscale))
}

// AppendNumericBinary appends v in PostgreSQL's binary wire format
// (ndigits, weight, sign, dscale, base-10000 digits, all int16
// big-endian), with no leading or trailing zero digits, as numeric_send
// sends a stored value.
func AppendNumericBinary(dst, v []byte) []byte {
	switch v[0] {
	case numNaN:
		return appendNumWireHeader(dst, 0, 0, numWireNaN, 0)
	case numPosInf:
		return appendNumWireHeader(dst, 0, 0, numWirePosInf, numWireInfDscale)
	case numNegInf:
		return appendNumWireHeader(dst, 0, 0, numWireNegInf, numWireInfDscale)
	}
	var buf [40]byte
	neg, digits := numMagDigits(buf[:0], v)
	d := numDscale(v)
	if digits[0] == '0' {
		return appendNumWireHeader(dst, 0, 0, numWirePos, d)
	}
	intLen := len(digits) - d // digits before the point; ≤ 0 for |v| < 0.1
	for digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	// Base-10000 digits are aligned on the point: lead zeros before the
	// first decimal digit complete its group.
	lead := ((-intLen)%4 + 4) % 4
	weight := (intLen+lead)/4 - 1
	ndigits := (lead + len(digits) + 3) / 4
	sign := uint16(numWirePos)
	if neg {
		sign = numWireNeg
	}
	dst = appendNumWireHeader(dst, ndigits, weight, sign, d)
	pos := -lead
	for g := 0; g < ndigits; g++ {
		var nd uint16
		for k := pos; k < pos+4; k++ {
			nd *= 10
			if k >= 0 && k < len(digits) {
				nd += uint16(digits[k] - '0')
			}
		}
		pos += 4
		dst = binary.BigEndian.AppendUint16(dst, nd)
	}
	return dst
}

// NumericFromBinary appends the value of b, PostgreSQL's binary wire
// format, as numeric_recv reads it: digits past dscale are truncated
// away. Errors: 22P03 invalid_binary_representation (a bad sign, scale
// or digit, trailing bytes); 08P01 insufficient data left in message.
func NumericFromBinary(dst, b []byte) ([]byte, error) {
	if len(b) < 8 {
		return dst, errShortValue
	}
	n := int(binary.BigEndian.Uint16(b))
	weight := int(int16(binary.BigEndian.Uint16(b[2:])))
	sign := binary.BigEndian.Uint16(b[4:])
	dscale := int(binary.BigEndian.Uint16(b[6:]))
	switch sign {
	case numWirePos, numWireNeg, numWireNaN, numWirePosInf, numWireNegInf:
	default:
		return dst, pgerror.New(pgerror.InvalidBinaryRepresentation, "invalid sign in external \"numeric\" value")
	}
	if dscale > numMaxDscale {
		return dst, pgerror.New(pgerror.InvalidBinaryRepresentation, "invalid scale in external \"numeric\" value")
	}
	if len(b) < 8+2*n {
		return dst, errShortValue
	}
	digits := b[8 : 8+2*n]
	for k := 0; k < n; k++ {
		if d := int16(binary.BigEndian.Uint16(digits[2*k:])); d < 0 || d >= 10000 {
			return dst, pgerror.New(pgerror.InvalidBinaryRepresentation, "invalid digit in external \"numeric\" value")
		}
	}
	if len(b) > 8+2*n {
		return dst, errLongValue
	}
	switch sign {
	case numWireNaN:
		return append(dst, numNaN), nil
	case numWirePosInf:
		return append(dst, numPosInf), nil
	case numWireNegInf:
		return append(dst, numNegInf), nil
	}
	neg := sign == numWireNeg
	// The digits read as one integer N are the value at scale
	// -4(weight-n+1); k more decimal digits make it the coefficient at
	// dscale (fewer, when k < 0, truncate it).
	k := 4*(weight-n+1) + dscale
	if n <= 9 { // 10000^9 < 2^128
		var hi, lo uint64
		for j := 0; j < n; j++ {
			hi, lo, _ = mul128x64(hi, lo, 10000)
			var c uint64
			lo, c = bits.Add64(lo, uint64(binary.BigEndian.Uint16(digits[2*j:])), 0)
			hi += c
		}
		if k >= 0 {
			if h, l, ok := mulPow10(hi, lo, k); ok {
				return appendMag(dst, neg, h, l, dscale), nil
			}
		} else {
			for k < 0 && (hi != 0 || lo != 0) {
				s := min(-k, 19)
				hi, lo, _ = div128(hi, lo, pow10u64[s])
				k += s
			}
			return appendMag(dst, neg, hi, lo, dscale), nil
		}
	}
	text := make([]byte, 0, 4*n+max(k, 0))
	for j := 0; j < n; j++ {
		d := binary.BigEndian.Uint16(digits[2*j:])
		text = append(text, byte('0'+d/1000), byte('0'+d/100%10), byte('0'+d/10%10), byte('0'+d%10))
	}
	if k < 0 {
		text = text[:max(len(text)+k, 0)]
	} else {
		for j := 0; j < k; j++ {
			text = append(text, '0')
		}
	}
	x := new(big.Int)
	if len(text) > 0 {
		x.SetString(string(text), 10)
	}
	if neg {
		x.Neg(x)
	}
	return appendBigInt(dst, x, dscale), nil
}

// AppendNumericInt appends i with display scale 0.
func AppendNumericInt(dst []byte, i int64) []byte {
	return AppendNumericSmall(dst, i, 0)
}

// AppendNumericFloat appends f as float8_numeric converts it (digits
// significant digits, 15 for float8 and 6 for float4, as its %.*g
// does); NaN and the infinities become numeric's.
func AppendNumericFloat(dst []byte, f float64, digits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, numNaN)
	case math.IsInf(f, 1):
		return append(dst, numPosInf)
	case math.IsInf(f, -1):
		return append(dst, numNegInf)
	}
	// strconv's 'g' and C's %g round the same decimal digits; the value
	// and the digits after the point do not depend on which of the two
	// notations either picks.
	var buf [32]byte
	out, err := ParseNumeric(dst, string(strconv.AppendFloat(buf[:0], f, 'g', digits, 64)))
	if err != nil {
		panic("numeric: unreadable float text: " + err.Error())
	}
	return out
}

// NumericToInt converts v to the integer kind k (Int2, Int4 or Int8),
// rounding half away from zero. Errors: 22003 "smallint out of range",
// "integer out of range", "bigint out of range"; 0A000 "cannot convert
// NaN to integer" ("smallint", "bigint"), "cannot convert infinity to
// integer".
func NumericToInt(v []byte, k Kind) (int64, error) {
	name, lo, hi := "bigint", int64(math.MinInt64), int64(math.MaxInt64)
	switch k {
	case Int2:
		name, lo, hi = "smallint", math.MinInt16, math.MaxInt16
	case Int4:
		name, lo, hi = "integer", math.MinInt32, math.MaxInt32
	}
	switch v[0] {
	case numNaN:
		return 0, pgerror.Newf(pgerror.FeatureNotSupported, "cannot convert NaN to %s", name)
	case numPosInf, numNegInf:
		return 0, pgerror.Newf(pgerror.FeatureNotSupported, "cannot convert infinity to %s", name)
	}
	var i int64
	if v[0] == numSmall {
		neg, m, d := smallParts(v)
		q, up := m, false
		if d > 0 {
			if d < len(pow10u64) {
				p := pow10u64[d]
				q, up = m/p, m%p >= p-m%p
			} else {
				q = 0 // m < 2^64 < 10^20/2
			}
		}
		if up {
			q++
		}
		if q > 1<<63 || !neg && q == 1<<63 {
			return 0, pgerror.Newf(pgerror.NumericValueOutOfRange, "%s out of range", name)
		}
		i = int64(q)
		if neg {
			i = -i
		}
	} else {
		x, d := numBigOf(v)
		x = bigRescale(x, d, 0, roundHalf)
		if !x.IsInt64() {
			return 0, pgerror.Newf(pgerror.NumericValueOutOfRange, "%s out of range", name)
		}
		i = x.Int64()
	}
	if i < lo || i > hi {
		return 0, pgerror.Newf(pgerror.NumericValueOutOfRange, "%s out of range", name)
	}
	return i, nil
}

// NumericToFloat converts v to the nearest float64 (NaN and the
// infinities to float's). Where numeric_float8 fails with 22003 (a
// value beyond float8's range, or a non-zero one that underflows to
// 0), this gives ±Inf or ±0.
func NumericToFloat(v []byte) float64 {
	switch v[0] {
	case numNaN:
		return math.NaN()
	case numPosInf:
		return math.Inf(1)
	case numNegInf:
		return math.Inf(-1)
	}
	if v[0] == numSmall {
		// Both operands exact, so the one division rounds correctly.
		if neg, m, d := smallParts(v); m < 1<<53 && d < len(pow10f64) {
			f := float64(m) / pow10f64[d]
			if neg {
				f = -f
			}
			return f
		}
	}
	var buf [64]byte
	f, _ := strconv.ParseFloat(string(AppendNumericText(buf[:0], v)), 64)
	return f
}

// NumericApplyTypmod appends v rounded to scale digits after the point
// (half away from zero), as a value of numeric(precision, scale) holds
// it; dscale becomes max(scale, 0) (a negative scale rounds left of the
// point). precision 0 means unconstrained (v unchanged). Errors: 22003
// "numeric field overflow" with PostgreSQL's detail ("A field with
// precision 15, scale 2 must round to an absolute value less than
// 10^13."); NaN is allowed, infinities are 22003 ("A field with
// precision 15, scale 2 cannot hold an infinite value.").
func NumericApplyTypmod(dst, v []byte, precision, scale int) ([]byte, error) {
	if precision == 0 {
		return append(dst, v...), nil
	}
	switch v[0] {
	case numNaN:
		return append(dst, v...), nil
	case numPosInf, numNegInf:
		return dst, pgerror.New(pgerror.NumericValueOutOfRange, "numeric field overflow").
			WithDetail("A field with precision %d, scale %d cannot hold an infinite value.", precision, scale)
	}
	maxDigits := precision - scale
	fieldOverflow := func() error {
		bound := "1"
		if maxDigits != 0 {
			bound = "10^" + strconv.Itoa(maxDigits)
		}
		return pgerror.New(pgerror.NumericValueOutOfRange, "numeric field overflow").
			WithDetail("A field with precision %d, scale %d must round to an absolute value less than %s.", precision, scale, bound)
	}
	start := len(dst)
	out, err := numRescale(dst, v, scale, roundHalf)
	if err != nil {
		// Only a value far beyond any precision overflows by rounding.
		return dst, fieldOverflow()
	}
	// The digits before the point (negative for leading zeros after it)
	// must not exceed precision - scale.
	r := out[start:]
	var digits int
	if r[0] == numSmall {
		_, m, _ := smallParts(r)
		if m == 0 {
			return out, nil
		}
		digits = u64Digits(m)
	} else {
		x, _ := numBigOf(r)
		digits = len(x.Abs(x).Text(10))
	}
	if digits-numDscale(r) > maxDigits {
		return dst, fieldOverflow()
	}
	return out, nil
}

// numIsSpecial reports whether the form f is NaN or an infinity.
func numIsSpecial(f byte) bool { return f >= numNaN }

// numSign is -1, 0 or 1 for a value other than NaN.
func numSign(v []byte) int {
	switch v[0] {
	case numPosInf:
		return 1
	case numNegInf:
		return -1
	case numBig:
		if v[3] == 1 {
			return -1
		}
		return 1
	}
	c := int64(binary.LittleEndian.Uint64(v[3:]))
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}

// numInf is the infinity of the given sign.
func numInf(sign int) byte {
	if sign < 0 {
		return numNegInf
	}
	return numPosInf
}

// NumericAdd appends a + b (display scale: the larger of the two).
// Errors: 22003 value overflows numeric format.
func NumericAdd(dst, a, b []byte) ([]byte, error) {
	return numAddSub(dst, a, b, false)
}

// NumericSub appends a - b.
func NumericSub(dst, a, b []byte) ([]byte, error) {
	return numAddSub(dst, a, b, true)
}

func numAddSub(dst, a, b []byte, sub bool) ([]byte, error) {
	if a[0] == numSmall && b[0] == numSmall {
		an, am, ad := smallParts(a)
		bn, bm, bd := smallParts(b)
		if sub {
			bn = !bn
		}
		d := max(ad, bd)
		ah, al, ok1 := mulPow10(0, am, d-ad)
		bh, bl, ok2 := mulPow10(0, bm, d-bd)
		if ok1 && ok2 {
			if an == bn {
				l, c := bits.Add64(al, bl, 0)
				h, c := bits.Add64(ah, bh, c)
				if c == 0 {
					return appendMag(dst, an, h, l, d), nil
				}
			} else {
				// Opposite signs: the larger magnitude wins.
				if cmp128(ah, al, bh, bl) < 0 {
					ah, al, bh, bl, an = bh, bl, ah, al, bn
				}
				l, c := bits.Sub64(al, bl, 0)
				h, _ := bits.Sub64(ah, bh, c)
				return appendMag(dst, an, h, l, d), nil
			}
		}
	}
	if numIsSpecial(a[0]) || numIsSpecial(b[0]) {
		fa, fb := a[0], b[0]
		if sub && fb != numNaN && numIsSpecial(fb) {
			fb = numPosInf + numNegInf - fb
		}
		switch {
		case fa == numNaN || fb == numNaN:
			return append(dst, numNaN), nil
		case numIsSpecial(fa) && numIsSpecial(fb) && fa != fb:
			return append(dst, numNaN), nil // Infinity + -Infinity
		case numIsSpecial(fa):
			return append(dst, fa), nil
		}
		return append(dst, fb), nil
	}
	x, xd := numBigOf(a)
	y, yd := numBigOf(b)
	d := max(xd, yd)
	x.Mul(x, bigPow10(d-xd))
	y.Mul(y, bigPow10(d-yd))
	if sub {
		x.Sub(x, y)
	} else {
		x.Add(x, y)
	}
	return appendChecked(dst, x, d)
}

// NumericMul appends a × b (display scale: the sum of the two, rounded
// to 16383 digits, the most numeric stores, beyond that as numeric_mul
// rounds it).
func NumericMul(dst, a, b []byte) ([]byte, error) {
	if a[0] == numSmall && b[0] == numSmall {
		an, am, ad := smallParts(a)
		bn, bm, bd := smallParts(b)
		if d := ad + bd; d <= numMaxDscale {
			h, l := bits.Mul64(am, bm)
			return appendMag(dst, an != bn, h, l, d), nil
		}
	}
	if numIsSpecial(a[0]) || numIsSpecial(b[0]) {
		switch {
		case a[0] == numNaN || b[0] == numNaN:
			return append(dst, numNaN), nil
		}
		s := numSign(a) * numSign(b)
		if s == 0 {
			return append(dst, numNaN), nil // 0 × Infinity
		}
		return append(dst, numInf(s)), nil
	}
	x, xd := numBigOf(a)
	y, yd := numBigOf(b)
	x.Mul(x, y)
	d := xd + yd
	if d > numMaxDscale {
		x = bigRescale(x, d, numMaxDscale, roundHalf)
		d = numMaxDscale
	}
	return appendChecked(dst, x, d)
}

// numLead returns PostgreSQL's view of a finite v in base 10000: the
// weight of its first non-zero digit and that digit (0, 0 for zero),
// which select_div_scale estimates the quotient's size from.
func numLead(v []byte) (weight, first int) {
	var buf [40]byte
	_, digits := numMagDigits(buf[:0], v)
	if digits[0] == '0' {
		return 0, 0
	}
	e := len(digits) - 1 - numDscale(v) // decimal exponent of the first digit
	weight = e >> 2                     // floor(e / 4)
	g := e - 4*weight + 1               // decimal digits in the first base-10000 digit
	for k := 0; k < g; k++ {
		first *= 10
		if k < len(digits) {
			first += int(digits[k] - '0')
		}
	}
	return weight, first
}

// numDivScale is select_div_scale: enough digits after the point for
// numMinSigDigits significant ones, at least either operand's display
// scale, at most NumericMaxDisplayScale. The quotient's weight is
// estimated from the first base-10000 digits exactly as PostgreSQL does,
// which decides the scale PostgreSQL prints.
func numDivScale(a, b []byte) int {
	w1, f1 := numLead(a)
	w2, f2 := numLead(b)
	qweight := w1 - w2
	if f1 <= f2 {
		qweight--
	}
	rscale := numMinSigDigits - qweight*4
	rscale = max(rscale, numDscale(a), numDscale(b), 0)
	return min(rscale, NumericMaxDisplayScale)
}

// NumericDiv appends a / b rounded to the display scale PostgreSQL's
// select_div_scale picks (at least 16 significant digits, at least
// either operand's display scale, at most NumericMaxDisplayScale).
// Errors: 22012 division by zero.
func NumericDiv(dst, a, b []byte) ([]byte, error) {
	if numIsSpecial(a[0]) || numIsSpecial(b[0]) {
		switch {
		case a[0] == numNaN || b[0] == numNaN:
			return append(dst, numNaN), nil
		case numIsSpecial(a[0]):
			if numIsSpecial(b[0]) {
				return append(dst, numNaN), nil // Infinity / Infinity
			}
			s := numSign(b)
			if s == 0 {
				return dst, errNumDivZero
			}
			return append(dst, numInf(numSign(a)*s)), nil
		}
		// numeric has no underflow: a finite value over an infinity is 0.
		return AppendNumericSmall(dst, 0, 0), nil
	}
	if numSign(b) == 0 {
		return dst, errNumDivZero
	}
	rscale := numDivScale(a, b)
	// a/b at rscale is round(ca × 10^x / (cb × 10^y)): x is usually the
	// one, y only when a's scale is above NumericMaxDisplayScale.
	x := numDscale(b) - numDscale(a) + rscale
	y := max(-x, 0)
	x = max(x, 0)
	if a[0] == numSmall && b[0] == numSmall {
		an, am, _ := smallParts(a)
		bn, bm, _ := smallParts(b)
		nh, nl, ok1 := mulPow10(0, am, x)
		dh, dl, ok2 := mulPow10(0, bm, y)
		if ok1 && ok2 && dh == 0 {
			qh, ql, r := div128(nh, nl, dl)
			if r >= dl-r {
				qh, ql = inc128(qh, ql)
			}
			return appendMag(dst, an != bn, qh, ql, rscale), nil
		}
	}
	n, _ := numBigOf(a)
	d, _ := numBigOf(b)
	n.Mul(n, bigPow10(x))
	d.Mul(d, bigPow10(y))
	return appendChecked(dst, bigDivRound(n, d), rscale)
}

// bigDivRound is n / d rounded half away from zero.
func bigDivRound(n, d *big.Int) *big.Int {
	q, r := new(big.Int).QuoRem(n, d, new(big.Int))
	r.Abs(r).Lsh(r, 1)
	if r.CmpAbs(d) >= 0 {
		if n.Sign() == d.Sign() {
			q.Add(q, bigPow10(0))
		} else {
			q.Sub(q, bigPow10(0))
		}
	}
	return q
}

// NumericMod appends a % b (the sign of a; display scale the larger of
// the two). Errors: 22012 division by zero.
func NumericMod(dst, a, b []byte) ([]byte, error) {
	if numIsSpecial(a[0]) || numIsSpecial(b[0]) {
		switch {
		case a[0] == numNaN || b[0] == numNaN:
			return append(dst, numNaN), nil
		case numIsSpecial(a[0]):
			if !numIsSpecial(b[0]) && numSign(b) == 0 {
				return dst, errNumDivZero
			}
			return append(dst, numNaN), nil // Infinity % anything
		}
		return append(dst, a...), nil // a % ±Infinity is a
	}
	if numSign(b) == 0 {
		return dst, errNumDivZero
	}
	if a[0] == numSmall && b[0] == numSmall {
		an, am, ad := smallParts(a)
		_, bm, bd := smallParts(b)
		d := max(ad, bd)
		ah, al, ok1 := mulPow10(0, am, d-ad)
		bh, bl, ok2 := mulPow10(0, bm, d-bd)
		if ok1 && ok2 && bh == 0 {
			_, _, r := div128(ah, al, bl)
			return appendMag(dst, an, 0, r, d), nil
		}
	}
	x, xd := numBigOf(a)
	y, yd := numBigOf(b)
	d := max(xd, yd)
	x.Mul(x, bigPow10(d-xd))
	y.Mul(y, bigPow10(d-yd))
	return appendBigInt(dst, x.Rem(x, y), d), nil
}

// NumericNeg appends -v.
func NumericNeg(dst, v []byte) []byte {
	switch v[0] {
	case numNaN:
		return append(dst, numNaN)
	case numPosInf:
		return append(dst, numNegInf)
	case numNegInf:
		return append(dst, numPosInf)
	case numSmall:
		neg, m, d := smallParts(v)
		return appendMag(dst, !neg, 0, m, d)
	}
	return numBigWithSign(dst, v, v[3] == 0)
}

// numBigWithSign appends the big-form v with the given sign; -2^63,
// which the small form holds, is the one magnitude that changes form.
func numBigWithSign(dst, v []byte, neg bool) []byte {
	if neg && len(v) == 12 && v[4] == 0x80 && binary.BigEndian.Uint64(v[4:]) == 1<<63 {
		return AppendNumericSmall(dst, math.MinInt64, numDscale(v))
	}
	dst = append(dst, v[:3]...)
	if neg {
		dst = append(dst, 1)
	} else {
		dst = append(dst, 0)
	}
	return append(dst, v[4:]...)
}

// NumericAbs appends |v|.
func NumericAbs(dst, v []byte) []byte {
	switch v[0] {
	case numNaN:
		return append(dst, numNaN)
	case numPosInf, numNegInf:
		return append(dst, numPosInf)
	case numSmall:
		_, m, d := smallParts(v)
		return appendMag(dst, false, 0, m, d)
	}
	return numBigWithSign(dst, v, false)
}

// NumericSign appends sign(v): -1, 0 or 1 (NaN for NaN).
func NumericSign(dst, v []byte) []byte {
	if v[0] == numNaN {
		return append(dst, numNaN)
	}
	return AppendNumericSmall(dst, int64(numSign(v)), 0)
}

// Rounding modes of numRescale.
const (
	roundHalf  = iota // half away from zero (round_var)
	roundTrunc        // toward zero (trunc_var)
	roundCeil         // toward +Infinity
	roundFloor        // toward -Infinity
)

// roundsUp reports whether a magnitude whose dropped part is r of a
// unit p moves up to the next unit.
func roundsUp(mode int, neg bool, r, p uint64) bool {
	switch mode {
	case roundHalf:
		return r >= p-r
	case roundCeil:
		return r > 0 && !neg
	case roundFloor:
		return r > 0 && neg
	}
	return false
}

// numRescale appends the finite or special v rounded by mode to scale
// digits after the point (a negative scale rounds left of it), with
// display scale max(scale, 0). Specials come back unchanged.
func numRescale(dst, v []byte, scale, mode int) ([]byte, error) {
	if numIsSpecial(v[0]) {
		return append(dst, v...), nil
	}
	scale = min(max(scale, numMinRoundScale), numMaxDscale)
	ds := max(scale, 0)
	if v[0] == numSmall {
		neg, m, d := smallParts(v)
		if scale >= d {
			if h, l, ok := mulPow10(0, m, scale-d); ok {
				return appendMag(dst, neg, h, l, ds), nil
			}
		} else {
			q := uint64(0)
			up := false
			if k := d - scale; k < len(pow10u64) {
				p := pow10u64[k]
				q, up = m/p, roundsUp(mode, neg, m%p, p)
			} else {
				// 10^k > 2 × 2^64 > 2m: only ceil and floor of a
				// non-zero value reach the next unit.
				up = mode != roundHalf && roundsUp(mode, neg, m, math.MaxUint64)
			}
			var h uint64
			if up {
				h, q = inc128(0, q)
			}
			if h, l, ok := mulPow10(h, q, ds-scale); ok {
				return appendMag(dst, neg, h, l, ds), nil
			}
		}
	}
	x, d := numBigOf(v)
	x = bigRescale(x, d, scale, mode)
	if x.Sign() != 0 {
		x.Mul(x, bigPow10(ds-scale))
	}
	return appendChecked(dst, x, ds)
}

// bigRescale returns the coefficient at scale to of x at scale from,
// rounded by mode.
func bigRescale(x *big.Int, from, to, mode int) *big.Int {
	if to >= from {
		return new(big.Int).Mul(x, bigPow10(to-from))
	}
	k := from - to
	neg := x.Sign() < 0
	// |x| < 10^(k-1) is below half a unit: skip the large power of ten.
	if (mode == roundHalf || mode == roundTrunc) && float64(x.BitLen()) < float64(k-1)*3.3219 {
		return new(big.Int)
	}
	q, r := new(big.Int).QuoRem(x, bigPow10(k), new(big.Int))
	up := false
	switch mode {
	case roundHalf:
		r.Abs(r).Lsh(r, 1)
		up = r.Cmp(bigPow10(k)) >= 0
	case roundCeil:
		up = r.Sign() != 0 && !neg
	case roundFloor:
		up = r.Sign() != 0 && neg
	}
	if up {
		if neg {
			q.Sub(q, bigPow10(0))
		} else {
			q.Add(q, bigPow10(0))
		}
	}
	return q
}

// NumericRound appends round(v, scale): half away from zero; display
// scale max(scale, 0); a negative scale rounds left of the point.
// Errors: 22003 value overflows numeric format (rounding up past the
// largest value).
func NumericRound(dst, v []byte, scale int) ([]byte, error) {
	return numRescale(dst, v, scale, roundHalf)
}

// NumericTrunc appends trunc(v, scale).
func NumericTrunc(dst, v []byte, scale int) ([]byte, error) {
	return numRescale(dst, v, scale, roundTrunc)
}

// NumericCeil appends ceil(v) (display scale 0). Where PostgreSQL fails
// with 22003 (ceil of a value 131072 nines long), this gives the
// value beyond numeric's range.
func NumericCeil(dst, v []byte) []byte {
	out, _ := numRescaleUnchecked(dst, v, roundCeil)
	return out
}

// NumericFloor appends floor(v) (display scale 0).
func NumericFloor(dst, v []byte) []byte {
	out, _ := numRescaleUnchecked(dst, v, roundFloor)
	return out
}

// numRescaleUnchecked rounds v to an integer by mode, keeping a result
// beyond numeric's range rather than failing.
func numRescaleUnchecked(dst, v []byte, mode int) ([]byte, error) {
	out, err := numRescale(dst, v, 0, mode)
	if err != nil {
		x, d := numBigOf(v)
		return appendBigInt(dst, bigRescale(x, d, 0, mode), 0), nil
	}
	return out, nil
}

// numRank orders the forms: -Infinity, finite values, Infinity, NaN.
func numRank(f byte) int {
	switch f {
	case numNegInf:
		return 0
	case numPosInf:
		return 2
	case numNaN:
		return 3
	}
	return 1
}

// NumericCompare orders a and b as numbers, whatever their display
// scales: -Infinity < finite values < Infinity < NaN (NaN equals NaN).
func NumericCompare(a, b []byte) int {
	ra, rb := numRank(a[0]), numRank(b[0])
	if ra != rb {
		if ra < rb {
			return -1
		}
		return 1
	}
	if ra != 1 {
		return 0
	}
	sa, sb := numSign(a), numSign(b)
	if sa != sb {
		if sa < sb {
			return -1
		}
		return 1
	}
	if sa == 0 {
		return 0
	}
	if a[0] == numSmall && b[0] == numSmall {
		_, am, ad := smallParts(a)
		_, bm, bd := smallParts(b)
		// Align the scales; a magnitude that leaves 128 bits on the way
		// is the larger one, the other being under 2^64.
		var c int
		if ad < bd {
			h, l, ok := mulPow10(0, am, bd-ad)
			c = 1
			if ok {
				c = cmp128(h, l, 0, bm)
			}
		} else {
			h, l, ok := mulPow10(0, bm, ad-bd)
			c = -1
			if ok {
				c = cmp128(0, am, h, l)
			}
		}
		return c * sa
	}
	x, xd := numBigOf(a)
	y, yd := numBigOf(b)
	d := max(xd, yd)
	x.Mul(x, bigPow10(d-xd))
	y.Mul(y, bigPow10(d-yd))
	return x.Cmp(y)
}

// AppendNumericKey appends a form of v that equal numbers share (1.5 and
// 1.50 alike): for hashing, grouping and equality, not for display. It
// is v's encoding with the trailing zeros after the point dropped, so a
// valid numeric too.
func AppendNumericKey(dst, v []byte) []byte {
	switch v[0] {
	case numNaN, numPosInf, numNegInf:
		return append(dst, v[0])
	case numSmall:
		c, d, _ := NumericSmall(v)
		if c == 0 {
			d = 0
		}
		for d > 0 && c%10 == 0 {
			c /= 10
			d--
		}
		return AppendNumericSmall(dst, c, d)
	}
	x, d := numBigOf(v)
	q, r := new(big.Int), new(big.Int)
	ten := bigPow10(1)
	for d > 0 {
		if q.QuoRem(x, ten, r); r.Sign() != 0 {
			break
		}
		x, q = q, x
		d--
	}
	return appendBigInt(dst, x, d)
}

// NumericSum is the running sum of numerics and integers: a 128-bit
// coefficient at the largest display scale added so far, beyond that an
// arbitrary-precision one. Its zero value is the empty sum; it
// allocates only when the sum leaves 128 bits.
type NumericSum struct {
	// hi:lo is the coefficient in two's complement while wide is nil.
	hi int64
	lo uint64
	// dscale is the largest display scale added, the sum's (as
	// PostgreSQL's accum_sum keeps it).
	dscale int
	// wide is the coefficient once it has left 128 bits; it stays there.
	wide *big.Int
	// The special values added, which decide the result over any
	// finite sum.
	nan, pinf, ninf bool
}

// Add adds v.
func (s *NumericSum) Add(v []byte) {
	switch v[0] {
	case numSmall:
		c := int64(binary.LittleEndian.Uint64(v[3:]))
		s.addI128(c>>63, uint64(c), numDscale(v))
	case numBig:
		x, d := numBigOf(v)
		s.addBig(x, d)
	case numNaN:
		s.nan = true
	case numPosInf:
		s.pinf = true
	case numNegInf:
		s.ninf = true
	}
}

// AddInt adds the integer i (display scale 0).
func (s *NumericSum) AddInt(i int64) {
	s.addI128(i>>63, uint64(i), 0)
}

// addI128 adds the signed 128-bit coefficient hi:lo at display scale d.
func (s *NumericSum) addI128(hi int64, lo uint64, d int) {
	if s.wide == nil {
		if d > s.dscale {
			if h, l, ok := i128MulPow10(s.hi, s.lo, d-s.dscale); ok {
				s.hi, s.lo, s.dscale = h, l, d
			}
		}
		h, l, ok := hi, lo, d == s.dscale
		if d < s.dscale {
			h, l, ok = i128MulPow10(hi, lo, s.dscale-d)
		}
		if ok {
			if h, l, ok := i128Add(s.hi, s.lo, h, l); ok {
				s.hi, s.lo = h, l
				return
			}
		}
	}
	s.addBig(i128Big(hi, lo), d)
}

// addBig adds x at display scale d on the arbitrary-precision path.
func (s *NumericSum) addBig(x *big.Int, d int) {
	if s.wide == nil {
		s.wide = i128Big(s.hi, s.lo)
		s.hi, s.lo = 0, 0
	}
	if d > s.dscale {
		s.wide.Mul(s.wide, bigPow10(d-s.dscale))
		s.dscale = d
	} else if d < s.dscale {
		x = new(big.Int).Mul(x, bigPow10(s.dscale-d))
	}
	s.wide.Add(s.wide, x)
}

// Merge adds the sum o.
func (s *NumericSum) Merge(o *NumericSum) {
	s.nan = s.nan || o.nan
	s.pinf = s.pinf || o.pinf
	s.ninf = s.ninf || o.ninf
	if o.wide != nil {
		s.addBig(o.wide, o.dscale)
	} else {
		s.addI128(o.hi, o.lo, o.dscale)
	}
}

// special is the form of the sum when a special value decides it.
func (s *NumericSum) special() (byte, bool) {
	switch {
	case s.nan || s.pinf && s.ninf:
		return numNaN, true
	case s.pinf:
		return numPosInf, true
	case s.ninf:
		return numNegInf, true
	}
	return 0, false
}

// AppendSum appends the sum (0 with display scale 0 when empty; NaN if a
// NaN was added, or both infinities).
func (s *NumericSum) AppendSum(dst []byte) []byte {
	if f, ok := s.special(); ok {
		return append(dst, f)
	}
	if s.wide != nil {
		return appendBigInt(dst, s.wide, s.dscale)
	}
	return AppendNumericInt128(dst, s.hi, s.lo, s.dscale)
}

// AppendAvg appends the sum divided by count as numeric_avg does
// (NumericDiv's display scale). count > 0.
func (s *NumericSum) AppendAvg(dst []byte, count int64) []byte {
	if f, ok := s.special(); ok {
		return append(dst, f)
	}
	var sb, cb [32]byte
	out, err := NumericDiv(dst, s.AppendSum(sb[:0]), AppendNumericInt(cb[:0], count))
	if err != nil {
		panic("numeric: average of an empty sum")
	}
	return out
}
