package exec

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// The scalar functions of numbers and strings sql/scalar_funcs.go binds,
// evaluated row by row by funcEval (strict, but for those in
// lenientFuncs).

const (
	invalidArgumentForLog   pgerror.Code = "2201E"
	invalidArgumentForPower pgerror.Code = "2201F"
)

// scalar appends the value of a function of sql/scalar_funcs.go for row
// i; ok is false when the function is not one of them.
func (f *funcEval) scalar(i int) (ok bool, err error) {
	out := f.out
	fl := func(k int) float64 { return f.vals[k].Floats[i] }
	if out.Type.Kind == types.Numeric && numericFuncs[f.fn.Name] {
		return f.numericScalar(i)
	}
	switch name := f.fn.Name; name {
	case "pi":
		out.AppendFloat(math.Pi)
	case "now", "statement_timestamp":
		if f.now.IsZero() {
			f.now = f.env.Now
			if name == "statement_timestamp" {
				f.now = f.env.StmtNow
			}
		}
		if f.now.IsZero() {
			f.now = time.Now()
		}
		us := types.TimestampOf(f.now)
		if out.Type.Kind == types.Date {
			out.AppendInt(us / 86400e6)
		} else {
			out.AppendInt(us)
		}
	case "date_part", "extract":
		v, null, err := datePart(f.str(0, i), f.vals[1], i)
		switch {
		case err != nil:
			return true, err
		case null:
			out.AppendNull()
		default:
			out.AppendFloat(v)
		}
	case "date_trunc":
		v, err := dateTrunc(f.str(0, i), f.vals[1].Ints[i])
		if err != nil {
			return true, err
		}
		out.AppendInt(v)
	case "date_pli", "date_mii":
		// date ± integer days: a date (PostgreSQL's date_pli, date_mii).
		d, n := f.vals[0].Ints[i], f.vals[1].Ints[i]
		if name == "date_mii" {
			n = -n
		}
		r := d + n
		if (r^d)&(r^n) < 0 || !types.DateInRange(r) || d == math.MaxInt32 || d == math.MinInt32 {
			return true, pgerror.New(pgerror.DatetimeFieldOverflow, "date out of range")
		}
		out.AppendInt(r)
	case "date_mi":
		out.AppendInt(f.vals[0].Ints[i] - f.vals[1].Ints[i])
	case "timestamp_pl_interval", "timestamp_mi_interval":
		iv := types.IntervalOf(f.vals[1].Bytes.Get(i))
		if name == "timestamp_mi_interval" {
			iv = iv.Neg()
		}
		us, err := types.AddToTimestamp(f.vals[0].Ints[i], iv)
		if err != nil {
			return true, err
		}
		out.AppendInt(us)
	case "timestamp_mi":
		iv, err := types.SubTimestamps(f.vals[0].Ints[i], f.vals[1].Ints[i])
		if err != nil {
			return true, err
		}
		f.buf = types.AppendInterval(f.buf[:0], iv)
		out.AppendBytes(f.buf)
	case "interval_pl", "interval_mi", "interval_mul", "interval_div":
		a := types.IntervalOf(f.vals[0].Bytes.Get(i))
		var r types.IntervalValue
		var err error
		switch name {
		case "interval_pl":
			r, err = a.Add(types.IntervalOf(f.vals[1].Bytes.Get(i)))
		case "interval_mi":
			r, err = a.Add(types.IntervalOf(f.vals[1].Bytes.Get(i)).Neg())
		case "interval_mul":
			r, err = a.Mul(fl(1))
		default:
			if fl(1) == 0 {
				return true, errDivByZero
			}
			r, err = a.Mul(1 / fl(1))
		}
		if err != nil {
			return true, err
		}
		f.buf = types.AppendInterval(f.buf[:0], r)
		out.AppendBytes(f.buf)
	case "gen_random_uuid":
		f.buf = types.NewUUIDv4(f.buf[:0])
		out.AppendBytes(f.buf)
	case "sqrt":
		x := fl(0)
		if x < 0 {
			return true, pgerror.New(invalidArgumentForPower, "cannot take square root of a negative number")
		}
		out.AppendFloat(math.Sqrt(x))
	case "cbrt":
		out.AppendFloat(math.Cbrt(fl(0)))
	case "exp":
		x := fl(0)
		r := math.Exp(x)
		if math.IsInf(r, 0) && !math.IsInf(x, 0) {
			return true, pgerror.New(pgerror.NumericValueOutOfRange, "value out of range: overflow")
		}
		if r == 0 && !math.IsInf(x, 0) {
			return true, pgerror.New(pgerror.NumericValueOutOfRange, "value out of range: underflow")
		}
		out.AppendFloat(r)
	case "ln", "log10":
		x := fl(0)
		if err := logArg(x); err != nil {
			return true, err
		}
		if name == "ln" {
			out.AppendFloat(math.Log(x))
		} else {
			out.AppendFloat(math.Log10(x))
		}
	case "log":
		if len(f.vals) == 1 {
			x := fl(0)
			if err := logArg(x); err != nil {
				return true, err
			}
			out.AppendFloat(math.Log10(x))
			break
		}
		b, x := fl(0), fl(1)
		if err := logArg(b); err != nil {
			return true, err
		}
		if err := logArg(x); err != nil {
			return true, err
		}
		if b == 1 {
			return true, pgerror.New(pgerror.DivisionByZero, "division by zero")
		}
		out.AppendFloat(math.Log(x) / math.Log(b))
	case "sin", "cos", "tan", "cot", "asin", "acos", "atan":
		x := fl(0)
		if math.IsInf(x, 0) && name != "atan" {
			return true, pgerror.New(pgerror.NumericValueOutOfRange, "input is out of range")
		}
		var r float64
		switch name {
		case "sin":
			r = math.Sin(x)
		case "cos":
			r = math.Cos(x)
		case "tan":
			r = math.Tan(x)
		case "cot":
			r = 1 / math.Tan(x)
		case "asin", "acos":
			if x < -1 || x > 1 {
				return true, pgerror.New(pgerror.NumericValueOutOfRange, "input is out of range")
			}
			if name == "asin" {
				r = math.Asin(x)
			} else {
				r = math.Acos(x)
			}
		case "atan":
			r = math.Atan(x)
		}
		out.AppendFloat(r)
	case "atan2":
		out.AppendFloat(math.Atan2(fl(0), fl(1)))
	case "degrees":
		r := fl(0) * (180 / math.Pi)
		if math.IsInf(r, 0) && !math.IsInf(fl(0), 0) {
			return true, pgerror.New(pgerror.NumericValueOutOfRange, "value out of range: overflow")
		}
		out.AppendFloat(r)
	case "radians":
		r := fl(0) * (math.Pi / 180)
		if r == 0 && fl(0) != 0 {
			return true, errFloatUnder
		}
		out.AppendFloat(r)
	case "floor":
		out.AppendFloat(math.Floor(fl(0)) + 0) // + 0: no -0, as numeric
	case "ceil", "ceiling":
		out.AppendFloat(math.Ceil(fl(0)) + 0)
	case "sign":
		x := fl(0)
		switch {
		case x > 0:
			out.AppendFloat(1)
		case x < 0:
			out.AppendFloat(-1)
		default:
			out.AppendFloat(0)
		}
	case "power", "pow":
		x, y := fl(0), fl(1)
		if x == 0 && y < 0 {
			return true, pgerror.New(invalidArgumentForPower, "zero raised to a negative power is undefined")
		}
		if x < 0 && y != math.Trunc(y) {
			return true, pgerror.New(invalidArgumentForPower, "a negative number raised to a non-integer power yields a complex result")
		}
		r := math.Pow(x, y)
		// As PostgreSQL's dpow: from finite operands, an infinite result
		// overflows and a zero one from a non-zero base underflows.
		if finite(x) && finite(y) {
			if math.IsInf(r, 0) {
				return true, errFloatOverflow
			}
			if r == 0 && x != 0 {
				return true, errFloatUnder
			}
		}
		out.AppendFloat(r)
	case "round", "trunc":
		places := 0
		if len(f.vals) == 2 {
			places = int(f.vals[1].Ints[i])
		}
		out.AppendFloat(roundDecimal(fl(0), places, name == "trunc") + 0)
	case "mod":
		a, b := f.vals[0], f.vals[1]
		if a.Type.Phys() == types.PhysInt {
			if b.Ints[i] == 0 {
				return true, pgerror.New(pgerror.DivisionByZero, "division by zero")
			}
			if b.Ints[i] == -1 { // MinInt64 % -1 overflows in Go
				out.AppendInt(0)
				break
			}
			out.AppendInt(a.Ints[i] % b.Ints[i])
			break
		}
		if b.Floats[i] == 0 && !math.IsNaN(a.Floats[i]) {
			return true, errDivByZero
		}
		out.AppendFloat(math.Mod(a.Floats[i], b.Floats[i]))
	case "greatest", "least":
		best := -1
		for k, v := range f.vals {
			if v.Nulls[i] {
				continue
			}
			c := 0
			if best >= 0 {
				c = compareAt(v, i, f.vals[best], i)
			}
			if best < 0 || (name == "greatest" && c > 0) || (name == "least" && c < 0) {
				best = k
			}
		}
		if best < 0 {
			out.AppendNull()
		} else {
			out.AppendFrom(f.vals[best], i)
		}
	case "concat", "concat_ws":
		var sep []byte
		first := 0
		if name == "concat_ws" {
			if f.vals[0].Nulls[i] {
				out.AppendNull()
				break
			}
			sep, first = f.vals[0].GetBytes(i), 1
		}
		f.buf = f.buf[:0]
		n := 0
		for _, v := range f.vals[first:] {
			if v.Nulls[i] {
				continue
			}
			if n > 0 {
				f.buf = append(f.buf, sep...)
			}
			if v.Type.Phys() == types.PhysBytes {
				if err := f.env.checkValue(&f.valAcc, int64(len(out.Bytes.Data)), int64(len(f.buf)+len(v.GetBytes(i)))); err != nil {
					return true, err
				}
			}
			f.buf = types.AppendText(f.buf, v, i)
			n++
		}
		out.AppendBytes(f.buf)
	case "lpad", "rpad":
		s := []rune(f.str(0, i))
		n := int(f.vals[1].Ints[i])
		fill := []rune(" ")
		if len(f.vals) == 3 {
			fill = []rune(f.str(2, i))
		}
		if n <= 0 {
			out.AppendString("")
			break
		}
		if len(s) >= n || len(fill) == 0 {
			out.AppendString(string(s[:min(len(s), n)]))
			break
		}
		// As PostgreSQL: the length in characters times the longest
		// UTF-8 character must fit in a field.
		if err := f.env.checkValue(&f.valAcc, int64(len(out.Bytes.Data)), 4*int64(n)); err != nil {
			return true, err
		}
		var sb strings.Builder
		if name == "rpad" {
			sb.WriteString(string(s))
		}
		for k := 0; k < n-len(s); k++ {
			sb.WriteRune(fill[k%len(fill)])
		}
		if name == "lpad" {
			sb.WriteString(string(s))
		}
		out.AppendString(sb.String())
	case "repeat":
		s, n := f.vals[0].GetBytes(i), f.vals[1].Ints[i]
		if n <= 0 || len(s) == 0 {
			out.AppendString("")
			break
		}
		if n > maxFieldBytes/int64(len(s)) {
			return true, pgerror.New(pgerror.ProgramLimitExceeded, "requested length too large")
		}
		if err := f.env.checkValue(&f.valAcc, int64(len(out.Bytes.Data)), n*int64(len(s))); err != nil {
			return true, err
		}
		out.AppendBytes(bytes.Repeat(s, int(n)))
	case "reverse":
		r := []rune(f.str(0, i))
		for a, b := 0, len(r)-1; a < b; a, b = a+1, b-1 {
			r[a], r[b] = r[b], r[a]
		}
		out.AppendString(string(r))
	case "split_part":
		n := f.vals[2].Ints[i]
		if n == 0 {
			return true, pgerror.New(pgerror.InvalidParameterValue, "field position must not be zero")
		}
		s, sep := f.str(0, i), f.str(1, i)
		var parts []string
		if sep == "" {
			parts = []string{s}
		} else {
			parts = strings.Split(s, sep)
		}
		if n < 0 {
			n += int64(len(parts)) + 1
		}
		if n < 1 || n > int64(len(parts)) {
			out.AppendString("")
		} else {
			out.AppendString(parts[n-1])
		}
	case "chr":
		c := f.vals[0].Ints[i]
		switch {
		case c == 0:
			return true, pgerror.New(pgerror.ProgramLimitExceeded, "null character not permitted")
		case c < 0:
			return true, pgerror.New(pgerror.InvalidParameterValue, "character number must be positive")
		case c > unicode.MaxRune || (c >= 0xD800 && c <= 0xDFFF):
			return true, pgerror.New(pgerror.ProgramLimitExceeded, "requested character too large for encoding: "+strconv.FormatInt(c, 10))
		}
		out.AppendString(string(rune(c)))
	case "ascii":
		r, _ := utf8.DecodeRune(f.vals[0].GetBytes(i))
		if r == utf8.RuneError {
			r = 0
		}
		out.AppendInt(int64(r))
	case "initcap":
		r := []rune(f.str(0, i))
		word := false
		for k, c := range r {
			if word {
				r[k] = unicode.ToLower(c)
			} else {
				r[k] = unicode.ToUpper(c)
			}
			word = unicode.IsLetter(c) || unicode.IsDigit(c)
		}
		out.AppendString(string(r))
	case "md5":
		sum := md5.Sum(f.vals[0].GetBytes(i))
		out.AppendString(hex.EncodeToString(sum[:]))
	case "octet_length":
		out.AppendInt(int64(len(f.vals[0].GetBytes(i))))
	case "starts_with":
		out.AppendBool(strings.HasPrefix(f.str(0, i), f.str(1, i)))
	case "translate":
		from, to := []rune(f.str(1, i)), []rune(f.str(2, i))
		var sb strings.Builder
		for _, c := range f.str(0, i) {
			k := -1
			for j, fc := range from {
				if fc == c {
					k = j
					break
				}
			}
			switch {
			case k < 0:
				sb.WriteRune(c)
			case k < len(to):
				sb.WriteRune(to[k])
			}
		}
		out.AppendString(sb.String())
	case "to_hex":
		n := f.vals[0].Ints[i]
		if f.vals[0].Type.Kind != types.Int8 {
			out.AppendString(strconv.FormatUint(uint64(uint32(n)), 16)) // an int4's two's complement
		} else {
			out.AppendString(strconv.FormatUint(uint64(n), 16))
		}
	case "position":
		s, sub := f.str(0, i), f.str(1, i)
		k := strings.Index(s, sub)
		if k >= 0 {
			k = utf8.RuneCountInString(s[:k])
		}
		out.AppendInt(int64(k + 1))
	default:
		return false, nil
	}
	return true, nil
}

