package expr

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/internal/civil"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Timestamps are arrow timestamp[us] values (internal/civil): microseconds
// since 1970-01-01 00:00:00. TIMESTAMP (no zone) is a wall-clock reading;
// TIMESTAMPTZ (arrow time zone "UTC") is an instant, stored in UTC, that
// reads and prints as a wall clock in the session time zone (zone.go; in
// UTC, the default, it prints with "+00" and the two types convert without
// a shift). The range is that of DATE:
// years 0001 to 9999, so that arithmetic on int64 microseconds cannot
// overflow and every value prints as YYYY-MM-DD HH:MM:SS[.ffffff].

// Microseconds per unit.
const (
	UsPerSecond = civil.UsPerSecond
	UsPerMinute = civil.UsPerMinute
	UsPerHour   = civil.UsPerHour
	UsPerDay    = civil.UsPerDay
)

// MinTimestamp and MaxTimestamp bound every timestamp nicflow reads, writes
// and computes: 0001-01-01 00:00:00 to 9999-12-31 23:59:59.999999.
var (
	MinTimestamp = civil.MinTimestamp
	MaxTimestamp = civil.MaxTimestamp
)

// Timestamp types of the engine.
var (
	TimestampArrow   = &arrow.TimestampType{Unit: arrow.Microsecond}
	TimestampTZArrow = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
)

// IsTimestamp reports whether dt is a timestamp (either kind).
func IsTimestamp(dt arrow.DataType) bool { return dt.ID() == arrow.TIMESTAMP }

// HasZone reports whether the timestamp type dt is TIMESTAMPTZ.
func HasZone(dt arrow.DataType) bool {
	t, ok := dt.(*arrow.TimestampType)
	return ok && t.TimeZone != ""
}

func floorDiv(a, b int64) int64 { return civil.FloorDiv(a, b) }

// SplitTimestamp returns the day number and the microseconds into that day
// of us.
func SplitTimestamp(us int64) (days, tod int64) { return civil.SplitTimestamp(us) }

// FormatTimestamp prints us as YYYY-MM-DD HH:MM:SS[.ffffff], with "+00"
// for a TIMESTAMPTZ (zone true).
func FormatTimestamp(us int64, zone bool) string {
	return string(civil.AppendTimestamp(nil, us, zone))
}

func appendTimestamp(dst []byte, us int64, zone bool) []byte {
	return civil.AppendTimestamp(dst, us, zone)
}

// ParseTimestamp reads a timestamp in any form PostgreSQL reads
// (civil.ParseTimestamp). Errors are KindQuery.
func ParseTimestamp(s string, zone bool) (int64, error) {
	us, ok, inRange := civil.ParseTimestamp([]byte(s), zone)
	if !ok {
		return 0, nferr.Queryf("invalid input syntax for type %s: %q", tsTypeName(zone), s)
	}
	if !inRange {
		return 0, nferr.Queryf("timestamp out of range: %q (years 0001 to 9999)", s)
	}
	return us, nil
}

func tsTypeName(zone bool) string {
	if zone {
		return "timestamp with time zone"
	}
	return "timestamp"
}

// TimestampAddInterval adds sign*iv to us the PostgreSQL way: months first
// (the day clamped to the end of the target month), then days, then the
// time. ok is false when the result leaves the supported range.
func TimestampAddInterval(us int64, iv arrow.MonthDayNanoInterval, sign int64) (int64, bool) {
	if us < MinTimestamp || us > MaxTimestamp {
		return 0, false
	}
	if iv.Months != 0 {
		days, tod := SplitTimestamp(us)
		us = addMonths(int32(days), sign*int64(iv.Months))*UsPerDay + tod
	}
	us += sign * (int64(iv.Days)*UsPerDay + iv.Nanoseconds/1000)
	return us, us >= MinTimestamp && us <= MaxTimestamp
}

// TimestampDiff is a - b as an interval of days and time, as PostgreSQL
// subtracts timestamps ('1 day 02:00:00', never months).
func TimestampDiff(a, b int64) arrow.MonthDayNanoInterval {
	d := a - b
	return arrow.MonthDayNanoInterval{Days: int32(d / UsPerDay), Nanoseconds: d % UsPerDay * 1000}
}

