package types

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // named time zones in timestamptz input, wherever the server runs

	"github.com/deeplaked/deeplaked/pgerror"
)

// date, timestamp and timestamptz are held as PostgreSQL holds them: days
// (date) or microseconds (timestamp, timestamptz: UTC) since 2000-01-01,
// in Ints; infinity and -infinity are the largest and smallest values.

// pgEpochUnix is 2000-01-01 00:00:00 UTC in Unix seconds.
const pgEpochUnix = 946684800

const (
	// DateInfinity and DateNegInfinity are date's infinity and -infinity.
	DateInfinity    = math.MaxInt32
	DateNegInfinity = math.MinInt32
	// TimestampInfinity and TimestampNegInfinity are a timestamp's.
	TimestampInfinity    = math.MaxInt64
	TimestampNegInfinity = math.MinInt64
)

// The finite values held: 0001-01-01 to 294276-12-31 (PostgreSQL's
// timestamp range, less the years before Christ, which are not read or
// printed here).
var (
	TimestampMin = TimestampOf(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC))
	TimestampMax = TimestampOf(time.Date(294276, 12, 31, 23, 59, 59, 999999000, time.UTC))
	DateMin      = floorDiv(TimestampMin, 86400e6)
	DateMax      = floorDiv(TimestampMax, 86400e6)
)

// TimestampInRange reports whether us is infinite or in the held range.
func TimestampInRange(us int64) bool {
	return us == TimestampInfinity || us == TimestampNegInfinity || TimestampMin <= us && us <= TimestampMax
}

// DateInRange reports whether days is infinite or in the held range.
func DateInRange(days int64) bool {
	return days == DateInfinity || days == DateNegInfinity || DateMin <= days && days <= DateMax
}

// IsDateTime reports whether t is date, timestamp or timestamptz.
func (t Type) IsDateTime() bool {
	return t.Kind == Date || t.Kind == Timestamp || t.Kind == TimestampTZ
}

// ParseDate parses s as date input: YYYY-MM-DD (a time after it is
// ignored), epoch (1970-01-01), infinity or -infinity.
func ParseDate(s string) (int64, error) {
	if d, ok := parseISODate(s); ok {
		return d, nil
	}
	us, special, err := parseDateTime(s, "date", false)
	if err != nil {
		return 0, err
	}
	switch special {
	case 1:
		return DateInfinity, nil
	case -1:
		return DateNegInfinity, nil
	}
	return floorDiv(us, 86400e6), nil
}

// parseISODate parses the form nearly every date comes in, YYYY-MM-DD
// exactly, as parseDateTime does but without its general machinery (a
// load of dates spent most of its time there); ok is false for anything
// else, which parseDateTime then reads or rejects.
func parseISODate(s string) (days int64, ok bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	var n [8]int
	for i, k := range [8]int{0, 1, 2, 3, 5, 6, 8, 9} {
		c := s[k]
		if c < '0' || c > '9' {
			return 0, false
		}
		n[i] = int(c - '0')
	}
	year := n[0]*1000 + n[1]*100 + n[2]*10 + n[3]
	month, day := n[4]*10+n[5], n[6]*10+n[7]
	if year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month) {
		return 0, false
	}
	return daysFromCivil(year, month, day) - pgEpochUnix/86400, true
}

// daysFromCivil returns the days from 1970-01-01 to a date of the
// proleptic Gregorian calendar (Howard Hinnant's days_from_civil).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400 // y >= 0 here
	yoe := y - era*400
	mp := (m + 9) % 12 // March is 0
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era*146097 + doe - 719468)
}

