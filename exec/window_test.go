package exec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

// refWindow evaluates window functions row by row over frames.
func refWindow(rows [][]any, spec WindowSpec) ([][]any, error) {
	var keys []SortKey
	for _, p := range spec.PartitionBy {
		keys = append(keys, SortKey{Col: p})
	}
	keys = append(keys, spec.OrderBy...)
	sorted := refSort(rows, keys)
	samePart := func(a, b []any) bool {
		for _, p := range spec.PartitionBy {
			if !(a[p] == nil && b[p] == nil) && (a[p] == nil || b[p] == nil || CompareValues(a[p], b[p]) != 0) {
				return false
			}
		}
		return true
	}
	var out [][]any
	for start := 0; start < len(sorted); {
		end := start + 1
		for end < len(sorted) && samePart(sorted[start], sorted[end]) {
			end++
		}
		part := sorted[start:end]
		n := len(part)
		peer := func(i, j int) bool { return refSortCmp(part[i], part[j], spec.OrderBy) == 0 }
		for i := range part {
			row := append([]any(nil), part[i]...)
			firstPeer, lastPeer := i, i
			for firstPeer > 0 && peer(firstPeer-1, i) {
				firstPeer--
			}
			for lastPeer < n-1 && peer(lastPeer+1, i) {
				lastPeer++
			}
			for _, f := range spec.Funcs {
				switch f.Func {
				case WinRowNumber:
					row = append(row, int64(i+1))
					continue
				case WinRank:
					row = append(row, int64(firstPeer+1))
					continue
				case WinDenseRank:
					d := int64(1)
					for k := 1; k <= i; k++ {
						if !peer(k-1, k) {
							d++
						}
					}
					row = append(row, d)
					continue
				case WinNtile:
					per, extra := int64(n)/f.N, int64(n)%f.N
					b, k := int64(1), int64(0) // walk the buckets: bucket b holds per (+1) rows
					for r := int64(0); r < int64(i); r++ {
						k++
						size := per
						if b <= extra {
							size++
						}
						if k == size {
							b, k = b+1, 0
						}
					}
					row = append(row, b)
					continue
				case WinPercentRank:
					pr := 0.0
					if n > 1 {
						pr = float64(firstPeer) / float64(n-1)
					}
					row = append(row, pr)
					continue
				case WinCumeDist:
					row = append(row, float64(lastPeer+1)/float64(n))
					continue
				case WinLag, WinLead:
					j := i - int(f.N)
					if f.Func == WinLead {
						j = i + int(f.N)
					}
					if j >= 0 && j < n {
						row = append(row, part[j][f.Arg])
					} else {
						row = append(row, nil)
					}
					continue
				}
				fr := f.Frame
				if fr == nil {
					if len(spec.OrderBy) > 0 {
						fr = &WindowFrame{Mode: FrameRange, Start: FrameBound{Kind: UnboundedPreceding}, End: FrameBound{Kind: CurrentRow}}
					} else {
						fr = &WindowFrame{Mode: FrameRows, Start: FrameBound{Kind: UnboundedPreceding}, End: FrameBound{Kind: UnboundedFollowing}}
					}
				}
				s, e := 0, n-1 // inclusive
				if fr.Mode == FrameRange && (isOffset(fr.Start.Kind) || isOffset(fr.End.Kind)) {
					s, e = refRangeFrame(part, i, spec.OrderBy[0], *fr, firstPeer, lastPeer)
					var frame [][]any
					if s <= e {
						frame = part[s : e+1]
					}
					res, err := refFrameValue(f, frame)
					if err != nil {
						return nil, err
					}
					row = append(row, res)
					continue
				}
				switch fr.Start.Kind {
				case Preceding:
					s = i - int(fr.Start.Offset)
				case Following:
					s = i + int(fr.Start.Offset)
				case CurrentRow:
					s = i
					if fr.Mode == FrameRange {
						s = firstPeer
					}
				}
				switch fr.End.Kind {
				case Preceding:
					e = i - int(fr.End.Offset)
				case Following:
					e = i + int(fr.End.Offset)
				case CurrentRow:
					e = i
					if fr.Mode == FrameRange {
						e = lastPeer
					}
				}
				s, e = max(s, 0), min(e, n-1)
				var frame [][]any
				if s <= e {
					frame = part[s : e+1]
				}
				res, err := refFrameValue(f, frame)
				if err != nil {
					return nil, err
				}
				row = append(row, res)
			}
			out = append(out, row)
		}
		start = end
	}
	return out, nil
}

