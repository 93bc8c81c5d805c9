package types

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"github.com/deeplaked/deeplaked/pgerror"
)

// IntervalValue is PostgreSQL's interval: months, days and microseconds, kept
// apart because a month is no fixed number of days, nor a day (across a
// clock change) of microseconds.
type IntervalValue struct {
	Months int32
	Days   int32
	Micros int64
}

// IntervalSize is the bytes of an interval value in a Vec.
const IntervalSize = 16

// Interval field bits of a type modifier (interval '90' day): PostgreSQL's
// INTERVAL_MASK of each field.
const (
	IntervalMonth  = 1 << 1
	IntervalYear   = 1 << 2
	IntervalDay    = 1 << 3
	IntervalHour   = 1 << 10
	IntervalMinute = 1 << 11
	IntervalSecond = 1 << 12
)

const (
	usPerSecond = int64(1e6)
	usPerMinute = 60 * usPerSecond
	usPerHour   = 60 * usPerMinute
	usPerDay    = 24 * usPerHour
)

// AppendInterval appends iv as a Vec holds it: months, days and
// microseconds, big-endian with the sign bit flipped, so that the bytes
// order intervals by months, then days, then microseconds.
func AppendInterval(dst []byte, iv IntervalValue) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(iv.Months)^1<<31)
	dst = binary.BigEndian.AppendUint32(dst, uint32(iv.Days)^1<<31)
	return binary.BigEndian.AppendUint64(dst, uint64(iv.Micros)^1<<63)
}

// IntervalOf returns the interval b (AppendInterval's form) holds.
func IntervalOf(b []byte) IntervalValue {
	if len(b) != IntervalSize {
		return IntervalValue{}
	}
	return IntervalValue{
		Months: int32(binary.BigEndian.Uint32(b) ^ 1<<31),
		Days:   int32(binary.BigEndian.Uint32(b[4:]) ^ 1<<31),
		Micros: int64(binary.BigEndian.Uint64(b[8:]) ^ 1<<63),
	}
}

// Neg returns -iv.
func (iv IntervalValue) Neg() IntervalValue { return IntervalValue{-iv.Months, -iv.Days, -iv.Micros} }

// Add returns iv + o, or an error when a field overflows.
func (iv IntervalValue) Add(o IntervalValue) (IntervalValue, error) {
	m := int64(iv.Months) + int64(o.Months)
	d := int64(iv.Days) + int64(o.Days)
	us := iv.Micros + o.Micros
	if m != int64(int32(m)) || d != int64(int32(d)) || (us^iv.Micros)&(us^o.Micros) < 0 {
		return IntervalValue{}, intervalOutOfRange()
	}
	return IntervalValue{int32(m), int32(d), us}, nil
}

// Mul returns iv × f as PostgreSQL's interval_mul does: fractions of months
// carry into days (30 a month), of days into microseconds.
func (iv IntervalValue) Mul(f float64) (IntervalValue, error) {
	months := float64(iv.Months) * f
	days := float64(iv.Days) * f
	if math.IsNaN(months) || math.IsNaN(days) || math.Abs(months) > math.MaxInt32 || math.Abs(days) > math.MaxInt32 {
		return IntervalValue{}, intervalOutOfRange()
	}
	out := IntervalValue{Months: int32(months)}
	days += (months - math.Trunc(months)) * 30
	out.Days = int32(days)
	us := float64(iv.Micros)*f + (days-math.Trunc(days))*float64(usPerDay)
	if math.IsNaN(us) || math.Abs(us) >= math.MaxInt64 {
		return IntervalValue{}, intervalOutOfRange()
	}
	out.Micros = int64(math.Round(us))
	return out, nil
}

func intervalOutOfRange() error {
	return pgerror.New(pgerror.DatetimeFieldOverflow, "interval out of range")
}

