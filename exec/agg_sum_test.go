package exec

import (
	"math"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// TestSumState checks sum and avg's accumulation at the limits: a bigint
// sum passing beyond the range and coming back is exact, one ending beyond
// it is 22003; float sums overflow as float8pl/float4pl do, and avg as
// float8_accum does.
func TestSumState(t *testing.T) {
	i8, f4, f8 := types.TypInt8, types.TypFloat4, types.TypFloat8
	sumInts := func(vals ...int64) (int64, error) {
		var s sumState
		v := intVec(i8, vals...)
		for r := range vals {
			if err := s.add(v, r, false, i8); err != nil {
				return 0, err
			}
		}
		out := types.NewVec(i8, 1)
		err := s.appendTo(out, false, int64(len(vals)))
		if err != nil {
			return 0, err
		}
		return out.Ints[0], nil
	}
	if got, err := sumInts(math.MaxInt64, 1, -5); err != nil || got != math.MaxInt64-4 {
		t.Errorf("sum(max, 1, -5) = %d, %v", got, err)
	}
	if got, err := sumInts(math.MinInt64, -1, math.MaxInt64, 2); err != nil || got != 0 {
		t.Errorf("sum(min, -1, max, 2) = %d, %v", got, err)
	}
	if _, err := sumInts(math.MaxInt64, 1); pgerror.GetCode(err) != rangeErr {
		t.Errorf("sum(max, 1): %v, want 22003", err)
	}
	if _, err := sumInts(math.MinInt64, -1); pgerror.GetCode(err) != rangeErr {
		t.Errorf("sum(min, -1): %v, want 22003", err)
	}
	// avg of bigints beyond the range.
	var s sumState
	v := intVec(i8, math.MaxInt64, math.MaxInt64)
	for r := 0; r < 2; r++ {
		_ = s.add(v, r, true, f8)
	}
	out := types.NewVec(f8, 1)
	if err := s.appendTo(out, true, 2); err != nil || out.Floats[0] != 0x1p63 {
		t.Errorf("avg(max, max) = %v, %v", out.Floats, err)
	}

	addFloats := func(avg bool, typ types.Type, vals ...float64) (float64, error) {
		var s sumState
		v := floatVec(typ, vals...)
		for r := range vals {
			if err := s.add(v, r, avg, typ); err != nil {
				return 0, err
			}
		}
		out := types.NewVec(typ, 1)
		if err := s.appendTo(out, avg, int64(len(vals))); err != nil {
			return 0, err
		}
		return out.Floats[0], nil
	}
	if _, err := addFloats(false, f8, 1e308, 1e308); pgerror.GetCode(err) != rangeErr {
		t.Errorf("sum(1e308, 1e308): %v", err)
	}
	if got, err := addFloats(false, f8, math.Inf(1), 1e308, 1e308); err != nil || !math.IsInf(got, 1) {
		t.Errorf("sum(inf, 1e308, 1e308) = %v, %v", got, err)
	}
	if _, err := addFloats(false, f4, 3e38, 3e38); pgerror.GetCode(err) != rangeErr {
		t.Errorf("sum(3e38::real, 3e38::real): %v", err)
	}
	// real sums round to real at each step, as float4pl.
	if got, err := addFloats(false, f4, 16777216, 1, 1); err != nil || got != 16777216 {
		t.Errorf("sum(16777216, 1, 1)::real = %v, %v", got, err)
	}
	if _, err := addFloats(true, f8, 1e308, -1e308); pgerror.GetCode(err) != rangeErr {
		t.Errorf("avg(1e308, -1e308): %v, want 22003 as float8_accum", err)
	}
	if got, err := addFloats(true, f8, 1e200, 1e200); err != nil || got != 1e200 {
		t.Errorf("avg(1e200, 1e200) = %v, %v", got, err)
	}
	if got, err := addFloats(true, f8, math.Inf(1), 1); err != nil || !math.IsInf(got, 1) {
		t.Errorf("avg(inf, 1) = %v, %v", got, err)
	}
}
