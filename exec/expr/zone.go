package expr

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // the IANA zone database in the binary (docs/decisions.md)

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/internal/civil"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Session time zones. A TIMESTAMPTZ is an instant (UTC microseconds); the
// session time zone says how it reads and prints as a wall clock. The
// binder stamps the zone's name (Expr.Zone) on the calls and casts of a
// statement; the compiler resolves it once (LoadZone) and the kernels
// convert with a zoneCache, which remembers the offset of the last zone
// period it looked up (the offset changes a few times a year at most), so
// a batch converts without allocating. The empty name is UTC, the
// default, and kernels keep their plain arithmetic for it (loc nil).

var zoneCache sync.Map // spec -> *time.Location (nil for UTC)

// LoadZone resolves a zone as PostgreSQL names one (SET TIME ZONE, AT TIME
// ZONE, a zone after a timestamp): "" or UTC-like names give nil (UTC); an
// IANA name (case-insensitive: america/new_york); a POSIX-style fixed
// offset ("+02", "UTC+5", "<+05:30>-05:30") whose sign counts hours WEST
// of Greenwich, as PostgreSQL reads it ('+02' is UTC-2). Unknown: KindQuery
// `time zone "x" not recognized`.
func LoadZone(spec string) (*time.Location, error) {
	if v, ok := zoneCache.Load(spec); ok {
		return v.(*time.Location), nil
	}
	loc, ok := loadZone(spec)
	if !ok {
		return nil, nferr.Queryf("time zone %q not recognized", spec)
	}
	zoneCache.Store(spec, loc)
	return loc, nil
}

func isUTCName(s string) bool {
	switch strings.ToUpper(s) {
	case "", "UTC", "GMT", "Z", "ZULU", "UCT", "UNIVERSAL", "ETC/UTC", "ETC/GMT", "ETC/UCT", "ETC/UNIVERSAL", "ETC/ZULU", "GMT0", "ETC/GMT0", "GREENWICH":
		return true
	}
	return false
}

func loadZone(spec string) (*time.Location, bool) {
	s := strings.TrimSpace(spec)
	if isUTCName(s) {
		return nil, true
	}
	if off, ok := parsePosixOffset(s); ok {
		if off == 0 {
			return nil, true
		}
		return time.FixedZone(s, int(-off)), true
	}
	if strings.ContainsAny(s, " ,") || strings.Contains(s, "..") || strings.HasPrefix(s, "/") {
		return nil, false
	}
	if loc, err := time.LoadLocation(s); err == nil {
		return loc, true
	}
	// PostgreSQL reads zone names case-insensitively.
	if loc, err := time.LoadLocation(capitalizeZone(s)); err == nil {
		return loc, true
	}
	if loc, err := time.LoadLocation(strings.ToUpper(s)); err == nil {
		return loc, true
	}
	return nil, false
}

// capitalizeZone spells america/new_york as America/New_York.
func capitalizeZone(s string) string {
	b := []byte(strings.ToLower(s))
	up := true
	for i, c := range b {
		if up && c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
		up = c == '/' || c == '_' || c == '-'
	}
	return string(b)
}

// parsePosixOffset reads a POSIX-style fixed zone: an optional name (letters,
// or <...>) then [+-]hh[:mm[:ss]], the offset WEST of Greenwich in seconds
// (UTC+5 is five hours west). A bare name is not an offset.
func parsePosixOffset(s string) (int64, bool) {
	i := 0
	if strings.HasPrefix(s, "<") {
		j := strings.IndexByte(s, '>')
		if j < 0 {
			return 0, false
		}
		i = j + 1
	} else {
		for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z') {
			i++
		}
		if i > 0 && !isUTCName(s[:i]) && i < 3 {
			return 0, false
		}
	}
	rest := s[i:]
	if rest == "" {
		return 0, false
	}
	off, ok := parseHMS(rest, true)
	return off, ok
}

