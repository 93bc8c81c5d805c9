package types

import "math"

// Float16ToFloat32 converts an IEEE 754 half-precision value to float32.
// Every half value is exactly representable, so the conversion is exact.
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // Inf or NaN; NaN payload kept in the high mantissa bits
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	case mant == 0: // ±0
		return math.Float32frombits(sign)
	}
	// Subnormal: normalize the mantissa.
	e := uint32(127 - 15 + 1)
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
}

// Float32ToFloat16 converts f to IEEE 754 half precision, rounding to
// nearest, ties to even. Values beyond the half range become ±Inf; NaN stays
// NaN (quiet).
func Float32ToFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	if e := exp - 127 + 15; e > 0 {
		if e >= 0x1f {
			return sign | 0x7c00
		}
		h := uint32(e)<<10 | mant>>13
		rem := mant & 0x1fff
		if rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
			h++ // a carry into the exponent is correct, up to Inf
		}
		return sign | uint16(h)
	}
	// Subnormal half (or zero): value = m × 2^(exp-150), unit 2^-24.
	if exp == 0 {
		return sign // float32 subnormals are far below the half range
	}
	m := mant | 0x800000
	shift := uint32(126 - exp)
	if shift >= 25 {
		return sign
	}
	h := m >> shift
	rem := m & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || rem == half && h&1 == 1 {
		h++
	}
	return sign | uint16(h)
}

// BFloat16ToFloat32 converts a bfloat16 value (the upper 16 bits of a
// float32) to float32 exactly.
func BFloat16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Float32ToBFloat16 converts f to bfloat16, rounding to nearest, ties to
// even. NaN stays NaN (quiet).
func Float32ToBFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// RoundFloat16 returns f rounded to the nearest half-precision value.
func RoundFloat16(f float32) float32 { return Float16ToFloat32(Float32ToFloat16(f)) }

// RoundBFloat16 returns f rounded to the nearest bfloat16 value.
func RoundBFloat16(f float32) float32 { return BFloat16ToFloat32(Float32ToBFloat16(f)) }
