package dist

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/nicflow/nicflow/engine/phys"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
)

// Adaptive execution (issue 29, item 3; docs/decisions.md D53).
//
// The distributed planner chooses how a hash join's build side reaches
// its probe (broadcast, repartition, gather) from estimates, and an
// estimate can be off by orders of magnitude (a build filtered by a
// correlated predicate, a semi join's output). Adapt runs such build sides
// first, in a wave of their own whose stages hold their output where it
// was computed (held.go), and then plans the query again with the real
// row counts in place of the estimates:
//
//   - an adaptive point is a hash join whose build side the static plan
//     cuts into a stage of its own (a network exchange feeds the join),
//     whose estimate is not exact (not a bare table scan) and is at most
//     AdaptiveMaxBytes; builds reading shared subplans, recursive or
//     correlated subqueries stay as planned;
//   - a wave computes every minimal point (one whose build holds no other
//     point) at once; each held node then replaces its build side in the
//     physical plan, with EstRows the rows it holds, and PlanDistributed
//     plans the rest: a build that proved small is broadcast, one that
//     proved large is repartitioned, and so on for every decision above
//     it that depends on the size;
//   - an empty build of a join whose output needs build rows (inner and
//     semi joins, and outer joins preserving the build side) prunes the
//     join, and whatever above is empty because of it;
//   - at most AdaptiveWaves waves; the held stage keeps rows on the node
//     that made them, so the re-planned exchange moves them once, as the
//     static plan would have.
//
// Adapt never makes a query fail that the static plan would run: a wave
// that runs out of memory for held rows (a resource error) makes it run
// the static plan instead.

// AdaptStep is one hash join whose build side ran ahead (EXPLAIN).
type AdaptStep struct {
	Wave    int     `json:"wave"`
	Join    int     `json:"join"`
	EstRows float64 `json:"est_rows"`
	Rows    int64   `json:"rows"`
	// Before and After are how the build side reached the join in the
	// static plan and in the plan that ran (an exchange kind, or
	// "pruned": the join's output was empty).
	Before string `json:"before"`
	After  string `json:"after"`
	// Probe: the join's probe side ran first (its build side's size was
	// known); Swapped: it proved the smaller, and the join builds on it.
	Probe   bool `json:"probe,omitempty"`
	Swapped bool `json:"swapped,omitempty"`
	// Split says which of the join's tasks held a skewed share of the
	// held side's rows and were split (skew.go); "" when none.
	Split string `json:"split,omitempty"`
	// Coalesce, when set, makes the step a stage run as fewer tasks than
	// planned (coalesce.go) instead of a join (Join is then 0).
	Coalesce *CoalesceStep `json:"coalesce,omitempty"`
}

func (s AdaptStep) String() string {
	if s.Coalesce != nil {
		return fmt.Sprintf("wave %d: %s", s.Wave, s.Coalesce)
	}
	if s.Split != "" {
		c := s
		c.Split = ""
		return c.String() + "; " + s.Split
	}
	if s.Probe {
		verdict := "kept"
		if s.Swapped {
			verdict = "now the build side"
		}
		return fmt.Sprintf("wave %d: join %d probe estimated %.0f rows, has %d (%s): build %s -> %s", s.Wave, s.Join, s.EstRows, s.Rows, verdict, s.Before, s.After)
	}
	return fmt.Sprintf("wave %d: join %d build estimated %.0f rows, has %d: %s -> %s", s.Wave, s.Join, s.EstRows, s.Rows, s.Before, s.After)
}

// WaveRunner runs a wave: every task of every stage of the plan, whose
// last stages are held (StageOut.Held); it returns each held output's
// parts by task (the node that ran the task, the rows it holds) and, for
// EXPLAIN ANALYZE, the wave's task reports (nil when not analyzing).
type WaveRunner func(ctx context.Context, wave *DistPlan) (map[string][]phys.HeldPart, *DistStats, error)

// WaveRun is a wave that ran before the plan (EXPLAIN ANALYZE shows its
// stages with their figures).
type WaveRun struct {
	Wave int
	Plan *DistPlan
	// Stats are its tasks' reports (nil unless analyzing); Wall its time
	// from the first task's start to the last's end, as the coordinator saw.
	Stats *DistStats
	Wall  time.Duration
}