// ---------------------------------------------------------------- extract

// TimestampFields are the fields EXTRACT takes from a timestamp beyond a
// date's (ExtractFields).
var TimestampFields = []string{"hour", "minute", "second", "millisecond", "microsecond", "epoch_ms", "epoch_us"}

// extractTimeFuncs computes the time-of-day fields from microseconds into
// the day; second, millisecond and microsecond count within the minute
// (second 5.25 is millisecond 5250), as DuckDB counts them.
var extractTimeFuncs = map[string]func(tod int64) int64{
	"hour":        func(t int64) int64 { return t / UsPerHour },
	"minute":      func(t int64) int64 { return t / UsPerMinute % 60 },
	"second":      func(t int64) int64 { return t / UsPerSecond % 60 },
	"millisecond": func(t int64) int64 { return t % UsPerMinute / 1000 },
	"microsecond": func(t int64) int64 { return t % UsPerMinute },
}

// extractEpochFuncs are the whole-unit epoch fields of a timestamp.
var extractEpochFuncs = map[string]func(us int64) int64{
	"epoch_ms": func(us int64) int64 { return us / 1000 }, // toward zero, as DuckDB
	"epoch_us": func(us int64) int64 { return us },
}

// ExtractFieldName normalizes a field name's spelling (plurals and
// abbreviations PostgreSQL accepts).
func ExtractFieldName(f string) string {
	f = strings.ToLower(f)
	switch f {
	case "years", "y", "yr", "yrs":
		return "year"
	case "months", "mon", "mons":
		return "month"
	case "days", "d":
		return "day"
	case "hours", "h", "hr", "hrs":
		return "hour"
	case "minutes", "m", "min", "mins":
		return "minute"
	case "seconds", "s", "sec", "secs":
		return "second"
	case "milliseconds", "ms", "msec", "msecs":
		return "millisecond"
	case "microseconds", "us", "usec", "usecs":
		return "microsecond"
	case "weeks", "w":
		return "week"
	case "quarters":
		return "quarter"
	case "dayofweek", "weekday":
		return "dow"
	case "dayofyear":
		return "doy"
	}
	return f
}

// ExtractTimestamp returns field of the timestamp us as an int64 (epoch:
// whole seconds; ExtractEpoch has the fraction); ok is false for an
// unknown field.
func ExtractTimestamp(field string, us int64) (int64, bool) {
	days, tod := SplitTimestamp(us)
	if f := extractTimeFuncs[field]; f != nil {
		return f(tod), true
	}
	if field == "epoch" {
		return floorDiv(us, UsPerSecond), true
	}
	if f := extractEpochFuncs[field]; f != nil {
		return f(us), true
	}
	return ExtractValue(field, days)
}

// ExtractEpoch is the seconds since 1970-01-01 00:00:00 of us, with their
// fraction.
func ExtractEpoch(us int64) float64 { return float64(us) / float64(UsPerSecond) }

// ExtractResultType is the type of EXTRACT(field FROM x) for x of type dt:
// int64, except the epoch of a timestamp, a time or an interval (float64,
// with its fraction).
func ExtractResultType(field string, dt arrow.DataType) arrow.DataType {
	if field == "epoch" && (IsTimestamp(dt) || IsTime(dt) || dt.ID() == arrow.INTERVAL_MONTH_DAY_NANO) {
		return arrow.PrimitiveTypes.Float64
	}
	return arrow.PrimitiveTypes.Int64
}

// ValidExtract reports whether field may be extracted from a value of
// type dt (a date, a timestamp, a time or an interval).
func ValidExtract(field string, dt arrow.DataType) bool {
	if dt.ID() == arrow.INTERVAL_MONTH_DAY_NANO {
		return extractIntervalFuncs[field] != nil || field == "epoch"
	}
	if IsTime(dt) {
		return extractTimeFuncs[field] != nil || field == "epoch"
	}
	if extractFuncs[field] != nil {
		return true
	}
	if HasZone(dt) && isZoneField(field) {
		return true
	}
	return IsTimestamp(dt) && (extractTimeFuncs[field] != nil || extractEpochFuncs[field] != nil)
}

