package sqllogic

import (
	"crypto/md5"
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"strings"
)

// FormatValue renders one value the server sent in text form the way
// sqllogictest prints it for a column of type typ ('I', 'R' or 'T'):
// NULL (v == nil) as "NULL", the empty string as "(empty)", an I column as an
// integer (reals truncated toward zero, booleans t/f as 1/0, as SQLite has
// no separate boolean), an R column with "%.3f". Values that
// are not numbers are printed as sent. Control characters, which would break
// the one-value-per-line layout, become '@' as in SQLite's runner.
func FormatValue(typ byte, v []byte) string {
	if v == nil {
		return "NULL"
	}
	if len(v) == 0 {
		return "(empty)"
	}
	s := string(v)
	switch typ {
	case 'I':
		switch s {
		case "t":
			return "1"
		case "f":
			return "0"
		}
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			return s
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return strconv.FormatInt(int64(f), 10)
		}
	case 'R':
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return strconv.FormatFloat(f, 'f', 3, 64)
		}
	}
	return sanitize(s)
}

func sanitize(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r < ' ' }) < 0 {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if c < ' ' {
			b[i] = '@'
		}
	}
	return string(b)
}

// SortValues orders a query's formatted values, ncols to a row, as mode
// asks: RowSort compares rows column by column, ValueSort sorts every value on
// its own, NoSort leaves them. Comparison is bytewise, as strcmp in SQLite's
// runner.
func SortValues(mode SortMode, values []string, ncols int) {
	switch mode {
	case ValueSort:
		slices.Sort(values)
	case RowSort:
		if ncols <= 0 || len(values)%ncols != 0 {
			return
		}
		rows := make([][]string, 0, len(values)/ncols)
		for i := 0; i < len(values); i += ncols {
			rows = append(rows, slices.Clone(values[i:i+ncols]))
		}
		slices.SortStableFunc(rows, slices.Compare[[]string])
		i := 0
		for _, row := range rows {
			i += copy(values[i:], row)
		}
	}
}

// Hash returns the hex md5 of values, each followed by "\n", as in
// "N values hashing to H".
func Hash(values []string) string {
	h := md5.New()
	for _, v := range values {
		h.Write([]byte(v))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// matchValues reports whether the expected lines of a record equal values:
// either one value per line, or, for files that put a row on one line,
// the same whitespace-separated tokens.
func matchValues(expected, values []string) bool {
	if slices.Equal(expected, values) {
		return true
	}
	var want, got []string
	for _, l := range expected {
		want = append(want, strings.Fields(l)...)
	}
	for _, v := range values {
		got = append(got, strings.Fields(v)...)
	}
	return slices.Equal(want, got)
}
