package expr

import (
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/internal/civil"
	"github.com/nicflow/nicflow/internal/nferr"
)

// TIME (PostgreSQL's time without time zone) values are arrow time64[us]:
// microseconds since midnight, 0 to 24:00:00 inclusive (PostgreSQL reads
// '24:00:00'). They print as HH:MM:SS[.ffffff] (civil.AppendTimeOfDay).
// Arithmetic follows PostgreSQL: time +/- interval takes the interval's
// time part and wraps around midnight (never 24:00:00), time - time is an
// interval of time, date + time a timestamp.

// TimeArrow is the arrow type of TIME.
var TimeArrow arrow.DataType = arrow.FixedWidthTypes.Time64us

// IsTime reports whether dt is TIME.
func IsTime(dt arrow.DataType) bool { return dt.ID() == arrow.TIME64 }

// FormatTime prints microseconds since midnight as HH:MM:SS[.ffffff].
func FormatTime(us int64) string { return string(civil.AppendTimeOfDay(nil, us)) }

// ParseTime reads a time of day in any form PostgreSQL reads
// (civil.ParseTime). Errors are KindQuery.
func ParseTime(s string) (int64, error) {
	us, ok := civil.ParseTime([]byte(s))
	if !ok {
		return 0, nferr.Queryf("invalid input syntax for type time: %q", s)
	}
	return us, nil
}

// wrapTime brings microseconds into [0, 24:00:00).
func wrapTime(us int64) int64 {
	us %= UsPerDay
	if us < 0 {
		us += UsPerDay
	}
	return us
}

// TimeAddInterval is t + sign*iv as PostgreSQL computes time + interval:
// the interval's months and days are ignored, its time added, the result
// wrapped around midnight.
func TimeAddInterval(t int64, iv arrow.MonthDayNanoInterval, sign int64) int64 {
	return wrapTime(t + sign*(iv.Nanoseconds/1000))
}

// TimeDiff is a - b as an interval of time (PostgreSQL's time - time).
func TimeDiff(a, b int64) arrow.MonthDayNanoInterval {
	return arrow.MonthDayNanoInterval{Nanoseconds: (a - b) * 1000}
}

// IntervalToTime is CAST(interval AS time): the interval's time part
// wrapped around midnight (months and days ignored), as PostgreSQL.
func IntervalToTime(iv arrow.MonthDayNanoInterval) int64 { return wrapTime(iv.Nanoseconds / 1000) }

// TimeToInterval is CAST(time AS interval).
func TimeToInterval(t int64) arrow.MonthDayNanoInterval {
	return arrow.MonthDayNanoInterval{Nanoseconds: t * 1000}
}

// TimeFields are the fields EXTRACT takes from a TIME (PostgreSQL's).
var TimeFields = []string{"hour", "minute", "second", "millisecond", "microsecond", "epoch"}

// ExtractTime returns field of the time t as an int64 (second, millisecond
// and microsecond as for timestamps; epoch: whole seconds since midnight,
// ExtractEpoch has the fraction); ok is false for a field a time lacks.
func ExtractTime(field string, t int64) (int64, bool) {
	if f := extractTimeFuncs[field]; f != nil {
		return f(t), true
	}
	if field == "epoch" {
		return t / UsPerSecond, true
	}
	return 0, false
}

func extractTimeKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	a := in[0].i64
	if f.field == "epoch" {
		out.f64 = Grow(out.f64, n)
		if sel == nil {
			for i := 0; i < n; i++ {
				out.f64[i] = ExtractEpoch(a[i])
			}
		} else {
			for _, i := range sel {
				out.f64[i] = ExtractEpoch(a[i])
			}
		}
		return nil
	}
	out.i64 = Grow(out.i64, n)
	var div, mod int64
	switch f.field {
	case "hour":
		div, mod = UsPerHour, 25
	case "minute":
		div, mod = UsPerMinute, 60
	case "second":
		div, mod = UsPerSecond, 60
	case "millisecond":
		div, mod = 1000, 60_000
	default: // microsecond
		div, mod = 1, UsPerMinute
	}
	if sel == nil {
		for i := 0; i < n; i++ {
			out.i64[i] = a[i] / div % mod
		}
	} else {
		for _, i := range sel {
			out.i64[i] = a[i] / div % mod
		}
	}
	return nil
}

// timeTruncUnits are the units date_trunc takes for a TIME, and their
// microseconds.
var timeTruncUnits = map[string]int64{
	"microsecond": 1, "millisecond": 1000, "second": UsPerSecond, "minute": UsPerMinute, "hour": UsPerHour,
}

