package types

import (
	"unicode/utf8"

	"github.com/deeplaked/deeplaked/pgerror"
)

const hexDigits = "0123456789abcdef"

// AppendByteaText appends b in PostgreSQL's hex output format: \x followed
// by two lowercase hex digits per byte.
func AppendByteaText(dst []byte, b []byte) []byte {
	dst = append(dst, '\\', 'x')
	for _, c := range b {
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return dst
}

// AppendByteaParsed decodes s, a bytea in PostgreSQL text input form, and
// appends the bytes to dst. With a leading \x the rest is hex (whitespace
// between byte pairs allowed; a bad digit or an odd count is 22023, as in
// PostgreSQL); otherwise it is the escape format, where \\ is a backslash,
// \ooo an octal byte and every other byte stands for itself (22P02 for a
// stray backslash).
func AppendByteaParsed(dst []byte, s string) ([]byte, error) {
	if len(s) >= 2 && s[0] == '\\' && s[1] == 'x' {
		for i := 2; i < len(s); {
			c := s[i]
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				i++
				continue
			}
			hi, ok := unhex(c)
			if !ok {
				return dst, badHexDigit(s[i:])
			}
			if i+1 >= len(s) {
				return dst, pgerror.New(pgerror.InvalidParameterValue, "invalid hexadecimal data: odd number of digits")
			}
			lo, ok := unhex(s[i+1])
			if !ok {
				return dst, badHexDigit(s[i+1:])
			}
			dst = append(dst, hi<<4|lo)
			i += 2
		}
		return dst, nil
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			dst = append(dst, '\\')
			i += 2
		case i+3 < len(s) && s[i+1] >= '0' && s[i+1] <= '3' && isOctal(s[i+2]) && isOctal(s[i+3]):
			dst = append(dst, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 4
		default:
			return dst, pgerror.New(pgerror.InvalidTextRepresentation, "invalid input syntax for type bytea")
		}
	}
	return dst, nil
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// badHexDigit reports the first (possibly multi-byte) character of rest as
// PostgreSQL does.
func badHexDigit(rest string) error {
	_, n := utf8.DecodeRuneInString(rest)
	return pgerror.Newf(pgerror.InvalidParameterValue, "invalid hexadecimal digit: \"%s\"", rest[:n])
}
