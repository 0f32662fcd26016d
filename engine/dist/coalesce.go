package dist

import (
	"fmt"
	"slices"

	"github.com/nicflow/nicflow/engine/phys"
	"github.com/nicflow/nicflow/exec"
)

// Coalescing small partitions (issue 29, item 3; docs/decisions.md D53).
//
// A repartitioned stage runs one task per worker whatever its input: a
// join whose two sides proved to hold a few thousand rows still starts
// Workers tasks, each a task start and a round of exchange connections
// for a handful of rows. After the waves, the re-planned plan knows upper
// bounds of many stages' inputs: a held output's rows (and, by their key
// histogram, how they spread over the partitions), a table's row count
// (its scan, filtered or not, returns at most that), and what filters,
// projections, aggregates, joins (semi joins: their left rows; others: at
// most every pair, a loose bound that only small inputs keep small) and
// unions make of them.
// coalesceStages then runs such a stage as fewer tasks, as Spark's
// adaptive coalescePartitions does:
//
//   - the rows each planned task would receive are summed over every hash
//     input of the stage (a held input's histogram gives its share per
//     task; an input without one is spread evenly);
//   - adjacent planned tasks are grouped while the group's rows stay
//     within CoalesceRows (a task that alone exceeds it is a group of
//     its own); each group is one task, so there is always at least one;
//   - the mapping belongs to the consuming stage (Stage.Coalesced): every
//     hash exchange into it keeps the planned partitions and sends
//     partition p of planned task t to stream p%R of task Coalesced[t],
//     so both sides of a co-partitioned join, and a final aggregate over
//     a repartition, still see all of a key's rows in one task (and one
//     stream). A group is whole planned tasks, not single partitions: the
//     inputs of a stage are co-located by task (equal keys in one task
//     whatever an input's receivers per task, multiply-shift hashing).
//
// A stage is coalesced only when its task count is the partitioning's
// alone: it reads no held output (one task per part), no scan but
// replicated ones (a scan's row groups, or range parts, are dealt by task),
// no shared subplan, no generated series; and never when a skew split
// applies to it (its partitions are already spread over extra tasks).
// Broadcast inputs do not count (every task receives them whole, however
// many tasks there are).

// CoalesceStep is one stage Adapt ran as fewer tasks (AdaptStep).
type CoalesceStep struct {
	Stage int `json:"stage"`
	// Rows bounds the rows of the stage's hash inputs; Partitions is the
	// number of hash partitions they are sent to.
	Rows       int64 `json:"rows"`
	Partitions int   `json:"partitions"`
	// From and To are the planned and the coalesced task counts.
	From int `json:"from"`
	To   int `json:"to"`
}

func (c CoalesceStep) String() string {
	return fmt.Sprintf("stage %d inputs %d rows over %d partitions: coalesced %d tasks -> %d", c.Stage, c.Rows, c.Partitions, c.From, c.To)
}

// coalesceStages coalesces the stages of dp whose inputs are known to be
// small (see the file comment) and returns what it did, as steps of wave.
func coalesceStages(dp *DistPlan, o DistOptions, wave int) []AdaptStep {
	if o.CoalesceRows < 0 {
		return nil
	}
	var steps []AdaptStep
	for _, c := range dp.Stages {
		sizes, pt := coalesceInputs(dp, c)
		if sizes == nil {
			continue
		}
		groups, n := coalesceGroups(sizes, float64(o.CoalesceRows))
		if n >= c.Tasks {
			continue
		}
		var total float64
		for _, x := range sizes {
			total += x
		}
		steps = append(steps, AdaptStep{Wave: wave, Coalesce: &CoalesceStep{Stage: c.ID, Rows: int64(total), Partitions: c.Tasks * pt, From: c.Tasks, To: n}})
		c.Coalesced, c.Tasks = groups, n
	}
	return steps
}

// coalesceGroups groups adjacent tasks of sizes rows while a group's rows
// stay within target: each task's group, and the number of groups.
func coalesceGroups(sizes []float64, target float64) ([]int, int) {
	groups := make([]int, len(sizes))
	g, acc := 0, 0.0
	for t, n := range sizes {
		if t > 0 && acc > 0 && acc+n > target {
			g, acc = g+1, 0
		}
		groups[t] = g
		acc += n
	}
	return groups, g + 1
}