// datePart returns field of row i of x (a date or timestamp), as
// PostgreSQL's date_part does (extract returns numeric there, double
// precision here).
func datePart(field string, x *types.Vec, i int) (v float64, null bool, err error) {
	f := strings.ToLower(strings.TrimSpace(field))
	us := x.Ints[i]
	inf := 0
	if x.Type.Kind == types.Date {
		switch f {
		case "hour", "hours", "minute", "minutes", "min", "mins", "second", "seconds", "sec", "secs",
			"millisecond", "milliseconds", "ms", "microsecond", "microseconds", "us":
			return 0, false, pgerror.Newf(pgerror.FeatureNotSupported, "unit \"%s\" not supported for type date", field)
		}
		switch us {
		case types.DateInfinity:
			inf = 1
		case types.DateNegInfinity:
			inf = -1
		}
		us *= 86400e6
	} else {
		switch us {
		case types.TimestampInfinity:
			inf = 1
		case types.TimestampNegInfinity:
			inf = -1
		}
	}
	if inf != 0 {
		// As PostgreSQL: the unbounded fields are infinite, the others NULL.
		switch f {
		case "year", "years", "decade", "century", "millennium", "epoch", "isoyear", "julian":
			return math.Inf(inf), false, nil
		}
		if _, _, err := datePart(f, zeroDate, 0); err != nil {
			return 0, false, err
		}
		return 0, true, nil
	}
	v, err = datePartOf(f, field, types.TimestampTime(us), us, x.Type)
	return v, false, err
}

