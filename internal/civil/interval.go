package civil

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Intervals as PostgreSQL reads them: '3 months 2 days', '1.5 days',
// '-01:30:00', '2 decades ago', '1 year 2 mons 3 days 04:05:06.789' (the
// form intervals print in). The parts are months, days and nanoseconds,
// as Arrow's month-day-nano interval holds them.

// NanosPerDay is the nanoseconds of a day (an interval's day is 24 hours).
const NanosPerDay = 86400 * int64(1e9)

// IntervalUnits maps PostgreSQL's unit spellings to their canonical name.
var IntervalUnits = map[string]string{
	"year": "year", "years": "year", "y": "year", "yr": "year", "yrs": "year",
	"month": "month", "months": "month", "mon": "month", "mons": "month",
	"week": "week", "weeks": "week", "w": "week",
	"day": "day", "days": "day", "d": "day",
	"hour": "hour", "hours": "hour", "h": "hour",
	"minute": "minute", "minutes": "minute", "min": "minute", "mins": "minute",
	"second": "second", "seconds": "second", "sec": "second", "secs": "second", "s": "second",
	"millisecond": "millisecond", "milliseconds": "millisecond", "ms": "millisecond", "msec": "millisecond", "msecs": "millisecond",
	"microsecond": "microsecond", "microseconds": "microsecond", "us": "microsecond", "usec": "microsecond", "usecs": "microsecond",
	"decade": "decade", "decades": "decade", "century": "century", "centuries": "century",
	"millennium": "millennium", "millennia": "millennium", "millenniums": "millennium",
}

// Interval is an interval's parts.
type Interval struct {
	Months, Days int32
	Nanos        int64
}

// AddUnit adds n of unit u (a canonical name) to iv.
func (iv *Interval) AddUnit(n int64, u string) error {
	switch u {
	case "millennium", "century", "decade":
		n *= map[string]int64{"millennium": 1000, "century": 100, "decade": 10}[u]
		if n > math.MaxInt32/12 || n < math.MinInt32/12 {
			return fmt.Errorf("interval out of range")
		}
		fallthrough
	case "year":
		n *= 12
		fallthrough
	case "month":
		if n > math.MaxInt32 || n < math.MinInt32 || int64(iv.Months)+n > math.MaxInt32 || int64(iv.Months)+n < math.MinInt32 {
			return fmt.Errorf("interval out of range")
		}
		iv.Months += int32(n)
	case "week":
		n *= 7
		fallthrough
	case "day":
		if n > math.MaxInt32 || n < math.MinInt32 || int64(iv.Days)+n > math.MaxInt32 || int64(iv.Days)+n < math.MinInt32 {
			return fmt.Errorf("interval out of range")
		}
		iv.Days += int32(n)
	case "hour":
		iv.Nanos += n * 3600e9
	case "minute":
		iv.Nanos += n * 60e9
	case "second":
		iv.Nanos += n * 1e9
	case "millisecond":
		iv.Nanos += n * 1e6
	case "microsecond":
		iv.Nanos += n * 1e3
	default:
		return fmt.Errorf("invalid interval unit %q", u)
	}
	return nil
}

// Scale multiplies iv by f, carrying fractions down as PostgreSQL does (a
// month is 30 days, a day 24 hours); ok is false on overflow.
func (iv Interval) Scale(f float64) (Interval, bool) {
	m := float64(iv.Months) * f
	d := float64(iv.Days)*f + (m-math.Trunc(m))*30
	ns := float64(iv.Nanos)*f + (d-math.Trunc(d))*float64(NanosPerDay)
	m, d, ns = math.Trunc(m), math.Trunc(d), math.Round(ns)
	if math.IsNaN(ns) || math.Abs(m) > math.MaxInt32 || math.Abs(d) > math.MaxInt32 || math.Abs(ns) >= math.MaxInt64 {
		return iv, false
	}
	return Interval{Months: int32(m), Days: int32(d), Nanos: int64(ns)}, true
}

// ParseInterval reads an interval's text: pairs of a number and a unit
// (fractions carried down), times [-]HH:MM[:SS[.f]], and a final "ago".
func ParseInterval(value string) (Interval, error) {
	var iv Interval
	f := strings.Fields(value)
	ago := len(f) > 1 && strings.EqualFold(f[len(f)-1], "ago")
	if ago {
		f = f[:len(f)-1]
	}
	if len(f) == 0 {
		return iv, fmt.Errorf("invalid interval %q: want pairs of number and unit, such as '3 months'", value)
	}
	for i := 0; i < len(f); {
		if strings.Contains(f[i], ":") {
			ns, ok := parseIntervalTime(f[i])
			if !ok {
				return iv, fmt.Errorf("invalid interval %q: %q is not a time (want HH:MM:SS)", value, f[i])
			}
			iv.Nanos += ns
			i++
			continue
		}
		if i+1 >= len(f) {
			return iv, fmt.Errorf("invalid interval %q: want pairs of number and unit, such as '3 months'", value)
		}
		u, ok := IntervalUnits[strings.ToLower(f[i+1])]
		if !ok {
			return iv, fmt.Errorf("invalid interval %q: unknown unit %q", value, f[i+1])
		}
		if n, err := strconv.ParseInt(f[i], 10, 32); err == nil {
			if err := iv.AddUnit(n, u); err != nil {
				return iv, err
			}
		} else {
			// A fraction ('1.5 days' is 1 day 12:00:00): the unit scaled,
			// fractions carried down.
			x, err := strconv.ParseFloat(f[i], 64)
			if err != nil || math.IsInf(x, 0) || math.IsNaN(x) || strings.ContainsAny(f[i], "eExXnN") {
				return iv, fmt.Errorf("invalid interval %q: %q is not a number", value, f[i])
			}
			var one Interval
			if err := one.AddUnit(1, u); err != nil {
				return iv, err
			}
			part, ok := one.Scale(x)
			if !ok {
				return iv, fmt.Errorf("interval out of range")
			}
			iv = Interval{Months: iv.Months + part.Months, Days: iv.Days + part.Days, Nanos: iv.Nanos + part.Nanos}
		}
		i += 2
	}
	if ago {
		iv = Interval{Months: -iv.Months, Days: -iv.Days, Nanos: -iv.Nanos}
	}
	return iv, nil
}

// parseIntervalTime reads an interval's time part [-]HH:MM[:SS[.f]] as
// nanoseconds.
func parseIntervalTime(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, false
	}
	h, err1 := strconv.ParseInt(parts[0], 10, 32)
	m, err2 := strconv.ParseInt(parts[1], 10, 32)
	if err1 != nil || err2 != nil || h < 0 || m < 0 || m > 59 {
		return 0, false
	}
	ns := h*3600e9 + m*60e9
	if len(parts) == 3 {
		sec, err := strconv.ParseFloat(parts[2], 64)
		if err != nil || sec < 0 || sec >= 60 || strings.ContainsAny(parts[2], "eE") {
			return 0, false
		}
		ns += int64(math.Round(sec * 1e9))
	}
	if neg {
		ns = -ns
	}
	return ns, true
}