// parseHMS reads [+-]h[h][:mm[:ss]] or [+-]hhmm as seconds.
func parseHMS(s string, signOptional bool) (int64, bool) {
	neg := false
	switch {
	case s == "":
		return 0, false
	case s[0] == '+' || s[0] == '-':
		neg = s[0] == '-'
		s = s[1:]
	case !signOptional:
		return 0, false
	}
	var parts []string
	if strings.Contains(s, ":") {
		parts = strings.Split(s, ":")
	} else if len(s) == 4 {
		parts = []string{s[:2], s[2:]}
	} else {
		parts = []string{s}
	}
	if len(parts) > 3 {
		return 0, false
	}
	var v [3]int64
	for k, p := range parts {
		if p == "" || len(p) > 2 {
			return 0, false
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return 0, false
		}
		v[k] = int64(n)
	}
	if v[0] > 15 || v[1] > 59 || v[2] > 59 {
		return 0, false
	}
	off := v[0]*3600 + v[1]*60 + v[2]
	if neg {
		off = -off
	}
	return off, true
}

// ZoneSpecFromOffset is the zone name of a fixed offset east of UTC in
// seconds, as PostgreSQL shows one set by a number or an interval:
// <+05:30>-05:30.
func ZoneSpecFromOffset(east int64) string {
	if east == 0 {
		return "UTC"
	}
	iso := string(AppendOffset(nil, east, true))
	posix := string(AppendOffset(nil, -east, true))
	return "<" + iso + ">" + posix
}

// zoneCache remembers one zone period of loc: its offset (seconds east)
// and its bounds in UTC microseconds.
type tzCache struct {
	loc        *time.Location
	start, end int64
	off        int64
}

func newTZCache(loc *time.Location) tzCache {
	return tzCache{loc: loc, start: 1, end: 0}
}

// offset returns the offset east of UTC, in microseconds, at instant us.
func (z *tzCache) offset(us int64) int64 {
	if z.loc == nil {
		return 0
	}
	if us >= z.start && us < z.end {
		return z.off
	}
	t := time.UnixMicro(us).In(z.loc)
	_, off := t.Zone()
	s, e := t.ZoneBounds()
	z.start, z.end = math.MinInt64, math.MaxInt64
	if !s.IsZero() {
		z.start = s.UnixMicro()
	}
	if !e.IsZero() {
		z.end = e.UnixMicro()
	}
	z.off = int64(off) * UsPerSecond
	return z.off
}

// toLocal is the wall clock at instant us (microseconds as a TIMESTAMP).
func (z *tzCache) toLocal(us int64) int64 { return us + z.offset(us) }

// fromLocal is the instant whose wall clock reads w, as PostgreSQL
// decides it: in a gap (spring forward) w is read with the offset before
// the gap (02:30 becomes 03:30 daylight time); in an overlap (fall back)
// with the offset after it (standard time, the later instant). Both are
// the later of the two readings.
func (z *tzCache) fromLocal(w int64) int64 {
	if z.loc == nil {
		return w
	}
	oB := z.offset(w - UsPerDay)
	oA := z.offset(w + UsPerDay)
	if oB == oA {
		o := z.offset(w - oB)
		if o == oB {
			return w - oB
		}
		// a transition and back within two days: take the reading that holds
		if z.offset(w-o) == o {
			return w - o
		}
		return w - oB
	}
	tB, tA := w-oB, w-oA
	okB, okA := z.offset(tB) == oB, z.offset(tA) == oA
	switch {
	case okA && !okB:
		return tA
	case okB && !okA:
		return tB
	}
	return max(tB, tA) // gap or overlap
}

// TimestampToLocal is the wall clock in loc (nil: UTC) at instant us.
func TimestampToLocal(us int64, loc *time.Location) int64 {
	z := newTZCache(loc)
	return z.toLocal(us)
}

