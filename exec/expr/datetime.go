package expr

import (
	"strconv"
	"strings"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Dates are arrow date32 values: days since 1970-01-01 in the proleptic
// Gregorian calendar. The conversions below are the civil-from-days and
// days-from-civil algorithms (H. Hinnant, "chrono-Compatible Low-Level Date
// Algorithms"): pure integer arithmetic, exact for every int32 day, no
// time.Time (which would cost a per-row allocation-free but slow
// normalization).

// DaysFromCivil returns the day number of year y, month m (1..12), day d.
func DaysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400                     // [0, 399]
	mp := int64((m + 9) % 12)              // March = 0
	doy := (153*mp+2)/5 + int64(d) - 1     // [0, 365]
	doe := yoe*365 + yoe/4 - yoe/100 + doy // [0, 146096]
	return era*146097 + doe - 719468       // 719468: days from 0000-03-01 to 1970-01-01
}

// CivilFromDays returns the year, month (1..12) and day of day number z.
func CivilFromDays(z int64) (y int64, m, d int) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097                                  // [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // [0, 399]
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100) // [0, 365]
	mp := (5*doy + 2) / 153                  // [0, 11]
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func isLeap(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

// daysInMonth returns the number of days of month m (1..12) of year y.
func daysInMonth(y int64, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// minDate and maxDate bound the dates nicflow reads, writes and computes:
// years 0001..9999 as in SQL's DATE. Keeping results inside this range makes
// date arithmetic overflow-free on int32 and every date printable as
// YYYY-MM-DD.
var (
	MinDate = int32(DaysFromCivil(1, 1, 1))
	MaxDate = int32(DaysFromCivil(9999, 12, 31))
)

// FormatDate prints a date32 value as YYYY-MM-DD (years outside 0..9999
// print with as many digits as needed and a leading '-' when negative).
func FormatDate(days int32) string {
	return string(appendDate(nil, days))
}

func appendDate(dst []byte, days int32) []byte {
	y, m, d := CivilFromDays(int64(days))
	if y < 0 {
		dst = append(dst, '-')
		y = -y
	}
	switch {
	case y < 10:
		dst = append(dst, '0', '0', '0')
	case y < 100:
		dst = append(dst, '0', '0')
	case y < 1000:
		dst = append(dst, '0')
	}
	dst = strconv.AppendInt(dst, y, 10)
	dst = append(dst, '-', byte('0'+m/10), byte('0'+m%10), '-', byte('0'+d/10), byte('0'+d%10))
	return dst
}

// ParseDate parses YYYY-MM-DD (surrounding spaces allowed; month and day
// may have one digit; a time of day after it ignored, as PostgreSQL reads
// '2001-03-01 10:00' as a date) into a date32 value within years
// 0001..9999. Errors
// are KindQuery ("invalid input syntax for type date" / "date out of
// range").
func ParseDate(s string) (int32, error) {
	d, ok := parseDate([]byte(dateText(s)))
	if !ok {
		return 0, nferr.Queryf("invalid input syntax for type date: %q", s)
	}
	if d < MinDate || d > MaxDate {
		return 0, nferr.Queryf("date out of range: %q (years 0001 to 9999)", s)
	}
	return d, nil
}

// dateText is the date part of s as PostgreSQL reads a date: surrounding
// spaces dropped, and a time of day after it (' 10:00', 'T10:00:00.5+02')
// ignored.
func dateText(s string) string {
	s = strings.TrimSpace(s)
	i := strings.IndexAny(s, " T")
	if i < 0 {
		return s
	}
	rest := strings.TrimSpace(s[i+1:])
	if rest == "" || rest[0] < '0' || rest[0] > '9' || strings.Trim(rest, "0123456789:.+-Z ") != "" {
		return s // not a time: the date is bad as it is
	}
	return s[:i]
}

// parseDate is ParseDate without allocation or range check beyond int32;
// ok is false on bad syntax or an impossible day.
func parseDate(b []byte) (int32, bool) {
	b, neg := trimSign(b)
	y, n := parseDigits(b, 9) // 9 digits: the year range of int32 days fits
	if n < 4 {
		return 0, false
	}
	b = b[n:]
	if len(b) == 0 || b[0] != '-' {
		return 0, false
	}
	mo, n := parseDigits(b[1:], 2)
	if n == 0 {
		return 0, false
	}
	b = b[1+n:]
	if len(b) == 0 || b[0] != '-' {
		return 0, false
	}
	d, n := parseDigits(b[1:], 2)
	if n == 0 || 1+n != len(b) {
		return 0, false
	}
	if neg {
		y = -y
	}
	if mo < 1 || mo > 12 || d < 1 || int(d) > daysInMonth(y, int(mo)) {
		return 0, false
	}
	days := DaysFromCivil(y, int(mo), int(d))
	if days < -1<<31 || days > 1<<31-1 {
		return 0, false
	}
	return int32(days), true
}

// parseDigits reads up to max leading ASCII digits of b.
func parseDigits(b []byte, max int) (v int64, n int) {
	for n < len(b) && n < max && b[n] >= '0' && b[n] <= '9' {
		v = v*10 + int64(b[n]-'0')
		n++
	}
	return v, n
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// addMonths adds n months to date days, clamping the day to the end of the
// target month as PostgreSQL does (2024-01-31 + 1 month = 2024-02-29).
func addMonths(days int32, n int64) int64 {
	y, m, d := CivilFromDays(int64(days))
	t := y*12 + int64(m-1) + n
	ny := t / 12
	nm := t % 12
	if nm < 0 {
		nm += 12
		ny--
	}
	if dim := daysInMonth(ny, int(nm)+1); d > dim {
		d = dim
	}
	return DaysFromCivil(ny, int(nm)+1, d)
}
