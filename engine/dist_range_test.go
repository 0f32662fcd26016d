package engine

import (
	"math"
	"testing"

	"github.com/nicflow/nicflow/storage"
)

// TestRangeSplit checks the value-range split of a clustered scan: every
// value (also outside the table's range) falls in exactly one part, each
// task reads exactly the row groups that may hold its values, and its
// filter carries the part's bounds.
func TestRangeSplit(t *testing.T) {
	// Row groups of keys [1,100], [100,250], [251,400], [401,1000]: the
	// second shares its first key with the first (dbgen's orders straddle
	// row groups).
	cc := ClusterCol{Out: 0, Name: "k", Lo: 1, Hi: 1000, Min: []int64{1, 100, 251, 401}, Max: []int64{100, 250, 400, 1000}}
	s := &ScanOp{Spec: storage.ScanSpec{Table: "t", Columns: []string{"k"}, Filter: storage.Cmp("k", storage.OpNe, storage.Int(7))}}
	for g := range cc.Min {
		s.Tasks = append(s.Tasks, storage.FileRange{Path: "f", RowGroups: []int{g}})
	}
	for _, parts := range []int{2, 3, 4, 7} {
		s.Range = &RangePart{Col: cc, Parts: parts}
		part := func(v int64) int {
			n := 0
			p := -1
			for i := 0; i < parts; i++ {
				lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
				if i > 0 {
					lo = s.Range.Bound(i)
				}
				if i < parts-1 {
					hi = s.Range.Bound(i + 1)
				}
				if v >= lo && (v < hi || i == parts-1) {
					n++
					p = i
				}
			}
			if n != 1 {
				t.Fatalf("%d parts: value %d is in %d parts", parts, v, n)
			}
			return p
		}
		for _, v := range []int64{math.MinInt64, -5, 0, 1, 2, 99, 100, 101, 250, 251, 500, 999, 1000, 1001, math.MaxInt64} {
			part(v)
		}
		for task := 0; task < parts; task++ {
			frs, spec, err := rangeTasks(s, task, parts)
			if err != nil {
				t.Fatal(err)
			}
			got := map[int]bool{}
			for _, fr := range frs {
				got[fr.RowGroups[0]] = true
			}
			for g := range cc.Min {
				need := false
				for v := cc.Min[g]; v <= cc.Max[g]; v++ {
					need = need || part(v) == task
				}
				if got[g] != need {
					t.Errorf("%d parts, task %d: reads row group %d: %v, want %v", parts, task, g, got[g], need)
				}
			}
			if spec.Filter == nil || spec.Filter.Op != storage.OpAnd || spec.Filter.Args[0] != s.Spec.Filter {
				t.Errorf("%d parts, task %d: filter %v does not keep the scan's own", parts, task, spec.Filter)
			}
		}
	}
	if _, _, err := rangeTasks(s, 0, 3); err == nil {
		t.Error("a split into 7 parts built for 3 tasks: no error")
	}
}