// refKey reads an ORDER BY value as a float (nil: NULL).
func refKey(v any) (float64, bool) {
	switch x := v.(type) {
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case arrow.Date32:
		return float64(x), true
	}
	return 0, false
}

// refRangeFrame is the inclusive frame of row i for a RANGE frame with
// offsets, by scanning every row's key.
func refRangeFrame(part [][]any, i int, key SortKey, fr WindowFrame, firstPeer, lastPeer int) (int, int) {
	ki, ok := refKey(part[i][key.Col])
	if !ok {
		s, e := firstPeer, lastPeer
		if fr.Start.Kind == UnboundedPreceding {
			s = 0
		}
		if fr.End.Kind == UnboundedFollowing {
			e = len(part) - 1
		}
		return s, e
	}
	dir := 1.0
	if key.Desc {
		dir = -1
	}
	off := func(b FrameBound) float64 { return float64(b.Offset) + b.OffsetF }
	// dist is how far row j's key lies after the current row's (ok false
	// for a NULL key, which no value bound reaches).
	dist := func(j int) (float64, bool) {
		kj, ok := refKey(part[j][key.Col])
		return (kj - ki) * dir, ok
	}
	// A NULL key lies after every value when NULLs sort last, before
	// them when first (PostgreSQL's rule for RANGE offsets).
	nullsAfter := !key.nullsFirst()
	afterStart := func(j int) bool {
		d, ok := dist(j)
		switch fr.Start.Kind {
		case UnboundedPreceding:
			return true
		case Preceding:
			return !ok && nullsAfter || ok && d >= -off(fr.Start)
		case Following:
			return !ok && nullsAfter || ok && d >= off(fr.Start)
		case CurrentRow:
			return j >= firstPeer
		}
		return false
	}
	beforeEnd := func(j int) bool {
		d, ok := dist(j)
		switch fr.End.Kind {
		case UnboundedFollowing:
			return true
		case Preceding:
			return !ok && !nullsAfter || ok && d <= -off(fr.End)
		case Following:
			return !ok && !nullsAfter || ok && d <= off(fr.End)
		case CurrentRow:
			return j <= lastPeer
		}
		return false
	}
	s := len(part)
	for j := range part {
		if afterStart(j) {
			s = j
			break
		}
	}
	e := -1
	for j := len(part) - 1; j >= 0; j-- {
		if beforeEnd(j) {
			e = j
			break
		}
	}
	if s > e {
		return 0, -1
	}
	return s, e
}

// refFrameValue is function f over the rows of a frame (aggregates and
// value functions).
func refFrameValue(f WindowFuncSpec, frame [][]any) (any, error) {
	switch f.Func {
	case WinFirstValue, WinLastValue, WinNthValue:
		j := 0
		switch f.Func {
		case WinLastValue:
			j = len(frame) - 1
		case WinNthValue:
			j = int(f.N) - 1
		}
		if j >= 0 && j < len(frame) {
			return frame[j][f.Arg], nil
		}
		return nil, nil
	}
	res, err := refHashAgg(nil, frame, HashAggSpec{Aggs: []AggSpec{{Func: AggFunc(f.Func), Arg: f.Arg}}})
	if err != nil {
		return nil, err
	}
	return res[0][0], nil
}