// zeroDate is a timestamp vector holding 2000-01-01, to check a field.
var zeroDate = func() *types.Vec {
	v := types.NewVec(types.Type{Kind: types.Timestamp}, 1)
	v.AppendInt(0)
	return v
}()

func datePartOf(f, field string, t time.Time, us int64, typ types.Type) (float64, error) {
	secs := float64(t.Second()) + float64(t.Nanosecond())/1e9
	switch f {
	case "year", "years":
		return float64(t.Year()), nil
	case "month", "months", "mon", "mons":
		return float64(t.Month()), nil
	case "day", "days":
		return float64(t.Day()), nil
	case "hour", "hours":
		return float64(t.Hour()), nil
	case "minute", "minutes", "min", "mins":
		return float64(t.Minute()), nil
	case "second", "seconds", "sec", "secs":
		return secs, nil
	case "millisecond", "milliseconds", "ms":
		return secs * 1000, nil
	case "microsecond", "microseconds", "us":
		return float64(t.Second()*1e6 + t.Nanosecond()/1000), nil
	case "epoch":
		sec := us / 1e6
		if us%1e6 < 0 {
			sec--
		}
		return float64(sec+pgEpochUnixF) + float64(us-sec*1e6)/1e6, nil
	case "dow":
		return float64(t.Weekday()), nil
	case "isodow":
		d := int(t.Weekday())
		if d == 0 {
			d = 7
		}
		return float64(d), nil
	case "doy":
		return float64(t.YearDay()), nil
	case "week":
		_, w := t.ISOWeek()
		return float64(w), nil
	case "isoyear":
		y, _ := t.ISOWeek()
		return float64(y), nil
	case "quarter":
		return float64((int(t.Month())-1)/3 + 1), nil
	case "decade":
		return float64(t.Year() / 10), nil
	case "century":
		return float64((t.Year() + 99) / 100), nil
	case "millennium":
		return float64((t.Year() + 999) / 1000), nil
	}
	return 0, pgerror.Newf(pgerror.InvalidParameterValue, "unit \"%s\" not recognized for type %s", field, typ)
}

