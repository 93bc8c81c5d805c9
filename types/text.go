package types

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/deeplaked/deeplaked/pgerror"
)

// AppendText appends the PostgreSQL text output form of row i of v, which
// must not be NULL: integers and floats as PostgreSQL 15 prints them, bool
// as t/f, bytea as \x<hex>, jsonb normalized, vector as [1,2,3], tensors as
// PostgreSQL array literals {{...},{...}}. It allocates only to grow dst.
func AppendText(dst []byte, v *Vec, i int) []byte {
	switch v.Type.Kind {
	case Bool:
		if v.Bools[i] {
			return append(dst, 't')
		}
		return append(dst, 'f')
	case Int2, Int4, Int8, Oid, RegClass, RegType, RegNamespace, RegProc:
		return strconv.AppendInt(dst, v.Ints[i], 10)
	case Date:
		return AppendDate(dst, v.Ints[i])
	case Timestamp, TimestampTZ:
		return AppendTimestamp(dst, v.Ints[i], v.Type.Kind == TimestampTZ)
	case Interval:
		return AppendIntervalText(dst, IntervalOf(v.Bytes.Get(i)))
	case Float4:
		return AppendFloat4(dst, float32(v.Floats[i]))
	case Float8:
		return AppendFloat8(dst, v.Floats[i])
	case Numeric:
		return AppendNumericText(dst, v.Bytes.Get(i))
	case Bytea:
		return AppendByteaText(dst, v.Bytes.Get(i))
	case Vector:
		return AppendVectorText(dst, v.Bytes.Get(i))
	case HalfVec:
		return AppendHalfVecText(dst, v.Bytes.Get(i))
	case Tensor:
		return AppendTensorText(dst, v.Type, v.Bytes.Get(i))
	}
	// text, varchar, json (verbatim), jsonb (held normalized), unknown.
	return append(dst, v.Bytes.Get(i)...)
}

// AppendParsed parses s as PostgreSQL text input for v.Type and appends the
// value to v. Errors carry SQLSTATEs: 22P02 bad syntax, 22003 out of range,
// 22000 wrong tensor shape or vector dimension, 22001 too long for
// varchar(n), 22023 bad bytea hex digits. On error v is unchanged.
func AppendParsed(v *Vec, s string) error {
	switch v.Type.Kind {
	case Bool:
		b, err := ParseBool(s)
		if err != nil {
			return err
		}
		v.AppendBool(b)
	case Oid, RegClass, RegType, RegNamespace, RegProc:
		n, err := ParseInt(s, Int8)
		if err != nil || n < 0 || n > 1<<32-1 {
			return pgerror.Newf(pgerror.InvalidTextRepresentation, "invalid input syntax for type %s: \"%s\"", v.Type, s)
		}
		v.AppendInt(n)
	case Int2, Int4, Int8:
		n, err := ParseInt(s, v.Type.Kind)
		if err != nil {
			return err
		}
		v.AppendInt(n)
	case Float4:
		f, err := ParseFloat4(s)
		if err != nil {
			return err
		}
		v.AppendFloat(float64(f))
	case Float8:
		f, err := ParseFloat8(s)
		if err != nil {
			return err
		}
		v.AppendFloat(f)
	case Numeric:
		return v.appendEncoded(func(dst []byte) ([]byte, error) { return ParseNumericTypmod(dst, s, v.Type) })
	case Bpchar:
		if w := v.Type.Width; w > 0 {
			if c := utf8.RuneCountInString(s); c < w {
				// Padded in place: a load of char(n) columns builds no
				// string per value.
				v.ensureOffsets()
				v.Bytes.Data = append(v.Bytes.Data, s...)
				for range w - c {
					v.Bytes.Data = append(v.Bytes.Data, ' ')
				}
				v.AppendedBytes()
				return nil
			}
		}
		p, err := PadBpchar(s, v.Type.Width)
		if err != nil {
			return err
		}
		v.AppendString(p)
	case Varchar:
		if v.Type.Width > 0 && utf8.RuneCountInString(s) > v.Type.Width {
			// PostgreSQL truncates excess characters when they are all spaces.
			cut := 0
			for n := 0; n < v.Type.Width; n++ {
				_, size := utf8.DecodeRuneInString(s[cut:])
				cut += size
			}
			if strings.TrimRight(s[cut:], " ") != "" {
				return pgerror.Newf(pgerror.StringDataRightTrunc, "value too long for type character varying(%d)", v.Type.Width)
			}
			s = s[:cut]
		}
		v.AppendString(s)
	case JSON:
		if err := ValidateJSON([]byte(s)); err != nil {
			return err
		}
		v.AppendString(s)
	case JSONB:
		return v.appendEncoded(func(dst []byte) ([]byte, error) { return NormalizeJSONB([]byte(s), dst) })
	case UUID:
		return v.appendEncoded(func(dst []byte) ([]byte, error) { return AppendUUIDParsed(dst, s) })
	case Date:
		d, err := ParseDate(s)
		if err != nil {
			return err
		}
		v.AppendInt(d)
	case Timestamp, TimestampTZ:
		us, err := ParseTimestamp(s, v.Type.Kind == TimestampTZ)
		if err != nil {
			return err
		}
		v.AppendInt(us)
	case Interval:
		iv, err := ParseInterval(s, v.Type.Width)
		if err != nil {
			return err
		}
		v.AppendBytes(AppendInterval(nil, iv))
	case Bytea:
		return v.appendEncoded(func(dst []byte) ([]byte, error) { return AppendByteaParsed(dst, s) })
	case Vector:
		return v.appendEncoded(func(dst []byte) ([]byte, error) { return AppendVectorParsed(dst, v.Type.Width, s) })
	case HalfVec:
		return v.appendEncoded(func(dst []byte) ([]byte, error) { return AppendHalfVecParsed(dst, v.Type.Width, s) })
	case Tensor:
		return v.appendEncoded(func(dst []byte) ([]byte, error) { return AppendTensorParsed(dst, v.Type, s) })
	default:
		v.AppendString(s)
	}
	return nil
}