// TestWindowRangeOffsets: RANGE frames by value over integer, double and
// date keys, ascending and descending, NULL keys among them.
func TestWindowRangeOffsets(t *testing.T) {
	rows := aggRows(43, 300, 40)
	fb := func(k BoundKind, off int64, offF float64) FrameBound {
		return FrameBound{Kind: k, Offset: off, OffsetF: offF}
	}
	for _, c := range []struct {
		key   SortKey
		frame WindowFrame
	}{
		{SortKey{Col: 1}, WindowFrame{Mode: FrameRange, Start: fb(Preceding, 3, 0), End: fb(Following, 2, 0)}},
		{SortKey{Col: 1, Desc: true}, WindowFrame{Mode: FrameRange, Start: fb(Preceding, 5, 0), End: fb(CurrentRow, 0, 0)}},
		{SortKey{Col: 2}, WindowFrame{Mode: FrameRange, Start: fb(UnboundedPreceding, 0, 0), End: fb(Preceding, 10, 0)}},
		{SortKey{Col: 5}, WindowFrame{Mode: FrameRange, Start: fb(Following, 1, 0), End: fb(Following, 30, 0)}},
		{SortKey{Col: 4}, WindowFrame{Mode: FrameRange, Start: fb(Preceding, 0, 2.5), End: fb(Following, 0, 0.5)}},
		{SortKey{Col: 1}, WindowFrame{Mode: FrameRange, Start: fb(CurrentRow, 0, 0), End: fb(Following, 4, 0)}},
		{SortKey{Col: 2, Desc: true}, WindowFrame{Mode: FrameRange, Start: fb(Preceding, 20, 0), End: fb(Preceding, 5, 0)}},
		{SortKey{Col: 1}, WindowFrame{Mode: FrameRange, Start: fb(Following, 2, 0), End: fb(UnboundedFollowing, 0, 0)}},
	} {
		fr := c.frame
		funcs := []WindowFuncSpec{{Func: WinCountStar, Frame: &fr}, {Func: WinSum, Arg: 2, Frame: &fr}, {Func: WinMax, Arg: 3, Frame: &fr}, {Func: WinFirstValue, Arg: 0, Frame: &fr}}
		for _, part := range [][]int{nil, {6}} {
			spec := WindowSpec{PartitionBy: part, OrderBy: []SortKey{c.key}, Funcs: funcs}
			name := fmt.Sprintf("window/range/key%d/desc=%v/part=%v/%v..%v", c.key.Col, c.key.Desc, part, fr.Start, fr.End)
			t.Run(name, func(t *testing.T) {
				RunOpTest(t, OpTest{
					Name:       name,
					Inputs:     []HarnessInput{{Schema: aggTestSchema, Rows: rows}},
					Ordered:    true,
					BatchSizes: []int{1, 7, 1024},
					Build:      func(in []Operator) (Operator, error) { return NewWindow(in[0], spec) },
					Ref:        func(in [][][]any) ([][]any, error) { return refWindow(in[0], spec) },
				})
			})
		}
	}
}

func TestWindowHarness(t *testing.T) {
	rows := aggRows(41, 150, 4)
	fb := func(k BoundKind, off int64) FrameBound { return FrameBound{Kind: k, Offset: off} }
	frames := []*WindowFrame{
		nil,
		{Mode: FrameRows, Start: fb(UnboundedPreceding, 0), End: fb(CurrentRow, 0)},
		{Mode: FrameRows, Start: fb(Preceding, 2), End: fb(Following, 1)},
		{Mode: FrameRows, Start: fb(CurrentRow, 0), End: fb(UnboundedFollowing, 0)},
		{Mode: FrameRows, Start: fb(Following, 1), End: fb(Following, 3)},
		{Mode: FrameRows, Start: fb(Preceding, 3), End: fb(Preceding, 1)},
		{Mode: FrameRows, Start: fb(Following, 2), End: fb(Preceding, 1)}, // empty
		{Mode: FrameRange, Start: fb(UnboundedPreceding, 0), End: fb(UnboundedFollowing, 0)},
		{Mode: FrameRange, Start: fb(CurrentRow, 0), End: fb(UnboundedFollowing, 0)},
	}
	aggFuncs := func(fr *WindowFrame) []WindowFuncSpec {
		return []WindowFuncSpec{
			{Func: WinCountStar, Frame: fr}, {Func: WinCount, Arg: 2, Frame: fr},
			{Func: WinSum, Arg: 1, Frame: fr}, {Func: WinSum, Arg: 3, Frame: fr}, {Func: WinSum, Arg: 4, Frame: fr},
			{Func: WinAvg, Arg: 3, Frame: fr}, {Func: WinAvg, Arg: 2, Frame: fr}, {Func: WinAvg, Arg: 4, Frame: fr},
			{Func: WinMin, Arg: 0, Frame: fr}, {Func: WinMax, Arg: 5, Frame: fr}, {Func: WinMin, Arg: 7, Frame: fr},
			{Func: WinMax, Arg: 4, Frame: fr}, {Func: WinSum, Arg: 7, Frame: fr},
			{Func: WinFirstValue, Arg: 2, Frame: fr}, {Func: WinLastValue, Arg: 3, Frame: fr}, {Func: WinNthValue, Arg: 0, N: 2, Frame: fr},
		}
	}
	ranks := []WindowFuncSpec{{Func: WinRowNumber}, {Func: WinRank}, {Func: WinDenseRank},
		{Func: WinNtile, N: 4}, {Func: WinNtile, N: 1000}, {Func: WinPercentRank}, {Func: WinCumeDist},
		{Func: WinLag, Arg: 2, N: 1}, {Func: WinLead, Arg: 4, N: 3}, {Func: WinLag, Arg: 7, N: -2}, {Func: WinLead, Arg: 0, N: 500}}
	for fi, fr := range frames {
		for _, shape := range []struct {
			part  []int
			order []SortKey
		}{
			{[]int{1}, []SortKey{{Col: 5}}},
			{nil, []SortKey{{Col: 6, Desc: true}, {Col: 0}}},
			{[]int{6, 1}, nil},
		} {
			if fr != nil && fr.Mode == FrameRange && shape.order == nil && fi%2 == 0 {
				continue
			}
			funcs := aggFuncs(fr)
			if fi == 0 {
				funcs = append(funcs, ranks...)
			}
			spec := WindowSpec{PartitionBy: shape.part, OrderBy: shape.order, Funcs: funcs}
			name := fmt.Sprintf("window/frame%d/part=%v/order=%s", fi, shape.part, keysName(shape.order))
			t.Run(name, func(t *testing.T) {
				RunOpTest(t, OpTest{
					Name:       name,
					Inputs:     []HarnessInput{{Schema: aggTestSchema, Rows: rows}},
					Ordered:    true,
					BatchSizes: []int{1, 7, 1024},
					Build:      func(in []Operator) (Operator, error) { return NewWindow(in[0], spec) },
					Ref:        func(in [][][]any) ([][]any, error) { return refWindow(in[0], spec) },
				})
			})
		}
	}
}