// ParseTimestamp parses s as timestamp (tz false: a zone in s is ignored,
// as PostgreSQL ignores it) or timestamptz input (a zone in s applies;
// none is UTC): YYYY-MM-DD[( |T)HH:MM[:SS[.ffffff]]][zone], epoch,
// infinity or -infinity. The zone is Z, UTC, GMT, ±HH[[:]MM[[:]SS]] or a
// name of the tz database (Europe/Paris).
func ParseTimestamp(s string, tz bool) (int64, error) {
	name := "timestamp"
	if tz {
		name = "timestamp with time zone"
	}
	us, special, err := parseDateTime(s, name, tz)
	switch {
	case err != nil:
		return 0, err
	case special > 0:
		return TimestampInfinity, nil
	case special < 0:
		return TimestampNegInfinity, nil
	}
	return us, nil
}

// parseDateTime parses date or timestamp input into microseconds since
// 2000-01-01 (special: 1 infinity, -1 -infinity).
func parseDateTime(s, typ string, useZone bool) (us int64, special int, err error) {
	bad := func() (int64, int, error) {
		return 0, 0, pgerror.Newf(pgerror.InvalidDatetimeFormat, "invalid input syntax for type %s: \"%s\"", typ, s)
	}
	outOfRange := func() (int64, int, error) {
		return 0, 0, pgerror.Newf(pgerror.DatetimeFieldOverflow, "date/time field value out of range: \"%s\"", s)
	}
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "infinity", "+infinity":
		return 0, 1, nil
	case "-infinity":
		return 0, -1, nil
	case "epoch": // 1970-01-01 00:00:00 UTC
		return -pgEpochUnix * 1e6, 0, nil
	}
	num := func(min, max int) (int, bool) {
		n := 0
		for n < len(t) && n < max && '0' <= t[n] && t[n] <= '9' {
			n++
		}
		if n < min {
			return 0, false
		}
		v, _ := strconv.Atoi(t[:n])
		t = t[n:]
		return v, true
	}
	sep := func(c byte) bool {
		if len(t) > 0 && t[0] == c {
			t = t[1:]
			return true
		}
		return false
	}
	year, ok := num(4, 6)
	if !ok || !sep('-') {
		return bad()
	}
	month, ok := num(1, 2)
	if !ok || !sep('-') {
		return bad()
	}
	day, ok := num(1, 2)
	if !ok {
		return bad()
	}
	var hour, min, sec, nanos int
	if len(t) > 0 && (t[0] == ' ' || t[0] == 'T' || t[0] == 't') {
		rest := strings.TrimLeft(t[1:], " ")
		if len(rest) > 0 && '0' <= rest[0] && rest[0] <= '9' {
			t = rest
			if hour, ok = num(1, 2); !ok || !sep(':') {
				return bad()
			}
			if min, ok = num(2, 2); !ok {
				return bad()
			}
			if sep(':') {
				if sec, ok = num(2, 2); !ok {
					return bad()
				}
				if sep('.') {
					n := 0
					for n < len(t) && '0' <= t[n] && t[n] <= '9' {
						n++
					}
					if n == 0 {
						return bad()
					}
					frac := t[:n]
					t = t[n:]
					// Round to microseconds, as PostgreSQL does.
					for len(frac) < 7 {
						frac += "0"
					}
					f, _ := strconv.Atoi(frac[:7])
					nanos = (f + 5) / 10 * 1000
				}
			}
		}
	}
	loc := time.UTC
	if z := strings.TrimSpace(t); z != "" {
		zl, zok := parseZone(z)
		if !zok {
			return bad()
		}
		if useZone {
			loc = zl
		}
	}
	if year < 1 || year > 294276 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month) ||
		hour > 24 || min > 59 || sec > 60 || hour == 24 && (min > 0 || sec > 0 || nanos > 0) {
		return outOfRange()
	}
	tm := time.Date(year, time.Month(month), day, hour, min, sec, nanos, loc)
	if typ == "date" {
		tm = time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC)
	}
	us = (tm.Unix()-pgEpochUnix)*1e6 + int64(tm.Nanosecond()/1000)
	if us < TimestampMin || us > TimestampMax {
		return outOfRange() // a zone moved it past the range
	}
	return us, 0, nil
}

