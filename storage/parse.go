package storage

import (
	"math"
	"strconv"
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

// daysFromCivil converts a proleptic Gregorian date to days since
// 1970-01-01 (Howard Hinnant's algorithm; exact for all int32 years).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// parseDate parses YYYY-MM-DD into days since the epoch.
func parseDate(b []byte) (int32, string) {
	if len(b) != 10 || b[4] != '-' || b[7] != '-' {
		return 0, "not a date (want YYYY-MM-DD)"
	}
	num := func(s []byte) (int64, bool) {
		var v int64
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int64(c-'0')
		}
		return v, true
	}
	y, ok1 := num(b[0:4])
	m, ok2 := num(b[5:7])
	d, ok3 := num(b[8:10])
	if !ok1 || !ok2 || !ok3 {
		return 0, "not a date (want YYYY-MM-DD)"
	}
	if m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, "no such date"
	}
	return int32(daysFromCivil(y, m, d)), ""
}

func daysIn(y, m int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
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
