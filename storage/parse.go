package storage

import (
	"math"
	"strconv"

	"github.com/nicflow/nicflow/internal/civil"
)

// Text field parsers used by COPY (csv, tbl). They parse bytes without
// allocating and report why a field is bad, so load errors can name it.

// pow10 holds 10^0..10^18 (the largest power of ten in an int64).
var pow10 = func() [19]int64 {
	var p [19]int64
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// parseDecimal parses an exact decimal ("-12.30", "+5", ".5", "7.") into an
// unscaled int64 at the given scale. It never goes through float64.
func parseDecimal(b []byte, scale int32) (int64, bool) {
	v, why := parseDecimalPrec(b, 18, scale)
	return v, why == ""
}

// parseDecimalPrec is parseDecimal with a precision check; why explains a
// failure ("" on success).
func parseDecimalPrec(b []byte, prec, scale int32) (v int64, why string) {
	if len(b) == 0 {
		return 0, "empty decimal"
	}
	i := 0
	neg := false
	if b[0] == '-' || b[0] == '+' {
		neg = b[0] == '-'
		i++
	}
	var u uint64
	intDigits, fracDigits := 0, 0
	sawDot := false
	sig := 0 // significant digits (leading zeros of the integer part excluded)
	for ; i < len(b); i++ {
		c := b[i]
		if c == '.' {
			if sawDot {
				return 0, "two decimal points"
			}
			sawDot = true
			continue
		}
		if c < '0' || c > '9' {
			return 0, "not a decimal number"
		}
		d := uint64(c - '0')
		if sawDot {
			fracDigits++
			if int32(fracDigits) > scale {
				if d != 0 {
					return 0, "more than " + strconv.Itoa(int(scale)) + " digits after the decimal point"
				}
				continue // trailing zeros beyond the scale are exact
			}
		} else {
			intDigits++
			if sig == 0 && d == 0 {
				continue
			}
		}
		sig++
		if sig > 18 {
			return 0, "overflows decimal(" + strconv.Itoa(int(prec)) + "," + strconv.Itoa(int(scale)) + ")"
		}
		u = u*10 + d
	}
	if intDigits == 0 && fracDigits == 0 {
		return 0, "not a decimal number"
	}
	if f := min(int32(fracDigits), scale); f < scale {
		if int(scale-f) >= len(pow10) {
			return 0, "overflows decimal"
		}
		m := uint64(pow10[scale-f])
		if u > math.MaxInt64/m {
			return 0, "overflows decimal(" + strconv.Itoa(int(prec)) + "," + strconv.Itoa(int(scale)) + ")"
		}
		u *= m
	}
	if prec < 18 && u >= uint64(pow10[prec]) || u > math.MaxInt64 {
		return 0, "overflows decimal(" + strconv.Itoa(int(prec)) + "," + strconv.Itoa(int(scale)) + ")"
	}
	if neg {
		return -int64(u), ""
	}
	return int64(u), ""
}

// parseInt parses a base-10 integer with bits 32 or 64.
func parseInt(b []byte, bits int) (int64, string) {
	if len(b) == 0 {
		return 0, "empty integer"
	}
	i := 0
	neg := false
	if b[0] == '-' || b[0] == '+' {
		neg = b[0] == '-'
		i++
		if len(b) == 1 {
			return 0, "not an integer"
		}
	}
	var u uint64
	limit := uint64(1) << (bits - 1) // magnitude of the minimum
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, "not an integer"
		}
		if u > (limit+9)/10 {
			return 0, "overflows int" + strconv.Itoa(bits)
		}
		u = u*10 + uint64(c-'0')
		if u > limit {
			return 0, "overflows int" + strconv.Itoa(bits)
		}
	}
	if !neg && u == limit {
		return 0, "overflows int" + strconv.Itoa(bits)
	}
	if neg {
		return -int64(u), ""
	}
	return int64(u), ""
}

// parseDate parses YYYY-MM-DD into days since the epoch (years
// 0001..9999; one-digit months and days are accepted, as PostgreSQL does).
func parseDate(b []byte) (int32, string) {
	d, ok := civil.ParseDate(b)
	if !ok {
		// A timestamp's text: its date, as PostgreSQL reads a date.
		d, ok = civil.ParseDate([]byte(civil.DateText(string(b))))
	}
	switch {
	case !ok && dateShaped(b):
		return 0, "no such date"
	case !ok:
		return 0, "not a date (want YYYY-MM-DD)"
	case d < civil.MinDate || d > civil.MaxDate:
		return 0, "date out of range (years 0001 to 9999)"
	}
	return d, ""
}

// dateShaped reports whether b looks like digits-digits-digits, so that a
// failed parse is an impossible day rather than bad syntax.
func dateShaped(b []byte) bool {
	parts := 0
	digits := 0
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '-' && digits > 0:
			parts, digits = parts+1, 0
		default:
			return false
		}
	}
	return parts == 2 && digits > 0
}

// parseTimestamp reads a timestamp in any form PostgreSQL reads
// (civil.ParseTimestamp).
func parseTimestamp(b []byte, zone bool) (int64, string) {
	us, ok, inRange := civil.ParseTimestamp(b, zone)
	switch {
	case !ok:
		return 0, "not a timestamp"
	case !inRange:
		return 0, "timestamp out of range (years 0001 to 9999)"
	}
	return us, ""
}

func parseTime(b []byte) (int64, string) {
	us, ok := civil.ParseTime(b)
	if !ok {
		return 0, "not a time"
	}
	return us, ""
}

func parseBool(b []byte) (bool, string) {
	switch string(b) {
	case "t", "true", "TRUE", "True", "1", "y", "yes":
		return true, ""
	case "f", "false", "FALSE", "False", "0", "n", "no":
		return false, ""
	}
	return false, "not a boolean"
}

func parseFloat(b []byte) (float64, string) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, "not a number"
	}
	return f, ""
}
