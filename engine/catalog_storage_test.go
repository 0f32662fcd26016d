package engine

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/storage"
)

// TestDistinctEstimate checks the table-wide distinct count made from
// per-row-group counts: a small domain every row group sees whole, row
// groups over slices of the range (data in key or date order), and a
// range bound when the counts say nothing.
func TestDistinctEstimate(t *testing.T) {
	const rows, groups = 1_000_000, 10
	cases := []struct {
		name   string
		cs     storage.ColumnStats
		lo, hi int64
		want   int64
	}{
		// Every row group holds all 2,000 dates: 2,000.
		{"domain seen whole", storage.ColumnStats{Distinct: 2000, GroupSpan: 2000}, 0, 1999, 2000},
		// Each row group holds a tenth of 2,000 dates (200 each): 2,000.
		{"slices of the range", storage.ColumnStats{Distinct: 200, GroupSpan: 200}, 0, 1999, 2000},
		// Slices with gaps: 100 values in each 400-wide slice of 4,000.
		{"sparse slices", storage.ColumnStats{Distinct: 100, GroupSpan: 400}, 0, 3999, 1000},
		// No span known: the old rule (a small domain is seen whole).
		{"no span", storage.ColumnStats{Distinct: 200}, 0, 1999, 200},
		// No count: the range.
		{"range only", storage.ColumnStats{}, 10, 59, 50},
	}
	for _, c := range cases {
		got := distinctEstimate(c.cs, arrow.PrimitiveTypes.Int64, rows, groups, c.lo, c.hi)
		if got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
}
