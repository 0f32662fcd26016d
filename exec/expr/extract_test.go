package expr

import (
	"testing"
	"time"
)

// TestExtractValue checks every EXTRACT field against Go's time package
// for every day from 1800 to 2200.
func TestExtractValue(t *testing.T) {
	start := DaysFromCivil(1800, 1, 1)
	end := DaysFromCivil(2200, 12, 31)
	for d := start; d <= end; d++ {
		tm := time.Unix(d*86400, 0).UTC()
		_, week := tm.ISOWeek()
		isodow := int64(tm.Weekday())
		if isodow == 0 {
			isodow = 7
		}
		want := map[string]int64{
			"year":    int64(tm.Year()),
			"quarter": int64(tm.Month()-1)/3 + 1,
			"month":   int64(tm.Month()),
			"week":    int64(week),
			"day":     int64(tm.Day()),
			"dow":     int64(tm.Weekday()),
			"isodow":  isodow,
			"doy":     int64(tm.YearDay()),
			"epoch":   tm.Unix(),
		}
		for _, f := range ExtractFields {
			got, ok := ExtractValue(f, d)
			if !ok || got != want[f] {
				t.Fatalf("extract(%s from %s) = %d, %v; want %d", f, tm.Format("2006-01-02"), got, ok, want[f])
			}
		}
	}
	if len(ExtractFields) != len(extractFuncs) {
		t.Errorf("%d fields listed, %d defined", len(ExtractFields), len(extractFuncs))
	}
	if _, ok := ExtractValue("hour", 0); ok {
		t.Error("hour of a date")
	}
}