// CanAdapt reports whether Adapt may re-plan dp.
func (dp *DistPlan) CanAdapt() bool {
	return dp.phys != nil && dp.opts.AdaptiveWaves > 0 && dp.Workers > 1 && len(adaptPoints(dp, dp.phys, dp.opts)) > 0
}

// Adapt runs the adaptive waves of dp with run and returns the plan to run
// for the rest of the query (dp itself when nothing is adaptive). key
// names the query's held outputs (unique per run of the query).
func Adapt(ctx context.Context, dp *DistPlan, key string, run WaveRunner) (*DistPlan, error) {
	if !dp.CanAdapt() {
		return dp, nil
	}
	pp, cur := dp.phys, dp
	var steps []AdaptStep
	var waves []WaveRun
	base := maxStageID(dp)
	w := 1
	for ; w <= dp.opts.AdaptiveWaves; w++ {
		pts := adaptPoints(cur, pp, cur.opts)
		if len(pts) == 0 {
			break
		}
		o := cur.opts
		o.replanned, o.stageBase = true, base
		wave, streams, err := planWave(pp, pts, o, fmt.Sprintf("%s.w%d", key, w))
		if err != nil {
			return nil, err
		}
		base = maxStageID(wave)
		started := time.Now()
		parts, wstats, err := run(ctx, wave)
		if err != nil {
			if nferr.Is(err, nferr.KindResource) && ctx.Err() == nil {
				// NB: held rows did not fit on a node: the static plan
				// streams them instead, as it always could.
				return dp, nil
			}
			return nil, err
		}
		waves = append(waves, WaveRun{Wave: w, Plan: wave, Stats: wstats, Wall: time.Since(started)})
		held := map[int]*phys.PhysNode{}
		swap := map[int]bool{}
		for _, p := range pts {
			k := heldName(wave, p.build.ID)
			ps := parts[k]
			if len(ps) == 0 {
				return nil, nferr.Internalf("adaptive execution: wave %d returned no parts for %s", w, k)
			}
			var rows, bytes int64
			for _, x := range ps {
				rows, bytes = rows+x.Rows, bytes+x.Bytes
			}
			held[p.build.ID] = &phys.PhysNode{ID: p.build.ID, Kind: phys.PhysRemote, Streams: streams[k], Columns: p.build.Columns, EstRows: float64(rows),
				Remote: &phys.RemoteOp{Kind: exec.ExchangeHeld, Held: k, Parts: ps, HistKeys: sideKeys(p.join, p.build)}}
			step := AdaptStep{Wave: w, Join: p.join.ID, EstRows: p.build.EstRows, Rows: rows, Before: buildExchange(dp, p.join.ID)}
			if p.probe {
				step.Probe = true
				if b := p.join.Inputs[buildIndex(p.join)]; float64(rows)*4 < b.EstRows {
					swap[p.join.ID], step.Swapped = true, true
				}
			}
			steps = append(steps, step)
		}
		root := replaceHeld(pp.Root, held, swap)
		pp = &phys.PhysPlan{Root: root, Names: pp.Names, Shared: pp.Shared}
		o.stageBase = base
		if cur, err = PlanDistributed(pp, o); err != nil {
			return nil, err
		}
		base = maxStageID(cur)
		for i := range steps {
			if steps[i].Wave == w {
				steps[i].After = buildExchange(cur, steps[i].Join)
			}
		}
	}
	if cur != dp {
		// NB: on the plan that runs, after its last wave (w-1; a split or
		// coalescing of an earlier wave's plan would be planned away):
		// skewed tasks are split, then a stage whose inputs proved small
		// runs as fewer tasks (never one that was split).
		splits := splitSkew(cur, cur.opts)
		for i := len(steps) - 1; i >= 0; i-- {
			if d := splits[steps[i].Join]; d != "" {
				steps[i].Split = d
				delete(splits, steps[i].Join)
			}
		}
		steps = append(steps, coalesceStages(cur, cur.opts, w-1)...)
	}
	cur.Adaptive = steps
	if cur != dp {
		cur.Waves = waves
	}
	return cur, nil
}