const pgEpochUnixF = 946684800

// dateTrunc truncates the timestamp us to field's precision (timestamps
// of both kinds are in UTC here).
func dateTrunc(field string, us int64) (int64, error) {
	if us == types.TimestampInfinity || us == types.TimestampNegInfinity {
		return us, nil
	}
	t := types.TimestampTime(us)
	y, mo, d := t.Date()
	var r time.Time
	switch strings.ToLower(strings.TrimSpace(field)) {
	case "microseconds", "microsecond":
		return us, nil
	case "milliseconds", "millisecond":
		r = t.Truncate(time.Millisecond)
	case "second", "seconds":
		r = t.Truncate(time.Second)
	case "minute", "minutes":
		r = t.Truncate(time.Minute)
	case "hour", "hours":
		r = t.Truncate(time.Hour)
	case "day", "days":
		r = time.Date(y, mo, d, 0, 0, 0, 0, time.UTC)
	case "week", "weeks":
		wd := (int(t.Weekday()) + 6) % 7 // days since Monday
		r = time.Date(y, mo, d-wd, 0, 0, 0, 0, time.UTC)
	case "month", "months":
		r = time.Date(y, mo, 1, 0, 0, 0, 0, time.UTC)
	case "quarter":
		r = time.Date(y, mo-(mo-1)%3, 1, 0, 0, 0, 0, time.UTC)
	case "year", "years":
		r = time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
	case "decade":
		r = time.Date(y-y%10, 1, 1, 0, 0, 0, 0, time.UTC)
	case "century":
		r = time.Date((y-1)/100*100+1, 1, 1, 0, 0, 0, 0, time.UTC)
	case "millennium":
		r = time.Date((y-1)/1000*1000+1, 1, 1, 0, 0, 0, 0, time.UTC)
	default:
		return 0, pgerror.Newf(pgerror.InvalidParameterValue, "unit \"%s\" not recognized for type timestamp", field)
	}
	return types.TimestampOf(r), nil
}

