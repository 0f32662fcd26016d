package expr

import (
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Formatting and parsing timestamps: strftime / strptime (DuckDB, C's %
// patterns) and to_char / to_timestamp(text, pattern) (PostgreSQL's
// patterns). A pattern is a constant compiled once into fields; the
// kernels then append or read each field per row.

// FnStrftime, FnStrptime and FnAge name the calls (the pattern's dialect
// is Args[1]'s: TimeFormat builds it).
const (
	FnStrftime   = "strftime"    // strftime(ts, compiled pattern) [2]
	FnStrptime   = "strptime"    // strptime(text, compiled pattern) [2] -> timestamp
	FnStrptimeTZ = "strptime_tz" // the same -> timestamptz (PostgreSQL's to_timestamp(text, pattern))
	FnAge        = "age"         // age(a, b) [2] -> interval: years, months, days and time
)

// tfield is one field of a compiled pattern.
type tfield uint8

const (
	tfLiteral tfield = iota
	tfYear4
	tfYear2
	tfMonth2
	tfMonthAbbr
	tfMonthName
	tfDay2
	tfDoy3
	tfHour24
	tfHour12
	tfMinute
	tfSecond
	tfMillis
	tfMicros
	tfAMPM
	tfDayAbbr
	tfDayName
	tfDow // 1..7, Sunday 1 (PostgreSQL's D)
	tfZone
)

type tpart struct {
	f   tfield
	lit string
	fm  bool // PostgreSQL's FM: no padding
}

var monthNames = [...]string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
var dayNames = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

// compileStrftime reads a C-style pattern (%Y-%m-%d %H:%M:%S).
func compileStrftime(p string) ([]tpart, error) {
	var out []tpart
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, tpart{f: tfLiteral, lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(p); i++ {
		if p[i] != '%' || i+1 == len(p) {
			lit.WriteByte(p[i])
			continue
		}
		i++
		f, ok := map[byte]tfield{'Y': tfYear4, 'y': tfYear2, 'm': tfMonth2, 'b': tfMonthAbbr, 'h': tfMonthAbbr, 'B': tfMonthName,
			'd': tfDay2, 'j': tfDoy3, 'H': tfHour24, 'I': tfHour12, 'M': tfMinute, 'S': tfSecond, 'f': tfMicros,
			'g': tfMillis, 'p': tfAMPM, 'a': tfDayAbbr, 'A': tfDayName, 'Z': tfZone, 'z': tfZone}[p[i]]
		switch {
		case p[i] == '%':
			lit.WriteByte('%')
		case ok:
			flush()
			out = append(out, tpart{f: f})
		case p[i] == 'F':
			flush()
			out = append(out, tpart{f: tfYear4}, tpart{f: tfLiteral, lit: "-"}, tpart{f: tfMonth2}, tpart{f: tfLiteral, lit: "-"}, tpart{f: tfDay2})
		case p[i] == 'T':
			flush()
			out = append(out, tpart{f: tfHour24}, tpart{f: tfLiteral, lit: ":"}, tpart{f: tfMinute}, tpart{f: tfLiteral, lit: ":"}, tpart{f: tfSecond})
		default:
			return nil, nferr.Queryf("unknown format specifier %%%c (want %%Y %%y %%m %%b %%B %%d %%j %%H %%I %%M %%S %%f %%g %%p %%a %%A %%F %%T %%Z %%%%)", p[i])
		}
	}
	flush()
	return out, nil
}

// compileToChar reads a PostgreSQL pattern (YYYY-MM-DD HH24:MI:SS);
// text in double quotes is literal, FM suppresses padding.
func compileToChar(p string) ([]tpart, error) {
	keys := []struct {
		k string
		f tfield
	}{
		{"YYYY", tfYear4}, {"YY", tfYear2}, {"MONTH", tfMonthName}, {"Month", tfMonthName}, {"month", tfMonthName},
		{"MON", tfMonthAbbr}, {"Mon", tfMonthAbbr}, {"mon", tfMonthAbbr}, {"MM", tfMonth2}, {"DDD", tfDoy3},
		{"DD", tfDay2}, {"DAY", tfDayName}, {"Day", tfDayName}, {"day", tfDayName}, {"DY", tfDayAbbr}, {"Dy", tfDayAbbr},
		{"dy", tfDayAbbr}, {"D", tfDow}, {"HH24", tfHour24}, {"HH12", tfHour12}, {"HH", tfHour12}, {"MI", tfMinute},
		{"SS", tfSecond}, {"MS", tfMillis}, {"US", tfMicros}, {"AM", tfAMPM}, {"PM", tfAMPM}, {"am", tfAMPM}, {"pm", tfAMPM},
		{"TZ", tfZone}, {"tz", tfZone},
	}
	var out []tpart
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, tpart{f: tfLiteral, lit: lit.String()})
			lit.Reset()
		}
	}
	fm := false
	for i := 0; i < len(p); {
		if p[i] == '"' {
			j := strings.IndexByte(p[i+1:], '"')
			if j < 0 {
				return nil, nferr.Queryf("unterminated quoted text in pattern %q", p)
			}
			lit.WriteString(p[i+1 : i+1+j])
			i += j + 2
			continue
		}
		if strings.HasPrefix(p[i:], "FM") {
			fm, i = true, i+2
			continue
		}
		matched := false
		for _, k := range keys {
			if strings.HasPrefix(p[i:], k.k) {
				flush()
				out = append(out, tpart{f: k.f, fm: fm, lit: k.k})
				i += len(k.k)
				matched = true
				break
			}
		}
		fm = false
		if !matched {
			lit.WriteByte(p[i])
			i++
		}
	}
	flush()
	return out, nil
}