func maxStageID(dp *DistPlan) int {
	m := 0
	for _, s := range dp.Stages {
		m = max(m, s.ID)
	}
	return m
}

// heldName names the held output of build node id in a wave.
func heldName(wave *DistPlan, id int) string {
	for _, s := range wave.Stages {
		if s.Out != nil && s.Out.Kind == exec.ExchangeHeld && s.Root.ID == id {
			return s.Out.Held
		}
	}
	return ""
}

// buildExchange says how join id's build side reaches it in dp.
func buildExchange(dp *DistPlan, id int) string {
	out := "pruned"
	for _, s := range dp.Stages {
		s.Walk(func(n *phys.PhysNode) {
			if n.ID != id || n.Kind != phys.PhysHashJoin {
				return
			}
			in := n.Inputs[buildIndex(n)]
			switch {
			case in.Kind == phys.PhysRemote && isHeld(in):
				out = "held (read in the join's task)"
			case in.Kind == phys.PhysRemote:
				out = string(in.Remote.Kind)
			default:
				out = "local"
			}
		})
	}
	return out
}

// sideKeys are join j's key columns on the side input in is (nil when in
// is neither input).
func sideKeys(j, in *phys.PhysNode) []int {
	switch {
	case j.Join == nil:
		return nil
	case j.Inputs[0] == in:
		return j.Join.LeftKeys
	case j.Inputs[1] == in:
		return j.Join.RightKeys
	}
	return nil
}

func buildIndex(n *phys.PhysNode) int {
	if n.Join.Build == exec.SideLeft {
		return 0
	}
	return 1
}

// isHeld: n reads a held output.
func isHeld(n *phys.PhysNode) bool {
	return n.Kind == phys.PhysRemote && n.Remote != nil && n.Remote.Held != ""
}

// adaptPoint: a join input to compute first. build is the held subtree
// (in the physical plan): the join's build side, or, for a probe point,
// its probe side (an inner join whose build is broadcast or repartitioned:
// if the probe proves the smaller, the join builds on it instead).
type adaptPoint struct {
	join, build *phys.PhysNode
	probe       bool
}

// adaptPoints are dp's minimal adaptive points (see the file comment).
func adaptPoints(dp *DistPlan, pp *phys.PhysPlan, o DistOptions) []adaptPoint {
	byID := map[int]*phys.PhysNode{}
	pp.Root.Walk(func(n *phys.PhysNode) { byID[n.ID] = n })
	var pts []adaptPoint
	for _, c := range dp.Stages {
		c.Root.Walk(func(n *phys.PhysNode) {
			if n.Kind != phys.PhysHashJoin {
				return
			}
			bi := buildIndex(n)
			in := n.Inputs[bi]
			if in.Kind != phys.PhysRemote || isHeld(in) {
				return
			}
			src := dp.Stage(in.Remote.Stage)
			pj := byID[n.ID]
			if src == nil || pj == nil || pj.Kind != phys.PhysHashJoin || pj.Inputs[bi].ID != src.Root.ID {
				return
			}
			pb := pj.Inputs[bi]
			if fits(pb, o) && adaptable(pb) {
				// NB: a broadcast that a build AdaptiveMargin times its
				// estimate would keep is left as planned (the wave's
				// task starts cost more than they could save: Q2 on 4
				// workers ran 3 waves in 86 ms of its 125, and changed
				// nothing).
				if !robustChoice(in.Remote.Kind, pb, pj.Inputs[1-bi], o) {
					pts = append(pts, adaptPoint{join: pj, build: pb})
				}
				return
			}
			// NB: a broadcast build whose size is known (a scan) costs
			// Workers copies and hash tables, a repartitioned one moves
			// both sides; if the probe side is far smaller than
			// estimated (Q18's semi join: 1.5M estimated, 57 rows),
			// building on it instead, broadcast, is cheaper.
			pr := pj.Inputs[1-bi]
			if (in.Remote.Kind == exec.ExchangeBroadcast || in.Remote.Kind == exec.ExchangeHash) && pj.Join.Type == exec.JoinInner && !pj.Join.NullAware && pb.EstRows >= probePointRows &&
				!isHeld(pr) && pr.EstRows >= pb.EstRows && fits(pr, o) && adaptable(pr) && !probeFiltered(pj, pr) {
				pts = append(pts, adaptPoint{join: pj, build: pr, probe: true})
			}
		})
	}
	// Minimal points only: a build holding another point's build waits
	// for the next wave (its estimate changes with the inner one's size).
	var out []adaptPoint
	for i, p := range pts {
		inner := false
		p.build.Walk(func(n *phys.PhysNode) {
			for j, q := range pts {
				if j != i && q.build == n {
					inner = true
				}
			}
		})
		if !inner {
			out = append(out, p)
		}
	}
	return out
}

