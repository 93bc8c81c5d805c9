package types

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/deeplaked/deeplaked/pgerror"
)

// AppendUUIDParsed parses s as PostgreSQL's uuid_in does (32 hex digits,
// any case, optionally in braces, a hyphen allowed after any group of four
// digits) and appends its canonical text form. Errors are 22P02.
func AppendUUIDParsed(dst []byte, s string) ([]byte, error) {
	bad := func() ([]byte, error) {
		return dst, pgerror.Newf(pgerror.InvalidTextRepresentation, "invalid input syntax for type uuid: \"%s\"", s)
	}
	t := s
	if len(t) > 0 && t[0] == '{' {
		if len(t) < 2 || t[len(t)-1] != '}' {
			return bad()
		}
		t = t[1 : len(t)-1]
	}
	var raw [16]byte
	n := 0
	for i := 0; i < len(t); {
		if n == 32 {
			return bad()
		}
		if t[i] == '-' {
			// After a group of four digits, not first, last or twice.
			if n == 0 || n%4 != 0 || i+1 == len(t) || t[i+1] == '-' {
				return bad()
			}
			i++
			continue
		}
		if i+1 >= len(t) {
			return bad()
		}
		h, ok1 := hexDigit(t[i])
		l, ok2 := hexDigit(t[i+1])
		if !ok1 || !ok2 {
			return bad()
		}
		raw[n/2] = h<<4 | l
		n += 2
		i += 2
	}
	if n != 32 {
		return bad()
	}
	return AppendUUIDText(dst, raw[:]), nil
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// AppendUUIDText appends the canonical text form of the 16 bytes raw:
// 8-4-4-4-12 lower-case hex digits.
func AppendUUIDText(dst, raw []byte) []byte {
	for i, b := range raw {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = hex.AppendEncode(dst, []byte{b})
	}
	return dst
}

// AppendUUIDBytes appends the 16 bytes of a uuid held in canonical text.
func AppendUUIDBytes(dst, text []byte) []byte {
	var raw [16]byte
	n := 0
	for i := 0; i+1 < len(text) && n < 16; {
		if text[i] == '-' {
			i++
			continue
		}
		h, _ := hexDigit(text[i])
		l, _ := hexDigit(text[i+1])
		raw[n] = h<<4 | l
		n++
		i += 2
	}
	return append(dst, raw[:]...)
}

// NewUUIDv4 returns the canonical text of a random (version 4) uuid, as
// gen_random_uuid() makes.
func NewUUIDv4(dst []byte) []byte {
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	raw[6] = raw[6]&0x0f | 0x40
	raw[8] = raw[8]&0x3f | 0x80
	return AppendUUIDText(dst, raw[:])
}