// appendFormatted appends us formatted by parts.
func appendFormatted(dst []byte, parts []tpart, us int64, zone bool) []byte {
	return appendFormattedIn(dst, parts, us, zone, "")
}

// appendFormattedIn formats the wall clock us; zname is what a zone
// pattern (TZ, %Z) prints for a TIMESTAMPTZ (zone true; "" prints UTC).
func appendFormattedIn(dst []byte, parts []tpart, us int64, zone bool, zname string) []byte {
	days, tod := SplitTimestamp(us)
	y, m, d := CivilFromDays(days)
	h, mi, s := tod/UsPerHour, tod/UsPerMinute%60, tod/UsPerSecond%60
	dow := ((days+4)%7 + 7) % 7
	pad := func(v int64, w int, fm bool) {
		t := strconv.FormatInt(v, 10)
		if !fm {
			for k := len(t); k < w; k++ {
				dst = append(dst, '0')
			}
		}
		dst = append(dst, t...)
	}
	name := func(n string, p tpart, abbr bool) {
		if abbr {
			n = n[:3]
		}
		switch {
		case p.lit == "MONTH" || p.lit == "MON" || p.lit == "DAY" || p.lit == "DY":
			n = strings.ToUpper(n)
		case p.lit == "month" || p.lit == "mon" || p.lit == "day" || p.lit == "dy":
			n = strings.ToLower(n)
		}
		dst = append(dst, n...)
		// PostgreSQL pads full names to 9 characters unless FM.
		if !abbr && !p.fm && p.lit != "" {
			for k := len(n); k < 9; k++ {
				dst = append(dst, ' ')
			}
		}
	}
	for _, p := range parts {
		switch p.f {
		case tfLiteral:
			dst = append(dst, p.lit...)
		case tfYear4:
			pad(y, 4, p.fm)
		case tfYear2:
			pad(y%100, 2, p.fm)
		case tfMonth2:
			pad(int64(m), 2, p.fm)
		case tfMonthAbbr:
			name(monthNames[m-1], p, true)
		case tfMonthName:
			name(monthNames[m-1], p, false)
		case tfDay2:
			pad(int64(d), 2, p.fm)
		case tfDoy3:
			pad(days-DaysFromCivil(y, 1, 1)+1, 3, p.fm)
		case tfHour24:
			pad(h, 2, p.fm)
		case tfHour12:
			pad((h+11)%12+1, 2, p.fm)
		case tfMinute:
			pad(mi, 2, p.fm)
		case tfSecond:
			pad(s, 2, p.fm)
		case tfMillis:
			pad(tod%UsPerSecond/1000, 3, p.fm)
		case tfMicros:
			pad(tod%UsPerSecond, 6, p.fm)
		case tfAMPM:
			ap := "AM"
			if h >= 12 {
				ap = "PM"
			}
			if p.lit == "am" || p.lit == "pm" {
				ap = strings.ToLower(ap)
			}
			dst = append(dst, ap...)
		case tfDayAbbr:
			name(dayNames[dow], p, true)
		case tfDayName:
			name(dayNames[dow], p, false)
		case tfDow:
			pad(dow+1, 1, true)
		case tfZone:
			if zone {
				if zname == "" {
					zname = "UTC"
				}
				dst = append(dst, zname...)
			}
		}
	}
	return dst
}

// parseFormatted reads text by parts into microseconds; ok is false when
// the text does not match.
func parseFormatted(parts []tpart, b []byte) (int64, bool) {
	us, ok, _ := parseFormattedZone(parts, b)
	return us, ok
}

