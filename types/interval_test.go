package types

import "testing"

// TestInterval: input forms and PostgreSQL's output, the order of the
// held bytes, the binary wire form both ways, and timestamp arithmetic
// across month ends and leap days.
func TestInterval(t *testing.T) {
	for _, c := range []struct {
		in     string
		fields int
		want   string
	}{
		{"90", IntervalDay, "90 days"},
		{"3", IntervalMonth, "3 mons"},
		{"1", IntervalYear, "1 year"},
		{"90", 0, "00:01:30"},
		{"1 year 2 months 3 days 4 hours 5 minutes 6.5 seconds", 0, "1 year 2 mons 3 days 04:05:06.5"},
		{"-1 day +2 hours", 0, "-1 days +02:00:00"},
		{"1 day ago", 0, "-1 days"},
		{"1.5 months", 0, "1 mon 15 days"},
		{"25:00", 0, "25:00:00"},
		{"0", 0, "00:00:00"},
		{"2 weeks 1 ms", 0, "14 days 00:00:00.001"},
	} {
		iv, err := ParseInterval(c.in, c.fields)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if got := string(AppendIntervalText(nil, iv)); got != c.want {
			t.Errorf("%q (fields %d) prints %q, want %q", c.in, c.fields, got, c.want)
		}
		if back := IntervalOf(AppendInterval(nil, iv)); back != iv {
			t.Errorf("%q: held as %+v, read back %+v", c.in, iv, back)
		}
		v := NewVec(Type{Kind: Interval}, 1)
		v.AppendBytes(AppendInterval(nil, iv))
		wire := (&BinaryCodec{}).AppendSend(nil, v, 0)
		r := NewVec(Type{Kind: Interval}, 1)
		if err := (&BinaryCodec{}).AppendRecv(r, wire); err != nil || IntervalOf(r.Bytes.Get(0)) != iv {
			t.Errorf("%q: binary form %x reads back as %v, %v", c.in, wire, IntervalOf(r.Bytes.Get(0)), err)
		}
	}
	for _, bad := range []string{"", "nonsense", "1 fortnight", "1:99"} {
		if _, err := ParseInterval(bad, 0); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	a, b := AppendInterval(nil, IntervalValue{Days: -1}), AppendInterval(nil, IntervalValue{Days: 1})
	if string(a) >= string(b) {
		t.Error("-1 day does not sort before 1 day")
	}
	at := func(s string) int64 {
		us, err := ParseTimestamp(s, false)
		if err != nil {
			t.Fatal(err)
		}
		return us
	}
	for _, c := range []struct {
		ts   string
		iv   IntervalValue
		want string
	}{
		{"2000-01-31 10:00:00", IntervalValue{Months: 1}, "2000-02-29 10:00:00"},
		{"2000-02-29 00:00:00", IntervalValue{Months: 12}, "2001-02-28 00:00:00"},
		{"1998-12-01 00:00:00", IntervalValue{Days: -90}, "1998-09-02 00:00:00"},
		{"1999-12-31 23:00:00", IntervalValue{Micros: 2 * 3600e6}, "2000-01-01 01:00:00"},
		{"1995-03-31 00:00:00", IntervalValue{Months: -1, Days: 1}, "1995-03-01 00:00:00"},
	} {
		us, err := AddToTimestamp(at(c.ts), c.iv)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(AppendTimestamp(nil, us, false)); got != c.want {
			t.Errorf("%s + %+v = %s, want %s", c.ts, c.iv, got, c.want)
		}
	}
}
