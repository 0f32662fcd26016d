package dist

import (
	"fmt"
	"math"
	"slices"

	"github.com/nicflow/nicflow/engine/phys"
	"github.com/nicflow/nicflow/exec"
)

// Skew splits (issue 29, item 3; docs/decisions.md D53).
//
// A hash repartition sends every row of a key to one task, so a key that
// holds a large share of a join's rows makes one task do that share of the
// work (and hold it in one hash table) while the others wait. After a
// wave, a held join input knows its rows per hash bucket (the held stage
// counts them: phys.HeldPart.Hist), and so how many rows each task of the
// re-planned join will receive. splitSkew gives a task that receives more
// than SkewFactor times the median task's rows (and at least SkewRows) k-1
// extra tasks, k its rows over the average task's, at most Workers:
//
//   - the held side's rows of the task's partitions are spread over the k
//     tasks (each slice of a batch to the next one), so each holds about
//     1/k of them, a single hot key included;
//   - the other side's rows of those partitions are copied to all k.
//
// Each pair of matching rows then meets in exactly one task (the held row
// is in one), which is an inner join's answer. A split needs the join
// stage to compute nothing per partition above the join: only filters,
// projections, partial aggregates (their final phase is in a later stage),
// joins with broadcast or replicated inputs and local exchanges may sit
// above it, and no other input may be hash partitioned (a final aggregate
// or a co-partitioned join would see a key's rows in two tasks).

// splitSkew splits the skewed tasks of dp's joins over held inputs; it
// returns, by join ID, what it split (AdaptStep.Split).
func splitSkew(dp *DistPlan, o DistOptions) map[int]string {
	if o.SkewFactor < 0 {
		return nil
	}
	out := map[int]string{}
	for _, c := range dp.Stages {
		if c.Out == nil || c.Out.Kind == exec.ExchangeHeld || len(c.Shared) > 0 || c.Tasks < 2 {
			continue
		}
		j, heldIn := skewJoin(dp, c)
		if j == nil {
			continue
		}
		held, other := dp.Stage(j.Inputs[heldIn].Remote.Stage), dp.Stage(j.Inputs[1-heldIn].Remote.Stage)
		pt := held.Out.PerTask
		if pt < 1 || other.Out.PerTask != pt {
			continue
		}
		sizes := taskRows(held.Root.Remote.Parts, c.Tasks, pt)
		if sizes == nil {
			continue
		}
		var total int64
		for _, n := range sizes {
			total += n
		}
		sorted := slices.Clone(sizes)
		slices.Sort(sorted)
		median := float64(sorted[len(sorted)/2])
		avg := float64(total) / float64(len(sizes))
		ref := median
		if ref <= 0 {
			ref = avg
		}
		var splits []SplitTask
		next := c.Tasks
		desc := ""
		for t, n := range sizes {
			if float64(n) <= o.SkewFactor*ref || n < o.SkewRows {
				continue
			}
			k := min(int(math.Ceil(float64(n)/avg)), o.Workers)
			if k < 2 {
				continue
			}
			st := SplitTask{Task: t}
			for range k - 1 {
				st.Extra = append(st.Extra, next)
				next++
			}
			splits = append(splits, st)
			if desc != "" {
				desc += ", "
			}
			desc += fmt.Sprintf("task %d of %d had %d of %d held rows (median %.0f): split into %d", t, c.Tasks, n, total, median, k)
		}
		if len(splits) == 0 {
			continue
		}
		c.Tasks = next
		held.Out.Splits, held.Out.SplitCopy = splits, false
		other.Out.Splits, other.Out.SplitCopy = splits, true
		out[j.ID] = desc
	}
	return out
}

// taskRows is how many of the held parts' rows each of tasks consumer
// tasks of pt partitions each receives (nil without histograms).
func taskRows(parts []phys.HeldPart, tasks, pt int) []int64 {
	sizes := make([]int64, tasks)
	m := tasks * pt
	for _, p := range parts {
		if len(p.Hist) != phys.HistBuckets {
			return nil
		}
		for i, n := range p.Hist {
			if n == 0 {
				continue
			}
			// NB: the bucket's middle hash; a bucket that straddles two
			// partitions is counted in one (an estimate: it only decides
			// whether to split).
			q := (2*i + 1) * m / (2 * phys.HistBuckets)
			sizes[q/pt] += n
		}
	}
	return sizes
}

// skewJoin is stage c's join that a skew split may split: an inner join
// both of whose inputs are hash repartitions, one of them (heldIn) sent by
// a stage that only reads a held output with a histogram by the same keys;
// nil when there is none or c computes something per partition above it.
func skewJoin(dp *DistPlan, c *Stage) (*phys.PhysNode, int) {
	var join *phys.PhysNode
	heldIn := -1
	c.Root.Walk(func(n *phys.PhysNode) {
		if n.Kind != phys.PhysHashJoin || n.Join == nil || n.Join.Type != exec.JoinInner || n.Join.NullAware {
			return
		}
		if n.Inputs[0].Kind != phys.PhysRemote || n.Inputs[1].Kind != phys.PhysRemote {
			return
		}
		for _, in := range n.Inputs {
			if in.Remote.Kind != exec.ExchangeHash || isHeld(in) || dp.Stage(in.Remote.Stage) == nil {
				return
			}
		}
		for i, in := range n.Inputs {
			src := dp.Stage(in.Remote.Stage)
			r := src.Root
			if isHeld(r) && len(r.Remote.HistKeys) > 0 && slices.Equal(r.Remote.HistKeys, src.Out.Keys) && len(src.Out.Splits) == 0 {
				join, heldIn = n, i
				return
			}
		}
	})
	if join == nil {
		return nil, 0
	}
	ok := true
	c.Root.Walk(func(n *phys.PhysNode) {
		switch n.Kind {
		case phys.PhysFilter, phys.PhysProject, phys.PhysExchange, phys.PhysHashJoin:
		case phys.PhysRemote:
			if n != join.Inputs[0] && n != join.Inputs[1] && n.Remote.Kind != exec.ExchangeBroadcast {
				ok = false
			}
		case phys.PhysScan:
			if n.Scan == nil || !n.Scan.Replicated {
				ok = false
			}
		case phys.PhysHashAgg:
			if n.Agg == nil || n.Agg.Phase != exec.AggPartial {
				ok = false
			}
		default:
			ok = false
		}
	})
	if !ok {
		return nil, 0
	}
	return join, heldIn
}
