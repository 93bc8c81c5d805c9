package exec

import (
	"math"
	"math/bits"

	"github.com/deeplaked/deeplaked/types"
)

// sumState is the running state of sum or avg over one group of numbers
// (of the GROUP BY aggregate or a window's frame). Integers are summed in
// 128 bits, so that a sum of bigints whose running total passes beyond the
// range and comes back is exact, as PostgreSQL's numeric sum is; only a
// final sum outside bigint fails (PostgreSQL's sum(bigint) is numeric
// and would return it). Floats are summed as PostgreSQL's float8pl and
// float4pl do (sum) and accumulated as float8_accum does (avg), with their
// overflow checks.
type sumState struct {
	lo    uint64  // integer sum: low 64 bits
	hi    int64   // integer sum: high 64 bits, signed
	isInt bool    // integers were added
	f     float64 // float sum
	// sxx is avg's sum of squared deviations from the mean (Youngs-Cramer),
	// kept only because PostgreSQL reports 22003 when it overflows.
	sxx float64
	n   float64 // floats accumulated for avg
	// num is the sum of numerics.
	num types.NumericSum
}

// add adds row r of v, which is not NULL, to the state of sum (avg when
// avg is set) whose result has type out.
func (s *sumState) add(v *types.Vec, r int, avg bool, out types.Type) error {
	switch {
	case v.Type.Kind == types.Numeric:
		s.num.Add(v.Bytes.Get(r))
		return nil
	case v.Type.Phys() == types.PhysInt:
		x := v.Ints[r]
		var c uint64
		s.lo, c = bits.Add64(s.lo, uint64(x), 0)
		s.hi += x>>63 + int64(c)
		s.isInt = true
		return nil
	case avg:
		return s.accum(v.Floats[r])
	}
	return s.addFloat(v.Floats[r], out)
}

// addFloat adds x to a float sum whose result has type out.
func (s *sumState) addFloat(x float64, out types.Type) error {
	sum := s.f + x
	if out.Kind == types.Float4 {
		sum = float64(float32(sum))
	}
	if math.IsInf(sum, 0) && !math.IsInf(s.f, 0) && !math.IsInf(x, 0) {
		return errFloatOverflow
	}
	s.f = sum
	return nil
}

// accum adds x to avg's state as PostgreSQL's float8_accum does: finite
// inputs whose sum or squared deviations become infinite are 22003.
func (s *sumState) accum(x float64) error {
	n0 := s.n
	n := n0 + 1
	sx := s.f + x
	sxx := s.sxx
	if n0 > 0 {
		d := x*n - sx
		sxx += d * d / (n * n0)
		if math.IsInf(sx, 0) || math.IsInf(sxx, 0) {
			if !math.IsInf(s.f, 0) && !math.IsInf(x, 0) {
				return errFloatOverflow
			}
			sxx = math.NaN()
		}
	} else if math.IsNaN(x) || math.IsInf(x, 0) {
		sxx = math.NaN()
	}
	s.n, s.f, s.sxx = n, sx, sxx
	return nil
}

// intSum returns the integer sum; ok is false when it is outside bigint.
func (s *sumState) intSum() (v int64, ok bool) {
	v = int64(s.lo)
	return v, s.hi == v>>63
}

// appendTo appends the sum, or the average of count rows when avg is set,
// to out: NULL when count is 0.
func (s *sumState) appendTo(out *types.Vec, avg bool, count int64) error {
	switch {
	case count == 0:
		out.AppendNull()
	case out.Type.Kind == types.Numeric && s.isInt:
		// sum(bigint), avg of integers: the 128-bit sum as a numeric.
		d := out.Bytes.Data
		d = types.AppendNumericInt128(d, s.hi, s.lo, 0)
		if avg {
			start := len(out.Bytes.Data)
			sum := d[start:]
			var err error
			if d, err = types.NumericDiv(d, sum, types.AppendNumericInt(nil, count)); err != nil {
				return err
			}
			d = append(d[:start], d[start+len(sum):]...)
		}
		out.Bytes.Data = d
		out.AppendedBytes()
	case out.Type.Kind == types.Numeric:
		if avg {
			out.Bytes.Data = s.num.AppendAvg(out.Bytes.Data, count)
		} else {
			out.Bytes.Data = s.num.AppendSum(out.Bytes.Data)
		}
		out.AppendedBytes()
	case avg && s.isInt:
		v, ok := s.intSum()
		f := float64(v)
		if !ok {
			f = float64(s.hi)*0x1p64 + float64(s.lo)
		}
		out.AppendFloat(f / float64(count))
	case avg:
		out.AppendFloat(s.f / float64(count))
	case out.Type.Phys() == types.PhysInt:
		v, ok := s.intSum()
		if !ok {
			return errBigintRange
		}
		out.AppendInt(v)
	default:
		out.AppendFloat(s.f)
	}
	return nil
}
