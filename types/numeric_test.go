package types

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/internal/pgtest"
	"github.com/deeplaked/deeplaked/pgerror"
)

// mustNum parses s or fails the test.
func mustNum(t testing.TB, s string) []byte {
	t.Helper()
	v, err := ParseNumeric(nil, s)
	if err != nil {
		t.Fatalf("ParseNumeric(%q): %v", s, err)
	}
	return v
}

func numText(v []byte) string { return string(AppendNumericText(nil, v)) }

// errText is how the tables write an outcome: the text of a value, or
// "ERROR <SQLSTATE>" for an error.
func errText(err error) string { return "ERROR " + string(pgerror.GetCode(err)) }

func outcome(v []byte, err error) string {
	if err != nil {
		return errText(err)
	}
	return numText(v)
}

func TestNumericParsePrint(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"0", "0"},
		{"  -1.50  ", "-1.50"},
		{"\t+.5\n", "0.5"},
		{"5.", "5"},
		{"-0.00", "0.00"},
		{"-0", "0"},
		{"000123.4500", "123.4500"},
		{"1.5e-3", "0.0015"},
		{"1.5E+3", "1500"},
		{"1.5e3", "1500"},
		{"1.25e1", "12.5"},
		{"1e 5", "100000"}, // the exponent is read by strtol, which skips spaces
		{"0e-5", "0.00000"},
		{"-.001e2", "-0.1"},
		{"12345678901234567890123456789.123456789", "12345678901234567890123456789.123456789"},
		{"-9223372036854775808", "-9223372036854775808"},
		{"9223372036854775808", "9223372036854775808"},
		{"-99999999999999999999999999999999999999.99", "-99999999999999999999999999999999999999.99"},
		{"340282366920938463463374607431768211456", "340282366920938463463374607431768211456"},
		{"0.000000000000000000000000000000000000000000001", "0.000000000000000000000000000000000000000000001"},
		{"NaN", "NaN"},
		{" nan ", "NaN"},
		{"Infinity", "Infinity"},
		{"+inFinity", "Infinity"},
		{"inf", "Infinity"},
		{"+INF", "Infinity"},
		{"-inf", "-Infinity"},
		{"  -Infinity  ", "-Infinity"},
		// syntax errors
		{"", "ERROR 22P02"},
		{"   ", "ERROR 22P02"},
		{".", "ERROR 22P02"},
		{"-", "ERROR 22P02"},
		{"+-1", "ERROR 22P02"},
		{"- 1", "ERROR 22P02"},
		{"1.2.3", "ERROR 22P02"},
		{"1e", "ERROR 22P02"},
		{"1e+", "ERROR 22P02"},
		{"1e1.5", "ERROR 22P02"},
		{"abc", "ERROR 22P02"},
		{"1 2", "ERROR 22P02"},
		{"infinit", "ERROR 22P02"},
		{"NaNx", "ERROR 22P02"},
		{"+nan", "ERROR 22P02"},
		{"1_000", "ERROR 22P02"},
		{"0x10", "ERROR 22P02"},
		{".e1", "ERROR 22P02"},
		// beyond the format: 131072 digits before the point, 16383 after
		{"1e131072", "ERROR 22003"},
		{"1e-16384", "ERROR 22003"},
		{"0e-16384", "ERROR 22003"},
		{"1e1073741823", "ERROR 22003"},
		{"1e-1073741823", "ERROR 22003"},
		{"1e99999999999999999999999", "ERROR 22003"},
		{"1e1073741823 x", "ERROR 22003"}, // the exponent fails before the junk
		{"0e131072", "0"},
	} {
		v, err := ParseNumeric(nil, c.in)
		if got := outcome(v, err); got != c.want {
			t.Errorf("ParseNumeric(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	_, err := ParseNumeric(nil, " 1 2")
	if err == nil || err.Error() != `invalid input syntax for type numeric: " 1 2"` {
		t.Errorf("syntax error message: %v", err)
	}
	if _, err := ParseNumeric(nil, "1e131072"); err == nil || err.Error() != "value overflows numeric format" {
		t.Errorf("overflow message: %v", err)
	}
	// The extremes of the format parse.
	if s := numText(mustNum(t, "1e131071")); len(s) != 131072 {
		t.Errorf("1e131071 prints %d digits", len(s))
	}
	if s := numText(mustNum(t, "1e-16383")); len(s) != 16385 || !strings.HasSuffix(s, "01") {
		t.Errorf("1e-16383 prints %d characters", len(s))
	}
	// Forms: the small one whenever the coefficient fits an int64.
	for _, c := range []struct {
		in    string
		small bool
	}{
		{"9223372036854775807", true}, {"-9223372036854775808", true},
		{"9223372036854775808", false}, {"-9223372036854775809", false},
		{"922337203685477580.7", true}, {"1e18", true}, {"1e19", false},
		{"0.0000000000000000000000000000000000001", true},
	} {
		v := mustNum(t, c.in)
		if _, _, ok := NumericSmall(v); ok != c.small {
			t.Errorf("%s: small form %v, want %v", c.in, ok, c.small)
		}
		if !c.small && (v[0] != numBig || v[4] == 0) {
			t.Errorf("%s: bad big form % x", c.in, v)
		}
	}
	if c, d, ok := NumericSmall(mustNum(t, "-1.50")); !ok || c != -150 || d != 2 {
		t.Errorf("NumericSmall(-1.50) = %d, %d, %v", c, d, ok)
	}
	if got := numText(AppendNumericSmall(nil, -5, 3)); got != "-0.005" {
		t.Errorf("AppendNumericSmall(-5, 3) = %s", got)
	}
	if got := numText(AppendNumericInt128(nil, -1, 0, 2)); got != "-184467440737095516.16" {
		t.Errorf("AppendNumericInt128(-2^64) = %s", got)
	}
	if got := numText(AppendNumericInt128(nil, math.MinInt64, 0, 0)); got != "-170141183460469231731687303715884105728" {
		t.Errorf("AppendNumericInt128(-2^127) = %s", got)
	}
	if got := numText(AppendNumericInt(nil, math.MinInt64)); got != "-9223372036854775808" {
		t.Errorf("AppendNumericInt = %s", got)
	}
}

// numOps are the binary operations by their SQL operator.
var numOps = map[string]func(dst, a, b []byte) ([]byte, error){
	"+": NumericAdd, "-": NumericSub, "*": NumericMul, "/": NumericDiv, "%": NumericMod,
}

func TestNumericArithmetic(t *testing.T) {
	for _, c := range []struct{ a, op, b, want string }{
		{"1.5", "+", "2.25", "3.75"},
		{"9223372036854775807", "+", "1", "9223372036854775808"},
		{"-9223372036854775808", "-", "1", "-9223372036854775809"},
		{"9223372036854775808", "-", "1", "9223372036854775807"},
		{"0.1", "+", "-0.10", "0.00"},
		{"1", "-", "1.000", "0.000"},
		{"1e-20", "+", "123456789012345678", "123456789012345678.00000000000000000001"},
		{"99999999999999999999999999999999999999", "+", "1", "100000000000000000000000000000000000000"},
		{"-1.1", "+", "1e-40", "-1.0999999999999999999999999999999999999999"},
		{"1.50", "*", "2.0", "3.000"},
		{"-3", "*", "0.00", "0.00"},
		{"99999999999999999999.99", "*", "99999999999999999999.99", "9999999999999999999998000000000000000000.0001"},
		{"-9223372036854775808", "*", "-1", "9223372036854775808"},
		{"1e-9000", "*", "1e-9000", "0." + strings.Repeat("0", 16383)},
		{"1", "/", "3", "0.33333333333333333333"},
		{"10", "/", "3", "3.3333333333333333"},
		{"2", "/", "3.0", "0.66666666666666666667"},
		{"1", "/", "30000", "0.000033333333333333333333"},
		{"0", "/", "7", "0.00000000000000000000"},
		{"7", "/", "7", "1.00000000000000000000"},
		{"-7", "/", "2", "-3.5000000000000000"},
		{"12345678901234567890", "/", "0.001", "12345678901234567890000.000"},
		{"1", "/", "-0.00000000000000000000000000000000000003", "-33333333333333333333333333333333333333.33333333333333333333333333333333333333"},
		{"9999", "/", "1", "9999.0000000000000000"},
		{"10000", "/", "1", "10000.0000000000000000"},
		{"-2.5", "/", "-0.5", "5.0000000000000000"},
		{"5e-16383", "/", "-1", "0." + strings.Repeat("0", 1000)}, // the scale stops at 1000
		{"1e-1000", "/", "3", "0." + strings.Repeat("0", 1000)},
		{"1e-999", "/", "-2", "-0." + strings.Repeat("0", 999) + "5"},
		{"5", "%", "3", "2"},
		{"-5", "%", "3", "-2"},
		{"5", "%", "-3", "2"},
		{"5.5", "%", "2", "1.5"},
		{"0.7", "%", "0.20", "0.10"},
		{"-4", "%", "2", "0"},
		{"123456789012345678901234567890", "%", "7", "0"},
		{"123456789012345678901234567891.5", "%", "-7", "1.5"},
		{"1", "/", "0", "ERROR 22012"},
		{"0", "/", "0.00", "ERROR 22012"},
		{"1", "%", "0.0", "ERROR 22012"},
		// PostgreSQL 15's rules for the special values
		{"Infinity", "+", "-Infinity", "NaN"},
		{"Infinity", "-", "Infinity", "NaN"},
		{"Infinity", "-", "-Infinity", "Infinity"},
		{"Infinity", "+", "1", "Infinity"},
		{"1", "-", "Infinity", "-Infinity"},
		{"1", "-", "-Infinity", "Infinity"},
		{"NaN", "+", "1", "NaN"},
		{"NaN", "-", "Infinity", "NaN"},
		{"Infinity", "*", "0", "NaN"},
		{"0", "*", "-Infinity", "NaN"},
		{"-Infinity", "*", "-2", "Infinity"},
		{"-Infinity", "*", "Infinity", "-Infinity"},
		{"NaN", "*", "0", "NaN"},
		{"Infinity", "/", "Infinity", "NaN"},
		{"Infinity", "/", "-2", "-Infinity"},
		{"-Infinity", "/", "-0.5", "Infinity"},
		{"Infinity", "/", "0", "ERROR 22012"},
		{"NaN", "/", "0", "NaN"},
		{"1", "/", "Infinity", "0"},
		{"-1.5", "/", "-Infinity", "0"},
		{"Infinity", "%", "1", "NaN"},
		{"Infinity", "%", "0", "ERROR 22012"},
		{"Infinity", "%", "Infinity", "NaN"},
		{"5.5", "%", "-Infinity", "5.5"},
		{"NaN", "%", "0", "NaN"},
		{"1", "%", "NaN", "NaN"},
	} {
		v, err := numOps[c.op](nil, mustNum(t, c.a), mustNum(t, c.b))
		if got := outcome(v, err); got != c.want {
			t.Errorf("%s %s %s = %s, want %s", c.a, c.op, c.b, got, c.want)
		}
	}
	// Beyond 131072 digits before the point.
	top := mustNum(t, strings.Repeat("9", 131072))
	if _, err := NumericAdd(nil, top, mustNum(t, "1")); pgerror.GetCode(err) != pgerror.NumericValueOutOfRange {
		t.Errorf("max + 1: %v", err)
	}
	if _, err := NumericMul(nil, top, mustNum(t, "10")); err == nil || err.Error() != "value overflows numeric format" {
		t.Errorf("max * 10: %v", err)
	}
	if _, err := NumericDiv(nil, mustNum(t, "1"), mustNum(t, "0")); err == nil || err.Error() != "division by zero" {
		t.Errorf("1 / 0: %v", err)
	}
}

func TestNumericUnary(t *testing.T) {
	round := func(k int) func([]byte) ([]byte, error) {
		return func(v []byte) ([]byte, error) { return NumericRound(nil, v, k) }
	}
	trunc := func(k int) func([]byte) ([]byte, error) {
		return func(v []byte) ([]byte, error) { return NumericTrunc(nil, v, k) }
	}
	noErr := func(f func(dst, v []byte) []byte) func([]byte) ([]byte, error) {
		return func(v []byte) ([]byte, error) { return f(nil, v), nil }
	}
	ceil, floor, abs := noErr(NumericCeil), noErr(NumericFloor), noErr(NumericAbs)
	neg, sign := noErr(NumericNeg), noErr(NumericSign)
	for _, c := range []struct {
		name string
		f    func([]byte) ([]byte, error)
		in   string
		want string
	}{
		{"round -1", round(-1), "123.456", "120"},
		{"round -5", round(-5), "123.456", "0"},
		{"round -2", round(-2), "-150", "-200"},
		{"round -1", round(-1), "5", "10"},
		{"round -1", round(-1), "-5", "-10"},
		{"round 3", round(3), "5.5", "5.500"},
		{"round 0", round(0), "0.5", "1"},
		{"round 0", round(0), "-0.5", "-1"},
		{"round 0", round(0), "2.5", "3"},
		{"round 0", round(0), "-2.5", "-3"},
		{"round 0", round(0), "0.4999999999999999999999", "0"},
		{"round 1", round(1), "1.45", "1.5"},
		{"round 1", round(1), "-1.45", "-1.5"},
		{"round 1", round(1), "9.96", "10.0"},
		{"round 2", round(2), "-0.0001", "0.00"},
		{"round -1", round(-1), "995", "1000"},
		{"round -19", round(-19), "9223372036854775807", "10000000000000000000"},
		{"round -20", round(-20), "9223372036854775807", "0"},
		{"round -30", round(-30), "-5e29", "-1000000000000000000000000000000"},
		{"round 2", round(2), "1234567890123456789012345.675", "1234567890123456789012345.68"},
		{"round -2147483647", round(-2147483647), "123", "0"},
		{"round 2", round(2), "NaN", "NaN"},
		{"round 0", round(0), "-Infinity", "-Infinity"},
		{"trunc -2", trunc(-2), "-123.456", "-100"},
		{"trunc 1", trunc(1), "1.99", "1.9"},
		{"trunc 0", trunc(0), "-0.9", "0"},
		{"trunc 4", trunc(4), "1.5", "1.5000"},
		{"trunc -3", trunc(-3), "Infinity", "Infinity"},
		{"trunc 1", trunc(1), "-12345678901234567890123.99", "-12345678901234567890123.9"},
		{"ceil", ceil, "-0.5", "0"},
		{"ceil", ceil, "1.01", "2"},
		{"ceil", ceil, "-1.5", "-1"},
		{"ceil", ceil, "2.000", "2"},
		{"ceil", ceil, "0.0000000000000000000001", "1"},
		{"ceil", ceil, "12345678901234567890123.1", "12345678901234567890124"},
		{"ceil", ceil, "Infinity", "Infinity"},
		{"floor", floor, "-0.5", "-1"},
		{"floor", floor, "1.99", "1"},
		{"floor", floor, "-1.5", "-2"},
		{"floor", floor, "-0.0000000000000000000001", "-1"},
		{"floor", floor, "NaN", "NaN"},
		{"abs", abs, "-1.50", "1.50"},
		{"abs", abs, "-Infinity", "Infinity"},
		{"abs", abs, "-9223372036854775808", "9223372036854775808"},
		{"abs", abs, "-9223372036854775809", "9223372036854775809"},
		{"neg", neg, "0.00", "0.00"},
		{"neg", neg, "-9223372036854775808", "9223372036854775808"},
		{"neg", neg, "9223372036854775808", "-9223372036854775808"},
		{"neg", neg, "NaN", "NaN"},
		{"neg", neg, "Infinity", "-Infinity"},
		{"sign", sign, "-2.50", "-1"},
		{"sign", sign, "0.00", "0"},
		{"sign", sign, "1e30", "1"},
		{"sign", sign, "-Infinity", "-1"},
		{"sign", sign, "NaN", "NaN"},
	} {
		v, err := c.f(mustNum(t, c.in))
		if got := outcome(v, err); got != c.want {
			t.Errorf("%s(%s) = %s, want %s", c.name, c.in, got, c.want)
		}
	}
	// round and trunc keep at most 16383 digits after the point.
	for _, f := range []func(dst, v []byte, s int) ([]byte, error){NumericRound, NumericTrunc} {
		v, err := f(nil, mustNum(t, "1.5"), 20000)
		if err != nil || numDscale(v) != numMaxDscale {
			t.Errorf("round/trunc(1.5, 20000): dscale %d, %v", numDscale(v), err)
		}
	}
	// Rounding up past the largest value overflows.
	if _, err := NumericRound(nil, mustNum(t, strings.Repeat("9", 131072)), -2); pgerror.GetCode(err) != pgerror.NumericValueOutOfRange {
		t.Errorf("round(max, -2): %v", err)
	}
	if v, err := NumericRound(nil, mustNum(t, "5"+strings.Repeat("0", 131071)), -131073); err != nil || numText(v) != "0" {
		t.Errorf("round(5e131071, -131073) = %v, %v", v, err)
	}
	// Integers of other forms round with them.
	if v, err := NumericRound(nil, mustNum(t, "4"+strings.Repeat("0", 131071)), -131071); err != nil || len(numText(v)) != 131072 {
		t.Errorf("round(4e131071, -131071): %v", err)
	}
}

func TestNumericTypmod(t *testing.T) {
	for _, c := range []struct {
		in               string
		precision, scale int
		want, detail     string
	}{
		{"1234.567", 15, 2, "1234.57", ""},
		{"-1234.565", 15, 2, "-1234.57", ""},
		{"1.5", 0, 0, "1.5", ""},
		{"NaN", 15, 2, "NaN", ""},
		{"99.994", 4, 2, "99.99", ""},
		{"99.995", 4, 2, "ERROR 22003", "A field with precision 4, scale 2 must round to an absolute value less than 10^2."},
		{"10000000000000", 15, 2, "ERROR 22003", "A field with precision 15, scale 2 must round to an absolute value less than 10^13."},
		{"9999999999999.99", 15, 2, "9999999999999.99", ""},
		{"1.5", 3, 5, "ERROR 22003", "A field with precision 3, scale 5 must round to an absolute value less than 10^-2."},
		{"0.001", 3, 5, "0.00100", ""},
		{"0.009994", 3, 5, "0.00999", ""},
		{"12345", 2, -2, "ERROR 22003", "A field with precision 2, scale -2 must round to an absolute value less than 10^4."},
		{"1234", 2, -2, "1200", ""},
		{"9949.99", 2, -2, "9900", ""},
		{"1", 1, 1, "ERROR 22003", "A field with precision 1, scale 1 must round to an absolute value less than 1."},
		{"0.95", 1, 1, "ERROR 22003", "A field with precision 1, scale 1 must round to an absolute value less than 1."},
		{"-0.05", 1, 1, "-0.1", ""},
		{"0.04", 1, 1, "0.0", ""},
		{"0", 1, 1, "0.0", ""},
		{"123456789012345678901234567890.5", 31, 0, "123456789012345678901234567891", ""},
		{"999999999999999999999999999999.5", 30, 0, "ERROR 22003", "A field with precision 30, scale 0 must round to an absolute value less than 10^30."},
		{"Infinity", 15, 2, "ERROR 22003", "A field with precision 15, scale 2 cannot hold an infinite value."},
		{"-Infinity", 3, 5, "ERROR 22003", "A field with precision 3, scale 5 cannot hold an infinite value."},
	} {
		v, err := NumericApplyTypmod(nil, mustNum(t, c.in), c.precision, c.scale)
		if got := outcome(v, err); got != c.want {
			t.Errorf("%s::numeric(%d,%d) = %s, want %s", c.in, c.precision, c.scale, got, c.want)
		}
		if c.detail != "" {
			var pe *pgerror.Error
			if !errors.As(err, &pe) || pe.Message != "numeric field overflow" || pe.Detail != c.detail {
				t.Errorf("%s::numeric(%d,%d): %+v, want detail %q", c.in, c.precision, c.scale, pe, c.detail)
			}
		}
	}
}

func TestNumericToInt(t *testing.T) {
	for _, c := range []struct {
		in   string
		k    Kind
		want string
	}{
		{"2.5", Int8, "3"},
		{"-2.5", Int8, "-3"},
		{"2.4999", Int4, "2"},
		{"-0.5", Int2, "-1"},
		{"0.49", Int2, "0"},
		{"1e-30", Int8, "0"},
		{"32767.4", Int2, "32767"},
		{"32767.5", Int2, "smallint out of range"},
		{"-32768.4", Int2, "-32768"},
		{"-32768.5", Int2, "smallint out of range"},
		{"2147483647.49", Int4, "2147483647"},
		{"2147483647.5", Int4, "integer out of range"},
		{"-2147483648.5", Int4, "integer out of range"},
		{"9223372036854775807.4", Int8, "9223372036854775807"},
		{"9223372036854775807.5", Int8, "bigint out of range"},
		{"-9223372036854775808.49", Int8, "-9223372036854775808"},
		{"-9223372036854775808.5", Int8, "bigint out of range"},
		{"-9223372036854775808", Int8, "-9223372036854775808"},
		{"9223372036854775808", Int8, "bigint out of range"},
		{"92233720368547758070.0", Int8, "bigint out of range"},
		{"1e30", Int4, "integer out of range"},
		{"NaN", Int8, "cannot convert NaN to bigint"},
		{"NaN", Int4, "cannot convert NaN to integer"},
		{"NaN", Int2, "cannot convert NaN to smallint"},
		{"Infinity", Int4, "cannot convert infinity to integer"},
		{"-Infinity", Int8, "cannot convert infinity to bigint"},
	} {
		i, err := NumericToInt(mustNum(t, c.in), c.k)
		got := strconv.FormatInt(i, 10)
		if err != nil {
			got = err.Error()
			code := pgerror.GetCode(err)
			if want := map[bool]pgerror.Code{true: pgerror.FeatureNotSupported, false: pgerror.NumericValueOutOfRange}[strings.HasPrefix(got, "cannot")]; code != want {
				t.Errorf("%s to %v: code %s, want %s", c.in, c.k, code, want)
			}
		}
		if got != c.want {
			t.Errorf("%s to %v = %s, want %s", c.in, c.k, got, c.want)
		}
	}
}

func TestNumericFloat(t *testing.T) {
	for _, c := range []struct {
		f      float64
		digits int
		want   string
	}{
		{0.1, 15, "0.1"},
		{1e20, 15, "100000000000000000000"},
		{1.0 / 3, 15, "0.333333333333333"},
		{-2.0 / 3, 15, "-0.666666666666667"},
		{math.Copysign(0, -1), 15, "0"},
		{1e-5, 15, "0.00001"},
		{1.5e-300, 15, "0." + strings.Repeat("0", 299) + "15"},
		{123456789012345678, 15, "123456789012346000"},
		{float64(float32(0.1)), 6, "0.1"},
		{float64(float32(1.0 / 3)), 6, "0.333333"},
		{math.MaxFloat64, 15, "179769313486232" + strings.Repeat("0", 294)},
		{math.NaN(), 15, "NaN"},
		{math.Inf(1), 15, "Infinity"},
		{math.Inf(-1), 6, "-Infinity"},
	} {
		if got := numText(AppendNumericFloat(nil, c.f, c.digits)); got != c.want {
			t.Errorf("AppendNumericFloat(%g, %d) = %s, want %s", c.f, c.digits, got, c.want)
		}
	}
	for _, c := range []struct {
		in   string
		want float64
	}{
		{"0.1", 0.1},
		{"-1.50", -1.5},
		{"0.000", 0},
		{"123456789012345678901234567890", 1.2345678901234568e29},
		{"9007199254740993", 9007199254740992},
		{"0.30000000000000000000000000001", 0.3},
		{"1e308", 1e308},
		{"Infinity", math.Inf(1)},
		{"-Infinity", math.Inf(-1)},
	} {
		if got := NumericToFloat(mustNum(t, c.in)); got != c.want {
			t.Errorf("NumericToFloat(%s) = %g, want %g", c.in, got, c.want)
		}
	}
	if !math.IsNaN(NumericToFloat(mustNum(t, "NaN"))) {
		t.Error("NumericToFloat(NaN) is not NaN")
	}
}

func TestNumericBinary(t *testing.T) {
	for _, c := range []struct{ in, wire string }{
		{"0", "0000 0000 0000 0000"},
		{"0.00", "0000 0000 0000 0002"},
		{"1", "0001 0000 0000 0000 0001"},
		{"-1.50", "0002 0000 4000 0002 0001 1388"},
		{"10000", "0001 0001 0000 0000 0001"},
		{"0.0001", "0001 ffff 0000 0004 0001"},
		{"0.00001", "0001 fffe 0000 0005 03e8"},
		{"12345.678", "0003 0001 0000 0003 0001 0929 1a7c"},
		{"-9223372036854775808", "0005 0004 4000 0000 039a 0d2c 0170 1565 16b0"},
		{"NaN", "0000 0000 c000 0000"},
		{"Infinity", "0000 0000 d000 0020"},
		{"-Infinity", "0000 0000 f000 0020"},
	} {
		v := mustNum(t, c.in)
		wire, _ := hex.DecodeString(strings.ReplaceAll(c.wire, " ", ""))
		if got := AppendNumericBinary(nil, v); !bytes.Equal(got, wire) {
			t.Errorf("AppendNumericBinary(%s) = % x, want % x", c.in, got, wire)
		}
		back, err := NumericFromBinary(nil, wire)
		if err != nil || !bytes.Equal(back, v) {
			t.Errorf("NumericFromBinary(% x) = %s, %v, want %s", wire, numText(back), err, c.in)
		}
	}
	for _, c := range []struct{ wire, want string }{
		// Not what numeric_send makes, but what numeric_recv takes: zero
		// digits at either end, digits past dscale (truncated away).
		{"0003 0001 0000 0000 0000 0001 0000", "1"},
		{"0002 0000 0000 0002 0001 162e", "1.56"},
		{"0002 0000 4000 0002 0001 162e", "-1.56"},
		{"0001 fffe 0000 0003 1388", "0.000"},
		{"0001 7fff 0000 0000 0001", "1" + strings.Repeat("0", 131068)},
		{"000a 0000 0000 0004 0001 0002 0003 0004 0005 0006 0007 0008 0009 000a", "1.0002"},
		{"000a 0009 4000 0000 0001 0002 0003 0004 0005 0006 0007 0008 0009 000a", "-1000200030004000500060007000800090010"},
		{"0000 0000 0000 3fff", "0." + strings.Repeat("0", 16383)},
		{"0001 0000 c000 0000 270f", "NaN"},
		{"0008 0000 0000 0000", "ERROR 08P01"},
		{"0000 0000 0000", "ERROR 08P01"},
		{"0000 0000 0000 0000 00", "ERROR 22P03"},
		{"0000 0000 1234 0000", "ERROR 22P03"},
		{"0000 0000 0000 4000", "ERROR 22P03"},
		{"0001 0000 0000 0000 2710", "ERROR 22P03"},
		{"0001 0000 0000 0000 ffff", "ERROR 22P03"},
	} {
		wire, _ := hex.DecodeString(strings.ReplaceAll(c.wire, " ", ""))
		v, err := NumericFromBinary(nil, wire)
		if got := outcome(v, err); got != c.want {
			t.Errorf("NumericFromBinary(%s) = %.60s, want %.60s", c.wire, got, c.want)
		}
	}
	for _, c := range []struct{ wire, msg string }{
		{"0000 0000 1234 0000", `invalid sign in external "numeric" value`},
		{"0000 0000 0000 4000", `invalid scale in external "numeric" value`},
		{"0001 0000 0000 0000 2710", `invalid digit in external "numeric" value`},
	} {
		wire, _ := hex.DecodeString(strings.ReplaceAll(c.wire, " ", ""))
		if _, err := NumericFromBinary(nil, wire); err == nil || err.Error() != c.msg {
			t.Errorf("NumericFromBinary(%s): %v, want %s", c.wire, err, c.msg)
		}
	}
	// Every value comes back as the same encoding.
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 5000; i++ {
		v := mustNum(t, randNumericText(r))
		back, err := NumericFromBinary(nil, AppendNumericBinary(nil, v))
		if err != nil || !bytes.Equal(back, v) {
			t.Fatalf("%s: round trip gives %s, %v", numText(v), numText(back), err)
		}
	}
}

func TestNumericCompareKey(t *testing.T) {
	// In ascending order; each group holds equal numbers.
	groups := [][]string{
		{"-Infinity"},
		{"-1e40"},
		{"-9223372036854775809"},
		{"-9223372036854775808", "-9223372036854775808.000"},
		{"-1.5", "-1.50"},
		{"-1.4999"},
		{"0", "0.000", "-0.0", "0e-20"},
		{"1e-20", "0.000000000000000000010000000000000000000000"},
		{"1", "1.0", "1.00000000000000000000000000000000"},
		{"1.05"},
		{"1.5", "1.50", "15e-1"},
		{"9223372036854775807"},
		{"9223372036854775808", "9223372036854775808.0000000000"},
		{"1e30", "1000000000000000000000000000000.00000"},
		{"Infinity"},
		{"NaN", "nan"},
	}
	for i, gi := range groups {
		for _, a := range gi {
			for j, gj := range groups {
				for _, b := range gj {
					want := 0
					if i < j {
						want = -1
					} else if i > j {
						want = 1
					}
					va, vb := mustNum(t, a), mustNum(t, b)
					if got := NumericCompare(va, vb); got != want {
						t.Errorf("NumericCompare(%s, %s) = %d, want %d", a, b, got, want)
					}
					ka, kb := AppendNumericKey(nil, va), AppendNumericKey(nil, vb)
					if bytes.Equal(ka, kb) != (want == 0) {
						t.Errorf("keys of %s and %s: % x, % x", a, b, ka, kb)
					}
				}
			}
		}
	}
	// A key is itself the number.
	for _, s := range []string{"1.500", "-12345678901234567890.1230", "1e30"} {
		if NumericCompare(AppendNumericKey(nil, mustNum(t, s)), mustNum(t, s)) != 0 {
			t.Errorf("key of %s is another number", s)
		}
	}
}

func TestNumericSum(t *testing.T) {
	var s NumericSum
	if got := numText(s.AppendSum(nil)); got != "0" {
		t.Errorf("empty sum = %s", got)
	}
	for _, v := range []string{"1.5", "2.25", "-0.75"} {
		s.Add(mustNum(t, v))
	}
	if got := numText(s.AppendSum(nil)); got != "3.00" {
		t.Errorf("sum = %s", got)
	}
	if got := numText(s.AppendAvg(nil, 3)); got != "1.00000000000000000000" {
		t.Errorf("avg = %s", got)
	}

	// Past 64 bits, then past 128: the sum stays exact.
	var w NumericSum
	want := new(big.Int)
	w.AddInt(math.MaxInt64)
	w.AddInt(math.MaxInt64)
	want.SetInt64(math.MaxInt64).Lsh(want, 1)
	if got := numText(w.AppendSum(nil)); got != want.String() {
		t.Errorf("2 × MaxInt64 = %s, want %s", got, want)
	}
	huge := "99999999999999999999999999999999999999" // 38 nines, just under 2^127
	for i := 0; i < 10; i++ {
		w.Add(mustNum(t, huge))
		h, _ := new(big.Int).SetString(huge, 10)
		want.Add(want, h)
	}
	if w.wide == nil {
		t.Error("a sum past 128 bits did not spill")
	}
	w.Add(mustNum(t, "0.001"))
	if got, wantS := numText(w.AppendSum(nil)), want.String()+".001"; got != wantS {
		t.Errorf("wide sum = %s, want %s", got, wantS)
	}
	// A larger scale arriving rescales the coefficient, spilling when
	// the rescaled one leaves 128 bits.
	var r NumericSum
	r.AddInt(1e18)
	r.Add(mustNum(t, "1e-25"))
	if got := numText(r.AppendSum(nil)); got != "1000000000000000000.0000000000000000000000001" {
		t.Errorf("rescaled sum = %s", got)
	}
	// Scales: the largest, even of a zero.
	var z NumericSum
	z.Add(mustNum(t, "1"))
	z.Add(mustNum(t, "0.0000"))
	if got := numText(z.AppendSum(nil)); got != "1.0000" {
		t.Errorf("sum with 0.0000 = %s", got)
	}

	// Merge
	var a, b NumericSum
	a.Add(mustNum(t, "1.5"))
	b.Add(mustNum(t, "-0.125"))
	b.AddInt(10)
	a.Merge(&b)
	if got := numText(a.AppendSum(nil)); got != "11.375" {
		t.Errorf("merged sum = %s", got)
	}
	var wm NumericSum
	wm.Merge(&w)
	wm.Merge(&w)
	w2 := new(big.Int).Lsh(want, 1)
	if got, wantS := numText(wm.AppendSum(nil)), w2.String()+".002"; got != wantS {
		t.Errorf("merged wide sum = %s, want %s", got, wantS)
	}

	// Specials decide over the finite part.
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{"1", "NaN", "Infinity"}, "NaN"},
		{[]string{"Infinity", "-Infinity"}, "NaN"},
		{[]string{"Infinity", "2", "Infinity"}, "Infinity"},
		{[]string{"-Infinity", "1e40"}, "-Infinity"},
	} {
		var s NumericSum
		for _, v := range c.in {
			s.Add(mustNum(t, v))
		}
		if got := numText(s.AppendSum(nil)); got != c.want {
			t.Errorf("sum%v = %s, want %s", c.in, got, c.want)
		}
		if got := numText(s.AppendAvg(nil, 1)); got != c.want {
			t.Errorf("avg%v = %s, want %s", c.in, got, c.want)
		}
	}
	var sp NumericSum
	sp.Add(mustNum(t, "NaN"))
	var fin NumericSum
	fin.AddInt(1)
	fin.Merge(&sp)
	if got := numText(fin.AppendSum(nil)); got != "NaN" {
		t.Errorf("merged NaN = %s", got)
	}
}