// parseFormattedZone is parseFormatted also reporting whether the text
// named its zone (UTC, GMT, Z): then it is a UTC time, else a wall clock.
func parseFormattedZone(parts []tpart, b []byte) (_ int64, _ bool, zoned bool) {
	y, m, d := int64(1970), 1, 1
	var h, mi, s, frac int64
	pm, ampm := false, false
	num := func(maxDigits int) (int64, bool) {
		n := 0
		var v int64
		for n < len(b) && n < maxDigits && b[n] >= '0' && b[n] <= '9' {
			v = v*10 + int64(b[n]-'0')
			n++
		}
		b = b[n:]
		return v, n > 0
	}
	word := func(names []string, abbr bool) (int, bool) {
		for i, n := range names {
			if abbr {
				n = n[:3]
			}
			if len(b) >= len(n) && strings.EqualFold(string(b[:len(n)]), n) {
				b = b[len(n):]
				return i, true
			}
		}
		return 0, false
	}
	for _, p := range parts {
		var ok bool
		var v int64
		switch p.f {
		case tfLiteral:
			for _, c := range []byte(p.lit) {
				if c == ' ' {
					for len(b) > 0 && b[0] == ' ' {
						b = b[1:]
					}
					continue
				}
				if len(b) == 0 || b[0] != c {
					return 0, false, false
				}
				b = b[1:]
			}
			continue
		case tfYear4:
			y, ok = num(4)
		case tfYear2:
			v, ok = num(2)
			y = 2000 + v
			if v >= 70 {
				y = 1900 + v
			}
		case tfMonth2:
			v, ok = num(2)
			m = int(v)
		case tfMonthAbbr, tfMonthName:
			var i int
			if i, ok = word(monthNames[:], false); !ok {
				i, ok = word(monthNames[:], true)
			}
			m = i + 1
		case tfDay2:
			v, ok = num(2)
			d = int(v)
		case tfHour24, tfHour12:
			h, ok = num(2)
		case tfMinute:
			mi, ok = num(2)
		case tfSecond:
			s, ok = num(2)
		case tfMillis:
			v, ok = num(3)
			frac = v * 1000
		case tfMicros:
			n0 := len(b)
			v, ok = num(6)
			for k := n0 - len(b); k < 6; k++ {
				v *= 10
			}
			frac = v
		case tfAMPM:
			ampm = true
			switch {
			case len(b) >= 2 && strings.EqualFold(string(b[:2]), "PM"):
				pm, ok = true, true
			case len(b) >= 2 && strings.EqualFold(string(b[:2]), "AM"):
				ok = true
			}
			if ok {
				b = b[2:]
			}
		case tfDayAbbr, tfDayName:
			if _, ok = word(dayNames[:], false); !ok {
				_, ok = word(dayNames[:], true)
			}
		case tfDow, tfDoy3:
			_, ok = num(3)
		case tfZone:
			ok = true
			for _, z := range []string{"UTC", "GMT", "Z"} {
				if len(b) >= len(z) && strings.EqualFold(string(b[:len(z)]), z) {
					b = b[len(z):]
					zoned = true
					break
				}
			}
		}
		if !ok {
			return 0, false, false
		}
	}
	if len(TrimSpaceBytes(b)) != 0 {
		return 0, false, false
	}
	if ampm {
		if h < 1 || h > 12 {
			return 0, false, false
		}
		h %= 12
		if pm {
			h += 12
		}
	}
	if m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m) || h > 23 || mi > 59 || s > 59 || y < 1 || y > 9999 {
		return 0, false, false
	}
	return DaysFromCivil(y, m, d)*UsPerDay + h*UsPerHour + mi*UsPerMinute + s*UsPerSecond + frac, true, zoned
}

// compilePattern compiles a constant pattern argument: C-style for
// strftime/strptime, PostgreSQL's for to_char/to_timestamp (the dialect is
// the pattern constant's prefix "pg:" or "c:", TimeFormat's).
func compilePattern(n node, desc string) ([]tpart, error) {
	c, ok := n.(*constNode)
	if !ok || c.k != pStr || c.null {
		return nil, nferr.Queryf("the format of %s must be a string constant", desc)
	}
	if p, ok := strings.CutPrefix(c.s, "pg:"); ok {
		return compileToChar(p)
	}
	return compileStrftime(strings.TrimPrefix(c.s, "c:"))
}

// TimeFormat is the pattern argument of strftime/strptime (dialect "c")
// and to_char/to_timestamp (dialect "pg"), checked now so that a bad
// pattern is an error at its position in the query.
func TimeFormat(dialect, pattern string) (string, error) {
	var err error
	if dialect == "pg" {
		_, err = compileToChar(pattern)
	} else {
		_, err = compileStrftime(pattern)
	}
	return dialect + ":" + pattern, err
}

