package civil

import (
	"testing"
	"time"
)

func TestParseTimestamp(t *testing.T) {
	day := func(y int, m time.Month, d int) int64 {
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).UnixMicro()
	}
	for _, c := range []struct {
		in   string
		zone bool
		want int64
		ok   bool
	}{
		{"2020-01-02", false, day(2020, 1, 2), true},
		{" 2001-3-1 ", false, day(2001, 3, 1), true},
		{"2020-01-02 03:04", false, day(2020, 1, 2) + 3*UsPerHour + 4*UsPerMinute, true},
		{"2020-01-02T03:04:05.5", false, day(2020, 1, 2) + 3*UsPerHour + 4*UsPerMinute + 5_500_000, true},
		{"2020-01-02 03:04:05.1234565", false, day(2020, 1, 2) + 3*UsPerHour + 4*UsPerMinute + 5_123_457, true},
		{"2020-01-01 24:00:00", false, day(2020, 1, 2), true},
		{"2020-01-02 03:04:05+02", true, day(2020, 1, 2) + 1*UsPerHour + 4*UsPerMinute + 5*UsPerSecond, true},
		{"2020-01-02 03:04:05 -03:30", true, day(2020, 1, 2) + 6*UsPerHour + 34*UsPerMinute + 5*UsPerSecond, true},
		{"2020-01-02 03:04:05+0200", false, day(2020, 1, 2) + 3*UsPerHour + 4*UsPerMinute + 5*UsPerSecond, true},
		{"2020-01-02 03:04:05Z", true, day(2020, 1, 2) + 3*UsPerHour + 4*UsPerMinute + 5*UsPerSecond, true},
		{"1969-12-31 23:59:59.999999", false, -1, true},
		{"epoch", false, 0, true},
		{"2020-02-30", false, 0, false},
		{"2020-01-01 24:00:01", false, 0, false},
		{"2020-01-01 10:60", false, 0, false},
		{"2020-01-01 10:00:00.", false, 0, false},
		{"2020-01-01 10:00 Mars/Olympus", true, 0, false},
		{"2020-01-01 10:00+16", true, 0, false},
		{"10:00", false, 0, false},
		{"", false, 0, false},
	} {
		got, ok, inRange := ParseTimestamp([]byte(c.in), c.zone)
		if ok != c.ok || ok && (!inRange || got != c.want) {
			t.Errorf("ParseTimestamp(%q, %v) = %d, %v, %v; want %d, %v", c.in, c.zone, got, ok, inRange, c.want, c.ok)
		}
	}
	if _, ok, inRange := ParseTimestamp([]byte("10000-01-01"), false); !ok || inRange {
		t.Errorf("year 10000: ok %v, in range %v; want a range error", ok, inRange)
	}
}

func TestAppendTimestamp(t *testing.T) {
	for _, c := range []struct {
		us   int64
		zone bool
		want string
	}{
		{0, false, "1970-01-01 00:00:00"},
		{-1, false, "1969-12-31 23:59:59.999999"},
		{1577934245_500_000, true, "2020-01-02 03:04:05.5+00"},
		{MinTimestamp, false, "0001-01-01 00:00:00"},
		{MaxTimestamp, false, "9999-12-31 23:59:59.999999"},
	} {
		if got := string(AppendTimestamp(nil, c.us, c.zone)); got != c.want {
			t.Errorf("AppendTimestamp(%d) = %q, want %q", c.us, got, c.want)
		}
	}
}

// FuzzParseTimestamp: no input panics, and every value read prints as
// text that reads back as the same value.
func FuzzParseTimestamp(f *testing.F) {
	for _, s := range []string{"2020-01-02 03:04:05.5+02", "2001-3-1", "epoch", "1969-12-31T23:59:59.9999995Z", "0001-01-01", "9999-12-31 24:00"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, zone bool) {
		us, ok, inRange := ParseTimestamp([]byte(s), zone)
		if !ok || !inRange {
			return
		}
		text := AppendTimestamp(nil, us, false)
		back, ok, inRange := ParseTimestamp(text, false)
		if !ok || !inRange || back != us {
			t.Fatalf("%q read as %d, printed as %q, read back as %d (%v %v)", s, us, text, back, ok, inRange)
		}
	})
}