// TestNumericAllocs checks that the small form's hot paths allocate
// nothing.
func TestNumericAllocs(t *testing.T) {
	a, b := mustNum(t, "12345.67"), mustNum(t, "-0.125")
	big1 := mustNum(t, "9223372036854775807")
	dst := make([]byte, 0, 64)
	var err error
	var s NumericSum
	for name, f := range map[string]func(){
		"NumericSmall":       func() { _, _, _ = NumericSmall(a) },
		"AppendNumericSmall": func() { dst = AppendNumericSmall(dst[:0], 123, 2) },
		"NumericAdd":         func() { dst, err = NumericAdd(dst[:0], a, b) },
		"NumericAdd to 128":  func() { dst, err = NumericAdd(dst[:0], big1, big1) },
		"NumericSub":         func() { dst, err = NumericSub(dst[:0], a, b) },
		"NumericMul":         func() { dst, err = NumericMul(dst[:0], a, b) },
		"NumericMul to 128":  func() { dst, err = NumericMul(dst[:0], big1, big1) },
		"NumericDiv":         func() { dst, err = NumericDiv(dst[:0], a, b) },
		"NumericMod":         func() { dst, err = NumericMod(dst[:0], a, b) },
		"NumericRound":       func() { dst, err = NumericRound(dst[:0], a, 1) },
		"NumericCompare":     func() { _ = NumericCompare(a, b) },
		"AppendNumericKey":   func() { dst = AppendNumericKey(dst[:0], a) },
		"AppendNumericText":  func() { dst = AppendNumericText(dst[:0], a) },
		"AppendNumericBinary": func() {
			dst = AppendNumericBinary(dst[:0], a)
		},
		"NumericSum.Add": func() {
			s.Add(a)
			s.Add(b)
		},
		"NumericSum.AddInt": func() { s.AddInt(math.MaxInt64) },
		"NumericSum.AppendSum": func() {
			dst = s.AppendSum(dst[:0])
		},
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	// A sum of numeric(15,2) values over millions of rows stays in 128 bits.
	var m NumericSum
	v := mustNum(t, "9999999999999.99")
	if n := testing.AllocsPerRun(10, func() {
		for i := 0; i < 1_000_000; i++ {
			m.Add(v)
		}
	}); n != 0 {
		t.Errorf("a long numeric(15,2) sum: %v allocations", n)
	}
	if got := numText(m.AppendSum(nil)); got != "109999999999999890000.00" {
		t.Errorf("11 million × 9999999999999.99 = %s", got)
	}
}

// randNumericText spells a random value: scales 0..20, up to 40 digits,
// negatives, zeros, trailing zeros, now and then a special value or an
// unusual spelling.
func randNumericText(r *rand.Rand) string {
	switch r.Intn(40) {
	case 0:
		return "0"
	case 1:
		return "0." + strings.Repeat("0", r.Intn(21))
	case 2:
		return []string{"NaN", "Infinity", "-Infinity"}[r.Intn(3)]
	case 3:
		return strconv.FormatInt(r.Int63()-r.Int63(), 10)
	case 4:
		return strconv.Itoa(r.Intn(2000)-1000) + ".5"
	case 5:
		return []string{"9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
			"9223372036854775807.5", "-9223372036854775808.5", "32767.5", "-32768.5", "2147483647.49"}[r.Intn(9)]
	}
	n := 1 + r.Intn(40)
	if r.Intn(2) == 0 {
		n = 1 + r.Intn(10)
	}
	scale := r.Intn(21)
	if r.Intn(3) == 0 {
		scale = r.Intn(4)
	}
	d := make([]byte, n)
	for i := range d {
		d[i] = byte('0' + r.Intn(10))
	}
	if r.Intn(5) == 0 {
		for i := n - 1 - r.Intn(n); i < n; i++ {
			d[i] = '0'
		}
	}
	var s string
	if n > scale {
		s = string(d[:n-scale])
		if scale > 0 {
			s += "." + string(d[n-scale:])
		}
	} else {
		s = "0." + strings.Repeat("0", scale-n) + string(d)
	}
	if r.Intn(3) == 0 {
		s = "-" + s
	} else if r.Intn(30) == 0 {
		s = "+" + s
	}
	switch r.Intn(30) {
	case 0:
		s = " " + s + " "
	case 1:
		// The same value with an exponent.
		s += "e" + strconv.Itoa(r.Intn(7)-3)
	}
	return s
}

// numEdgeValues are values at the edges of the forms and of
// select_div_scale's estimate; the differential test tries every pair.
var numEdgeValues = []string{
	"0", "0.000", "1", "-1", "0.5", "-2.5", "9999", "10000", "0.9999", "1.0001", "99.99", "0.01",
	"9223372036854775807", "-9223372036854775808", "9223372036854775808", "-18446744073709551616",
	"170141183460469231731687303715884105727", "-340282366920938463463374607431768211456.5",
	"12345678901234567890.12345678901234567890", "1e-20", "3e-100", "-7e-1000", "5e-16383",
	"99999999999999999999999999999999999999999999.999", "7e100", "NaN", "Infinity", "-Infinity",
}

// pgTextArray spells strs as a PostgreSQL array literal.
func pgTextArray(strs []string) []byte {
	var b strings.Builder
	b.WriteByte('{')
	for i, s := range strs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + s + `"`)
	}
	b.WriteByte('}')
	return []byte(b.String())
}