// ZoneFields are the fields EXTRACT takes from a TIMESTAMPTZ only: the
// session zone's offset east of UTC at that instant (seconds, hours,
// minutes), as PostgreSQL.
var ZoneFields = []string{"timezone", "timezone_hour", "timezone_minute"}

func isZoneField(f string) bool {
	return f == "timezone" || f == "timezone_hour" || f == "timezone_minute"
}

// ExtractZoneField is a zone field of an offset east of UTC in seconds.
func ExtractZoneField(field string, off int64) int64 {
	switch field {
	case "timezone_hour":
		return off / 3600
	case "timezone_minute":
		return off / 60 % 60
	}
	return off
}

func extractTsKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	a := in[0]
	if isZoneField(f.field) {
		out.i64 = Grow(out.i64, n)
		z := newTZCache(f.loc)
		each(sel, n, func(i int32) { out.i64[i] = ExtractZoneField(f.field, z.offset(a.i64[i])/UsPerSecond) })
		return nil
	}
	if f.loc != nil && f.field != "epoch" && extractEpochFuncs[f.field] == nil {
		// The wall clock in the session zone, then the timestamp's field.
		z := newTZCache(f.loc)
		out.i64 = Grow(out.i64, n)
		if tf := extractTimeFuncs[f.field]; tf != nil {
			each(sel, n, func(i int32) {
				_, tod := SplitTimestamp(z.toLocal(a.i64[i]))
				out.i64[i] = tf(tod)
			})
			return nil
		}
		df := extractFuncs[f.field]
		each(sel, n, func(i int32) { out.i64[i] = df(floorDiv(z.toLocal(a.i64[i]), UsPerDay)) })
		return nil
	}
	if f.field == "epoch" {
		out.f64 = Grow(out.f64, n)
		each(sel, n, func(i int32) { out.f64[i] = ExtractEpoch(a.i64[i]) })
		return nil
	}
	out.i64 = Grow(out.i64, n)
	if ef := extractEpochFuncs[f.field]; ef != nil {
		each(sel, n, func(i int32) { out.i64[i] = ef(a.i64[i]) })
		return nil
	}
	if tf := extractTimeFuncs[f.field]; tf != nil {
		each(sel, n, func(i int32) {
			_, tod := SplitTimestamp(a.i64[i])
			out.i64[i] = tf(tod)
		})
		return nil
	}
	df := extractFuncs[f.field]
	each(sel, n, func(i int32) { out.i64[i] = df(floorDiv(a.i64[i], UsPerDay)) })
	return nil
}

// ---------------------------------------------------------------- date_trunc

// TruncUnits are the units date_trunc takes, smallest first.
var TruncUnits = []string{"microsecond", "millisecond", "second", "minute", "hour", "day", "week", "month", "quarter", "year", "decade", "century", "millennium"}

// TruncTimestamp is date_trunc(unit, us): us rounded down to the start of
// its unit (weeks start on Monday; centuries and millennia on years ending
// in 01: 2001-01-01, as PostgreSQL); ok is false for an unknown unit.
func TruncTimestamp(unit string, us int64) (int64, bool) {
	days, tod := SplitTimestamp(us)
	switch unit {
	case "microsecond":
		return us, true
	case "millisecond":
		return us - tod%1000, true
	case "second":
		return us - tod%UsPerSecond, true
	case "minute":
		return us - tod%UsPerMinute, true
	case "hour":
		return us - tod%UsPerHour, true
	case "day":
		return days * UsPerDay, true
	case "week":
		isodow := extractFuncs["isodow"](days)
		return (days - isodow + 1) * UsPerDay, true
	}
	y, m, _ := CivilFromDays(days)
	switch unit {
	case "month":
	case "quarter":
		m = (m-1)/3*3 + 1
	case "year":
		m = 1
	case "decade":
		y, m = floorDiv(y, 10)*10, 1
	case "century":
		y, m = floorDiv(y-1, 100)*100+1, 1
	case "millennium":
		y, m = floorDiv(y-1, 1000)*1000+1, 1
	default:
		return 0, false
	}
	return DaysFromCivil(y, m, 1) * UsPerDay, true
}

// TruncUnitName normalizes a date_trunc unit's spelling.
func TruncUnitName(u string) string {
	switch u = ExtractFieldName(u); u {
	case "decades":
		return "decade"
	case "centuries":
		return "century"
	case "millennia", "millenniums":
		return "millennium"
	}
	return u
}

