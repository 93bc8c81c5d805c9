package gen

import (
	"strconv"
	"time"
)

// Dates are days since startDate, 1992-01-01 (clause 4.2.2.12).
var (
	startDate   = time.Date(1992, 1, 1, 0, 0, 0, 0, time.UTC)
	currentDate = days(1995, 6, 17)  // CURRENTDATE
	endDate     = days(1998, 12, 31) // ENDDATE
)

func days(y int, m time.Month, d int) int {
	return int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Sub(startDate).Hours() / 24)
}

// dateText holds the YYYY-MM-DD form of every day from startDate to
// endDate.
var dateText = func() [][10]byte {
	t := make([][10]byte, endDate+1)
	for d := range t {
		copy(t[d][:], startDate.AddDate(0, 0, d).Format(time.DateOnly))
	}
	return t
}()

func appendDate(b []byte, day int) []byte {
	return append(b, dateText[day][:]...)
}

// appendMoney appends cents as an exact decimal with two digits after the
// point: 123450 as 1234.50, -5 as -0.05.
func appendMoney(b []byte, cents int64) []byte {
	if cents < 0 {
		b = append(b, '-')
		cents = -cents
	}
	b = strconv.AppendInt(b, cents/100, 10)
	c := cents % 100
	return append(b, '.', byte('0'+c/10), byte('0'+c%10))
}

// appendKey9 appends n zero-padded to 9 digits, as in Supplier#000000001.
func appendKey9(b []byte, n int64) []byte {
	var d [20]byte
	s := strconv.AppendInt(d[:0], n, 10)
	for i := len(s); i < 9; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

func appendInt(b []byte, n int64) []byte {
	return strconv.AppendInt(b, n, 10)
}

// appendPhone appends a phone number of clause 4.2.2.9:
// CC-LLL-LLL-LLLL with CC the nation key plus 10.
func appendPhone(b []byte, s *stream, nation int64) []byte {
	b = appendInt(b, nation+10)
	b = append(b, '-')
	b = appendInt(b, s.between(100, 999))
	b = append(b, '-')
	b = appendInt(b, s.between(100, 999))
	b = append(b, '-')
	return appendInt(b, s.between(1000, 9999))
}