// TimestampFromLocal is the instant whose wall clock in loc reads w.
func TimestampFromLocal(w int64, loc *time.Location) int64 {
	z := newTZCache(loc)
	return z.fromLocal(w)
}

// ZoneOffset is loc's offset east of UTC in seconds at instant us.
func ZoneOffset(us int64, loc *time.Location) int64 {
	z := newTZCache(loc)
	return z.offset(us) / UsPerSecond
}

// AppendOffset prints an offset east of UTC in seconds as PostgreSQL does:
// +05, -04, +05:30, -04:56:02; minutes always when long is true.
func AppendOffset(dst []byte, off int64, long bool) []byte {
	if off < 0 {
		dst = append(dst, '-')
		off = -off
	} else {
		dst = append(dst, '+')
	}
	h, m, s := off/3600, off/60%60, off%60
	dst = append(dst, byte('0'+h/10), byte('0'+h%10))
	if m != 0 || s != 0 || long {
		dst = append(dst, ':', byte('0'+m/10), byte('0'+m%10))
	}
	if s != 0 {
		dst = append(dst, ':', byte('0'+s/10), byte('0'+s%10))
	}
	return dst
}

// appendTimestampTZ prints the instant us in z's zone with its offset.
func (z *tzCache) appendTimestampTZ(dst []byte, us int64) []byte {
	off := z.offset(us)
	dst = civil.AppendTimestamp(dst, us+off, false)
	return AppendOffset(dst, off/UsPerSecond, false)
}

// FormatTimestampTZ prints the instant us as PostgreSQL does in zone loc
// (nil: UTC): 2024-07-01 08:00:00-04.
func FormatTimestampTZ(us int64, loc *time.Location) string {
	z := newTZCache(loc)
	return string(z.appendTimestampTZ(nil, us))
}

// AppendTimestampTZ is FormatTimestampTZ appending to dst.
func AppendTimestampTZ(dst []byte, us int64, loc *time.Location) []byte {
	z := newTZCache(loc)
	return z.appendTimestampTZ(dst, us)
}

// parseTimestampTZ reads a TIMESTAMPTZ's text: an explicit offset or zone
// name wins, else the wall clock is read in z's zone.
func (z *tzCache) parseTimestampTZ(b []byte) (us int64, ok, inRange bool) {
	w, off, has, zname, ok, inRange := civil.ParseTimestampZone(b)
	if !ok {
		return 0, false, false
	}
	switch {
	case has:
		us = w - off*UsPerSecond
	case zname != "":
		loc, err := LoadZone(zname)
		if err != nil {
			return 0, false, false
		}
		zz := newTZCache(loc)
		us = zz.fromLocal(w)
	default:
		us = z.fromLocal(w)
	}
	if !inRange {
		return us, true, false
	}
	return us, true, us >= MinTimestamp && us <= MaxTimestamp
}

// ParseTimestampTZ reads a TIMESTAMPTZ's text with the session zone loc
// for a wall clock without an offset. Errors are KindQuery.
func ParseTimestampTZ(s string, loc *time.Location) (int64, error) {
	z := newTZCache(loc)
	us, ok, inRange := z.parseTimestampTZ([]byte(s))
	if !ok {
		return 0, nferr.Queryf("invalid input syntax for type timestamp with time zone: %q", s)
	}
	if !inRange {
		return 0, nferr.Queryf("timestamp out of range: %q (years 0001 to 9999)", s)
	}
	return us, nil
}

// TimestampTZParser returns a reader of TIMESTAMPTZ text in zone loc (a
// wall clock without an offset is loc's) that keeps its zone lookups
// between calls: for loaders parsing many values (storage's CopyOptions).
func TimestampTZParser(loc *time.Location) func(b []byte) (us int64, ok, inRange bool) {
	z := newTZCache(loc)
	return z.parseTimestampTZ
}