// TimeTruncUnits lists them, smallest first.
var TimeTruncUnits = []string{"microsecond", "millisecond", "second", "minute", "hour"}

// TruncTime is date_trunc(unit, t) for a TIME; ok is false for a unit a
// time lacks.
func TruncTime(unit string, t int64) (int64, bool) {
	u := timeTruncUnits[unit]
	if u == 0 {
		return 0, false
	}
	return t - t%u, true
}

func truncTimeKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	a := in[0].i64
	u := timeTruncUnits[f.field]
	out.i64 = Grow(out.i64, n)
	if sel == nil {
		for i := 0; i < n; i++ {
			out.i64[i] = a[i] - a[i]%u
		}
	} else {
		for _, i := range sel {
			out.i64[i] = a[i] - a[i]%u
		}
	}
	return nil
}

func (c *compiler) compileTimeTrunc(unit string, x node, desc string) (node, error) {
	if _, ok := TruncTime(unit, 0); !ok {
		return nil, nferr.Queryf("date_trunc: unit %q is not known for time in %s (want %s)", unit, desc, strings.Join(TimeTruncUnits, ", "))
	}
	return &funcNode{args: []node{x}, t: x.dt(), desc: desc, field: unit, run: truncTimeKernel}, nil
}

// ---------------------------------------------------------------- casts

func castStringToTime(c *castNode, out, a *vec, sel []int32, n int) error {
	out.i64 = Grow(out.i64, n)
	var err error
	each(sel, n, func(i int32) {
		if err != nil {
			return
		}
		s := a.strAt(i)
		us, ok := civil.ParseTime(s)
		if !ok {
			err = nferr.Dataf("invalid input syntax for type time: %q in %s", string(s), c.desc)
		}
		out.i64[i] = us
	})
	return err
}

func castTimestampToTime(c *castNode, out, a *vec, sel []int32, n int) error {
	out.i64 = Grow(out.i64, n)
	if c.loc != nil && HasZone(c.from) {
		z := newTZCache(c.loc)
		each(sel, n, func(i int32) { _, out.i64[i] = SplitTimestamp(z.toLocal(a.i64[i])) })
		return nil
	}
	if sel == nil {
		for i := 0; i < n; i++ {
			_, out.i64[i] = SplitTimestamp(a.i64[i])
		}
	} else {
		for _, i := range sel {
			_, out.i64[i] = SplitTimestamp(a.i64[i])
		}
	}
	return nil
}

func castIntervalToTime(c *castNode, out, a *vec, sel []int32, n int) error {
	out.i64 = Grow(out.i64, n)
	if sel == nil {
		for i := 0; i < n; i++ {
			out.i64[i] = IntervalToTime(a.iv[i])
		}
	} else {
		for _, i := range sel {
			out.i64[i] = IntervalToTime(a.iv[i])
		}
	}
	return nil
}

func castTimeToInterval(c *castNode, out, a *vec, sel []int32, n int) error {
	out.iv = Grow(out.iv, n)
	if sel == nil {
		for i := 0; i < n; i++ {
			out.iv[i] = TimeToInterval(a.i64[i])
		}
	} else {
		for _, i := range sel {
			out.iv[i] = TimeToInterval(a.i64[i])
		}
	}
	return nil
}

// timeCast returns the kernel of a cast between TIME and another type
// (nil: none): text <-> time, timestamp[tz] -> time (the time of day, in
// UTC), interval <-> time.
func timeCast(f, t arrow.Type) func(c *castNode, out, a *vec, sel []int32, n int) error {
	switch {
	case f == arrow.STRING && t == arrow.TIME64:
		return castStringToTime
	case f == arrow.TIMESTAMP && t == arrow.TIME64:
		return castTimestampToTime
	case f == arrow.INTERVAL_MONTH_DAY_NANO && t == arrow.TIME64:
		return castIntervalToTime
	case f == arrow.TIME64 && t == arrow.INTERVAL_MONTH_DAY_NANO:
		return castTimeToInterval
	}
	return nil
}

// ---------------------------------------------------------------- arithmetic

func timeIvKernel(out, a, b *vec, sel []int32, n int, sign int64) kcode {
	out.i64 = Grow(out.i64, n)
	if sel == nil {
		for i := 0; i < n; i++ {
			out.i64[i] = TimeAddInterval(a.i64[i], b.iv[i], sign)
		}
	} else {
		for _, i := range sel {
			out.i64[i] = TimeAddInterval(a.i64[i], b.iv[i], sign)
		}
	}
	return kOK
}