// TruncTimestampTZ is date_trunc(unit, us) of a TIMESTAMPTZ in the
// session zone, as PostgreSQL truncates: the wall clock is truncated; for
// units up to the hour the instant keeps its offset, for a day and longer
// the local midnight is read again in the zone (its offset may differ).
func truncTZ(unit string, us int64, z *tzCache) int64 {
	off := z.offset(us)
	r, _ := TruncTimestamp(unit, us+off)
	switch unit {
	case "microsecond", "millisecond", "second", "minute", "hour":
		return r - off
	}
	return z.fromLocal(r)
}

// TruncTimestampTZ is date_trunc(unit, us) of a TIMESTAMPTZ in zone loc.
func TruncTimestampTZ(unit string, us int64, loc *time.Location) int64 {
	z := newTZCache(loc)
	return truncTZ(unit, us, &z)
}

func truncTsKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	out.i64 = Grow(out.i64, n)
	a := in[0]
	var err error
	if f.loc != nil {
		z := newTZCache(f.loc)
		each(sel, n, func(i int32) {
			r := truncTZ(f.field, a.i64[i], &z)
			if r < MinTimestamp && err == nil {
				err = errAt("timestamp out of range", f.desc)
			}
			out.i64[i] = r
		})
		return err
	}
	each(sel, n, func(i int32) {
		r, _ := TruncTimestamp(f.field, a.i64[i])
		if r < MinTimestamp && err == nil {
			err = errAt("timestamp out of range", f.desc)
		}
		out.i64[i] = r
	})
	return err
}

// compileDateTrunc builds date_trunc(unit, ts) for a constant unit.
func (c *compiler) compileDateTrunc(args []node, desc string) (node, error) {
	uc, ok := args[0].(*constNode)
	if !ok || uc.k != pStr {
		return nil, nferr.Queryf("the unit of date_trunc must be a string constant in %s", desc)
	}
	unit := TruncUnitName(uc.s)
	if IsTime(args[1].dt()) {
		return c.compileTimeTrunc(unit, args[1], desc)
	}
	if _, ok := TruncTimestamp(unit, 0); !ok {
		return nil, nferr.Queryf("date_trunc: unit %q is not known in %s (want %s)", uc.s, desc, strings.Join(TruncUnits, ", "))
	}
	x := args[1]
	switch {
	case x.dt().ID() == arrow.NULL:
		return newNullConst(TimestampArrow), nil
	case IsTimestamp(x.dt()):
	default:
		return nil, nferr.Queryf("function date_trunc(%s) does not exist in %s", TypeName(x.dt()), desc)
	}
	fn := &funcNode{args: []node{x}, t: x.dt(), desc: desc, field: unit, run: truncTsKernel}
	if HasZone(x.dt()) {
		fn.loc = c.loc
	}
	return fn, nil
}

// ---------------------------------------------------------------- casts

func castStringToTimestamp(c *castNode, out, a *vec, sel []int32, n int) error {
	out.i64 = Grow(out.i64, n)
	zone := HasZone(c.to)
	z := newTZCache(c.loc)
	var err error
	each(sel, n, func(i int32) {
		if err != nil {
			return
		}
		s := a.strAt(i)
		var us int64
		var ok, rangeOK bool
		if zone {
			us, ok, rangeOK = z.parseTimestampTZ(s)
		} else {
			us, ok, rangeOK = civil.ParseTimestamp(s, false)
		}
		switch {
		case !ok:
			err = c.invalid(s)
		case !rangeOK:
			err = nferr.Dataf("timestamp out of range: %q in %s", string(s), c.desc)
		}
		out.i64[i] = us
	})
	return err
}

// castDateToTimestamp gives the date's midnight: for a TIMESTAMPTZ, the
// midnight of the session zone.
func castDateToTimestamp(c *castNode, out, a *vec, sel []int32, n int) error {
	out.i64 = Grow(out.i64, n)
	if c.loc != nil && HasZone(c.to) {
		z := newTZCache(c.loc)
		each(sel, n, func(i int32) { out.i64[i] = z.fromLocal(int64(a.i32[i]) * UsPerDay) })
		return nil
	}
	each(sel, n, func(i int32) { out.i64[i] = int64(a.i32[i]) * UsPerDay })
	return nil
}