// finite reports whether x is neither infinite nor NaN.
func finite(x float64) bool { return !math.IsInf(x, 0) && !math.IsNaN(x) }

func logArg(x float64) error {
	switch {
	case x == 0:
		return pgerror.New(invalidArgumentForLog, "cannot take logarithm of zero")
	case x < 0:
		return pgerror.New(invalidArgumentForLog, "cannot take logarithm of a negative number")
	}
	return nil
}

// roundDecimal rounds x (half away from zero) or truncates it at places
// decimal digits (negative: left of the point), in decimal as PostgreSQL's
// numeric does, on the shortest decimal form of x: round(2.675, 2) is
// 2.68, as typed.
func roundDecimal(x float64, places int, trunc bool) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	places = max(min(places, 1100), -330) // past these, every float8 is itself, or 0
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(x, 'g', -1, 64))
	if !ok {
		return x
	}
	scale := new(big.Rat).SetFrac(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(places))), nil), big.NewInt(1))
	if places >= 0 {
		r.Mul(r, scale)
	} else {
		r.Quo(r, scale)
	}
	// q is r truncated toward zero; rem what was cut.
	q, rem := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if !trunc {
		// Half away from zero: |2·rem| ≥ denominator.
		twice := new(big.Int).Mul(rem, big.NewInt(2))
		if twice.CmpAbs(r.Denom()) >= 0 {
			if r.Sign() < 0 {
				q.Sub(q, big.NewInt(1))
			} else {
				q.Add(q, big.NewInt(1))
			}
		}
	}
	res := new(big.Rat).SetInt(q)
	if places >= 0 {
		res.Quo(res, scale)
	} else {
		res.Mul(res, scale)
	}
	v, _ := res.Float64()
	if v == 0 && math.Signbit(x) {
		return 0
	}
	return v
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// numericFuncs are the functions numericScalar evaluates.
var numericFuncs = map[string]bool{"round": true, "trunc": true, "floor": true, "ceil": true, "ceiling": true, "sign": true, "mod": true}

// numericScalar evaluates the numeric forms of round, trunc, floor,
// ceil, sign and mod for row i, whose arguments are not NULL.
func (f *funcEval) numericScalar(i int) (ok bool, err error) {
	out := f.out
	v := f.vals[0].Bytes.Get(i)
	d := out.Bytes.Data
	switch f.fn.Name {
	case "round", "trunc":
		places := 0
		if len(f.vals) == 2 {
			places = int(f.vals[1].Ints[i])
		}
		if f.fn.Name == "round" {
			d, err = types.NumericRound(d, v, places)
		} else {
			d, err = types.NumericTrunc(d, v, places)
		}
	case "floor":
		d = types.NumericFloor(d, v)
	case "ceil", "ceiling":
		d = types.NumericCeil(d, v)
	case "sign":
		d = types.NumericSign(d, v)
	case "mod":
		d, err = types.NumericMod(d, v, f.vals[1].Bytes.Get(i))
	}
	if err != nil {
		return true, err
	}
	out.Bytes.Data = d
	out.AppendedBytes()
	return true, nil
}
