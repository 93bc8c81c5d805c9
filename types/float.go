package types

import (
	"math"
	"strconv"
	"strings"

	"github.com/deeplaked/deeplaked/pgerror"
)

// AppendFloat8 appends f as PostgreSQL 12+ prints a double precision value
// with extra_float_digits=1: the shortest digits that round-trip, in
// scientific notation (1e+20, 1e-05) when the decimal exponent is below -4
// or at least 15, and NaN, Infinity, -Infinity for the special values.
func AppendFloat8(dst []byte, f float64) []byte { return appendFloat(dst, f, 64, 15) }

// AppendFloat4 appends f as PostgreSQL prints a real: like AppendFloat8 with
// float32's shortest digits and scientific notation from exponent 6 up
// (1.234567e+06). It is also pgvector's element format.
func AppendFloat4(dst []byte, f float32) []byte { return appendFloat(dst, float64(f), 32, 6) }

func appendFloat(dst []byte, f float64, bits, sciAt int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, bits)
	exp := 0
	for i := len(e) - 1; i >= 0; i-- {
		if e[i] == 'e' {
			neg := e[i+1] == '-'
			for _, c := range e[i+2:] {
				exp = exp*10 + int(c-'0')
			}
			if neg {
				exp = -exp
			}
			break
		}
	}
	if exp < -4 || exp >= sciAt {
		return append(dst, e...)
	}
	return strconv.AppendFloat(dst, f, 'f', -1, bits)
}

// ParseFloat8 parses s as PostgreSQL's float8in does: surrounding
// whitespace, NaN, [+-]Infinity, [+-]inf (any case) and exponent forms are
// accepted. Errors are 22P02 for bad syntax and 22003 for values out of
// range (overflow, or underflow to zero).
func ParseFloat8(s string) (float64, error) { return parseFloat(s, 64, "double precision") }

// ParseFloat4 parses s as PostgreSQL's float4in does; see ParseFloat8.
func ParseFloat4(s string) (float32, error) {
	f, err := parseFloat(s, 32, "real")
	return float32(f), err
}

func parseFloat(s string, bits int, typName string) (float64, error) {
	t := strings.TrimSpace(s)
	if !floatSyntaxOK(t) {
		return 0, pgerror.Newf(pgerror.InvalidTextRepresentation, "invalid input syntax for type %s: \"%s\"", typName, s)
	}
	f, err := strconv.ParseFloat(t, bits)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, pgerror.Newf(pgerror.NumericValueOutOfRange, "\"%s\" is out of range for type %s", s, typName)
		}
		return 0, pgerror.Newf(pgerror.InvalidTextRepresentation, "invalid input syntax for type %s: \"%s\"", typName, s)
	}
	if f == 0 && hasNonZeroMantissa(t) {
		return 0, pgerror.Newf(pgerror.NumericValueOutOfRange, "\"%s\" is out of range for type %s", s, typName)
	}
	return f, nil
}

// floatSyntaxOK reports whether t (already trimmed) is a decimal number or
// one of the special names strtod accepts. It rejects what strconv accepts
// beyond C's strtod: underscores and hexadecimal forms.
func floatSyntaxOK(t string) bool {
	if t == "" {
		return false
	}
	u := t
	if u[0] == '+' || u[0] == '-' {
		u = u[1:]
	}
	switch strings.ToLower(u) {
	case "nan", "inf", "infinity":
		return true
	}
	digits := 0
	i := 0
	for i < len(u) && u[i] >= '0' && u[i] <= '9' {
		i++
		digits++
	}
	if i < len(u) && u[i] == '.' {
		i++
		for i < len(u) && u[i] >= '0' && u[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(u) && (u[i] == 'e' || u[i] == 'E') {
		i++
		if i < len(u) && (u[i] == '+' || u[i] == '-') {
			i++
		}
		start := i
		for i < len(u) && u[i] >= '0' && u[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(u)
}

// hasNonZeroMantissa reports whether a decimal literal has a non-zero digit
// before its exponent, i.e. a zero result means underflow.
func hasNonZeroMantissa(t string) bool {
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c == 'e' || c == 'E':
			return false
		case c >= '1' && c <= '9':
			return true
		}
	}
	return false
}

// CompareFloat orders floats as PostgreSQL does: NaN above every other
// value and equal to itself, -0 equal to 0.
func CompareFloat(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
