package civil

import "testing"

func TestParseInterval(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Interval
		bad  bool
	}{
		{in: "3 months 2 days", want: Interval{Months: 3, Days: 2}},
		{in: "1.5 days", want: Interval{Days: 1, Nanos: 12 * 3600e9}},
		{in: "1 year 2 mons 3 days 04:05:06.789", want: Interval{Months: 14, Days: 3, Nanos: 4*3600e9 + 5*60e9 + 6.789e9}},
		{in: "-01:30:00", want: Interval{Nanos: -90 * 60e9}},
		{in: "2 decades ago", want: Interval{Months: -240}},
		{in: "1 mon -12:00:00.000001", want: Interval{Months: 1, Nanos: -(12*3600e9 + 1000)}},
		{in: "1 week 3 ms 2 us", want: Interval{Days: 7, Nanos: 3e6 + 2e3}},
		{in: "", bad: true},
		{in: "3", bad: true},
		{in: "3 parsecs", bad: true},
		{in: "1e3 days", bad: true},
		{in: "99999999999 months", bad: true},
		{in: "25:61", bad: true},
	} {
		got, err := ParseInterval(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("%q: %+v, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v %v, want %+v", c.in, got, err, c.want)
		}
	}
	if s, ok := (Interval{Months: 1}).Scale(1.5); !ok || s != (Interval{Months: 1, Days: 15}) {
		t.Errorf("1 month * 1.5 = %+v", s)
	}
}