func TestWindowSpecErrors(t *testing.T) {
	src, _ := NewBatchSource(aggTestSchema)
	for _, spec := range []WindowSpec{
		{Funcs: []WindowFuncSpec{{Func: "ntile"}}},
		{Funcs: []WindowFuncSpec{{Func: WinSum, Arg: 0}}}, // sum of strings
		{Funcs: []WindowFuncSpec{{Func: WinSum, Arg: 1, Frame: &WindowFrame{Mode: FrameRange, Start: FrameBound{Kind: Preceding, Offset: 1}, End: FrameBound{Kind: CurrentRow}}}}},
		{Funcs: []WindowFuncSpec{{Func: WinSum, Arg: 1, Frame: &WindowFrame{Mode: FrameRows, Start: FrameBound{Kind: UnboundedFollowing}, End: FrameBound{Kind: CurrentRow}}}}},
		{Funcs: []WindowFuncSpec{{Func: WinSum, Arg: 1, Frame: &WindowFrame{Mode: FrameRows, Start: FrameBound{Kind: Preceding, Offset: -1}, End: FrameBound{Kind: CurrentRow}}}}},
		{PartitionBy: []int{99}, Funcs: []WindowFuncSpec{{Func: WinRank}}},
		{},
	} {
		if _, err := NewWindow(src, spec); !nferr.Is(err, nferr.KindQuery) {
			t.Errorf("%+v: got %v, want a query error", spec, err)
		}
	}
}

// TestStatefulMemoryLimits: every buffering operator fails cleanly with a
// KindResource error naming it when the budget is too small, and returns
// everything to the budget.
// TestWindowSpills forces the window's sort to spill, so that it works
// through the sorted runs a chunk of whole partitions at a time: many
// partitions of a few rows (most chunks cut within a batch), and a few
// partitions of hundreds of rows (a partition spans several batches).
func TestWindowSpills(t *testing.T) {
	fb := func(k BoundKind, off int64) FrameBound { return FrameBound{Kind: k, Offset: off} }
	sliding := &WindowFrame{Mode: FrameRows, Start: fb(Preceding, 2), End: fb(Following, 1)}
	funcs := []WindowFuncSpec{{Func: WinRowNumber}, {Func: WinRank}, {Func: WinDenseRank},
		{Func: WinSum, Arg: 3}, {Func: WinCount, Arg: 2, Frame: sliding}, {Func: WinMax, Arg: 0, Frame: sliding},
		{Func: WinLag, Arg: 3, N: 2}, {Func: WinNthValue, Arg: 2, N: 2, Frame: sliding}, {Func: WinCumeDist},
		{Func: WinAvg, Arg: 4, Frame: &WindowFrame{Mode: FrameRange, Start: fb(UnboundedPreceding, 0), End: fb(UnboundedFollowing, 0)}}}
	for _, tc := range []struct {
		name     string
		distinct int
		part     []int
		order    []SortKey
	}{
		{"small-partitions", 1500, []int{1}, []SortKey{{Col: 5}, {Col: 2}}},
		{"large-partitions", 6, []int{1, 6}, []SortKey{{Col: 2, Desc: true}}},
	} {
		rows := aggRows(61, 4000, tc.distinct)
		spec := WindowSpec{PartitionBy: tc.part, OrderBy: tc.order, Funcs: funcs}
		t.Run(tc.name, func(t *testing.T) {
			var spilled int
			RunOpTest(t, OpTest{
				Name:       "window/" + tc.name,
				Inputs:     []HarnessInput{{Schema: aggTestSchema, Rows: rows}},
				Ordered:    true,
				BatchSizes: []int{7, 1024},
				Budget:     160 << 10,
				Spill:      true,
				SpillRuns:  &spilled,
				Build:      func(in []Operator) (Operator, error) { return NewWindow(in[0], spec) },
				Ref:        func(in [][][]any) ([][]any, error) { return refWindow(in[0], spec) },
			})
			if spilled == 0 {
				t.Fatal("no run spilled")
			}
		})
	}
}