// robustChoice: how build reaches its join (kind) would not change were
// build AdaptiveMargin times its estimate: a range exchange (the best
// choice at any size, rangeBuildKey), a broadcast that stays cheaper
// than repartitioning (broadcastCheaper), or a gather of a wide build into
// the probe's one task that stays smaller than the probe (distPlanner's
// hashJoin).
//
// When both sides' estimates are well founded (confident) the margin is
// confidentMargin instead: TPC-H Q5, Q8 and Q9 on 4 workers ran waves
// whose builds were within 2x of their estimates and changed nothing
// (D67). A repartitioned build is always held: its histogram is what
// finds skewed keys and coalesces small partitions.
func robustChoice(kind exec.ExchangeKind, build, probe *phys.PhysNode, o DistOptions) bool {
	if o.AdaptiveMargin <= 0 {
		return false
	}
	margin, sure := o.AdaptiveMargin, confident(build) && confident(probe)
	if sure {
		margin = min(margin, confidentMargin)
	}
	switch kind {
	case exec.ExchangeRange:
		// Sent by range to a range-split probe whatever its size (D72).
		return true
	case exec.ExchangeBroadcast:
		return broadcastCheaper(build, probe, o, margin)
	case exec.ExchangeGather:
		return estSize(build)*margin <= estSize(probe)
	}
	return false
}

// confidentMargin: how far a confident estimate may be off.
const confidentMargin = 4

// confident: n's row estimate rests only on what statistics estimate
// well: table row counts, comparisons, ranges and IN lists of one column
// per table against constants (its min/max and distinct count), and inner
// joins of such inputs (key to foreign key in practice). Predicates on two
// columns of a table are not (their correlation is unknown: a = 3 AND b =
// 3 over equal columns is estimated at a tenth of its rows), nor LIKE,
// OR, expressions, aggregates (HAVING), semi, anti and outer joins,
// limits and the rest.
//
// NB: each filter is judged alone; a scan filtered on one column with a
// filter above it on another counts as confident (the binder pushes a
// table's comparisons into its scan together, so this is rare).
func confident(n *phys.PhysNode) bool {
	if n.Filter != nil && !confidentExpr(*n.Filter) {
		return false
	}
	switch n.Kind {
	case phys.PhysScan:
		if n.Scan.Residual != "" {
			return false
		}
		if p := n.Scan.Spec.Filter; p != nil {
			cols := map[string]bool{}
			if !confidentPred(p, cols) || len(cols) > 1 {
				return false
			}
		}
		return true
	case phys.PhysFilter, phys.PhysProject, phys.PhysExchange:
	case phys.PhysHashJoin:
		if n.Join == nil || n.Join.Type != exec.JoinInner {
			return false
		}
	case phys.PhysRemote:
		return isHeld(n) // exact
	default:
		return false
	}
	for _, in := range n.Inputs {
		if !confident(in) {
			return false
		}
	}
	return len(n.Inputs) > 0
}

// confidentPred: a conjunction of comparisons, ranges, IN lists and NULL
// tests of storage predicate p; cols collects the columns it tests.
func confidentPred(p *storage.Predicate, cols map[string]bool) bool {
	switch p.Op {
	case storage.OpAnd:
		for _, a := range p.Args {
			if !confidentPred(a, cols) {
				return false
			}
		}
		return true
	case storage.OpEq, storage.OpNe, storage.OpLt, storage.OpLe, storage.OpGt, storage.OpGe,
		storage.OpBetween, storage.OpIn, storage.OpIsNull, storage.OpIsNotNull:
		cols[p.Column] = true
		return true
	}
	return false
}

