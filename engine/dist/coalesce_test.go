package dist

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/nicflow/nicflow/engine/phys"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
)

// coalescePlan is a re-planned join of a held side (stage 1, whose
// histogram gives planned tasks 0..3 heldRows[t] rows) and a table of
// tableRows rows (stage 2, sent with probePerTask receivers per task),
// repartitioned into stage 3's 4 tasks of 2 streams; stage 4 gathers.
func coalescePlan(heldRows [4]int64, tableRows float64, probePerTask int) *DistPlan {
	cols := []phys.PhysColumn{{Name: "k", Type: expr.Type{ID: expr.TypeInt64}}}
	hist := make([]int64, phys.HistBuckets)
	for t, n := range heldRows {
		// Bucket i goes to planned task i*4/HistBuckets (multiply-shift).
		hist[t*phys.HistBuckets/4+7] = n
	}
	var parts []phys.HeldPart
	for i := range 4 {
		h := make([]int64, phys.HistBuckets)
		for b, n := range hist {
			h[b] = n / 4
		}
		parts = append(parts, phys.HeldPart{Node: i, Rows: heldRows[0]/4 + heldRows[1]/4 + heldRows[2]/4 + heldRows[3]/4, Hist: h})
	}
	held := &phys.PhysNode{ID: 1, Kind: phys.PhysRemote, Streams: 2, Columns: cols,
		Remote: &phys.RemoteOp{Kind: exec.ExchangeHeld, Held: "q.w1/1", Parts: parts, HistKeys: []int{0}}}
	scan := &phys.PhysNode{ID: 2, Kind: phys.PhysScan, Streams: 2, Columns: cols, Scan: &phys.ScanOp{TableRows: tableRows}}
	r1 := &phys.PhysNode{ID: 3, Kind: phys.PhysRemote, Streams: 2, Columns: cols, Remote: &phys.RemoteOp{Exchange: 1, Stage: 1, Kind: exec.ExchangeHash, Keys: []int{0}}}
	r2 := &phys.PhysNode{ID: 4, Kind: phys.PhysRemote, Streams: probePerTask, Columns: cols, Remote: &phys.RemoteOp{Exchange: 2, Stage: 2, Kind: exec.ExchangeHash, Keys: []int{0}}}
	join := &phys.PhysNode{ID: 5, Kind: phys.PhysHashJoin, Streams: 2, Columns: append(slices.Clone(cols), cols...), Inputs: []*phys.PhysNode{r2, r1},
		Join: &exec.HashJoinSpec{Type: exec.JoinInner, Build: exec.SideRight, LeftKeys: []int{0}, RightKeys: []int{0}}}
	r3 := &phys.PhysNode{ID: 6, Kind: phys.PhysRemote, Streams: 1, Columns: join.Columns, Remote: &phys.RemoteOp{Exchange: 3, Stage: 3, Kind: exec.ExchangeGather}}
	return &DistPlan{Workers: 4, Parallelism: 2, Exchanges: 3, Stages: []*Stage{
		{ID: 1, Tasks: 4, Root: held, Out: &StageOut{Exchange: 1, Kind: exec.ExchangeHash, Keys: []int{0}, Consumer: 3, PerTask: 2}},
		{ID: 2, Tasks: 4, Root: scan, Out: &StageOut{Exchange: 2, Kind: exec.ExchangeHash, Keys: []int{0}, Consumer: 3, PerTask: probePerTask}},
		{ID: 3, Tasks: 4, Root: join, Out: &StageOut{Exchange: 3, Kind: exec.ExchangeGather, Consumer: 4, PerTask: 1}},
		{ID: 4, Tasks: 1, Root: r3},
	}}
}

