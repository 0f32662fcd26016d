package storage

import (
	"fmt"
	"math/rand"
	"testing"
)

// A published filter never rejects a build key, rejects most other
// values, and its range check is exact.
func TestKeyFilterNoFalseNegatives(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{1, 7, 1000, 100_000} {
		b := NewKeyFilterBuilder(true)
		keys := map[int64]bool{}
		vals := make([]int64, n)
		for i := range vals {
			vals[i] = rng.Int63n(1<<40) - 1<<39
			keys[vals[i]] = true
		}
		// Two halves from two "goroutines", merged.
		b2 := NewKeyFilterBuilder(true)
		AddInts(b, vals[:n/2], nil)
		AddInts(b2, vals, []int32{int32(n - 1)})
		AddInts(b2, vals[n/2:], nil)
		b.Merge(b2)
		f := NewKeyFilter("t")
		f.Publish(b)
		st := f.active()
		if st == nil {
			t.Fatalf("n=%d: published filter not active", n)
		}
		for v := range keys {
			if !st.mayHoldInt(v) {
				t.Fatalf("n=%d: build key %d rejected", n, v)
			}
		}
		fp, tries := 0, 100_000
		lo, hi := st.lo, st.hi
		for i := 0; i < tries; i++ {
			v := lo + rng.Int63n(hi-lo+1)
			if !keys[v] && st.mayHoldInt(v) {
				fp++
			}
		}
		if rate := float64(fp) / float64(tries); rate > 0.03 {
			t.Errorf("n=%d: false positive rate %.3f inside the key range (want <= 0.03)", n, rate)
		}
		if st.mayHoldInt(lo-1) || st.mayHoldInt(hi+1) {
			t.Errorf("n=%d: values outside [min, max] pass", n)
		}
	}

	// Strings.
	b := NewKeyFilterBuilder(false)
	for i := 0; i < 5000; i++ {
		b.AddBytes(fmt.Appendf(nil, "key-%d", i*3))
	}
	f := NewKeyFilter("s")
	f.Publish(b)
	st := f.active()
	fp := 0
	for i := 0; i < 15000; i++ {
		v := fmt.Appendf(nil, "key-%d", i)
		switch {
		case i%3 == 0 && !st.mayHoldBytes(v):
			t.Fatalf("build key %s rejected", v)
		case i%3 != 0 && st.mayHoldBytes(v):
			fp++
		}
	}
	if fp > 300 {
		t.Errorf("%d false positives of 10000 strings", fp)
	}
}

func TestKeyFilterStates(t *testing.T) {
	var unset *KeyFilter
	if unset.active() != nil {
		t.Error("a nil filter is active")
	}
	f := NewKeyFilter("t")
	if f.active() != nil {
		t.Error("an unpublished filter is active")
	}
	f.Disable()
	if f.active() != nil || !f.Stats().Disabled {
		t.Error("a disabled filter is active")
	}
	// Too many keys: the builder drops and the filter is disabled.
	b := NewKeyFilterBuilder(true)
	big := make([]int64, MaxKeyFilterKeys/2+1)
	AddInts(b, big, nil)
	AddInts(b, big, nil)
	if !b.Dropped || b.Bytes() != 0 {
		t.Fatalf("builder over MaxKeyFilterKeys: dropped %v, holds %d bytes", b.Dropped, b.Bytes())
	}
	f = NewKeyFilter("t")
	f.Publish(b)
	if f.active() != nil {
		t.Error("a dropped builder published an active filter")
	}
	// No keys: nothing passes.
	f = NewKeyFilter("t")
	f.Publish(NewKeyFilterBuilder(true))
	if st := f.active(); st == nil || !st.empty || st.mayOverlap(0, 100) {
		t.Error("an empty build does not reject everything")
	}
	// A filter that passes nearly everything turns off after its
	// probation, and not before.
	f = NewKeyFilter("t")
	b = NewKeyFilterBuilder(true)
	AddInts(b, []int64{1, 2, 3}, nil)
	f.Publish(b)
	f.count(keyFilterProbation/2, keyFilterProbation/2)
	if f.off.Load() {
		t.Fatal("off before its probation")
	}
	f.count(keyFilterProbation, keyFilterProbation-10)
	if !f.off.Load() || f.active() != nil {
		t.Fatal("a filter passing 99.99% is still on")
	}
	// One that filters stays on.
	f = NewKeyFilter("t")
	f.Publish(b)
	f.count(4*keyFilterProbation, keyFilterProbation)
	if f.off.Load() {
		t.Fatal("a filter passing 25% turned off")
	}
}