// confidentExpr: a conjunction of comparisons, IN lists and NULL tests of
// one input column against literals.
func confidentExpr(e expr.Expr) bool {
	cols := map[int]bool{}
	return confidentCall(e, cols) && len(cols) <= 1
}

func confidentCall(e expr.Expr, cols map[int]bool) bool {
	if e.Kind != expr.KindCall {
		return false
	}
	switch e.Fn {
	case expr.FnAnd:
		for _, a := range e.Args {
			if !confidentCall(a, cols) {
				return false
			}
		}
		return true
	case expr.FnEq, expr.FnNe, expr.FnLt, expr.FnLe, expr.FnGt, expr.FnGe, expr.FnIn, expr.FnIsNull, expr.FnIsNotNull:
		if len(e.Args) == 0 || e.Args[0].Kind != expr.KindColumn {
			return false
		}
		for _, a := range e.Args[1:] {
			if a.Kind != expr.KindLiteral {
				return false
			}
		}
		cols[e.Args[0].Index] = true
		return true
	}
	return false
}

// probeFiltered: the join filters its probe side's scans by its build
// keys (phys key filters) and is estimated to emit at most a quarter of
// the probe's rows, so the filter is expected to cut the probe by at
// least the factor a probe point looks for. Holding such a probe runs it
// before the build exists, without the filter: TPC-H Q10 on 16 workers
// held all 1.48M lineitem rows with l_returnflag 'R' (estimated 2M, the
// build 57,000 orders) and repartitioned them, where the static plan's
// filter let 122,745 through (1.3-1.6 s against 1.0-1.2 s; D65).
func probeFiltered(join, probe *phys.PhysNode) bool {
	return join.EstRows*4 <= probe.EstRows && phys.ProbeKeyFiltered(join)
}

// probePointRows: a broadcast or repartitioned build of at least this
// many rows makes its join's probe side a point (moving fewer rows costs
// less than a wave).
const probePointRows = 50_000

// fits: n's estimated size is within what a wave may hold.
func fits(n *phys.PhysNode, o DistOptions) bool {
	return n.EstRows*float64(max(len(n.Columns), 1))*8 <= o.AdaptiveMaxBytes
}

// adaptable: a build side whose size is not known exactly, and that can
// run ahead on its own.
func adaptable(b *phys.PhysNode) bool {
	ok, exact := true, true
	b.Walk(func(n *phys.PhysNode) {
		switch n.Kind {
		case phys.PhysSharedScan, phys.PhysRecursive, phys.PhysApply, phys.PhysWorkScan, phys.PhysRowID:
			ok = false
		case phys.PhysRemote:
			if !isHeld(n) {
				ok = false
			}
		case phys.PhysScan:
			if n.Scan.Spec.Filter != nil || n.Scan.Residual != "" {
				exact = false
			}
		case phys.PhysProject, phys.PhysExchange:
		default:
			exact = false
		}
	})
	return ok && !exact
}

// planWave plans the wave computing the points' build sides into held
// stages; streams are each held output's streams per task.
func planWave(pp *phys.PhysPlan, pts []adaptPoint, o DistOptions, key string) (*DistPlan, map[string]int, error) {
	d := &distPlanner{opts: o, plan: pp, shared: map[int]*phys.PhysShared{}, unshared: map[int]bool{}}
	d.countIDs()
	streams := map[string]int{}
	for _, p := range pts {
		f, err := d.walk(p.build)
		if err != nil {
			return nil, nil, err
		}
		k := key + "/" + strconv.Itoa(p.build.ID)
		st := &Stage{ID: d.stageID(), Tasks: 1, Root: f.n, Out: &StageOut{Kind: exec.ExchangeHeld, Held: k, HistKeys: sideKeys(p.join, p.build)}}
		if f.wide {
			st.Tasks = o.Workers
		}
		if f.tasks > 0 {
			st.Tasks = f.tasks
		}
		d.stages = append(d.stages, st)
		streams[k] = f.n.Streams
	}
	if len(d.shared) > 0 {
		return nil, nil, nferr.Internalf("adaptive execution: a held build reads a shared subplan")
	}
	d.linkConsumers()
	dp := &DistPlan{Stages: d.stages, Exchanges: d.nexch, Workers: o.Workers, Parallelism: o.Parallelism, opts: o}
	dp.KeyFilters = crossStageFilters(dp, o)
	return dp, streams, nil
}

