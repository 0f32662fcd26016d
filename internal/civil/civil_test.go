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

func TestParseTime(t *testing.T) {
	us := func(h, m, s, f int64) int64 { return h*UsPerHour + m*UsPerMinute + s*UsPerSecond + f }
	good := map[string]int64{
		"12:34":                       us(12, 34, 0, 0),
		" 1:02:03 ":                   us(1, 2, 3, 0),
		"12:34:56.123456":             us(12, 34, 56, 123456),
		"12:34:56.1234565":            us(12, 34, 56, 123457),
		"23:59:59.9999995":            UsPerDay,
		"24:00:00":                    UsPerDay,
		"00:00":                       0,
		"allballs":                    0,
		"1:02:03 pm":                  us(13, 2, 3, 0),
		"12:00 AM":                    0,
		"12:30 pm":                    us(12, 30, 0, 0),
		"04:05:06+02":                 us(4, 5, 6, 0),
		"04:05:06 UTC":                us(4, 5, 6, 0),
		"04:05:06-08:00":              us(4, 5, 6, 0),
		"2001-02-03 04:05:06":         us(4, 5, 6, 0),
		"2001-02-03T04:05:06.5":       us(4, 5, 6, 500000),
		"2001-02-03 24:00:00":         UsPerDay,
		"2001-02-03":                  0,
		"12:00:60":                    us(12, 1, 0, 0),
		"2001-02-03 04:05:06.25+0130": us(4, 5, 6, 250000),
	}
	for in, want := range good {
		got, ok := ParseTime([]byte(in))
		if !ok || got != want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "12", "1234", "12:3", "25:00", "24:00:01", "12:60", "13:00 pm", "23:59:60.5",
		"12:00 xx", "2001-02-30 04:05", "abc", "12:34:56.", "-01:00", "12:34:56 America/New_York"} {
		if got, ok := ParseTime([]byte(in)); ok {
			t.Errorf("ParseTime(%q) = %d, want an error", in, got)
		}
	}
}
