package types

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// parsePlainDecimal gives the bytes ParseNumeric and NumericApplyTypmod
// give, for random decimals of every length around the limits and for
// typmods with and without a scale, and leaves every other form to them.
func TestParsePlainDecimal(t *testing.T) {
	slow := func(s string, typ Type) ([]byte, error) {
		v, err := ParseNumeric(nil, s)
		if err != nil || typ.Width == 0 {
			return v, err
		}
		return NumericApplyTypmod(nil, v, typ.Width, typ.Scale)
	}
	types := []Type{TypNumeric, {Kind: Numeric, Width: 15, Scale: 2}, {Kind: Numeric, Width: 5}, {Kind: Numeric, Width: 10, Scale: 5},
		{Kind: Numeric, Width: 1, Scale: 1}, {Kind: Numeric, Width: 18}, {Kind: Numeric, Width: 20, Scale: 4}, {Kind: Numeric, Width: 3, Scale: -2}}
	rng := rand.New(rand.NewPCG(7, 8))
	digits := func(n int) string {
		var sb strings.Builder
		for range n {
			sb.WriteByte(byte('0' + rng.IntN(10)))
		}
		return sb.String()
	}
	inputs := []string{"0", "-0", "0.00", "-0.00", "007.50", "1.", ".5", "-.5", "-", "", "+1", " 1", "1 ", "1e5", "NaN",
		"999999999999999999", "9999999999999999999", "0.000000000000000001", "99999.999", "1.2.3", "--1"}
	for range 20000 {
		s := digits(rng.IntN(21))
		if rng.IntN(2) == 0 {
			s += "." + digits(rng.IntN(8))
		}
		if rng.IntN(3) == 0 {
			s = "-" + s
		}
		inputs = append(inputs, s)
	}
	fast := 0
	for _, s := range inputs {
		for _, typ := range types {
			coef, dscale, ok := parsePlainDecimal(s, typ)
			want, err := slow(s, typ)
			if !ok {
				continue
			}
			fast++
			if got := AppendNumericSmall(nil, coef, dscale); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%q as %s: % x, want % x (%v)", s, typ, got, want, err)
			}
		}
	}
	if fast < len(inputs) {
		t.Errorf("only %d of %d parses took the fast path", fast, len(inputs)*len(types))
	}
	for _, s := range []string{"1.", ".5", "-.5", "-", "", "+1", " 1", "1e5", "NaN", "1.2.3", "9999999999999999999"} {
		if _, _, ok := parsePlainDecimal(s, TypNumeric); ok {
			t.Errorf("%q: taken by the fast path", s)
		}
	}
}
