package session

import (
	"encoding/binary"
	"testing"

	"github.com/deeplaked/deeplaked/types"
)

func TestNumericText(t *testing.T) {
	num := func(weight int16, sign uint16, dscale int16, digits ...uint16) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(len(digits)))
		b = binary.BigEndian.AppendUint16(b, uint16(weight))
		b = binary.BigEndian.AppendUint16(b, sign)
		b = binary.BigEndian.AppendUint16(b, uint16(dscale))
		for _, d := range digits {
			b = binary.BigEndian.AppendUint16(b, d)
		}
		return b
	}
	for _, tc := range []struct {
		b    []byte
		want string
	}{
		{num(0, 0, 0), "0"},
		{num(0, 0, 2), "0.00"},
		{num(1, 0, 0, 1), "10000"},
		{num(1, 0x4000, 2, 12, 3456, 7800), "-123456.78"},
		{num(-1, 0, 4, 5), "0.0005"},
		{num(-2, 0, 5, 5000), "0.00005"},
		{num(4, 0, 0, 9223, 3720, 3685, 4775, 8080), "92233720368547758080"},
		{num(0, 0xC000, 0), "NaN"},
		{num(0, 0xD000, 0), "Infinity"},
	} {
		got, err := numericText(nil, tc.b)
		if err != nil || string(got) != tc.want {
			t.Errorf("%x: %q, %v; want %q", tc.b, got, err, tc.want)
		}
	}
	if _, err := numericText(nil, num(0, 0x1234, 0)); err == nil {
		t.Error("a bad sign decodes")
	}
	if _, err := numericText(nil, num(0, 0, 0, 1)[:9]); err == nil {
		t.Error("a short value decodes")
	}
}

// FuzzForeignText: arbitrary bytes for the parameter types converted to
// text fail with an error or give valid UTF-8, never a panic.
func FuzzForeignText(f *testing.F) {
	oids := []uint32{oidNumeric, oidOID, oidBpchar,
		types.OIDFloat8Arr, types.OIDInt4Array, types.OIDTextArray, types.OIDBoolArray, 1231}
	f.Add(uint8(0), []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 7})
	f.Add(uint8(4), []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2, 189, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		oid := oids[int(which)%len(oids)]
		for _, target := range []types.Type{types.TypText, types.VectorOf(0)} {
			out, err := foreignText(oid, 1, b, target)
			if err != nil {
				continue
			}
			if types.ValidUTF8(out) != nil {
				t.Fatalf("OID %d: %x converts to invalid text %q", oid, b, out)
			}
		}
	})
}