// TestWindowPartitionTooLarge: a partition that does not fit is a memory
// error naming the window, not a crash or a wrong answer; spill files go.
func TestWindowPartitionTooLarge(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := aggRows(71, 20000, 3)
	rec := MakeRecord(t, mem, aggTestSchema, rows)
	defer rec.Release()
	for _, part := range [][]int{nil, {6}} {
		src, _ := NewBatchSource(aggTestSchema, rec)
		op, err := NewWindow(src, WindowSpec{PartitionBy: part, OrderBy: []SortKey{{Col: 2}}, Funcs: []WindowFuncSpec{{Func: WinRank}}})
		if err != nil {
			t.Fatal(err)
		}
		root := t.TempDir()
		env := NewTestEnv(mem)
		env.Budget = NewBudget(64 << 10)
		env.Spill = NewSpill(root, "q", 0)
		_, err = CollectRows(env, op)
		if !nferr.Is(err, nferr.KindResource) || !strings.Contains(err.Error(), "window") {
			t.Fatalf("partition by %v: got %v, want a memory error naming the window", part, err)
		}
		if env.Budget.Used() != 0 {
			t.Fatalf("budget holds %d after Close", env.Budget.Used())
		}
		env.Spill.Close()
		if f := filesUnder(root); len(f) > 0 {
			t.Fatalf("files left: %v", f)
		}
	}
}

func TestStatefulMemoryLimits(t *testing.T) {
	checkNoGoroutineLeak(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := aggRows(51, 4000, 500)
	l, r := joinInputs(52, 300, 3000, 1000)
	for _, tc := range []struct {
		name string
		mk   func(a, b Operator) (Operator, error)
	}{
		{"window", func(a, b Operator) (Operator, error) {
			b.Close()
			return NewWindow(a, WindowSpec{OrderBy: []SortKey{{Col: 1}}, Funcs: []WindowFuncSpec{{Func: WinRank}}})
		}},
		{"nested loop join", func(a, b Operator) (Operator, error) {
			return NewNestedLoopJoin(a, b, NestedLoopJoinSpec{Type: JoinInner})
		}},
		{"ordered merge", func(a, b Operator) (Operator, error) {
			// The merge's inputs run behind one-input gathers, which
			// charge their queues first: either name is right.
			b.Close()
			return NewOrderedMerge([]Operator{a}, []SortKey{{Col: 1}})
		}},
		{"gather exchange", func(a, b Operator) (Operator, error) {
			b.Close()
			return NewGather([]Operator{a})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a, b Operator
			if tc.name == "nested loop join" {
				lrec := MakeRecord(t, mem, joinLeftSchema, l)
				rrec := MakeRecord(t, mem, joinRightSchema, r)
				a, _ = NewBatchSource(joinLeftSchema, lrec)
				b, _ = NewBatchSource(joinRightSchema, rrec)
				lrec.Release()
				rrec.Release()
			} else {
				rec := MakeRecord(t, mem, aggTestSchema, rows)
				a, _ = NewBatchSource(aggTestSchema, rec)
				b, _ = NewBatchSource(aggTestSchema, rec)
				rec.Release()
			}
			op, err := tc.mk(a, b)
			if err != nil {
				t.Fatal(err)
			}
			env := NewTestEnv(mem)
			env.Budget = NewBudget(16 << 10)
			_, err = CollectRows(env, op)
			if err == nil {
				t.Fatalf("%s: no error under a 16 KiB budget", tc.name)
			}
			named := strings.Contains(err.Error(), "memory limit exceeded in "+tc.name) ||
				(tc.name == "ordered merge" && strings.Contains(err.Error(), "memory limit exceeded in gather exchange"))
			if !nferr.Is(err, nferr.KindResource) || !named {
				t.Fatalf("got %v, want a KindResource error naming the %s", err, tc.name)
			}
			if env.Budget.Used() != 0 {
				t.Fatalf("budget holds %d after Close", env.Budget.Used())
			}
		})
	}
}