// Scans apply published filters to plain, dictionary, nullable, string,
// date and decimal columns, with and without a pushed-down predicate, and
// skip the row groups whose statistics miss the build keys.
func TestScanKeyFilters(t *testing.T) {
	db := openTestDB(t, WriteOptions{RowGroupRows: 1000, FileRows: 4000})
	sch := testSchema()
	mustCreate(t, db, "t", sch)
	rng := rand.New(rand.NewSource(7))
	all := randomRows(rng, 0, 10_000, 0.1)
	if err := commitRows(db, "t", AppendOptions{}, sch, all); err != nil {
		t.Fatal(err)
	}
	cols := []string{"id", "i32", "price", "s", "d"}
	colIdx := map[string]int{"id": 0, "i32": 1, "price": 2, "s": 3, "d": 4}

	type tc struct {
		name   string
		col    string
		keys   []any
		filter *Predicate
		pruned int64 // row groups skipped by the filter's range, -1: any
	}
	cases := []tc{
		{name: "clustered int64 skips row groups", col: "id", keys: []any{int64(1500), int64(1501), int64(1700)}, pruned: 9},
		{name: "nullable int32", col: "i32", keys: []any{int32(-3), int32(7), int32(99)}, pruned: -1},
		{name: "decimal64", col: "price", keys: []any{int64(100), int64(-4999), int64(7)}, pruned: -1},
		{name: "dictionary strings", col: "s", keys: []any{"ab", "PROMO", "", "absent"}, pruned: -1},
		{name: "date32", col: "d", keys: []any{int32(8000), int32(9001)}, pruned: -1},
		{name: "with a predicate", col: "id", keys: []any{int64(10), int64(20), int64(6000)}, filter: Cmp("id", OpLt, Int(5000)), pruned: -1},
		{name: "no build key", col: "i32", keys: nil, pruned: 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ints := c.col != "s"
			b := NewKeyFilterBuilder(ints)
			want := map[any]bool{}
			for _, k := range c.keys {
				want[k] = true
				switch v := k.(type) {
				case int64:
					AddInts(b, []int64{v}, nil)
				case int32:
					AddInts(b, []int32{v}, nil)
				case string:
					b.AddBytes([]byte(v))
				}
			}
			f := NewKeyFilter(c.col)
			f.Publish(b)
			st := f.active()
			got, stats := scanAll(t, db, ScanSpec{Table: "t", Columns: cols, Filter: c.filter, BatchSize: 700},
				ScanOptions{KeyFilters: []ScanKeyFilter{{Column: c.col, Filter: f}}})
			mayHold := func(v any) bool {
				switch x := v.(type) {
				case int64:
					return st.mayHoldInt(x)
				case int32:
					return st.mayHoldInt(int64(x))
				case string:
					return st.mayHoldBytes([]byte(x))
				}
				return false
			}
			passes := func(r row) bool {
				return c.filter == nil || r[0].(int64) < 5000
			}
			seen := map[int64]bool{}
			for _, r := range got {
				v := r[colIdx[c.col]]
				if v == nil {
					t.Fatalf("row %v with a NULL key passed", r)
				}
				if !want[v] && (st.empty || !mayHold(v)) {
					t.Fatalf("row %v passed, its key is not in the filter", r)
				}
				seen[r[0].(int64)] = true
			}
			for _, r := range all {
				v := r[sch.FieldIndices(c.col)[0]]
				if v != nil && want[v] && passes(r) && !seen[r[0].(int64)] {
					t.Fatalf("row %v with a build key was dropped", r)
				}
			}
			if c.pruned >= 0 && stats.RowGroupsPruned != c.pruned {
				t.Errorf("%d row groups skipped, want %d", stats.RowGroupsPruned, c.pruned)
			}
			if ks := f.Stats(); c.pruned < 10 && ks.Tested == 0 {
				t.Errorf("the filter tested no row: %+v", ks)
			}
		})
	}

	// Unpublished and disabled filters pass every row.
	for _, f := range []*KeyFilter{NewKeyFilter("unpublished"), func() *KeyFilter { f := NewKeyFilter("off"); f.Disable(); return f }()} {
		got, _ := scanAll(t, db, ScanSpec{Table: "t", Columns: []string{"id"}}, ScanOptions{KeyFilters: []ScanKeyFilter{{Column: "i32", Filter: f}}})
		if len(got) != len(all) {
			t.Errorf("%s filter: %d rows, want all %d", f.Name, len(got), len(all))
		}
	}
	// A filter on a column that is not projected still applies.
	b := NewKeyFilterBuilder(true)
	AddInts(b, []int64{42}, nil)
	f := NewKeyFilter("id")
	f.Publish(b)
	got, _ := scanAll(t, db, ScanSpec{Table: "t", Columns: []string{"s"}}, ScanOptions{KeyFilters: []ScanKeyFilter{{Column: "id", Filter: f}}})
	if len(got) != 1 {
		t.Errorf("filter on an unprojected column: %d rows, want 1", len(got))
	}
	if _, err := db.NewScanner(ScanSpec{Table: "t", Columns: []string{"id"}}, ScanOptions{KeyFilters: []ScanKeyFilter{{Column: "nope", Filter: f}}}); err == nil {
		t.Error("a key filter on an unknown column was accepted")
	}
}