// AddToTimestamp returns timestamp us (microseconds since 2000-01-01) plus
// iv, as PostgreSQL's timestamp_pl_interval: the months first (the day of
// the month kept, or the month's last), then the days, then the
// microseconds. Infinite timestamps stay as they are.
func AddToTimestamp(us int64, iv IntervalValue) (int64, error) {
	if us == math.MaxInt64 || us == math.MinInt64 {
		return us, nil
	}
	if iv.Months != 0 || iv.Days != 0 {
		t := TimestampTime(us)
		y, m, d := t.Date()
		day := floorDiv(us, usPerDay)
		tod := us - day*usPerDay
		if iv.Months != 0 {
			mm := int64(y)*12 + int64(m-1) + int64(iv.Months)
			ny, nm := int(floorDiv(mm, 12)), int(mm-floorDiv(mm, 12)*12)+1
			if nd := daysIn(ny, nm); d > nd {
				d = nd
			}
			days, err := dateDays(ny, nm, d)
			if err != nil {
				return 0, err
			}
			day = days
		}
		day += int64(iv.Days)
		us = day*usPerDay + tod
	}
	r := us + iv.Micros
	if (r^us)&(r^iv.Micros) < 0 || !TimestampInRange(r) {
		return 0, pgerror.New(pgerror.DatetimeFieldOverflow, "timestamp out of range")
	}
	return r, nil
}

// dateDays returns the days since 2000-01-01 of a date.
func dateDays(y, m, d int) (int64, error) {
	days := civilDays(y, m, d)
	if !DateInRange(days) {
		return 0, pgerror.New(pgerror.DatetimeFieldOverflow, "date out of range")
	}
	return days, nil
}

