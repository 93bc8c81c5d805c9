package types

import (
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
)

func TestDateTimeText(t *testing.T) {
	for _, c := range []struct {
		in   string
		tz   bool
		want string
	}{
		{"2024-03-15 10:30:00", false, "2024-03-15 10:30:00"},
		{"2024-03-15T10:30:00.1234567", false, "2024-03-15 10:30:00.123457"},
		{"2024-03-15 10:30", false, "2024-03-15 10:30:00"},
		{"2024-03-15", false, "2024-03-15 00:00:00"},
		{"2024-03-15 10:30:00+05", false, "2024-03-15 10:30:00"}, // ignored without a zone type
		{"2024-03-15 10:30:00+05", true, "2024-03-15 05:30:00+00"},
		{"2024-03-15 10:30:00-02:30", true, "2024-03-15 13:00:00+00"},
		{"2024-03-15 10:30:00 UTC", true, "2024-03-15 10:30:00+00"},
		{"2024-07-01 12:00 Europe/Paris", true, "2024-07-01 10:00:00+00"},
		{"  infinity ", true, "infinity"},
		{"-infinity", false, "-infinity"},
		{"epoch", true, "1970-01-01 00:00:00+00"},
		{"0001-01-01 00:00:00", false, "0001-01-01 00:00:00"},
		{"9999-12-31 23:59:59.999999", false, "9999-12-31 23:59:59.999999"},
		{"1969-07-20 20:17:40.5", false, "1969-07-20 20:17:40.5"},
		{"2024-01-01 24:00:00", false, "2024-01-02 00:00:00"},
	} {
		us, err := ParseTimestamp(c.in, c.tz)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := string(AppendTimestamp(nil, us, c.tz)); got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct {
		in   string
		code pgerror.Code
	}{
		{"", pgerror.InvalidDatetimeFormat}, {"garbage", pgerror.InvalidDatetimeFormat},
		{"2024-3", pgerror.InvalidDatetimeFormat}, {"2024-01-01 10", pgerror.InvalidDatetimeFormat},
		{"2024-01-01 10:00 Mars/Olympus", pgerror.InvalidDatetimeFormat}, {"2024-01-01 10:00:00.", pgerror.InvalidDatetimeFormat},
		{"2024-13-01", pgerror.DatetimeFieldOverflow}, {"2023-02-29", pgerror.DatetimeFieldOverflow},
		{"2024-01-01 24:00:01", pgerror.DatetimeFieldOverflow}, {"2024-01-01 10:60", pgerror.DatetimeFieldOverflow},
		{"0000-01-01", pgerror.DatetimeFieldOverflow},
	} {
		if _, err := ParseTimestamp(c.in, true); pgerror.GetCode(err) != c.code {
			t.Errorf("%q: %v, want %s", c.in, err, c.code)
		}
	}
	for in, want := range map[string]string{"2024-02-29": "2024-02-29", "1999-12-31 23:00": "1999-12-31", "epoch": "1970-01-01",
		"infinity": "infinity", "1900-03-01": "1900-03-01"} {
		d, err := ParseDate(in)
		if err != nil || string(AppendDate(nil, d)) != want {
			t.Errorf("date %q: %q, %v", in, AppendDate(nil, d), err)
		}
	}
	// The binary forms are PostgreSQL's: microseconds and days since 2000.
	var c BinaryCodec
	v := NewVec(Type{Kind: TimestampTZ}, 1)
	us, _ := ParseTimestamp("2000-01-01 00:00:01+00", true)
	v.AppendInt(us)
	if got := c.AppendSend(nil, v, 0); len(got) != 8 || got[5] != 0x0f || got[6] != 0x42 || got[7] != 0x40 {
		t.Fatalf("timestamptz send %x", got)
	}
	dv := NewVec(Type{Kind: Date}, 1)
	if err := c.AppendRecv(dv, []byte{0xff, 0xff, 0xff, 0xff}); err != nil || string(AppendDate(nil, dv.Ints[0])) != "1999-12-31" {
		t.Fatalf("date recv %v, %v", dv.Ints, err)
	}
}

// parseISODate reads every day of years 1 to 3000 as parseDateTime does,
// and leaves every other form to it.
func TestParseISODate(t *testing.T) {
	for tm := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC); tm.Year() <= 3000; tm = tm.AddDate(0, 0, 1) {
		s := tm.Format("2006-01-02")
		got, ok := parseISODate(s)
		us, _, err := parseDateTime(s, "date", false)
		if !ok || err != nil || got != floorDiv(us, 86400e6) {
			t.Fatalf("%s: %d %v, want %d (%v)", s, got, ok, floorDiv(us, 86400e6), err)
		}
		if d := tm.Day(); d >= 28 && daysIn(tm.Year(), int(tm.Month())) != time.Date(tm.Year(), tm.Month()+1, 0, 0, 0, 0, 0, time.UTC).Day() {
			t.Fatalf("daysIn(%d, %d)", tm.Year(), tm.Month())
		}
	}
	for _, s := range []string{"0000-01-01", "2023-02-29", "1900-02-29", "2024-02-30", "2023-13-01", "2023-00-10",
		"2023-04-31", "2023-1-01", " 2023-01-01", "2023-01-01 ", "2023/01/01", "20230-01-01", "2023-01-0x", "epoch"} {
		if _, ok := parseISODate(s); ok {
			t.Errorf("%q: taken by the fast path", s)
		}
	}
	if d, ok := parseISODate("2000-01-01"); !ok || d != 0 {
		t.Errorf("2000-01-01: %d", d)
	}
}