func timeAddInterval(out, a, b *vec, sel []int32, n int) kcode {
	return timeIvKernel(out, a, b, sel, n, 1)
}
func timeSubInterval(out, a, b *vec, sel []int32, n int) kcode {
	return timeIvKernel(out, a, b, sel, n, -1)
}

func timeDiff(out, a, b *vec, sel []int32, n int) kcode {
	out.iv = Grow(out.iv, n)
	if sel == nil {
		for i := 0; i < n; i++ {
			out.iv[i] = TimeDiff(a.i64[i], b.i64[i])
		}
	} else {
		for _, i := range sel {
			out.iv[i] = TimeDiff(a.i64[i], b.i64[i])
		}
	}
	return kOK
}

// DateAddTime is date + time: the timestamp of that day and time; ok is
// false beyond the timestamp range (9999-12-31 + 24:00:00).
func DateAddTime(days int32, t int64) (int64, bool) {
	us := int64(days)*UsPerDay + t
	return us, us >= MinTimestamp && us <= MaxTimestamp
}

func dateAddTime(out, a, b *vec, sel []int32, n int) kcode {
	out.i64 = Grow(out.i64, n)
	code := kOK
	if sel == nil {
		for i := 0; i < n; i++ {
			r, ok := DateAddTime(a.i32[i], b.i64[i])
			if !ok {
				code = kTsRange
			}
			out.i64[i] = r
		}
	} else {
		for _, i := range sel {
			r, ok := DateAddTime(a.i32[i], b.i64[i])
			if !ok {
				code = kTsRange
			}
			out.i64[i] = r
		}
	}
	return code
}

// TimeArithType is the type of a fn b when a or b is a TIME (false: no
// such operator): time +/- interval and interval + time are times, time -
// time an interval, date + time and time + date timestamps.
func TimeArithType(fn string, a, b arrow.DataType) (arrow.DataType, bool) {
	ta, tb := a.ID(), b.ID()
	iv := arrow.INTERVAL_MONTH_DAY_NANO
	switch {
	case ta == arrow.TIME64 && tb == iv && (fn == FnAdd || fn == FnSub), ta == iv && tb == arrow.TIME64 && fn == FnAdd:
		return TimeArrow, true
	case ta == arrow.TIME64 && tb == arrow.TIME64 && fn == FnSub:
		return arrow.FixedWidthTypes.MonthDayNanoInterval, true
	case fn == FnAdd && (ta == arrow.DATE32 && tb == arrow.TIME64 || ta == arrow.TIME64 && tb == arrow.DATE32):
		return TimestampArrow, true
	}
	return nil, false
}

// compileTimeArith builds the operators of TimeArithType.
func (c *compiler) compileTimeArith(fn string, a, b node, desc string) (node, error) {
	ta, tb := a.dt(), b.dt()
	t, ok := TimeArithType(fn, ta, tb)
	if !ok {
		return nil, nferr.Queryf("operator does not exist: %s %s %s in %s", TypeName(ta), infix[fn], TypeName(tb), desc)
	}
	mk := func(a, b node, k binKernel) (node, error) {
		return &arithNode{a: a, b: b, t: t, kern: k, desc: desc}, nil
	}
	switch {
	case IsTime(ta) && IsTime(tb):
		return mk(a, b, timeDiff)
	case IsTime(ta) && tb.ID() == arrow.DATE32:
		return mk(b, a, dateAddTime)
	case ta.ID() == arrow.DATE32:
		return mk(a, b, dateAddTime)
	case !IsTime(ta):
		return mk(b, a, timeAddInterval)
	case fn == FnSub:
		return mk(a, b, timeSubInterval)
	}
	return mk(a, b, timeAddInterval)
}

// ---------------------------------------------------------------- make_time

// compileMakeTime builds make_time(hour, minute, seconds) with seconds a
// number (its fraction kept to microseconds).
func (c *compiler) compileMakeTime(args []node, desc string) (node, error) {
	in := make([]node, 3)
	for i := range 2 {
		x, err := c.cast(args[i], arrow.PrimitiveTypes.Int64, desc)
		if err != nil {
			return nil, err
		}
		in[i] = x
	}
	x, err := c.cast(args[2], arrow.PrimitiveTypes.Float64, desc)
	if err != nil {
		return nil, err
	}
	in[2] = x
	return &funcNode{args: in, t: TimeArrow, desc: desc, run: makeTimeKernel}, nil
}

