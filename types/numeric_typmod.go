package types

// ParseNumericTypmod appends the numeric s spells as a value of type t:
// rounded to t's scale and checked against its precision when t is
// numeric(p, s).
func ParseNumericTypmod(dst []byte, s string, t Type) ([]byte, error) {
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