// appendEncoded appends a variable-length value that enc writes straight
// into v's data buffer, rolling the buffer back if enc fails.
func (v *Vec) appendEncoded(enc func(dst []byte) ([]byte, error)) error {
	v.ensureOffsets()
	start := len(v.Bytes.Data)
	data, err := enc(v.Bytes.Data)
	if err != nil {
		v.Bytes.Data = data[:start]
		return err
	}
	v.Bytes.Data = data
	v.Nulls = append(v.Nulls, false)
	v.Bytes.Offsets = append(v.Bytes.Offsets, int32(len(data)))
	return nil
}

// ParseBool parses s as PostgreSQL's boolin does: surrounding whitespace is
// ignored and any case-insensitive prefix of true, false, yes, no, on (at
// least "on"), off (at least "of"), or exactly 1 or 0 is accepted. Errors
// are 22P02.
func ParseBool(s string) (bool, error) {
	if b, ok := parseBoolWord(strings.TrimSpace(s)); ok {
		return b, nil
	}
	return false, pgerror.Newf(pgerror.InvalidTextRepresentation, "invalid input syntax for type boolean: \"%s\"", s)
}

func parseBoolWord(t string) (val, ok bool) {
	if t == "" {
		return false, false
	}
	prefixOf := func(word string) bool { return len(t) <= len(word) && strings.EqualFold(t, word[:len(t)]) }
	switch t[0] {
	case 't', 'T':
		return true, prefixOf("true")
	case 'f', 'F':
		return false, prefixOf("false")
	case 'y', 'Y':
		return true, prefixOf("yes")
	case 'n', 'N':
		return false, prefixOf("no")
	case 'o', 'O':
		if len(t) < 2 {
			return false, false
		}
		if prefixOf("on") {
			return true, true
		}
		return false, prefixOf("off")
	case '1':
		return true, len(t) == 1
	case '0':
		return false, len(t) == 1
	}
	return false, false
}

// ParseInt parses s as PostgreSQL 15's integer input for kind (Int2, Int4
// or Int8): optional surrounding whitespace and sign, decimal digits.
// Errors are 22P02 for bad syntax and 22003 when out of the kind's range.
func ParseInt(s string, kind Kind) (int64, error) {
	name, lo, hi := "bigint", int64(-1<<63), int64(1<<63-1)
	switch kind {
	case Int2:
		name, lo, hi = "smallint", -1<<15, 1<<15-1
	case Int4:
		name, lo, hi = "integer", -1<<31, 1<<31-1
	}
	n, err := parseIntRange(s, lo, hi)
	switch err {
	case nil:
		return n, nil
	case errIntRange:
		return 0, pgerror.Newf(pgerror.NumericValueOutOfRange, "value \"%s\" is out of range for type %s", s, name)
	}
	return 0, pgerror.Newf(pgerror.InvalidTextRepresentation, "invalid input syntax for type %s: \"%s\"", name, s)
}

type intParseError uint8

func (intParseError) Error() string { return "bad integer" }

const (
	errIntSyntax intParseError = iota + 1
	errIntRange
)

// parseIntRange parses a whitespace-padded decimal integer in [lo, hi].
func parseIntRange(s string, lo, hi int64) (int64, error) {
	t := strings.TrimSpace(s)
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	if t == "" {
		return 0, errIntSyntax
	}
	limit := uint64(hi)
	if neg {
		limit = uint64(-(lo + 1)) + 1
	}
	var u uint64
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c < '0' || c > '9' {
			return 0, errIntSyntax
		}
		// As in PostgreSQL, overflow is reported before trailing junk.
		if u > limit/10 {
			return 0, errIntRange
		}
		u = u*10 + uint64(c-'0')
		if u > limit {
			return 0, errIntRange
		}
	}
	if neg {
		return -int64(u-1) - 1, nil
	}
	return int64(u), nil
}

// PadBpchar returns s as character(n) holds it: padded with spaces to n
// characters; characters past n are cut when they are all spaces, else
// 22001. n 0 (bpchar without a length) keeps s as it is.
func PadBpchar(s string, n int) (string, error) {
	if n <= 0 {
		return s, nil
	}
	c := utf8.RuneCountInString(s)
	if c == n {
		return s, nil
	}
	if c < n {
		return s + strings.Repeat(" ", n-c), nil
	}
	cut := 0
	for k := 0; k < n; k++ {
		_, size := utf8.DecodeRuneInString(s[cut:])
		cut += size
	}
	if strings.TrimRight(s[cut:], " ") != "" {
		return "", pgerror.Newf(pgerror.StringDataRightTrunc, "value too long for type character(%d)", n)
	}
	return s[:cut], nil
}