// civilDays returns the days from 2000-01-01 to y-m-d (proleptic
// Gregorian).
func civilDays(y, m, d int) int64 {
	// Days from civil, after Howard Hinnant's algorithm.
	yy := int64(y)
	if m <= 2 {
		yy--
	}
	era := floorDiv(yy, 400)
	yoe := yy - era*400
	mp := int64((m + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468 - 10957
}

// SubTimestamps returns a - b as PostgreSQL's timestamp_mi does: whole days
// and the microseconds left (no months).
func SubTimestamps(a, b int64) (IntervalValue, error) {
	if a == math.MaxInt64 || a == math.MinInt64 || b == math.MaxInt64 || b == math.MinInt64 {
		return IntervalValue{}, pgerror.New(pgerror.DatetimeFieldOverflow, "cannot subtract infinite timestamps")
	}
	d := a - b
	if (a^b)&(d^a) < 0 {
		return IntervalValue{}, intervalOutOfRange()
	}
	days := d / usPerDay
	return IntervalValue{Days: int32(days), Micros: d - days*usPerDay}, nil
}

// ParseInterval parses s as interval input: quantities with units ("1
// year 2 mons 3 days", "3 hours", "1.5 days", "-2 weeks", "90 minutes
// ago"), a time of day ("04:05:06.5", "-01:00"), or a bare number, which
// counts the unit fields names when it names one (interval '90' day) and
// seconds otherwise.
func ParseInterval(s string, fields int) (IntervalValue, error) {
	bad := func() (IntervalValue, error) {
		return IntervalValue{}, pgerror.Newf(pgerror.InvalidDatetimeFormat, "invalid input syntax for type interval: %q", s)
	}
	toks := strings.Fields(strings.ToLower(strings.TrimSpace(s)))
	if len(toks) == 0 {
		return bad()
	}
	var iv IntervalValue
	var fm, fd, fus float64 // fractions carried down
	ago := false
	add := func(n float64, unit string) bool {
		switch unit {
		case "microsecond", "microseconds", "us", "usec", "usecs":
			fus += n
		case "millisecond", "milliseconds", "ms", "msec", "msecs":
			fus += n * 1e3
		case "second", "seconds", "s", "sec", "secs":
			fus += n * 1e6
		case "minute", "minutes", "m", "min", "mins":
			fus += n * float64(usPerMinute)
		case "hour", "hours", "h", "hr", "hrs":
			fus += n * float64(usPerHour)
		case "day", "days", "d":
			fd += n
		case "week", "weeks", "w":
			fd += n * 7
		case "month", "months", "mon", "mons":
			fm += n
		case "year", "years", "y", "yr", "yrs":
			fm += n * 12
		case "decade", "decades":
			fm += n * 120
		case "century", "centuries":
			fm += n * 1200
		case "millennium", "millennia":
			fm += n * 12000
		default:
			return false
		}
		return true
	}
	for i := 0; i < len(toks); i++ {
		tok := toks[i]
		if tok == "ago" && i == len(toks)-1 {
			ago = true
			continue
		}
		if strings.Contains(tok, ":") {
			us, ok := parseClock(tok)
			if !ok {
				return bad()
			}
			fus += us
			continue
		}
		// A number, its unit glued on ("3days") or the next token.
		j := 0
		for j < len(tok) && (tok[j] == '-' || tok[j] == '+' || tok[j] == '.' || tok[j] >= '0' && tok[j] <= '9') {
			j++
		}
		n, err := strconv.ParseFloat(tok[:j], 64)
		if j == 0 || err != nil {
			return bad()
		}
		unit := tok[j:]
		if unit == "" && i+1 < len(toks) && toks[i+1] != "ago" && !strings.Contains(toks[i+1], ":") {
			if _, err := strconv.ParseFloat(toks[i+1], 64); err != nil {
				i++
				unit = toks[i]
			}
		}
		if unit == "" {
			unit = bareUnit(fields)
		}
		if !add(n, unit) {
			return bad()
		}
	}
	// Fractions carry down: months → days (30 a month) → microseconds.
	if math.Abs(fm) > math.MaxInt32 || math.Abs(fd) > math.MaxInt32 {
		return IntervalValue{}, intervalOutOfRange()
	}
	iv.Months = int32(fm)
	fd += (fm - math.Trunc(fm)) * 30
	iv.Days = int32(fd)
	fus += (fd - math.Trunc(fd)) * float64(usPerDay)
	if math.Abs(fus) >= math.MaxInt64 {
		return IntervalValue{}, intervalOutOfRange()
	}
	iv.Micros = int64(math.Round(fus))
	if ago {
		iv = iv.Neg()
	}
	return iv, nil
}

// bareUnit is the unit a bare number of an interval counts: the one field
// the type modifier names, else seconds.
func bareUnit(fields int) string {
	switch fields {
	case IntervalYear:
		return "year"
	case IntervalMonth:
		return "month"
	case IntervalDay:
		return "day"
	case IntervalHour:
		return "hour"
	case IntervalMinute:
		return "minute"
	}
	return "second"
}

// parseClock parses [-]H:MM[:SS[.ffffff]] into microseconds.
func parseClock(s string) (float64, bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, false
	}
	h, err1 := strconv.ParseInt(parts[0], 10, 64)
	m, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || m < 0 || m > 59 {
		return 0, false
	}
	us := float64(h)*float64(usPerHour) + float64(m)*float64(usPerMinute)
	if len(parts) == 3 {
		sec, err := strconv.ParseFloat(parts[2], 64)
		if err != nil || sec < 0 || sec >= 60 {
			return 0, false
		}
		us += sec * 1e6
	}
	if neg {
		us = -us
	}
	return us, true
}

// AppendIntervalText appends iv as PostgreSQL prints it with IntervalStyle
// postgres: "1 year 2 mons 3 days 04:05:06.5", "-1 days +02:00:00",
// "00:00:00" for zero.
func AppendIntervalText(dst []byte, iv IntervalValue) []byte {
	start := len(dst)
	neg := false // a field printed so far was negative
	field := func(n int64, unit string) {
		if n == 0 {
			return
		}
		if len(dst) > start {
			dst = append(dst, ' ')
		}
		if neg && n > 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, n, 10)
		dst = append(dst, ' ')
		dst = append(dst, unit...)
		if n != 1 {
			dst = append(dst, 's')
		}
		neg = neg || n < 0
	}
	field(int64(iv.Months/12), "year")
	field(int64(iv.Months%12), "mon")
	field(int64(iv.Days), "day")
	if iv.Micros == 0 && len(dst) > start {
		return dst
	}
	if len(dst) > start {
		dst = append(dst, ' ')
	}
	us := iv.Micros
	switch {
	case us < 0:
		dst = append(dst, '-')
		us = -us
	case neg:
		dst = append(dst, '+')
	}
	h := us / usPerHour
	us -= h * usPerHour
	m := us / usPerMinute
	us -= m * usPerMinute
	sec := us / usPerSecond
	frac := us - sec*usPerSecond
	dst = appendPadded(dst, h)
	dst = append(dst, ':')
	dst = appendPadded(dst, m)
	dst = append(dst, ':')
	dst = appendPadded(dst, sec)
	if frac != 0 {
		f := strconv.AppendInt(nil, frac+usPerSecond, 10)[1:] // 6 digits
		dst = append(dst, '.')
		dst = append(dst, strings.TrimRight(string(f), "0")...)
	}
	return dst
}

func appendPadded(dst []byte, n int64) []byte {
	if n < 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, n, 10)
}