// coalesceInputs bounds the rows each of stage c's planned tasks receives
// from its hash inputs, and their largest receivers per task; nil when c
// may not be coalesced or an input's size is not known.
func coalesceInputs(dp *DistPlan, c *Stage) ([]float64, int) {
	if c.Tasks < 2 || len(c.Coalesced) > 0 || len(c.Shared) > 0 || (c.Out != nil && c.Out.Kind == exec.ExchangeHeld) {
		return nil, 0
	}
	ok := true
	var ins []*phys.PhysNode
	c.Root.Walk(func(n *phys.PhysNode) {
		switch n.Kind {
		case phys.PhysRemote:
			src := dp.Stage(n.Remote.Stage)
			switch {
			case isHeld(n) || src == nil || src.Out == nil || len(src.Out.Splits) > 0:
				ok = false
			case n.Remote.Kind == exec.ExchangeHash:
				ins = append(ins, n)
			case n.Remote.Kind != exec.ExchangeBroadcast:
				ok = false
			}
		case phys.PhysScan:
			if n.Scan == nil || !n.Scan.Replicated {
				ok = false
			}
		case phys.PhysSeries, phys.PhysSharedScan, phys.PhysWorkScan:
			ok = false
		}
	})
	if !ok || len(ins) == 0 {
		return nil, 0
	}
	sizes := make([]float64, c.Tasks)
	pt := 0
	for _, in := range ins {
		src := dp.Stage(in.Remote.Stage)
		pt = max(pt, src.Out.PerTask)
		if h := heldHist(src); h != nil {
			if rows := taskRows(h, c.Tasks, max(src.Out.PerTask, 1)); rows != nil {
				for t, x := range rows {
					sizes[t] += float64(x)
				}
				continue
			}
		}
		bound, known := dp.maxRows(src.Root, src.Tasks)
		if !known {
			return nil, 0
		}
		for t := range sizes {
			sizes[t] += bound / float64(c.Tasks)
		}
	}
	return sizes, pt
}

// heldHist is the held parts whose key histograms count what stage src
// sends: its root reads a held output (through filters and local
// exchanges, which keep its columns) with histograms by src's hash keys;
// nil otherwise.
func heldHist(src *Stage) []phys.HeldPart {
	n := src.Root
	for (n.Kind == phys.PhysFilter || n.Kind == phys.PhysExchange) && len(n.Inputs) == 1 {
		n = n.Inputs[0]
	}
	if !isHeld(n) || len(n.Remote.HistKeys) == 0 || !slices.Equal(n.Remote.HistKeys, src.Out.Keys) {
		return nil
	}
	return n.Remote.Parts
}

// maxRows bounds the rows n produces over all tasks of its stage (tasks
// of them); known false when nothing bounds them.
func (dp *DistPlan) maxRows(n *phys.PhysNode, tasks int) (bound float64, known bool) {
	in := func(i int) (float64, bool) {
		if i >= len(n.Inputs) {
			return 0, false
		}
		return dp.maxRows(n.Inputs[i], tasks)
	}
	switch n.Kind {
	case phys.PhysRemote:
		if isHeld(n) {
			var rows int64
			for _, p := range n.Remote.Parts {
				rows += p.Rows
			}
			return float64(rows), true
		}
		src := dp.Stage(n.Remote.Stage)
		if src == nil {
			return 0, false
		}
		b, ok := dp.maxRows(src.Root, src.Tasks)
		if n.Remote.Kind == exec.ExchangeBroadcast {
			b *= float64(tasks) // every task receives them all
		}
		return b, ok
	case phys.PhysScan:
		if n.Scan == nil || n.Scan.TableRows <= 0 {
			return 0, false
		}
		if n.Scan.Replicated {
			return n.Scan.TableRows * float64(tasks), true
		}
		return n.Scan.TableRows, true
	case phys.PhysValues:
		if n.Values == nil {
			return 0, false
		}
		return float64(len(n.Values.Rows) * tasks), true
	case phys.PhysFilter, phys.PhysProject, phys.PhysExchange, phys.PhysSort, phys.PhysTopN, phys.PhysLimit, phys.PhysDistinct, phys.PhysWindow,
		phys.PhysMaxOneRow, phys.PhysSingleCheck, phys.PhysRowID:
		return in(0)
	case phys.PhysHashAgg:
		b, ok := in(0)
		if ok && n.Agg != nil && len(n.Agg.GroupCols) == 0 {
			// A global aggregate returns a row per stream even of none.
			b += float64(max(n.Streams, 1) * tasks)
		}
		return b, ok && n.Agg != nil
	case phys.PhysHashJoin, phys.PhysNLJoin:
		var typ exec.JoinType
		switch {
		case n.Join != nil:
			typ = n.Join.Type
		case n.NLJoin != nil:
			typ = n.NLJoin.Type
		default:
			return 0, false
		}
		if typ == exec.JoinSemi || typ == exec.JoinAnti || typ == exec.JoinMark {
			return in(0) // the left rows, each at most once
		}
		// NB: every pair at most once (each task's pairs, summed over
		// the tasks, are at most the product of the totals), and an
		// outer join's unmatched rows once each.
		l, lok := in(0)
		r, rok := in(1)
		return l*r + l + r, lok && rok
	case phys.PhysUnion:
		var sum float64
		for i := range n.Inputs {
			b, ok := in(i)
			if !ok {
				return 0, false
			}
			sum += b
		}
		return sum, true
	}
	return 0, false
}