// replaceHeld returns n with the nodes of held replaced (copying the path
// to them), and the joins their emptiness empties pruned.
func replaceHeld(n *phys.PhysNode, held map[int]*phys.PhysNode, swap map[int]bool) *phys.PhysNode {
	if h := held[n.ID]; h != nil {
		return h
	}
	var ins []*phys.PhysNode
	for i, in := range n.Inputs {
		r := replaceHeld(in, held, swap)
		if r != in && ins == nil {
			ins = append([]*phys.PhysNode(nil), n.Inputs...)
		}
		if ins != nil {
			ins[i] = r
		}
	}
	if ins == nil {
		return n
	}
	c := *n
	c.Inputs = ins
	if swap[c.ID] && c.Kind == phys.PhysHashJoin {
		// An inner join builds on either side: the smaller one.
		spec := *c.Join
		spec.Build = exec.SideLeft
		if c.Join.Build == exec.SideLeft {
			spec.Build = exec.SideRight
		}
		c.Join = &spec
	}
	if emptyOutput(&c) {
		return emptyNode(&c)
	}
	return &c
}

// isEmpty: n produces no rows (a held output of none, or a pruned node).
func isEmpty(n *phys.PhysNode) bool {
	if isHeld(n) {
		for _, p := range n.Remote.Parts {
			if p.Rows > 0 {
				return false
			}
		}
		return true
	}
	return n.Kind == phys.PhysFilter && n.Filter != nil && n.Filter.Kind == expr.KindLiteral && !n.Filter.Null && n.Filter.Value == "false" &&
		len(n.Inputs) == 1 && n.Inputs[0].Kind == phys.PhysValues
}

// emptyOutput: n produces no rows because an input does not.
func emptyOutput(n *phys.PhysNode) bool {
	switch n.Kind {
	case phys.PhysFilter, phys.PhysProject, phys.PhysExchange, phys.PhysSort, phys.PhysTopN, phys.PhysLimit, phys.PhysDistinct:
		return len(n.Inputs) == 1 && isEmpty(n.Inputs[0])
	case phys.PhysHashAgg:
		return len(n.Agg.GroupCols) > 0 && isEmpty(n.Inputs[0])
	case phys.PhysHashJoin:
		l, r := isEmpty(n.Inputs[0]), isEmpty(n.Inputs[1])
		switch n.Join.Type {
		case exec.JoinInner, exec.JoinSemi:
			return l || r
		case exec.JoinRight:
			return r
		case exec.JoinFull:
			return l && r
		default: // left, anti, mark: the left rows
			return l
		}
	}
	return false
}

// emptyNode is a node of n's columns producing no rows: a false filter
// over one row of NULLs.
func emptyNode(n *phys.PhysNode) *phys.PhysNode {
	row := make([]expr.Expr, len(n.Columns))
	names := make([]string, len(n.Columns))
	for i, c := range n.Columns {
		row[i], names[i] = expr.LitNull(c.Type), c.Name
	}
	v := &phys.PhysNode{ID: n.ID + 1<<20, Kind: phys.PhysValues, Streams: 1, Columns: n.Columns, EstRows: 1, Values: &phys.ValuesOp{Names: names, Rows: [][]expr.Expr{row}}}
	f := expr.LitBool(false)
	return &phys.PhysNode{ID: n.ID, Kind: phys.PhysFilter, Streams: 1, Columns: n.Columns, EstRows: 0, Filter: &f, Inputs: []*phys.PhysNode{v}}
}

// HeldNode is the node holding the held output a stage's task reads (ok
// false: the stage reads none and runs anywhere).
func (dp *DistPlan) HeldNode(stage, task int) (int, bool) {
	s := dp.Stage(stage)
	if s == nil {
		return 0, false
	}
	node, ok := 0, false
	s.Root.Walk(func(n *phys.PhysNode) {
		if isHeld(n) && task < len(n.Remote.Parts) {
			node, ok = n.Remote.Parts[task].Node, true
		}
	})
	return node, ok
}