func (c *compiler) compileStrftime(args []node, desc string) (node, error) {
	parts, err := compilePattern(args[1], desc)
	if err != nil {
		return nil, err
	}
	x := args[0]
	switch {
	case x.dt().ID() == arrow.DATE32:
		if x, err = c.cast(x, TimestampArrow, desc); err != nil {
			return nil, err
		}
	case x.dt().ID() == arrow.NULL:
		return newNullConst(arrow.BinaryTypes.String), nil
	case !IsTimestamp(x.dt()):
		return nil, nferr.Queryf("function strftime(%s) does not exist in %s", TypeName(x.dt()), desc)
	}
	zone := HasZone(x.dt())
	loc := c.loc
	f := &funcNode{args: []node{x}, t: arrow.BinaryTypes.String, desc: desc}
	f.run = func(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
		w := newStrWriter(out, n)
		a := in[0]
		if zone && loc != nil {
			// A TIMESTAMPTZ formats its wall clock in the session zone; TZ
			// prints the zone's abbreviation there (EDT, CET).
			each(sel, n, func(i int32) {
				w.at(i)
				t := time.UnixMicro(a.i64[i]).In(loc)
				name, off := t.Zone()
				out.str = appendFormattedIn(out.str, parts, a.i64[i]+int64(off)*UsPerSecond, true, name)
			})
			w.finish(n)
			return nil
		}
		each(sel, n, func(i int32) {
			w.at(i)
			out.str = appendFormatted(out.str, parts, a.i64[i], zone)
		})
		w.finish(n)
		return nil
	}
	return f, nil
}

func (c *compiler) compileStrptime(args []node, desc string, zone bool) (node, error) {
	parts, err := compilePattern(args[1], desc)
	if err != nil {
		return nil, err
	}
	t := TimestampArrow
	if zone {
		t = TimestampTZArrow
	}
	x := args[0]
	if x.dt().ID() == arrow.NULL {
		return newNullConst(t), nil
	}
	if x.dt().ID() != arrow.STRING {
		return nil, nferr.Queryf("function strptime(%s) does not exist in %s", TypeName(x.dt()), desc)
	}
	f := &funcNode{args: []node{x}, t: t, desc: desc}
	loc := c.loc
	f.run = func(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
		out.i64 = Grow(out.i64, n)
		a := in[0]
		z := newTZCache(loc)
		var err error
		each(sel, n, func(i int32) {
			if err != nil {
				return
			}
			us, ok, zoned := parseFormattedZone(parts, a.strAt(i))
			if !ok {
				err = nferr.Dataf("could not parse %q with the format of %s", string(a.strAt(i)), f.desc)
				return
			}
			if zone && !zoned {
				us = z.fromLocal(us) // a wall clock in the session zone
			}
			out.i64[i] = us
		})
		return err
	}
	return f, nil
}

// Age is PostgreSQL's age(a, b): a - b field by field (years, months,
// days, time), a negative field borrowing from the next larger one (a day
// borrows the length of the earlier timestamp's month).
func Age(a, b int64) arrow.MonthDayNanoInterval {
	neg := a < b
	if neg {
		a, b = b, a
	}
	ad, at := SplitTimestamp(a)
	bd, bt := SplitTimestamp(b)
	ay, am, ady := CivilFromDays(ad)
	by, bm, bdy := CivilFromDays(bd)
	months := (ay-by)*12 + int64(am-bm)
	days := int64(ady - bdy)
	tod := at - bt
	if tod < 0 {
		tod += UsPerDay
		days--
	}
	if days < 0 {
		// Borrow the length of the earlier timestamp's month, as
		// PostgreSQL does.
		days += int64(daysInMonth(by, bm))
		months--
	}
	iv := arrow.MonthDayNanoInterval{Months: int32(months), Days: int32(days), Nanoseconds: tod * 1000}
	if neg {
		iv = arrow.MonthDayNanoInterval{Months: -iv.Months, Days: -iv.Days, Nanoseconds: -iv.Nanoseconds}
	}
	return iv
}

func ageKernel(out, a, b *vec, sel []int32, n int) kcode {
	out.iv = Grow(out.iv, n)
	each(sel, n, func(i int32) { out.iv[i] = Age(a.i64[i], b.i64[i]) })
	return kOK
}

func (c *compiler) compileAge(args []node, desc string) (node, error) {
	var err error
	for i := range args {
		switch {
		case args[i].dt().ID() == arrow.NULL:
			return newNullConst(arrow.FixedWidthTypes.MonthDayNanoInterval), nil
		case args[i].dt().ID() == arrow.DATE32, HasZone(args[i].dt()):
			if args[i], err = c.cast(args[i], TimestampArrow, desc); err != nil {
				return nil, err
			}
		case !IsTimestamp(args[i].dt()):
			return nil, nferr.Queryf("function age(%s) does not exist in %s", TypeName(args[i].dt()), desc)
		}
	}
	return &arithNode{a: args[0], b: args[1], t: arrow.FixedWidthTypes.MonthDayNanoInterval, kern: ageKernel, desc: desc}, nil
}