// TimestampTZAddInterval is timestamptz + sign*iv in zone loc, as
// PostgreSQL adds: months and days to the wall clock (the offset read
// again after), the time as elapsed microseconds.
func TimestampTZAddInterval(us int64, iv [3]int64, sign int64, z *tzCache) (int64, bool) {
	if us < MinTimestamp || us > MaxTimestamp {
		return 0, false
	}
	if iv[0] != 0 || iv[1] != 0 {
		w := z.toLocal(us)
		if iv[0] != 0 {
			days, tod := SplitTimestamp(w)
			w = addMonths(int32(days), sign*iv[0])*UsPerDay + tod
		}
		w += sign * iv[1] * UsPerDay
		if w < MinTimestamp-UsPerDay || w > MaxTimestamp+UsPerDay {
			return 0, false
		}
		us = z.fromLocal(w)
	}
	us += sign * iv[2] / 1000
	return us, us >= MinTimestamp && us <= MaxTimestamp
}

// TimestampTZAddIntervalIn is TimestampTZAddInterval in zone loc.
func TimestampTZAddIntervalIn(us int64, months, days, nanos, sign int64, loc *time.Location) (int64, bool) {
	z := newTZCache(loc)
	return TimestampTZAddInterval(us, [3]int64{months, days, nanos}, sign, &z)
}

// AtTimeZone is ts AT TIME ZONE loc: a TIMESTAMP (zone false) read as a
// wall clock in loc gives the instant; a TIMESTAMPTZ gives the wall clock
// in loc.
func AtTimeZone(us int64, zone bool, loc *time.Location) int64 {
	z := newTZCache(loc)
	if zone {
		return z.toLocal(us)
	}
	return z.fromLocal(us)
}

// compileTimezone builds timezone(zone, ts), PostgreSQL's ts AT TIME ZONE
// zone: TIMESTAMP -> TIMESTAMPTZ (ts read in zone), TIMESTAMPTZ ->
// TIMESTAMP (the wall clock in zone). A constant zone is resolved once.
func (c *compiler) compileTimezone(args []node, desc string) (node, error) {
	zn, x := args[0], args[1]
	var err error
	if x.dt().ID() == arrow.DATE32 {
		if x, err = c.cast(x, TimestampTZArrow, desc); err != nil {
			return nil, err
		}
	}
	if zn.dt().ID() == arrow.NULL || x.dt().ID() == arrow.NULL {
		t := arrow.DataType(TimestampTZArrow)
		if HasZone(x.dt()) {
			t = TimestampArrow
		}
		return newNullConst(t), nil
	}
	if zn.dt().ID() != arrow.STRING || !IsTimestamp(x.dt()) {
		return nil, nferr.Queryf("function timezone(%s, %s) does not exist in %s", TypeName(zn.dt()), TypeName(x.dt()), desc)
	}
	zone := HasZone(x.dt())
	t := arrow.DataType(TimestampTZArrow)
	if zone {
		t = TimestampArrow
	}
	var fixed *tzCache
	if k, ok := zn.(*constNode); ok {
		loc, err := LoadZone(k.s)
		if err != nil {
			return nil, err
		}
		z := newTZCache(loc)
		fixed = &z
	}
	f := &funcNode{args: []node{zn, x}, t: t, desc: desc}
	f.run = func(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
		out.i64 = Grow(out.i64, n)
		a := in[1]
		var err error
		z := fixed
		each(sel, n, func(i int32) {
			if err != nil {
				return
			}
			if fixed == nil {
				loc, e := LoadZone(string(in[0].strAt(i)))
				if e != nil {
					err = nferr.Dataf("%s in %s", e.Error(), f.desc)
					return
				}
				zz := newTZCache(loc)
				z = &zz
			}
			var r int64
			if zone {
				r = z.toLocal(a.i64[i])
			} else {
				r = z.fromLocal(a.i64[i])
			}
			if r < MinTimestamp || r > MaxTimestamp {
				err = errAt("timestamp out of range", f.desc)
				return
			}
			out.i64[i] = r
		})
		return err
	}
	return f, nil
}