// pgExec runs one statement with text parameters of the given type OIDs
// and returns its rows, with results in the given format (0 text, 1
// binary).
func pgExec(t *testing.T, conn *pgconn.PgConn, sql string, params [][]byte, oids []uint32, resultFormat int16) [][][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := conn.ExecParams(ctx, sql, params, oids, nil, []int16{resultFormat}).Read()
	if res.Err != nil {
		t.Fatalf("%s: %v", sql, res.Err)
	}
	return res.Rows
}

// Type OIDs of the parameters.
const (
	oidInt4Array   = 1007
	oidInt8Array   = 1016
	oidTextArray   = 1009
	oidFloat8Array = 1022
	oidNumeric     = 1700
)

// TestNumericMatchesPostgres15 computes the same operations on the same
// random values here and in PostgreSQL 15 and compares the text each
// prints, and the binary wire form.
func TestNumericMatchesPostgres15(t *testing.T) {
	port := pgtest.Start15(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, "host=127.0.0.1 port="+port+" user=postgres dbname=postgres sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	// Errors come back as values, so that one row's error does not end
	// the query.
	for _, f := range []string{
		"try_div(a numeric, b numeric) RETURNS text AS $$ BEGIN RETURN (a / b)::text; EXCEPTION WHEN others THEN RETURN 'ERROR ' || SQLSTATE; END $$",
		"try_mod(a numeric, b numeric) RETURNS text AS $$ BEGIN RETURN (a % b)::text; EXCEPTION WHEN others THEN RETURN 'ERROR ' || SQLSTATE; END $$",
		"try_int(a numeric, k int) RETURNS text AS $$ BEGIN RETURN CASE k WHEN 8 THEN a::int8::text WHEN 4 THEN a::int4::text ELSE a::int2::text END; EXCEPTION WHEN others THEN RETURN 'ERROR ' || SQLSTATE; END $$",
		"try_float8(a numeric) RETURNS text AS $$ BEGIN RETURN a::float8::text; EXCEPTION WHEN others THEN RETURN 'ERROR ' || SQLSTATE; END $$",
		"try_parse(a text) RETURNS text AS $$ BEGIN RETURN a::numeric::text; EXCEPTION WHEN others THEN RETURN 'ERROR ' || SQLSTATE; END $$",
		"div_or_null(a numeric, b numeric) RETURNS numeric AS $$ BEGIN RETURN a / b; EXCEPTION WHEN others THEN RETURN NULL; END $$",
	} {
		pgExec(t, conn, "CREATE FUNCTION "+f+" LANGUAGE plpgsql", nil, nil, 0)
	}

	seed := time.Now().UnixNano()
	if s := strings.TrimSpace(os.Getenv("NUMERIC_SEED")); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (NUMERIC_SEED reruns it)", seed)
	r := rand.New(rand.NewSource(seed))
	// Random pairs, then every pair of the edge values.
	nRandom := 3000
	if s := os.Getenv("NUMERIC_CASES"); s != "" {
		nRandom, _ = strconv.Atoi(s)
		nRandom = max(nRandom, 500)
	}
	n := nRandom + len(numEdgeValues)*len(numEdgeValues)
	as, bs := make([]string, n), make([]string, n)
	ks := make([]string, n)
	fs := make([]string, n)
	floats := make([]float64, n)
	for i := range as {
		as[i], bs[i] = randNumericText(r), randNumericText(r)
		if e := i - nRandom; e >= 0 {
			as[i], bs[i] = numEdgeValues[e/len(numEdgeValues)], numEdgeValues[e%len(numEdgeValues)]
		}
		switch r.Intn(8) {
		case 0: // the same number, spelled with more zeros
			if i >= nRandom {
				break
			}
			bs[i] = strings.TrimSpace(as[i])
			if v := mustNum(t, bs[i]); v[0] < numNaN {
				bs[i] = numText(v)
				if !strings.Contains(bs[i], ".") {
					bs[i] += "."
				}
				bs[i] += "000"
			}
		case 1:
			if i < nRandom {
				bs[i] = "0"
			}
		}
		k := r.Intn(31) - 10
		ks[i] = strconv.Itoa(k)
		var f float64
		switch r.Intn(4) {
		case 0:
			f = NumericToFloat(mustNum(t, as[i]))
		case 1:
			f = float64(r.Int63()) * math.Pow(10, float64(r.Intn(600)-300))
		default:
			f = r.Float64() * math.Pow(10, float64(r.Intn(60)-30))
		}
		if r.Intn(2) == 0 {
			f = -f
		}
		if math.IsNaN(f) {
			f = 0
		}
		floats[i] = f
		fs[i] = strconv.FormatFloat(f, 'g', -1, 64)
	}

	var mismatches int
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			mismatches++
			if mismatches <= 60 {
				t.Errorf("%s: ours %.200s, PostgreSQL's %.200s", what, got, want)
			}
		}
	}

	// Operations, their text.
	rows := pgExec(t, conn, `SELECT a::numeric::text,
			(a::numeric + b::numeric)::text, (a::numeric - b::numeric)::text, (a::numeric * b::numeric)::text,
			try_div(a::numeric, b::numeric), try_mod(a::numeric, b::numeric),
			round(a::numeric, k)::text, trunc(a::numeric, k)::text, round(a::numeric)::text,
			ceil(a::numeric)::text, floor(a::numeric)::text, abs(a::numeric)::text, (-a::numeric)::text, sign(a::numeric)::text,
			try_int(a::numeric, 8), try_int(a::numeric, 4), try_int(a::numeric, 2),
			try_float8(a::numeric), f::numeric::text,
			CASE WHEN f = 0 OR abs(f) BETWEEN 1.2e-38 AND 3.4e38 THEN f::float4::numeric::text ELSE '' END,
			CASE WHEN a::numeric < b::numeric THEN -1 WHEN a::numeric = b::numeric THEN 0 ELSE 1 END::text
		FROM unnest($1::text[], $2::text[], $3::int4[], $4::float8[]) WITH ORDINALITY AS t(a, b, k, f, i) ORDER BY i`,
		[][]byte{pgTextArray(as), pgTextArray(bs), pgTextArray(ks), pgTextArray(fs)},
		[]uint32{oidTextArray, oidTextArray, oidInt4Array, oidFloat8Array}, 0)
	if len(rows) != n {
		t.Fatalf("%d rows", len(rows))
	}
	for i, row := range rows {
		a, b := mustNum(t, as[i]), mustNum(t, bs[i])
		k, _ := strconv.Atoi(ks[i])
		col := 0
		want := func() string {
			col++
			return string(row[col-1])
		}
		name := func(op string) string { return fmt.Sprintf("%s(%q, %q)", op, as[i], bs[i]) }
		check(name("text"), numText(a), want())
		for _, op := range []string{"+", "-", "*", "/", "%"} {
			v, err := numOps[op](nil, a, b)
			check(name(op), outcome(v, err), want())
		}
		v, err := NumericRound(nil, a, k)
		check(name("round "+ks[i]), outcome(v, err), want())
		v, err = NumericTrunc(nil, a, k)
		check(name("trunc "+ks[i]), outcome(v, err), want())
		v, err = NumericRound(nil, a, 0)
		check(name("round"), outcome(v, err), want())
		check(name("ceil"), numText(NumericCeil(nil, a)), want())
		check(name("floor"), numText(NumericFloor(nil, a)), want())
		check(name("abs"), numText(NumericAbs(nil, a)), want())
		check(name("neg"), numText(NumericNeg(nil, a)), want())
		check(name("sign"), numText(NumericSign(nil, a)), want())
		for _, kind := range []Kind{Int8, Int4, Int2} {
			got := ""
			if i, err := NumericToInt(a, kind); err != nil {
				got = errText(err)
			} else {
				got = strconv.FormatInt(i, 10)
			}
			check(name(fmt.Sprintf("to int kind %d", kind)), got, want())
		}
		ours := NumericToFloat(a)
		if pgs := want(); pgs == "ERROR 22003" {
			// PostgreSQL refuses a value beyond float8's range, or one
			// that underflows; NumericToFloat gives ±Inf or ±0.
			if !math.IsInf(ours, 0) && ours != 0 {
				check(name("float8"), fmt.Sprint(ours), pgs)
			}
		} else if pgf, err := strconv.ParseFloat(pgs, 64); err != nil || math.Float64bits(ours) != math.Float64bits(pgf) && !(math.IsNaN(ours) && math.IsNaN(pgf)) {
			check(name("float8"), fmt.Sprint(ours), pgs)
		}
		check(fmt.Sprintf("float8 %s to numeric", fs[i]), numText(AppendNumericFloat(nil, floats[i], 15)), want())
		if f := math.Abs(floats[i]); f == 0 || f >= 1.2e-38 && f <= 3.4e38 {
			check(fmt.Sprintf("float4 %s to numeric", fs[i]), numText(AppendNumericFloat(nil, float64(float32(floats[i])), 6)), want())
		} else {
			want() // out of float4's range
		}
		check(name("compare"), strconv.Itoa(NumericCompare(a, b)), want())
		if eq := NumericCompare(a, b) == 0; eq != bytes.Equal(AppendNumericKey(nil, a), AppendNumericKey(nil, b)) {
			check(name("key equality"), strconv.FormatBool(!eq), strconv.FormatBool(eq))
		}
	}

	// Typmods: numeric(p, s) with negative scales and scales above the
	// precision, through dynamic SQL so each error stays its own.
	var tq []string
	type tcase struct {
		a    string
		p, s int
	}
	var tcases []tcase
	for i := 0; i < 400; i++ {
		p := 1 + r.Intn(40)
		s := r.Intn(50) - 10
		a := strings.TrimSpace(as[i])
		tcases = append(tcases, tcase{a, p, s})
		tq = append(tq, fmt.Sprintf("(%d, %s, %d, %d)", i, quoteLiteral(a), p, s))
	}
	pgExec(t, conn, `CREATE FUNCTION typmod_text(a text, p int, s int) RETURNS text AS $$
		DECLARE r text; BEGIN EXECUTE format('SELECT %L::numeric(%s,%s)::text', a, p, s) INTO r; RETURN r;
		EXCEPTION WHEN others THEN GET STACKED DIAGNOSTICS r = PG_EXCEPTION_DETAIL; RETURN 'ERROR ' || SQLSTATE || ' ' || r; END $$ LANGUAGE plpgsql`, nil, nil, 0)
	rows = pgExec(t, conn, "SELECT typmod_text(a, p, s) FROM (VALUES "+strings.Join(tq, ",")+") v(i, a, p, s) ORDER BY i", nil, nil, 0)
	for i, c := range tcases {
		v, err := NumericApplyTypmod(nil, mustNum(t, c.a), c.p, c.s)
		got := outcome(v, err)
		var pe *pgerror.Error
		if errors.As(err, &pe) {
			got += " " + pe.Detail
		}
		check(fmt.Sprintf("%s::numeric(%d,%d)", c.a, c.p, c.s), got, string(rows[i][0]))
	}

	// Aggregates over small groups, of numerics and of bigints.
	groups := make([]string, n)
	g := 0
	for i := range groups {
		groups[i] = strconv.Itoa(g)
		if r.Intn(4) == 0 && i < n-1 {
			g++
		}
	}
	rows = pgExec(t, conn, `SELECT sum(a::numeric)::text, avg(a::numeric)::text
		FROM unnest($1::text[], $2::int4[]) AS t(a, g) GROUP BY g ORDER BY g`,
		[][]byte{pgTextArray(as), pgTextArray(groups)}, []uint32{oidTextArray, oidInt4Array}, 0)
	ints := make([]string, n)
	for i := range ints {
		switch r.Intn(3) {
		case 0:
			ints[i] = strconv.FormatInt(math.MaxInt64-r.Int63n(1000), 10)
		default:
			ints[i] = strconv.FormatInt(r.Int63n(2000000)-1000000, 10)
		}
	}
	irows := pgExec(t, conn, `SELECT sum(a)::text, avg(a)::text
		FROM unnest($1::int8[], $2::int4[]) AS t(a, g) GROUP BY g ORDER BY g`,
		[][]byte{pgTextArray(ints), pgTextArray(groups)}, []uint32{oidInt8Array, oidInt4Array}, 0)
	if len(rows) != g+1 || len(irows) != g+1 {
		t.Fatalf("%d and %d groups, want %d", len(rows), len(irows), g+1)
	}
	for gi := 0; gi <= g; gi++ {
		var s, si NumericSum
		var count int64
		var members []string
		for i := range as {
			if groups[i] == strconv.Itoa(gi) {
				v := mustNum(t, as[i])
				s.Add(v)
				if v[0] < numNaN {
					count++
				}
				x, _ := strconv.ParseInt(ints[i], 10, 64)
				si.AddInt(x)
				members = append(members, as[i])
			}
		}
		check(fmt.Sprintf("sum%q", members), numText(s.AppendSum(nil)), string(rows[gi][0]))
		if count == 0 {
			count = 1 // all special: the average is the sum's special value
		}
		check(fmt.Sprintf("avg%q", members), numText(s.AppendAvg(nil, count)), string(rows[gi][1]))
		check(fmt.Sprintf("bigint sum, group %d", gi), numText(si.AppendSum(nil)), string(irows[gi][0]))
		check(fmt.Sprintf("bigint avg, group %d", gi), numText(si.AppendAvg(nil, int64(len(members)))), string(irows[gi][1]))
	}

	// The binary form PostgreSQL sends, of values and of results.
	brows := pgExec(t, conn, `SELECT a::numeric, a::numeric * b::numeric, a::numeric + b::numeric, div_or_null(a::numeric, b::numeric)
		FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(a, b, i) ORDER BY i`,
		[][]byte{pgTextArray(as), pgTextArray(bs)}, []uint32{oidTextArray, oidTextArray}, 1)
	for i, row := range brows {
		a, b := mustNum(t, as[i]), mustNum(t, bs[i])
		prod, _ := NumericMul(nil, a, b)
		sum, _ := NumericAdd(nil, a, b)
		quo, err := NumericDiv(nil, a, b)
		for j, v := range [][]byte{a, prod, sum, quo} {
			if j == 3 && err != nil {
				if row[j] != nil {
					check(fmt.Sprintf("binary %q / %q", as[i], bs[i]), "an error", hex.EncodeToString(row[j]))
				}
				continue
			}
			what := fmt.Sprintf("binary of result %d of %q, %q", j, as[i], bs[i])
			check(what, hex.EncodeToString(AppendNumericBinary(nil, v)), hex.EncodeToString(row[j]))
			back, err := NumericFromBinary(nil, row[j])
			check(what+" read back", outcome(back, err), numText(v))
		}
	}

	// What numeric_recv makes of binary values numeric_send would not
	// send: zero digits at either end, digits past dscale, odd weights.
	const m = 500
	params := make([][]byte, m)
	oids := make([]uint32, m)
	formats := make([]int16, m)
	cols := make([]string, m)
	for i := range params {
		nd := r.Intn(8)
		sign := []uint16{numWirePos, numWireNeg}[r.Intn(2)]
		if r.Intn(20) == 0 {
			sign = []uint16{numWireNaN, numWirePosInf, numWireNegInf}[r.Intn(3)]
		}
		b := appendNumWireHeader(nil, nd, r.Intn(14)-7, sign, r.Intn(25))
		for j := 0; j < nd; j++ {
			d := r.Intn(10000)
			if r.Intn(4) == 0 {
				d = 0
			}
			b = binary.BigEndian.AppendUint16(b, uint16(d))
		}
		params[i], oids[i], formats[i] = b, oidNumeric, 1
		cols[i] = fmt.Sprintf("$%d::text", i+1)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	res := conn.ExecParams(ctx2, "SELECT "+strings.Join(cols, ", "), params, oids, formats, nil).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	for i, p := range params {
		v, err := NumericFromBinary(nil, p)
		check(fmt.Sprintf("numeric_recv(%x)", p), outcome(v, err), string(res.Rows[0][i]))
	}
	// And PostgreSQL reads what we send as the value we print.
	for i := range params {
		params[i] = AppendNumericBinary(nil, mustNum(t, as[i]))
	}
	res = conn.ExecParams(ctx2, "SELECT "+strings.Join(cols, ", "), params, oids, formats, nil).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	for i := range params {
		check(fmt.Sprintf("PostgreSQL reads our binary %q", as[i]), numText(mustNum(t, as[i])), string(res.Rows[0][i]))
	}

	// numeric_in on odd spellings.
	spellings := make([]string, 3000)
	for i := range spellings {
		var b strings.Builder
		if r.Intn(5) == 0 {
			b.WriteString([]string{" ", "+", "-", " -", ""}[r.Intn(5)])
			w := []string{"nan", "inf", "infinity", "infinit"}[r.Intn(4)]
			for _, c := range w {
				if r.Intn(2) == 0 {
					c -= 'a' - 'A'
				}
				b.WriteRune(c)
			}
		}
		const alphabet = "0123456789000111...--++eeE  \t\nx"
		for j := r.Intn(14); j > 0; j-- {
			b.WriteByte(alphabet[r.Intn(len(alphabet))])
		}
		spellings[i] = b.String()
	}
	rows = pgExec(t, conn, `SELECT try_parse(a) FROM unnest($1::text[]) WITH ORDINALITY AS t(a, i) ORDER BY i`,
		[][]byte{pgTextArray(spellings)}, []uint32{oidTextArray}, 0)
	for i, s := range spellings {
		v, err := ParseNumeric(nil, s)
		check(fmt.Sprintf("numeric_in(%q)", s), outcome(v, err), string(rows[i][0]))
	}

	if mismatches > 0 {
		t.Fatalf("%d answers differ from PostgreSQL 15's (seed %d)", mismatches, seed)
	}
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