// parseZone reads a time zone suffix.
func parseZone(z string) (*time.Location, bool) {
	switch strings.ToUpper(z) {
	case "Z", "UTC", "GMT", "UCT", "ZULU":
		return time.UTC, true
	}
	if z[0] == '+' || z[0] == '-' {
		sign := 1
		if z[0] == '-' {
			sign = -1
		}
		digits := strings.ReplaceAll(z[1:], ":", "")
		if len(digits) == 0 || len(digits) > 6 || len(digits)%2 == 1 && len(digits) != 1 {
			return nil, false
		}
		if len(digits) == 1 {
			digits = "0" + digits
		}
		for len(digits) < 6 {
			digits += "0"
		}
		h, err1 := strconv.Atoi(digits[:2])
		m, err2 := strconv.Atoi(digits[2:4])
		sc, err3 := strconv.Atoi(digits[4:6])
		if err1 != nil || err2 != nil || err3 != nil || h > 15 || m > 59 || sc > 59 {
			return nil, false
		}
		return time.FixedZone("", sign*(h*3600+m*60+sc)), true
	}
	if strings.EqualFold(z, "local") {
		return nil, false // the server's zone is no client's
	}
	if loc, ok := zones.Load(z); ok {
		return loc.(*time.Location), true
	}
	loc, err := time.LoadLocation(z)
	if err != nil {
		return nil, false
	}
	zones.Store(z, loc)
	return loc, true
}

// zones caches the tz database's zones by name (LoadLocation reads a file).
var zones sync.Map

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// TimestampTime returns the time of a finite timestamp value, in UTC.
func TimestampTime(us int64) time.Time {
	sec := floorDiv(us, 1e6)
	return time.Unix(sec+pgEpochUnix, (us-sec*1e6)*1000).UTC()
}

// TimestampOf returns the timestamp value of t.
func TimestampOf(t time.Time) int64 {
	return (t.Unix()-pgEpochUnix)*1e6 + int64(t.Nanosecond()/1000)
}

// AppendDate appends a date's text form: YYYY-MM-DD, infinity, -infinity.
func AppendDate(dst []byte, days int64) []byte {
	switch days {
	case DateInfinity:
		return append(dst, "infinity"...)
	case DateNegInfinity:
		return append(dst, "-infinity"...)
	}
	return TimestampTime(days*86400e6).AppendFormat(dst, "2006-01-02")
}

// AppendTimestamp appends a timestamp's text form as PostgreSQL's ISO
// DateStyle prints it: YYYY-MM-DD HH:MM:SS[.ffffff] (trailing zeros of the
// fraction dropped), with +00 for timestamptz (shown in UTC).
func AppendTimestamp(dst []byte, us int64, tz bool) []byte {
	switch us {
	case TimestampInfinity:
		return append(dst, "infinity"...)
	case TimestampNegInfinity:
		return append(dst, "-infinity"...)
	}
	t := TimestampTime(us)
	dst = t.AppendFormat(dst, "2006-01-02 15:04:05")
	if frac := t.Nanosecond() / 1000; frac != 0 {
		f := strconv.Itoa(1000000 + frac)[1:]
		dst = append(append(dst, '.'), strings.TrimRight(f, "0")...)
	}
	if tz {
		dst = append(dst, "+00"...)
	}
	return dst
}

// ConvertDateTime converts v, a value of kind from (date, timestamp or
// timestamptz), to kind to: a date is its midnight, a timestamp's date
// the day it falls in; infinities stay infinite. Timestamps carry no zone
// of their own here (timestamptz is UTC), so the two convert unchanged.
func ConvertDateTime(v int64, from, to Kind) int64 {
	switch {
	case from == Date && to != Date:
		switch v {
		case DateInfinity:
			return TimestampInfinity
		case DateNegInfinity:
			return TimestampNegInfinity
		}
		return v * 86400e6
	case from != Date && to == Date:
		switch v {
		case TimestampInfinity:
			return DateInfinity
		case TimestampNegInfinity:
			return DateNegInfinity
		}
		return floorDiv(v, 86400e6)
	}
	return v
}
