package expr

import (
	"github.com/nicflow/nicflow/internal/civil"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Dates are arrow date32 values: days since 1970-01-01 in the proleptic
// Gregorian calendar; the calendar itself is internal/civil's, shared with
// storage's text loader.

// DaysFromCivil returns the day number of year y, month m (1..12), day d.
func DaysFromCivil(y int64, m, d int) int64 { return civil.DaysFromCivil(y, m, d) }

// CivilFromDays returns the year, month (1..12) and day of day number z.
func CivilFromDays(z int64) (y int64, m, d int) { return civil.CivilFromDays(z) }

func daysInMonth(y int64, m int) int { return civil.DaysInMonth(y, m) }

// MinDate and MaxDate bound the dates nicflow reads, writes and computes:
// years 0001..9999 as in SQL's DATE. Keeping results inside this range makes
// date arithmetic overflow-free on int32 and every date printable as
// YYYY-MM-DD.
var (
	MinDate = civil.MinDate
	MaxDate = civil.MaxDate
)

// FormatDate prints a date32 value as YYYY-MM-DD.
func FormatDate(days int32) string {
	return string(civil.AppendDate(nil, days))
}

func appendDate(dst []byte, days int32) []byte { return civil.AppendDate(dst, days) }

// ParseDate parses YYYY-MM-DD (surrounding spaces allowed; month and day
// may have one digit; a time of day after it ignored, as PostgreSQL reads
// '2001-03-01 10:00' as a date) into a date32 value within years
// 0001..9999. Errors are KindQuery ("invalid input syntax for type date" /
// "date out of range").
func ParseDate(s string) (int32, error) {
	d, ok := civil.ParseDate([]byte(civil.DateText(s)))
	if !ok {
		return 0, nferr.Queryf("invalid input syntax for type date: %q", s)
	}
	if d < MinDate || d > MaxDate {
		return 0, nferr.Queryf("date out of range: %q (years 0001 to 9999)", s)
	}
	return d, nil
}

// parseDate is ParseDate without a range check beyond int32 (and without
// allocation unless a time of day follows the date); ok is false on bad
// syntax or an impossible day.
func parseDate(b []byte) (int32, bool) {
	if d, ok := civil.ParseDate(b); ok {
		return d, true
	}
	return civil.ParseDate([]byte(civil.DateText(string(b))))
}

// parseDigits reads up to max leading ASCII digits of b.
func parseDigits(b []byte, max int) (v int64, n int) { return civil.ParseDigits(b, max) }

func isSpace(c byte) bool { return civil.IsSpace(c) }

// addMonths adds n months to date days, clamping the day to the end of the
// target month as PostgreSQL does (2024-01-31 + 1 month = 2024-02-29).
func addMonths(days int32, n int64) int64 { return civil.AddMonths(days, n) }
