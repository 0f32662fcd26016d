package engine

import (
	"fmt"
	"math"
	"testing"

	"github.com/nicflow/nicflow/engine/phys"

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
	cc := phys.ClusterCol{Out: 0, Name: "k", Lo: 1, Hi: 1000, Min: []int64{1, 100, 251, 401}, Max: []int64{100, 250, 400, 1000}}
	s := &phys.ScanOp{Spec: storage.ScanSpec{Table: "t", Columns: []string{"k"}, Filter: storage.Cmp("k", storage.OpNe, storage.Int(7))}}
	for g := range cc.Min {
		s.Tasks = append(s.Tasks, storage.FileRange{Path: "f", RowGroups: []int{g}})
	}
	for _, parts := range []int{2, 3, 4, 7} {
		s.Range = &phys.RangePart{Col: cc, Parts: parts}
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
			frs, spec, err := phys.RangeTasks(s, task, parts)
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
	if _, _, err := phys.RangeTasks(s, 0, 3); err == nil {
		t.Error("a split into 7 parts built for 3 tasks: no error")
	}
}

// TestRangeCuts checks the bounds of a range split: with at least two row
// groups per part they fall on row-group boundaries, balanced by rows, so
// every row group is read by exactly one task; with fewer they cut the
// value range in equal widths. A scan split at another scan's bounds (a
// join of tables with different key ranges) still puts every value in
// one part.
func TestRangeCuts(t *testing.T) {
	// Eight row groups of disjoint keys, listed out of order; 100 rows
	// each but the fourth (400).
	cc := phys.ClusterCol{Name: "k",
		Min:  []int64{701, 1, 101, 201, 301, 401, 501, 601},
		Max:  []int64{800, 100, 200, 300, 400, 500, 600, 700},
		Rows: []int64{100, 100, 100, 400, 100, 100, 100, 100}}
	cc.Lo, cc.Hi = 1, 800
	s := &phys.ScanOp{Spec: storage.ScanSpec{Table: "t", Columns: []string{"k"}}}
	for g := range cc.Min {
		s.Tasks = append(s.Tasks, storage.FileRange{Path: "f", RowGroups: []int{g}})
	}
	rp := phys.NewRangePart(cc, 4)
	// 1100 rows: parts near 275 rows, cut at row-group starts.
	if want := []int64{201, 301, 501}; fmt.Sprint(rp.Cuts) != fmt.Sprint(want) {
		t.Fatalf("cuts %v, want %v", rp.Cuts, want)
	}
	s.Range = rp
	reads := map[int]int{}
	for task := 0; task < 4; task++ {
		frs, _, err := phys.RangeTasks(s, task, 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, fr := range frs {
			reads[fr.RowGroups[0]]++
		}
	}
	for g := range cc.Min {
		if reads[g] != 1 {
			t.Errorf("row group %d read by %d tasks, want 1", g, reads[g])
		}
	}

	// Three row groups for two parts: still cut at a row-group start (no
	// row group read twice), the one nearest half the rows.
	few := phys.ClusterCol{Name: "k", Lo: 1, Hi: 800, Min: []int64{1, 301, 601}, Max: []int64{300, 600, 800}, Rows: []int64{1, 1, 1}}
	if got := phys.NewRangePart(few, 2); fmt.Sprint(got.Cuts) != "[301]" {
		t.Errorf("cuts %v, want [301]", got.Cuts)
	}
	// Fewer row groups than parts: equal widths of [1, 800].
	if got := phys.NewRangePart(few, 4); fmt.Sprint(got.Cuts) != "[201 401 601]" {
		t.Errorf("equal-width cuts %v, want [201 401 601]", got.Cuts)
	}

	// Another table with keys [150, 5000] split at cc's bounds.
	other := &phys.ScanOp{Spec: s.Spec, Range: &phys.RangePart{Col: phys.ClusterCol{Name: "k", Lo: 150, Hi: 5000,
		Min: []int64{150, 1000}, Max: []int64{999, 5000}, Rows: []int64{10, 10}}, Parts: 4, Cuts: rp.Cuts}}
	other.Tasks = s.Tasks[:2]
	if !other.Range.Same(rp) {
		t.Fatal("a split at the same cuts is not the same split")
	}
	got := map[int]int{}
	for task := 0; task < 4; task++ {
		frs, _, err := phys.RangeTasks(other, task, 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, fr := range frs {
			got[fr.RowGroups[0]] |= 1 << task
		}
	}
	// [150, 999] meets parts 0 (..200), 1, 2 and 3 (501..); [1000, 5000]
	// only part 3.
	if got[0] != 0b1111 || got[1] != 0b1000 {
		t.Errorf("row groups by task %b %b, want 1111 1000", got[0], got[1])
	}
}