// MakeTime is make_time(h, m, s) as PostgreSQL checks it: hours 0..24,
// minutes 0..59, seconds 0..60, at most 24:00:00.
func MakeTime(h, m int64, s float64) (int64, bool) {
	if h < 0 || h > 24 || m < 0 || m > 59 || !(s >= 0 && s <= 60) {
		return 0, false
	}
	us := h*UsPerHour + m*UsPerMinute + int64(math.Round(s*float64(UsPerSecond)))
	return us, us <= UsPerDay
}

func makeTimeKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	out.i64 = Grow(out.i64, n)
	var err error
	each(sel, n, func(i int32) {
		if err != nil {
			return
		}
		h, m, s := in[0].i64[i], in[1].i64[i], in[2].f64[i]
		us, ok := MakeTime(h, m, s)
		if !ok {
			sec := FormatFloat(s)
			if s >= 0 && s < 10 {
				sec = "0" + sec
			}
			err = nferr.Dataf("time field value out of range: %02d:%02d:%s in %s", h, m, sec, f.desc)
			return
		}
		out.i64[i] = us
	})
	return err
}

// IntervalFields are the fields EXTRACT takes from an interval, as
// PostgreSQL and DuckDB take them: year and month split the months (month
// 0..11, signed), day is the days, the time fields split the time part
// (hour unbounded; second, millisecond and microsecond within the minute,
// as for a timestamp), and epoch is the whole interval in seconds with a
// year of 365.25 days and a month of 30.
var IntervalFields = []string{"millennium", "century", "decade", "year", "quarter", "month", "day", "hour", "minute", "second", "millisecond", "microsecond", "epoch"}

// extractIntervalFuncs computes each field but epoch (IntervalEpoch).
var extractIntervalFuncs = map[string]func(iv arrow.MonthDayNanoInterval) int64{
	"millennium":  func(iv arrow.MonthDayNanoInterval) int64 { return int64(iv.Months) / 12000 },
	"century":     func(iv arrow.MonthDayNanoInterval) int64 { return int64(iv.Months) / 1200 },
	"decade":      func(iv arrow.MonthDayNanoInterval) int64 { return int64(iv.Months) / 120 },
	"year":        func(iv arrow.MonthDayNanoInterval) int64 { return int64(iv.Months) / 12 },
	"quarter":     func(iv arrow.MonthDayNanoInterval) int64 { return int64(iv.Months)%12/3 + 1 },
	"month":       func(iv arrow.MonthDayNanoInterval) int64 { return int64(iv.Months) % 12 },
	"day":         func(iv arrow.MonthDayNanoInterval) int64 { return int64(iv.Days) },
	"hour":        func(iv arrow.MonthDayNanoInterval) int64 { return iv.Nanoseconds / 1000 / UsPerHour },
	"minute":      func(iv arrow.MonthDayNanoInterval) int64 { return iv.Nanoseconds / 1000 / UsPerMinute % 60 },
	"second":      func(iv arrow.MonthDayNanoInterval) int64 { return iv.Nanoseconds / 1000 / UsPerSecond % 60 },
	"millisecond": func(iv arrow.MonthDayNanoInterval) int64 { return iv.Nanoseconds / 1000 % UsPerMinute / 1000 },
	"microsecond": func(iv arrow.MonthDayNanoInterval) int64 { return iv.Nanoseconds / 1000 % UsPerMinute },
}

// ExtractInterval returns field of the interval iv (epoch: see
// IntervalEpoch); ok is false for a field an interval lacks.
func ExtractInterval(field string, iv arrow.MonthDayNanoInterval) (int64, bool) {
	f := extractIntervalFuncs[field]
	if f == nil {
		return 0, false
	}
	return f(iv), true
}

// IntervalEpoch is EXTRACT(epoch FROM iv): its seconds, with a year of
// 365.25 days, a month of 30 and the time part's fraction (PostgreSQL's
// and DuckDB's rule).
func IntervalEpoch(iv arrow.MonthDayNanoInterval) float64 {
	const secsPerDay = 86400
	m := int64(iv.Months)
	secs := m/12*(secsPerDay*365+secsPerDay/4) + m%12*30*secsPerDay + int64(iv.Days)*secsPerDay
	return float64(secs) + float64(iv.Nanoseconds)/1e9
}

func extractIntervalKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	a := in[0].iv
	if f.field == "epoch" {
		out.f64 = Grow(out.f64, n)
		each(sel, n, func(i int32) { out.f64[i] = IntervalEpoch(a[i]) })
		return nil
	}
	out.i64 = Grow(out.i64, n)
	fn := extractIntervalFuncs[f.field]
	each(sel, n, func(i int32) { out.i64[i] = fn(a[i]) })
	return nil
}
