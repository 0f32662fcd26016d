// Package civil is the proleptic Gregorian calendar of nicflow's DATE and
// TIMESTAMP values, shared by exec (casts, functions) and storage (text
// loading) so that both read and print dates and times the same way.
//
// Dates are days since 1970-01-01 (arrow date32); timestamps microseconds
// since 1970-01-01 00:00:00 (arrow timestamp[us]). Both are bounded to
// the years 0001..9999 (MinDate..MaxDate, MinTimestamp..MaxTimestamp):
// arithmetic on them cannot overflow and every value prints as
// YYYY-MM-DD[ HH:MM:SS[.ffffff]]. The conversions are the civil-from-days
// and days-from-civil algorithms (H. Hinnant, "chrono-Compatible Low-Level
// Date Algorithms"): integer arithmetic, exact, allocation-free, no
// time.Time.
package civil

import (
	"strconv"
	"strings"
)

// Microseconds per unit.
const (
	UsPerSecond = int64(1_000_000)
	UsPerMinute = 60 * UsPerSecond
	UsPerHour   = 60 * UsPerMinute
	UsPerDay    = 24 * UsPerHour
)

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

// IsLeap reports whether y is a leap year.
func IsLeap(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

// DaysInMonth returns the number of days of month m (1..12) of year y.
func DaysInMonth(y int64, m int) int {
	switch m {
	case 2:
		if IsLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// The supported range: years 0001..9999 as in SQL's DATE.
var (
	MinDate      = int32(DaysFromCivil(1, 1, 1))
	MaxDate      = int32(DaysFromCivil(9999, 12, 31))
	MinTimestamp = int64(MinDate) * UsPerDay
	MaxTimestamp = (int64(MaxDate)+1)*UsPerDay - 1
)

// FloorDiv is a/b rounded toward minus infinity (b > 0).
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// SplitTimestamp returns the day number and the microseconds into that day
// of us.
func SplitTimestamp(us int64) (days, tod int64) {
	days = FloorDiv(us, UsPerDay)
	return days, us - days*UsPerDay
}

// AddMonths adds n months to date days, clamping the day to the end of the
// target month as PostgreSQL does (2024-01-31 + 1 month = 2024-02-29).
func AddMonths(days int32, n int64) int64 {
	y, m, d := CivilFromDays(int64(days))
	t := y*12 + int64(m-1) + n
	ny := t / 12
	nm := t % 12
	if nm < 0 {
		nm += 12
		ny--
	}
	if dim := DaysInMonth(ny, int(nm)+1); d > dim {
		d = dim
	}
	return DaysFromCivil(ny, int(nm)+1, d)
}

// ------------------------------------------------------------ printing

// AppendDate prints a date as YYYY-MM-DD (years outside 0..9999 print with
// as many digits as needed and a leading '-' when negative).
func AppendDate(dst []byte, days int32) []byte {
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

// AppendTimestamp prints us as YYYY-MM-DD HH:MM:SS, with the fraction of a
// second when there is one (trailing zeros dropped) and "+00" for a
// TIMESTAMPTZ (zone true), as PostgreSQL prints in time zone UTC.
func AppendTimestamp(dst []byte, us int64, zone bool) []byte {
	days, tod := SplitTimestamp(us)
	dst = AppendDate(dst, int32(days))
	dst = append(dst, ' ')
	dst = AppendTimeOfDay(dst, tod)
	if zone {
		dst = append(dst, '+', '0', '0')
	}
	return dst
}

// AppendTimeOfDay prints microseconds into a day as HH:MM:SS[.ffffff].
func AppendTimeOfDay(dst []byte, tod int64) []byte {
	sec := tod / UsPerSecond
	frac := tod % UsPerSecond
	h, m, s := sec/3600, sec/60%60, sec%60
	dst = append(dst, byte('0'+h/10), byte('0'+h%10), ':', byte('0'+m/10), byte('0'+m%10), ':', byte('0'+s/10), byte('0'+s%10))
	if frac != 0 {
		var buf [6]byte
		for i := 5; i >= 0; i-- {
			buf[i] = byte('0' + frac%10)
			frac /= 10
		}
		k := 6
		for k > 0 && buf[k-1] == '0' {
			k--
		}
		dst = append(dst, '.')
		dst = append(dst, buf[:k]...)
	}
	return dst
}

// ------------------------------------------------------------ parsing

// IsSpace reports ASCII white space.
func IsSpace(c byte) bool { return isSpace(c) }

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// TrimSpace trims ASCII white space around b.
func TrimSpace(b []byte) []byte {
	i, j := 0, len(b)
	for i < j && isSpace(b[i]) {
		i++
	}
	for j > i && isSpace(b[j-1]) {
		j--
	}
	return b[i:j]
}

// ParseDigits reads up to max leading ASCII digits of b: their value and
// count.
func ParseDigits(b []byte, max int) (v int64, n int) { return parseDigits(b, max) }

func parseDigits(b []byte, max int) (v int64, n int) {
	for n < len(b) && n < max && b[n] >= '0' && b[n] <= '9' {
		v = v*10 + int64(b[n]-'0')
		n++
	}
	return v, n
}

// DateText is the date part of s as PostgreSQL reads a date: surrounding
// spaces dropped, and a time of day after it (' 10:00', 'T10:00:00.5+02')
// ignored.
func DateText(s string) string {
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

// ParseDate reads [-]YYYY-MM-DD (surrounding spaces allowed; month and day
// may have one digit) as a day number; ok is false on bad syntax or an
// impossible day. The range is only checked against int32.
func ParseDate(b []byte) (int32, bool) {
	b = TrimSpace(b)
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		b, neg = b[1:], b[0] == '-'
	}
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
	if mo < 1 || mo > 12 || d < 1 || int(d) > DaysInMonth(y, int(mo)) {
		return 0, false
	}
	days := DaysFromCivil(y, int(mo), int(d))
	if days < -1<<31 || days > 1<<31-1 {
		return 0, false
	}
	return int32(days), true
}

// ParseTimestamp reads a timestamp as PostgreSQL does: a date
// (YYYY-MM-DD, one-digit month and day allowed), then optionally a time of
// day after a space or 'T' (HH:MM, HH:MM:SS, HH:MM:SS.ffffff; 24:00:00 is
// the next midnight; fractions beyond microseconds round half up), then
// optionally a zone (Z, UTC, GMT, +HH, +HH:MM, +HHMM, -...). 'epoch' is
// 1970-01-01 00:00:00. For a TIMESTAMPTZ (zone true) the zone's offset is
// applied (none given: UTC, the session zone); a TIMESTAMP ignores it, as
// PostgreSQL does. ok is false on bad syntax, inRange false when the value
// lies outside years 0001..9999.
func ParseTimestamp(b []byte, zone bool) (us int64, ok, inRange bool) {
	w, off, _, name, ok, inRange := ParseTimestampZone(b)
	if !ok || name != "" {
		return 0, false, false // a named zone needs the zone database (exec)
	}
	us = w
	if zone {
		us -= off * UsPerSecond
		inRange = inRange && us >= MinTimestamp && us <= MaxTimestamp
	}
	return us, true, inRange
}

// ParseTimestampZone reads a timestamp as ParseTimestamp does and returns
// its wall clock w (microseconds), the explicit numeric offset east of
// UTC in seconds (hasOff; Z, UTC and GMT are offset 0), or the zone name
// written after it (name: 'America/New_York', which the caller resolves).
// inRange reports whether the wall clock lies within years 0001..9999.
func ParseTimestampZone(b []byte) (w, off int64, hasOff bool, name string, ok, inRange bool) {
	b = TrimSpace(b)
	if strings.EqualFold(string(b), "epoch") {
		return 0, 0, true, "", true, true
	}
	// The date ends at the first space or 'T' after its first character.
	end := len(b)
	for i := 1; i < len(b); i++ {
		if b[i] == ' ' || b[i] == 'T' || b[i] == 't' {
			end = i
			break
		}
	}
	days, ok := ParseDate(b[:end])
	if !ok {
		return 0, 0, false, "", false, false
	}
	rest := TrimSpace(b[end:])
	if len(rest) > 0 && (rest[0] == 'T' || rest[0] == 't') {
		rest = rest[1:]
	}
	var tod int64
	if len(rest) > 0 && rest[0] >= '0' && rest[0] <= '9' {
		var n int
		if tod, n, ok = parseTimeOfDay(rest); !ok {
			return 0, 0, false, "", false, false
		}
		rest = TrimSpace(rest[n:])
	}
	hasOff = len(rest) > 0
	off, ok = parseZone(rest)
	if !ok {
		if !isZoneName(rest) {
			return 0, 0, false, "", false, false
		}
		hasOff, name = false, string(rest)
	}
	if days < MinDate || days > MaxDate {
		return 0, 0, hasOff, name, true, false
	}
	w = int64(days)*UsPerDay + tod
	return w, off, hasOff, name, true, true
}

// isZoneName reports whether b may be a zone name: letters, digits and
// / _ - + (America/New_York, Etc/GMT+5, EST5EDT), starting with a letter.
func isZoneName(b []byte) bool {
	if len(b) == 0 || !(b[0] >= 'a' && b[0] <= 'z' || b[0] >= 'A' && b[0] <= 'Z') {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == '_' || c == '-' || c == '+') {
			return false
		}
	}
	return true
}

// parseTimeOfDay reads HH:MM[:SS[.fraction]] at the start of b and returns
// microseconds into the day and the bytes read.
func parseTimeOfDay(b []byte) (tod int64, n int, ok bool) {
	h, k := parseDigits(b, 2)
	if k == 0 || k >= len(b) || b[k] != ':' {
		return 0, 0, false
	}
	n = k + 1
	m, k := parseDigits(b[n:], 2)
	if k != 2 {
		return 0, 0, false
	}
	n += k
	var s, frac int64
	if n < len(b) && b[n] == ':' {
		if s, k = parseDigits(b[n+1:], 2); k != 2 {
			return 0, 0, false
		}
		n += 1 + k
		if n < len(b) && b[n] == '.' {
			n++
			digits := 0
			for n < len(b) && b[n] >= '0' && b[n] <= '9' {
				switch {
				case digits < 6:
					frac = frac*10 + int64(b[n]-'0')
				case digits == 6 && b[n] >= '5':
					frac++ // round half up at the seventh digit
				}
				digits++
				n++
			}
			if digits == 0 {
				return 0, 0, false
			}
			for ; digits < 6; digits++ {
				frac *= 10
			}
		}
	}
	// NB: second 60 (a leap second) rolls into the next minute, as in
	// PostgreSQL; 24:00:00 is the next midnight.
	if m > 59 || s > 60 || h > 24 || (h == 24 && (m != 0 || s != 0 || frac != 0)) {
		return 0, 0, false
	}
	return h*UsPerHour + m*UsPerMinute + s*UsPerSecond + frac, n, true
}

// parseZone reads an optional zone suffix: empty, Z, UTC, GMT, or a
// numeric offset ±HH, ±HH:MM, ±HHMM. It returns the offset east of UTC in
// seconds.
func parseZone(b []byte) (off int64, ok bool) {
	switch strings.ToUpper(string(b)) {
	case "", "Z", "UTC", "GMT", "+00", "-00":
		return 0, true
	}
	if b[0] != '+' && b[0] != '-' {
		return 0, false
	}
	neg := b[0] == '-'
	h, k := parseDigits(b[1:], 2)
	if k == 0 {
		return 0, false
	}
	rest := b[1+k:]
	var m int64
	if len(rest) > 0 {
		if rest[0] == ':' {
			rest = rest[1:]
		}
		if m, k = parseDigits(rest, 2); k != 2 || len(rest) != 2 {
			return 0, false
		}
	}
	if h > 15 || m > 59 {
		return 0, false
	}
	off = h*3600 + m*60
	if neg {
		off = -off
	}
	return off, true
}

// ParseTime reads a time of day (SQL TIME) as PostgreSQL does:
// HH:MM[:SS[.fraction]] (fractions beyond microseconds round half up; a
// leap second 60 rolls into the next minute; 24:00:00 is allowed), an
// optional AM/PM (hours 0..12), an optional zone suffix that is ignored
// (Z, UTC, +02, -08:00), 'allballs' (00:00:00); a date before the time
// ('2001-02-03 04:05:06', '2001-02-03T04:05:06') is ignored, and a date
// alone is midnight. The result is microseconds since midnight, in
// 0..UsPerDay; ok is false on bad syntax or a value out of range.
func ParseTime(b []byte) (tod int64, ok bool) {
	b = TrimSpace(b)
	if len(b) == 0 {
		return 0, false
	}
	if len(b) == 8 && strings.EqualFold(string(b), "allballs") {
		return 0, true
	}
	// A date first: the token up to a space or 'T' has a '-' and no ':'.
	end := len(b)
	for i := 1; i < len(b); i++ {
		if b[i] == ' ' || b[i] == 'T' || b[i] == 't' {
			end = i
			break
		}
	}
	hasDash, hasColon := false, false
	for _, c := range b[:end] {
		hasDash = hasDash || c == '-'
		hasColon = hasColon || c == ':'
	}
	if hasDash && !hasColon && b[0] >= '0' && b[0] <= '9' {
		if _, ok := ParseDate(b[:end]); !ok {
			return 0, false
		}
		b = TrimSpace(b[end:])
		if len(b) > 0 && (b[0] == 'T' || b[0] == 't') {
			b = b[1:]
		}
		if len(b) == 0 {
			return 0, true
		}
	}
	if b[0] < '0' || b[0] > '9' {
		return 0, false
	}
	tod, n, ok := parseTimeOfDay(b)
	if !ok {
		return 0, false
	}
	rest := TrimSpace(b[n:])
	if len(rest) >= 2 {
		ampm := strings.ToLower(string(rest[:2]))
		if ampm == "am" || ampm == "pm" {
			h := tod / UsPerHour
			if h > 12 {
				return 0, false
			}
			switch {
			case ampm == "am" && h == 12:
				tod -= 12 * UsPerHour
			case ampm == "pm" && h != 12:
				tod += 12 * UsPerHour
			}
			rest = TrimSpace(rest[2:])
		}
	}
	if _, ok := parseZone(rest); !ok {
		return 0, false
	}
	return tod, tod <= UsPerDay
}