// TestCoalesceGroups: adjacent planned tasks are grouped while a group's
// rows stay within the target (a task above it alone), from the held
// side's histogram and the other side's table rows spread evenly; both
// sides' senders route every hash to the same task, whatever their
// receivers per task; a stage a skew split applies to, one whose input is
// not bounded, or a negative target is left as planned.
func TestCoalesceGroups(t *testing.T) {
	const target = 1000
	for _, c := range []struct {
		held       [4]int64
		table      float64
		perTask    int
		want       []int // Stage.Coalesced; nil: not coalesced
		tasks      int
		rows       int64
		partitions int
	}{
		// 350, 350, 5250, 350 rows: tasks 0 and 1 together, the hot
		// task alone, the last alone (5250+350 is over the target).
		{[4]int64{100, 100, 5000, 100}, 1000, 2, []int{0, 0, 1, 2}, 3, 6300, 8},
		// 200 each: all in one task, whatever receivers per task a side
		// has.
		{[4]int64{100, 100, 100, 100}, 400, 1, []int{0, 0, 0, 0}, 1, 800, 8},
		// 500 each: pairs.
		{[4]int64{400, 400, 400, 400}, 400, 2, []int{0, 0, 1, 1}, 2, 2000, 8},
		// Every task over the target: nothing to do.
		{[4]int64{1000, 1000, 1000, 1000}, 400, 2, nil, 4, 0, 0},
		// A table of unknown size (no statistics): left as planned.
		{[4]int64{}, 0, 2, nil, 4, 0, 0},
	} {
		name := fmt.Sprintf("%v+%v", c.held, c.table)
		dp := coalescePlan(c.held, c.table, c.perTask)
		steps := coalesceStages(dp, DistOptions{CoalesceRows: target}, 1)
		st := dp.Stage(3)
		if !slices.Equal(st.Coalesced, c.want) || st.Tasks != c.tasks {
			t.Fatalf("%s: coalesced %v into %d tasks, want %v into %d", name, st.Coalesced, st.Tasks, c.want, c.tasks)
		}
		if c.want == nil {
			if len(steps) != 0 {
				t.Errorf("%s: steps %v for a stage left as planned", name, steps)
			}
			continue
		}
		if len(steps) != 1 || steps[0].Coalesce == nil || *steps[0].Coalesce != (CoalesceStep{Stage: 3, Rows: c.rows, Partitions: c.partitions, From: 4, To: c.tasks}) {
			t.Fatalf("%s: steps %v", name, steps)
		}
		want := fmt.Sprintf("wave 1: stage 3 inputs %d rows over %d partitions: coalesced 4 tasks -> %d", c.rows, c.partitions, c.tasks)
		if got := steps[0].String(); got != want {
			t.Errorf("%s: step %q, want %q", name, got, want)
		}
		// The target: a group's rows (the sizes the rule saw) stay within
		// it unless the group is one task.
		sizes, _ := coalesceInputs(coalescePlan(c.held, c.table, c.perTask), coalescePlan(c.held, c.table, c.perTask).Stage(3))
		sum, count := map[int]float64{}, map[int]int{}
		for task, g := range c.want {
			sum[g] += sizes[task]
			count[g]++
		}
		for g := range sum {
			if sum[g] > target && count[g] > 1 {
				t.Errorf("%s: group %d holds %.0f rows over %d tasks (target %d)", name, g, sum[g], count[g], target)
			}
		}
		// Both producers' fragments carry the consumer's mapping, and
		// route every hash to the same coalesced task.
		frags, err := dp.Fragments("q", 1, func(int, int) int { return 0 })
		if err != nil {
			t.Fatal(err)
		}
		if len(frags[3]) != c.tasks {
			t.Errorf("%s: %d fragments of the coalesced stage", name, len(frags[3]))
		}
		for _, id := range []int{1, 2} {
			f := frags[id][0]
			if !slices.Equal(f.OutGroups, c.want) {
				t.Errorf("%s: stage %d's fragment routes by %v", name, id, f.OutGroups)
			}
			if n := len(f.Channels[f.Out.Exchange].Receivers); n != c.tasks*f.Out.PerTask {
				t.Errorf("%s: stage %d's channel has %d receivers, want %d", name, id, n, c.tasks*f.Out.PerTask)
			}
		}
		heldRoute := coalesceRoute(frags[1][0].OutGroups, 2)
		scanRoute := coalesceRoute(frags[2][0].OutGroups, c.perTask)
		rng := rand.New(rand.NewPCG(1, uint64(c.perTask)))
		for range 10_000 {
			h := rng.Uint64()
			p1, _ := bits.Mul64(h, uint64(len(heldRoute)))
			p2, _ := bits.Mul64(h, uint64(len(scanRoute)))
			if a, b := heldRoute[p1]/2, scanRoute[p2]/c.perTask; a != b {
				t.Fatalf("%s: hash %x goes to task %d from the held side, %d from the table", name, h, a, b)
			}
			if want := c.want[p1/2]; heldRoute[p1]/2 != want {
				t.Fatalf("%s: partition %d goes to task %d, its group is %d", name, p1, heldRoute[p1]/2, want)
			}
		}
		// A shipped fragment whose mapping is not contiguous groups is bad
		// data.
		f := *frags[1][0]
		f.OutGroups = []int{0, 2, 2, 2}
		b, err := MarshalFragment(&f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := UnmarshalFragment(b); !nferr.Is(err, nferr.KindData) {
			t.Errorf("%s: fragment with groups %v: %v, want a data error", name, f.OutGroups, err)
		}
	}

	// A skew split of the join: its stage keeps its tasks.
	dp := coalescePlan([4]int64{100, 100, 100, 100}, 400, 2)
	split := []SplitTask{{Task: 2, Extra: []int{4}}}
	dp.Stage(1).Out.Splits, dp.Stage(2).Out.Splits, dp.Stage(2).Out.SplitCopy = split, split, true
	dp.Stage(3).Tasks = 5
	if steps := coalesceStages(dp, DistOptions{CoalesceRows: target}, 1); len(steps) != 0 || dp.Stage(3).Tasks != 5 || dp.Stage(3).Coalesced != nil {
		t.Errorf("a split stage was coalesced: %v", steps)
	}
	// A negative target: never.
	dp = coalescePlan([4]int64{100, 100, 100, 100}, 400, 2)
	if steps := coalesceStages(dp, DistOptions{CoalesceRows: -1}, 1); len(steps) != 0 || dp.Stage(3).Tasks != 4 {
		t.Errorf("coalesced with a negative target: %v", steps)
	}
	// A join stage that scans a table by row group keeps its tasks.
	dp = coalescePlan([4]int64{100, 100, 100, 100}, 400, 2)
	j := dp.Stage(3).Root
	j.Inputs[0] = &phys.PhysNode{ID: 9, Kind: phys.PhysScan, Streams: 2, Columns: j.Inputs[0].Columns, Scan: &phys.ScanOp{TableRows: 10}}
	if steps := coalesceStages(dp, DistOptions{CoalesceRows: target}, 1); len(steps) != 0 {
		t.Errorf("a stage scanning by task was coalesced: %v", steps)
	}
}

// TestMaxRows: the bounds coalescing trusts.
func TestMaxRows(t *testing.T) {
	cols := []phys.PhysColumn{{Name: "k", Type: expr.Type{ID: expr.TypeInt64}}}
	scan := func(rows float64, replicated bool) *phys.PhysNode {
		return &phys.PhysNode{Kind: phys.PhysScan, Streams: 1, Columns: cols, Scan: &phys.ScanOp{TableRows: rows, Replicated: replicated}}
	}
	join := func(typ exec.JoinType, l, r *phys.PhysNode) *phys.PhysNode {
		return &phys.PhysNode{Kind: phys.PhysHashJoin, Streams: 1, Columns: cols, Inputs: []*phys.PhysNode{l, r}, Join: &exec.HashJoinSpec{Type: typ, LeftKeys: []int{0}, RightKeys: []int{0}}}
	}
	one := func(kind phys.PhysKind, in *phys.PhysNode) *phys.PhysNode {
		return &phys.PhysNode{Kind: kind, Streams: 2, Columns: cols, Inputs: []*phys.PhysNode{in}}
	}
	held := &phys.PhysNode{Kind: phys.PhysRemote, Streams: 1, Columns: cols, Remote: &phys.RemoteOp{Kind: exec.ExchangeHeld, Held: "h", Parts: []phys.HeldPart{{Rows: 3}, {Rows: 4}}}}
	dp := &DistPlan{Stages: []*Stage{{ID: 1, Tasks: 2, Root: scan(50, false), Out: &StageOut{Exchange: 1, Kind: exec.ExchangeBroadcast, Consumer: 2, PerTask: 1}}}}
	bcast := &phys.PhysNode{Kind: phys.PhysRemote, Streams: 1, Columns: cols, Remote: &phys.RemoteOp{Exchange: 1, Stage: 1, Kind: exec.ExchangeBroadcast}}
	union := &phys.PhysNode{Kind: phys.PhysUnion, Streams: 2, Columns: cols, Inputs: []*phys.PhysNode{scan(10, false), held}}
	for _, c := range []struct {
		name  string
		n     *phys.PhysNode
		bound float64
		known bool
	}{
		{"held", held, 7, true},
		{"scan", scan(100, false), 100, true},
		{"replicated scan, 4 tasks", scan(100, true), 400, true},
		{"no statistics", scan(0, false), 0, false},
		{"filter", one(phys.PhysFilter, scan(100, false)), 100, true},
		{"grouped aggregate", &phys.PhysNode{Kind: phys.PhysHashAgg, Streams: 2, Columns: cols, Inputs: []*phys.PhysNode{held}, Agg: &exec.HashAggSpec{GroupCols: []int{0}}}, 7, true},
		{"global aggregate: a row per stream of each task", &phys.PhysNode{Kind: phys.PhysHashAgg, Streams: 2, Columns: cols, Inputs: []*phys.PhysNode{held}, Agg: &exec.HashAggSpec{}}, 7 + 2*4, true},
		{"semi join: the left rows", join(exec.JoinSemi, held, scan(0, false)), 7, true},
		{"inner join: every pair", join(exec.JoinInner, held, scan(10, false)), 7*10 + 7 + 10, true},
		{"full join of an unknown side", join(exec.JoinFull, held, scan(0, false)), 0, false},
		{"broadcast: every task all of it", bcast, 50 * 4, true},
		{"union", union, 17, true},
		{"series", &phys.PhysNode{Kind: phys.PhysSeries, Streams: 1, Columns: cols}, 0, false},
	} {
		b, ok := dp.maxRows(c.n, 4)
		if ok != c.known || (ok && b != c.bound) {
			t.Errorf("%s: bound %v (known %v), want %v (%v)", c.name, b, ok, c.bound, c.known)
		}
	}
}
