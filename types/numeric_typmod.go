package types

// ParseNumericTypmod appends the numeric s spells as a value of type t:
// rounded to t's scale and checked against its precision when t is
// numeric(p, s).
func ParseNumericTypmod(dst []byte, s string, t Type) ([]byte, error) {
	if coef, dscale, ok := parsePlainDecimal(s, t); ok {
		return AppendNumericSmall(dst, coef, dscale), nil
	}
	start := len(dst)
	dst, err := ParseNumeric(dst, s)
	if err != nil || t.Width == 0 {
		return dst, err
	}
	n, err := NumericApplyTypmod(dst, dst[start:], t.Width, t.Scale)
	if err != nil {
		return dst[:start], err
	}
	return append(dst[:start], n[len(dst):]...), nil
}

// parsePlainDecimal reads the form nearly every numeric input comes in,
// [-]digits[.digits] with at most 18 digits, the fraction no longer than
// t's scale and the digits before the point within its precision, as
// ParseNumeric and NumericApplyTypmod would: the coefficient and display
// scale of its small form. ok is false for anything else (spaces, a sign
// +, an exponent, rounding, an overflow), which they then read. A load of
// numeric columns spent most of its parsing there.
func parsePlainDecimal(s string, t Type) (coef int64, dscale int, ok bool) {
	i, neg := 0, false
	if len(s) > 0 && s[0] == '-' {
		i, neg = 1, true
	}
	var c uint64
	digits, intDigits, frac := 0, 0, -1
	for ; i < len(s); i++ {
		switch b := s[i]; {
		case '0' <= b && b <= '9':
			if digits == 18 {
				return 0, 0, false
			}
			if c != 0 || b != '0' {
				digits++ // significant digits only
			}
			c = c*10 + uint64(b-'0')
			if frac >= 0 {
				frac++
			} else if c != 0 {
				intDigits++
			}
		case b == '.' && frac < 0:
			frac = 0
		default:
			return 0, 0, false
		}
	}
	switch {
	case frac == 0, i == 0 || i == 1 && neg, s[len(s)-1] == '.' || s[0] == '.' || neg && s[1] == '.':
		return 0, 0, false // "5.", "-", ".5": left to ParseNumeric
	}
	frac = max(frac, 0)
	dscale = frac
	if t.Width > 0 {
		// numeric(p, s): the fraction padded to s; p - s digits before
		// the point at most.
		if t.Scale < 0 || frac > t.Scale || intDigits > t.Width-t.Scale || digits+t.Scale-frac > 18 {
			return 0, 0, false
		}
		c *= pow10u64[t.Scale-frac]
		dscale = t.Scale
	}
	coef = int64(c)
	if neg {
		coef = -coef
	}
	return coef, dscale, true
}