// castTimestampToDate gives the date of the wall clock (for a
// TIMESTAMPTZ, in the session zone).
func castTimestampToDate(c *castNode, out, a *vec, sel []int32, n int) error {
	out.i32 = Grow(out.i32, n)
	if c.loc != nil && HasZone(c.from) {
		z := newTZCache(c.loc)
		each(sel, n, func(i int32) { out.i32[i] = int32(floorDiv(z.toLocal(a.i64[i]), UsPerDay)) })
		return nil
	}
	each(sel, n, func(i int32) { out.i32[i] = int32(floorDiv(a.i64[i], UsPerDay)) })
	return nil
}

// castTimestampKind converts TIMESTAMP to TIMESTAMPTZ (the wall clock read
// in the session zone) and back (the wall clock there at that instant).
func castTimestampKind(c *castNode, out, a *vec, sel []int32, n int) error {
	out.i64 = Grow(out.i64, n)
	if c.loc == nil {
		each(sel, n, func(i int32) { out.i64[i] = a.i64[i] })
		return nil
	}
	z := newTZCache(c.loc)
	if HasZone(c.to) {
		each(sel, n, func(i int32) { out.i64[i] = z.fromLocal(a.i64[i]) })
	} else {
		each(sel, n, func(i int32) { out.i64[i] = z.toLocal(a.i64[i]) })
	}
	return nil
}

// ---------------------------------------------------------------- arithmetic

func tsIvKernel(out, a, b *vec, sel []int32, n int, sign int64) kcode {
	out.i64 = Grow(out.i64, n)
	code := kOK
	each(sel, n, func(i int32) {
		r, ok := TimestampAddInterval(a.i64[i], b.iv[i], sign)
		if !ok {
			code = kTsRange
		}
		out.i64[i] = r
	})
	return code
}

func tzIvKernel(out, a, b *vec, sel []int32, n int, sign int64, loc *time.Location) kcode {
	out.i64 = Grow(out.i64, n)
	z := newTZCache(loc)
	code := kOK
	each(sel, n, func(i int32) {
		iv := b.iv[i]
		r, ok := TimestampTZAddInterval(a.i64[i], [3]int64{int64(iv.Months), int64(iv.Days), iv.Nanoseconds}, sign, &z)
		if !ok {
			code = kTsRange
		}
		out.i64[i] = r
	})
	return code
}

func tsAddInterval(out, a, b *vec, sel []int32, n int) kcode { return tsIvKernel(out, a, b, sel, n, 1) }
func tsSubInterval(out, a, b *vec, sel []int32, n int) kcode {
	return tsIvKernel(out, a, b, sel, n, -1)
}

func tsDiff(out, a, b *vec, sel []int32, n int) kcode {
	out.iv = Grow(out.iv, n)
	each(sel, n, func(i int32) { out.iv[i] = TimestampDiff(a.i64[i], b.i64[i]) })
	return kOK
}

// compileTimestampArith builds timestamp +/- interval, interval +
// timestamp and timestamp - timestamp (a date operand counts as its
// midnight).
func (c *compiler) compileTimestampArith(fn string, a, b node, desc string) (node, error) {
	ta, tb := a.dt(), b.dt()
	var err error
	if ta.ID() == arrow.DATE32 {
		if a, err = c.cast(a, tsLike(tb), desc); err != nil {
			return nil, err
		}
		ta = a.dt()
	}
	if tb.ID() == arrow.DATE32 {
		if b, err = c.cast(b, tsLike(ta), desc); err != nil {
			return nil, err
		}
		tb = b.dt()
	}
	mk := func(a, b node, t arrow.DataType, k binKernel) (node, error) {
		if c.loc != nil && HasZone(t) {
			// months and days on the session zone's wall clock
			loc, sign := c.loc, int64(1)
			if fn == FnSub {
				sign = -1
			}
			k = func(out, a, b *vec, sel []int32, n int) kcode {
				return tzIvKernel(out, a, b, sel, n, sign, loc)
			}
		}
		return &arithNode{a: a, b: b, t: t, kern: k, desc: desc}, nil
	}
	iv := arrow.FixedWidthTypes.MonthDayNanoInterval
	switch {
	case fn == FnAdd && IsTimestamp(ta) && tb.ID() == arrow.INTERVAL_MONTH_DAY_NANO:
		return mk(a, b, ta, tsAddInterval)
	case fn == FnAdd && ta.ID() == arrow.INTERVAL_MONTH_DAY_NANO && IsTimestamp(tb):
		return mk(b, a, tb, tsAddInterval)
	case fn == FnSub && IsTimestamp(ta) && tb.ID() == arrow.INTERVAL_MONTH_DAY_NANO:
		return mk(a, b, ta, tsSubInterval)
	case fn == FnSub && IsTimestamp(ta) && IsTimestamp(tb):
		if HasZone(ta) != HasZone(tb) {
			t := TimestampTZArrow
			if a, err = c.cast(a, t, desc); err != nil {
				return nil, err
			}
			if b, err = c.cast(b, t, desc); err != nil {
				return nil, err
			}
		}
		return mk(a, b, iv, tsDiff)
	}
	return nil, nferr.Queryf("operator does not exist: %s %s %s in %s", TypeName(ta), infix[fn], TypeName(tb), desc)
}