// TestKeyFilterParts: the parts of a filter built by several tasks (each
// the keys of its partition, at the planned size or larger) merge into a
// filter passing every key of every part; parts survive marshaling, and
// malformed bytes are refused.
func TestKeyFilterParts(t *testing.T) {
	rng := randSource(9)
	const tasks = 5
	var parts []KeyFilterPart
	var keys []int64
	for task := 0; task < tasks; task++ {
		b := NewKeyFilterBuilder(true)
		var vals []int64
		for i := 0; i < 200+rng.Intn(2000); i++ {
			vals = append(vals, rng.Int63n(1<<40)-1<<39)
		}
		AddInts(b, vals, nil)
		keys = append(keys, vals...)
		f := NewKeyFilter("part")
		words := KeyFilterWords(3000)
		if task == 2 {
			words *= 4 // a part built larger is folded down
		}
		f.SetWords(words)
		notified := false
		f.Notify(func(*KeyFilter) { notified = true })
		f.Publish(b)
		if !notified {
			t.Fatal("publishing did not notify")
		}
		select {
		case <-f.Ready():
		default:
			t.Fatal("a published filter is not ready")
		}
		p, ok := f.Part()
		if !ok || len(p.Words) != words {
			t.Fatalf("part: %v, %d words", ok, len(p.Words))
		}
		bin, _ := p.MarshalBinary()
		back, err := UnmarshalKeyFilterPart(bin)
		if err != nil || back.Lo != p.Lo || back.Hi != p.Hi || back.Keys != p.Keys || len(back.Words) != len(p.Words) {
			t.Fatalf("round trip: %+v, %v", back, err)
		}
		parts = append(parts, back)
	}
	// An empty part (a task whose partition had no build row).
	parts = append(parts, KeyFilterPart{Empty: true, Ints: true})
	m := MergeKeyFilterParts(parts)
	if m.Disabled || m.Empty || len(m.Words) != KeyFilterWords(3000) {
		t.Fatalf("merged: disabled %v, empty %v, %d words", m.Disabled, m.Empty, len(m.Words))
	}
	f := NewKeyFilter("merged")
	f.PublishPart(m)
	s := f.active()
	for _, k := range keys {
		if !s.mayHoldInt(k) {
			t.Fatalf("the merged filter drops build key %d", k)
		}
	}
	fp := 0
	for i := 0; i < 10000; i++ {
		if s.mayHoldInt(rng.Int63n(1<<40) - 1<<39) {
			fp++
		}
	}
	t.Logf("%d keys in %d words: %.1f%% false positives", len(keys), len(m.Words), float64(fp)/100)
	if fp > 3000 {
		t.Errorf("%d of 10000 random keys pass", fp)
	}
	// A disabled part disables the merge; so do parts of two domains.
	if !MergeKeyFilterParts(append(parts, KeyFilterPart{Disabled: true})).Disabled {
		t.Error("a disabled part did not disable the merge")
	}
	if !MergeKeyFilterParts([]KeyFilterPart{{Empty: true, Ints: true}, {Empty: true}}).Disabled {
		t.Error("parts of two domains merged")
	}
	if all := MergeKeyFilterParts([]KeyFilterPart{{Empty: true, Ints: true}, {Empty: true, Ints: true}}); !all.Empty || all.Disabled {
		t.Errorf("empty parts: %+v", all)
	}
	for _, bad := range [][]byte{nil, {2, 0}, {1}, {1, 0, 0x80}, append([]byte{1, 0, 0, 0, 0}, make([]byte, 7)...), append([]byte{1, 0, 0, 0, 0}, make([]byte, 8*3)...)} {
		if _, err := UnmarshalKeyFilterPart(bad); err == nil {
			t.Errorf("malformed part %v accepted", bad)
		}
	}
	// A malformed part published disables the filter: it passes all.
	g := NewKeyFilter("bad")
	g.PublishPart(KeyFilterPart{Ints: true, Words: make([]uint64, 3)})
	if g.active() != nil {
		t.Error("a malformed part was applied")
	}
}