// tsLike is the timestamp type a date converts to beside an operand of
// type other: TIMESTAMPTZ beside one, TIMESTAMP otherwise.
func tsLike(other arrow.DataType) arrow.DataType {
	if HasZone(other) {
		return TimestampTZArrow
	}
	return TimestampArrow
}

// ---------------------------------------------------------------- functions

// compileToTimestamp builds to_timestamp(seconds): the TIMESTAMPTZ that
// many seconds (a number, fraction kept to microseconds) after
// 1970-01-01 00:00:00 UTC.
func (c *compiler) compileToTimestamp(args []node, desc string) (node, error) {
	x, err := c.cast(args[0], arrow.PrimitiveTypes.Float64, desc)
	if err != nil {
		return nil, err
	}
	return &funcNode{args: []node{x}, t: TimestampTZArrow, desc: desc, run: toTimestampKernel}, nil
}

func toTimestampKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	out.i64 = Grow(out.i64, n)
	a := in[0]
	var err error
	each(sel, n, func(i int32) {
		us := math.Round(a.f64[i] * float64(UsPerSecond))
		if !(us >= float64(MinTimestamp) && us <= float64(MaxTimestamp)) {
			if err == nil {
				err = errAt("timestamp out of range: "+strconv.FormatFloat(a.f64[i], 'g', -1, 64)+" seconds", f.desc)
			}
			return
		}
		out.i64[i] = int64(us)
	})
	return err
}

// compileMakeTimestamp builds make_timestamp(year, month, day, hour, minute,
// seconds) with seconds a number (its fraction kept to microseconds).
func (c *compiler) compileMakeTimestamp(args []node, desc string) (node, error) {
	in := make([]node, 6)
	for i := range 5 {
		x, err := c.cast(args[i], arrow.PrimitiveTypes.Int64, desc)
		if err != nil {
			return nil, err
		}
		in[i] = x
	}
	x, err := c.cast(args[5], arrow.PrimitiveTypes.Float64, desc)
	if err != nil {
		return nil, err
	}
	in[5] = x
	return &funcNode{args: in, t: TimestampArrow, desc: desc, run: makeTimestampKernel}, nil
}

func makeTimestampKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	out.i64 = Grow(out.i64, n)
	var err error
	each(sel, n, func(i int32) {
		if err != nil {
			return
		}
		y, mo, d := in[0].i64[i], in[1].i64[i], in[2].i64[i]
		h, mi, s := in[3].i64[i], in[4].i64[i], in[5].f64[i]
		if y < 1 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > int64(daysInMonth(y, int(mo))) ||
			h < 0 || h > 23 || mi < 0 || mi > 59 || !(s >= 0 && s < 60) {
			err = nferr.Dataf("date/time field value out of range: %04d-%02d-%02d %02d:%02d:%s in %s", y, mo, d, h, mi, FormatFloat(s), f.desc)
			return
		}
		out.i64[i] = DaysFromCivil(y, int(mo), int(d))*UsPerDay + h*UsPerHour + mi*UsPerMinute + int64(math.Round(s*float64(UsPerSecond)))
	})
	return err
}
