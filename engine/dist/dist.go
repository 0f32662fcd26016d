package dist

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/nicflow/nicflow/engine/phys"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Distributed planning: a physical plan becomes stages.
//
// PlanDistributed takes the physical plan the embedded session would run
// (planned with the parallelism of one task, DistOptions.Parallelism) and
// cuts it into stages connected by network exchanges (shuffle channels).
// A stage runs as one task or as Workers tasks (one per worker); every
// task of a stage runs the same fragment (a PhysNode tree whose leaves are
// scans, values and PhysRemote receivers), with its own share of the
// row groups of every scan that is not replicated.
//
// The planner walks the plan bottom-up and tracks, per subtree, whether it
// is "wide" (spread over the Workers tasks of a stage) or "single" (in one
// task), and for wide subtrees the hash distribution a network repartition
// gave it. The rules:
//
//	scan          wide when the embedded plan gave it several streams
//	              (several row groups); single otherwise. A wide scan
//	              reads a contiguous block of its row groups per task
//	              (phys.TaskShare), unless a join
//	              or aggregate above splits it by value range on a
//	              clustered column (ScanOp.Clustered: integer, no NULLs,
//	              row groups holding disjoint ranges, as a table stored in
//	              key order): task t then reads part t of the column's
//	              values (RangePart bounds), from the row groups that may
//	              hold it, filtered to it (ScanOp.Range)
//	gather/merge  over a wide input: a network gather to one task (an
//	              ordered merge becomes a gather and a sort there); over a
//	              single input: the local exchange, inside the task
//	hash          over a wide input: a network repartition into Workers x
//	              Parallelism receivers with exec.HashPartitioner; a
//	              single-phase aggregate above it is split first (partial
//	              below the repartition, final above), so partial states
//	              cross the network instead of rows, unless the partial
//	              pass would hardly reduce them (DistOptions.PartialRatio);
//	              an aggregate whose input is (or can be) split by value
//	              range on a group column, or is co-located by task on
//	              some of its group columns (a repartition's keys, kept
//	              through joins: frag.keyed), stays single-phase, its
//	              exchange local
//	hash join     both single: one task. Both wide and split alike (or
//	              splittable alike) by value range on the one join key:
//	              the join runs where the rows are, no exchange; the
//	              output is split on both keys (inner) or the preserved
//	              side's. Otherwise the build side is
//	              replicated when that is valid (the join keeps no state
//	              per build row) and cheap: a single-task scan pipeline
//	              over a table of at most ReplicateRows rows is read by
//	              every task ("replicated" scan), a
//	              wide build is broadcast when build x (Workers-1) <=
//	              probe rows (estimates); else both sides are repartitioned by
//	              the join keys (a side already distributed on its keys
//	              stays); a wide build smaller than a single-task probe
//	              (rows x columns) is gathered to the probe's task; a
//	              null-aware join, which needs every build row, is never
//	              partitioned
//	nl join       the right side is replicated or broadcast to the left's
//	              streams in every task
//	union         wide when every input is; else the wide ones are
//	              gathered
//	shared scan   the shared subplan is planned once, in one task, and
//	              goes with the stage holding its readers (Stage.Shared),
//	              computed once there; when its readers are in different
//	              stages it is planned again at every reader instead
//
// and any node the embedded plan ran as one stream is single here too (a
// wide input is gathered first), so per-stream semantics (ORDER BY order,
// LIMIT, global aggregates) survive. The root stage has one task; its
// output streams to the coordinator. With one worker the plan is that one
// task: the embedded plan whole, its exchanges local.

// DistOptions configure distributed planning.
type DistOptions struct {
	// Workers is the number of tasks of a wide stage (one per worker).
	Workers int
	// Parallelism is the number of streams per task the physical plan was
	// planned with; network repartitions have Workers x Parallelism
	// receivers.
	Parallelism int
	// ReplicateRows: a single-task scan pipeline on the build side of a
	// join with a wide probe is read whole by every task when its table
	// has at most this many rows (default 50,000: every worker decoding
	// nation, region or supplier costs less than a broadcast stage; part
	// or customer are better scanned once and broadcast).
	ReplicateRows float64
	// BroadcastFactor: a build side is broadcast (rather than both sides
	// repartitioned) when its estimated bytes times (Workers-1) are at
	// most BroadcastFactor times the probe side's (default 1:
	// broadcasting sends every build row to the Workers-1 other workers;
	// partitioning sends (build + probe) x (Workers-1)/Workers bytes
	// across, and the probe's dominate; broadcastCheaper).
	BroadcastFactor float64
	// PartialRatio: an aggregate over a network repartition is split into
	// partial and final phases unless the partial phase would keep more
	// than this fraction of each task's rows (estimated; default 0.8, as
	// Trino's adaptive partial aggregation): then the rows are sent as they
	// are and aggregated once.
	PartialRatio float64
	// KeyFilterWait is how long a scan waits for a join key filter from
	// another stage before it reads (filters.go), when the join's build
	// side is estimated at most KeyFilterWaitRows rows (a build that
	// finishes soon; default 1 s and 1M rows; a negative wait: never).
	// A filter that comes later is applied from then on.
	KeyFilterWait     time.Duration
	KeyFilterWaitRows float64
	// AdaptiveWaves is how many times a query's plan may be re-planned
	// from real sizes (adaptive.go; default 3; negative: never, SET
	// adaptive = off). AdaptiveMaxBytes bounds the estimated size (rows x
	// columns x 8) of a build side computed ahead and held on the workers
	// (default 256 MiB): a larger one runs as planned.
	AdaptiveWaves    int
	AdaptiveMaxBytes float64
	// AdaptiveMargin: a broadcast (or gathered) build side is not
	// computed ahead when broadcasting (gathering) it would stay the
	// choice were it this many times larger than estimated
	// (robustChoice): a wave would cost
	// the query a round of task starts for a decision that cannot change
	// (Q2's builds of 400 to 2,000 rows against partsupp; default 100,
	// so that only a misestimate of more than two orders of magnitude
	// goes uncorrected; negative: every such build is a point).
	AdaptiveMargin float64
	// SkewFactor and SkewRows: after a wave, a task of a repartitioned
	// inner join whose held side gives it more than SkewFactor times the
	// median task's rows, and at least SkewRows rows, is split into as
	// many tasks as its share needs at the average size (at most Workers):
	// the held side's rows of its partitions are spread over them and the
	// other side's copied to each (skew.go; defaults 3 and 100,000; a
	// negative factor: never).
	SkewFactor float64
	SkewRows   int64
	// CoalesceRows: after the waves, a repartitioned stage whose inputs
	// are known to hold few rows (held outputs, table row counts: an upper
	// bound) runs as fewer tasks, each taking the partitions of a run of
	// adjacent tasks until it has CoalesceRows rows (coalesce.go; default
	// 100,000; negative: never, SET adaptive_coalesce_rows = -1).
	CoalesceRows int64

	// replanned (Adapt's re-planning): Workers stays as given (a held
	// output has one part per task of the plan it came from), and stage
	// IDs start after stageBase (unique across the query's waves).
	replanned bool
	stageBase int
}

// Validate fills defaults and checks the options.
func (o *DistOptions) Validate() error {
	if o.Workers < 1 || o.Workers > phys.MaxParallelism {
		return nferr.Queryf("distributed plan: %d workers (want 1..%d)", o.Workers, phys.MaxParallelism)
	}
	if o.Parallelism < 1 || o.Parallelism > phys.MaxParallelism {
		return nferr.Queryf("distributed plan: parallelism %d (want 1..%d)", o.Parallelism, phys.MaxParallelism)
	}
	if o.BroadcastFactor == 0 {
		o.BroadcastFactor = 1
	}
	if o.ReplicateRows == 0 {
		o.ReplicateRows = 50_000
	}
	if o.PartialRatio == 0 {
		o.PartialRatio = 0.8
	}
	if o.KeyFilterWait == 0 {
		o.KeyFilterWait = time.Second
	}
	if o.KeyFilterWaitRows == 0 {
		o.KeyFilterWaitRows = 1 << 20
	}
	if o.AdaptiveWaves == 0 {
		o.AdaptiveWaves = 3
	}
	if o.SkewFactor == 0 {
		o.SkewFactor = 3
	}
	if o.SkewRows == 0 {
		o.SkewRows = 100_000
	}
	if o.CoalesceRows == 0 {
		o.CoalesceRows = 100_000
	}
	if o.AdaptiveMaxBytes == 0 {
		o.AdaptiveMaxBytes = 256 << 20
	}
	if o.AdaptiveMargin == 0 {
		o.AdaptiveMargin = 100
	}
	return nil
}

// DistPlan is a distributed plan: stages, producers before consumers; the
// last stage is the root (one task streaming the result).
type DistPlan struct {
	Stages []*Stage `json:"stages"`
	// Names are the result's column names; Columns its columns.
	Names   []string          `json:"names"`
	Columns []phys.PhysColumn `json:"columns"`
	// Exchanges is the number of network exchanges (channels 1..N).
	Exchanges int `json:"exchanges"`
	// Workers and Parallelism are the options it was planned with.
	Workers     int `json:"workers"`
	Parallelism int `json:"parallelism"`
	// KeyFilters are the join key filters whose join and scan run in
	// different stages (filters.go).
	KeyFilters []phys.RemoteKeyFilter `json:"key_filters,omitempty"`
	// Adaptive lists the joins re-planned at run time (adaptive.go).
	Adaptive []AdaptStep `json:"adaptive,omitempty"`
	// Waves are the adaptive waves that ran before this plan (EXPLAIN
	// ANALYZE; not shipped).
	Waves []WaveRun `json:"-"`

	// phys and opts are what the plan was made from (Adapt re-plans).
	phys *phys.PhysPlan
	opts DistOptions
}

// Stage is a fragment run by Tasks tasks.
type Stage struct {
	ID    int            `json:"id"`
	Tasks int            `json:"tasks"`
	Root  *phys.PhysNode `json:"root"`
	// Shared are the subplans the stage's PhysSharedScan nodes read: each
	// computed once in the task, however many readers it has.
	Shared []*phys.PhysShared `json:"shared,omitempty"`
	// Out is where the stage's output goes (nil: the root stage, whose
	// one task streams to the coordinator).
	Out *StageOut `json:"out,omitempty"`
	// Coalesced (adaptive coalescing, coalesce.go): the stage was planned
	// as len(Coalesced) tasks and runs as Tasks; Coalesced[t] is the task
	// that takes planned task t's hash partitions (non-decreasing, from 0
	// to Tasks-1). Every hash exchange into the stage routes by it, so
	// co-partitioned inputs keep meeting in one task.
	Coalesced []int `json:"coalesced,omitempty"`
}

// StageOut is a stage's outgoing network exchange.
type StageOut struct {
	Exchange int               `json:"exchange"`
	Kind     exec.ExchangeKind `json:"kind"` // gather, hash, broadcast or range
	Keys     []int             `json:"keys,omitempty"`
	// Cuts (a range exchange) are the lowest key values of consumer
	// tasks 1 to Tasks-1: the bounds of the range-split scan the consumer
	// task of that index reads (phys.RangePart), one receiver per task.
	Cuts []int64 `json:"cuts,omitempty"`
	// Consumer is the stage reading it; PerTask its receivers per task.
	Consumer int `json:"consumer"`
	PerTask  int `json:"per_task"`
	// Held names the output of a held stage (Kind exec.ExchangeHeld, an
	// adaptive wave's: held.go), kept where it was computed; Exchange,
	// Consumer and PerTask are then 0.
	Held string `json:"held,omitempty"`
	// HistKeys (a held stage): count the held rows by the hash of these
	// columns (phys.HeldPart.Hist), for Adapt's skew splits.
	HistKeys []int `json:"hist_keys,omitempty"`
	// Splits (a hash exchange; adaptive skew splits, adaptive.go): consumer
	// tasks whose partitions extra tasks share. SplitCopy: this exchange
	// copies a shared partition's rows to each task sharing it (the join
	// side that is not split); otherwise it spreads them over those tasks.
	Splits    []SplitTask `json:"splits,omitempty"`
	SplitCopy bool        `json:"split_copy,omitempty"`
}

// SplitTask is a consumer task whose hash partitions (its PerTask
// receivers) are shared with the Extra tasks' (stream s of each: the same
// partition).
type SplitTask struct {
	Task  int   `json:"task"`
	Extra []int `json:"extra"`
}

// sendSplits are the receivers sharing each hash partition (exec
// NetSendSpec.Splits) for splits over perTask receivers per task.
func sendSplits(splits []SplitTask, perTask int) map[int][]int {
	if len(splits) == 0 {
		return nil
	}
	out := map[int][]int{}
	for _, st := range splits {
		for s := range perTask {
			q := st.Task*perTask + s
			d := []int{q}
			for _, e := range st.Extra {
				d = append(d, e*perTask+s)
			}
			out[q] = d
		}
	}
	return out
}

// Root is the root stage.
func (d *DistPlan) Root() *Stage { return d.Stages[len(d.Stages)-1] }

// Walk calls fn on every node of the stage: its root's tree and its
// shared subplans'.
func (s *Stage) Walk(fn func(*phys.PhysNode)) {
	s.Root.Walk(fn)
	for _, d := range s.Shared {
		d.Root.Walk(fn)
	}
}

// Stage returns the stage with the given ID (nil if none).
func (d *DistPlan) Stage(id int) *Stage {
	for _, s := range d.Stages {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// Receivers is the number of receivers of a stage's output exchange.
func (d *DistPlan) Receivers(s *Stage) int {
	if s.Out == nil {
		return 1
	}
	c := d.Stage(s.Out.Consumer)
	if c == nil {
		return 0
	}
	return c.Tasks * s.Out.PerTask
}

// Senders is the number of senders of a stage's output exchange: every
// output stream of every task.
func (d *DistPlan) Senders(s *Stage) int { return s.Tasks * s.Root.Streams }

// frag is a planned subtree of the stage being built.
type frag struct {
	n    *phys.PhysNode
	wide bool
	// hash, when set, are the columns a network repartition distributed a
	// wide subtree on (over Workers x Parallelism partitions).
	hash []int
	// keyed lists column sets on which the rows of a wide subtree are
	// co-located by task (equal values in one task): a repartition's keys,
	// and after a join of two repartitioned inputs the keys of each side
	// whose values survive (both for an inner join).
	keyed [][]int
	// pure: a single-task pipeline of scans, values, filters and
	// projections, which every task may compute for itself (replicated);
	// rows is the largest table it scans.
	pure bool
	rows float64
	// cands are columns a range split of one of the subtree's scans could
	// distribute the wide subtree on (not applied yet: the scans still
	// read their row groups in plain blocks); ranged is the split applied.
	cands  []rangeCand
	ranged *rangedOn
	// tasks, when set, is the task count of the stage cut at f (a held
	// node's parts: held.go), instead of Workers.
	tasks int
	// groupsWhole: f is an aggregate the embedded plan finished in one
	// stream, finished in every task instead because each task holds
	// whole groups (finalInPlace): it stays wide.
	groupsWhole bool
}

// rangeCand: output column col follows clustered column cc of scan node
// scanID.
type rangeCand struct {
	col    int
	scanID int
	cc     phys.ClusterCol
}

// rangedOn: a wide subtree whose task t holds exactly the rows with
// columns cols (equal after an equi-join) in part t of rp.
type rangedOn struct {
	cols []int
	rp   *phys.RangePart
}

// mapRange carries range information through a column mapping (nil
// drops a column).
func (f frag) mapRange(m func(col int) int) ([]rangeCand, *rangedOn) {
	var cands []rangeCand
	for _, c := range f.cands {
		if j := m(c.col); j >= 0 {
			c.col = j
			cands = append(cands, c)
		}
	}
	var r *rangedOn
	if f.ranged != nil {
		var cols []int
		for _, c := range f.ranged.cols {
			if j := m(c); j >= 0 {
				cols = append(cols, j)
			}
		}
		if len(cols) > 0 {
			r = &rangedOn{cols: cols, rp: f.ranged.rp}
		}
	}
	return cands, r
}

// rangeFor is how f is, or could be, range-split on column col.
func (d *distPlanner) rangeFor(f frag, col int) *phys.RangePart {
	if !f.wide || d.opts.Workers < 2 {
		return nil
	}
	if f.ranged != nil {
		if slices.Contains(f.ranged.cols, col) {
			return f.ranged.rp
		}
		return nil // split on another column already
	}
	for _, c := range f.cands {
		if c.col == col {
			return phys.NewRangePart(c.cc, d.opts.Workers)
		}
	}
	return nil
}

// applyRange splits f on col (rangeFor(f, col) != nil) at cuts: the scan
// the column comes from reads by value range.
func (d *distPlanner) applyRange(f frag, col int, cuts []int64) frag {
	if f.ranged != nil {
		return f
	}
	for _, c := range f.cands {
		if c.col != col {
			continue
		}
		rp := &phys.RangePart{Col: c.cc, Parts: d.opts.Workers, Cuts: cuts}
		n := withScans(f.n, func(n *phys.PhysNode, s *phys.ScanOp) {
			if n.ID == c.scanID {
				s.Range = rp
			}
		})
		return frag{n: n, wide: true, ranged: &rangedOn{cols: []int{col}, rp: rp}}
	}
	return f
}

type distPlanner struct {
	opts   DistOptions
	plan   *phys.PhysPlan
	nextID int
	stages []*Stage
	nexch  int
	// shared holds each shared subplan planned so far (by definition ID):
	// its readers read it as a PhysSharedScan, and the stage holding them
	// computes it once. unshared lists the definitions whose readers ended
	// up in different stages: planned again at every reader.
	shared   map[int]*phys.PhysShared
	unshared map[int]bool
}

// PlanDistributed cuts a physical plan into stages (see the file comment).
func PlanDistributed(pp *phys.PhysPlan, opts DistOptions) (dp *DistPlan, err error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if pp == nil || pp.Root == nil {
		return nil, nferr.Internalf("distributed plan: no physical plan")
	}
	defer func() {
		if r := recover(); r != nil {
			dp, err = nil, nferr.Internalf("distributed planner bug (please report): %v", r)
		}
	}()
	if w := widestScan(pp); w > 0 && w < opts.Workers && !opts.replanned {
		// NB: no wide stage can use more tasks than its widest scan has
		// row groups to read: a query of a few row groups (a point
		// lookup, a small table) on 64 workers would otherwise start 64
		// tasks per stage, most of them with nothing to do.
		opts.Workers = w
	}
	if opts.Workers == 1 {
		// One worker: a network exchange would only move rows from the
		// worker to itself (and split aggregates into partial and final
		// passes), so the embedded plan runs whole in one task, its
		// exchanges local and its shared subplans computed once.
		d := &distPlanner{opts: opts, plan: pp}
		d.countIDs()
		f, err := d.single(frag{n: pp.Root})
		if err != nil {
			return nil, err
		}
		return &DistPlan{Stages: []*Stage{{ID: 1, Tasks: 1, Root: f.n, Shared: pp.Shared}}, Names: pp.Names, Columns: pp.Root.Columns,
			Workers: opts.Workers, Parallelism: opts.Parallelism, phys: pp, opts: opts}, nil
	}
	unshared := map[int]bool{}
	for {
		d := &distPlanner{opts: opts, plan: pp, shared: map[int]*phys.PhysShared{}, unshared: unshared}
		d.countIDs()
		dp, split, err := d.plan1()
		if err != nil || split == nil {
			return dp, err
		}
		// A shared subplan whose readers are in different stages would
		// receive its exchanges in each: plan it again at every reader.
		unshared[split.ID] = true
	}
}

func (d *distPlanner) countIDs() {
	count := func(n *phys.PhysNode) { d.nextID = max(d.nextID, n.ID) }
	d.plan.Root.Walk(count)
	for _, s := range d.plan.Shared {
		s.Root.Walk(count)
	}
}

// plan1 plans the stages; split is a shared subplan read from several
// stages (nil: none).
func (d *distPlanner) plan1() (*DistPlan, *phys.PhysShared, error) {
	pp := d.plan
	f, err := d.walk(pp.Root)
	if err != nil {
		return nil, nil, err
	}
	if f, err = d.single(f); err != nil {
		return nil, nil, err
	}
	root := &Stage{ID: d.stageID(), Tasks: 1, Root: f.n}
	d.stages = append(d.stages, root)
	// Each shared subplan goes to the one stage reading it; the last
	// definitions first, as a subplan may read an earlier one (its readers
	// are then in the later one's tree).
	for i := len(pp.Shared) - 1; i >= 0; i-- {
		def := pp.Shared[i]
		sh := d.shared[def.ID]
		if sh == nil {
			continue
		}
		var at *Stage
		for _, s := range d.stages {
			s.Walk(func(n *phys.PhysNode) {
				if n.Kind == phys.PhysSharedScan && n.Shared.Def == def.ID {
					if at != nil && at != s {
						at = &Stage{ID: -1}
					} else if at == nil {
						at = s
					}
				}
			})
		}
		if at == nil {
			continue
		}
		if at.ID < 0 || at.Tasks != 1 {
			return nil, def, nil
		}
		at.Shared = append([]*phys.PhysShared{sh}, at.Shared...) // definition order: built in turn
	}
	d.linkConsumers()
	dp := &DistPlan{Stages: d.stages, Names: pp.Names, Columns: pp.Root.Columns, Exchanges: d.nexch, Workers: d.opts.Workers, Parallelism: d.opts.Parallelism,
		phys: pp, opts: d.opts}
	dp.KeyFilters = crossStageFilters(dp, d.opts)
	return dp, nil, nil
}

// linkConsumers sets each stage's consumer: the stage holding the remote
// node reading it.
func (d *distPlanner) linkConsumers() {
	for _, s := range d.stages {
		s.Walk(func(n *phys.PhysNode) {
			if n.Kind == phys.PhysRemote && !isHeld(n) {
				if p := d.stageByID(n.Remote.Stage); p != nil && p.Out != nil {
					p.Out.Consumer = s.ID
				}
			}
		})
	}
}

// stageID numbers the next stage.
func (d *distPlanner) stageID() int { return d.opts.stageBase + len(d.stages) + 1 }

func (d *distPlanner) stageByID(id int) *Stage {
	for _, s := range d.stages {
		if s.ID == id {
			return s
		}
	}
	return nil
}

func (d *distPlanner) id() int {
	d.nextID++
	return d.nextID
}

// with copies n with new inputs and a stream count.
func with(n *phys.PhysNode, streams int, inputs ...*phys.PhysNode) *phys.PhysNode {
	c := *n
	c.Inputs = inputs
	c.Streams = streams
	return &c
}

// cut ends the stage computing f at a network exchange and returns the
// receiving node for the consuming stage.
func (d *distPlanner) cut(f frag, kind exec.ExchangeKind, keys []int, perTask int, consumerWide bool) frag {
	d.nexch++
	st := &Stage{ID: d.stageID(), Tasks: 1, Root: f.n, Out: &StageOut{Exchange: d.nexch, Kind: kind, Keys: keys, PerTask: perTask}}
	if f.wide {
		st.Tasks = d.opts.Workers
	}
	if f.tasks > 0 {
		st.Tasks = f.tasks
	}
	d.stages = append(d.stages, st)
	rn := &phys.PhysNode{ID: d.id(), Kind: phys.PhysRemote, Streams: perTask, Columns: f.n.Columns, EstRows: f.n.EstRows,
		Remote: &phys.RemoteOp{Exchange: d.nexch, Stage: st.ID, Kind: kind, Keys: keys}}
	out := frag{n: rn, wide: consumerWide}
	if kind == exec.ExchangeHash && consumerWide {
		out.hash = keys
		out.keyed = [][]int{keys}
	}
	return out
}

// keyedOn reports whether equal values of cols are in one task of f: f
// is co-located on a set of columns among them.
func (f frag) keyedOn(cols []int) bool {
	if !f.wide {
		return false
	}
	for _, set := range f.keyed {
		all := len(set) > 0
		for _, c := range set {
			all = all && slices.Contains(cols, c)
		}
		if all {
			return true
		}
	}
	return false
}

// shiftKeyed maps keyed column sets through m (a negative result drops
// the set).
func shiftKeyed(keyed [][]int, m func(int) int) [][]int {
	var out [][]int
	for _, set := range keyed {
		ns := make([]int, 0, len(set))
		for _, c := range set {
			if j := m(c); j >= 0 {
				ns = append(ns, j)
			}
		}
		if len(ns) == len(set) {
			out = append(out, ns)
		}
	}
	return out
}

// single makes f run in one task with one stream.
func (d *distPlanner) single(f frag) (frag, error) {
	if f.wide {
		f = d.cut(f, exec.ExchangeGather, nil, 1, false)
	}
	if f.n.Streams > 1 {
		g := &phys.PhysNode{ID: d.id(), Kind: phys.PhysExchange, Streams: 1, Columns: f.n.Columns, EstRows: f.n.EstRows,
			Exchange: &exec.ExchangeSpec{Kind: exec.ExchangeGather}, Inputs: []*phys.PhysNode{f.n}}
		f = frag{n: g, pure: f.pure}
	}
	return f, nil
}

// gatherWide gathers a wide f into one task (keeping its streams when it
// is single already).
func (d *distPlanner) gatherWide(f frag) frag {
	if f.wide {
		return d.cut(f, exec.ExchangeGather, nil, 1, false)
	}
	return f
}

// repartition sends f to Workers x Parallelism receivers by keys.
func (d *distPlanner) repartition(f frag, keys []int) frag {
	return d.cut(f, exec.ExchangeHash, keys, d.opts.Parallelism, true)
}

func (d *distPlanner) walk(n *phys.PhysNode) (frag, error) {
	f, err := d.walkNode(n)
	if err != nil {
		return f, err
	}
	return d.settle(n, f)
}

// settle finishes the plan f of node n as walk does: gathered when the
// embedded plan ran n as one stream.
func (d *distPlanner) settle(n *phys.PhysNode, f frag) (frag, error) {
	if isHeld(n) {
		// A held output is read where it is, by as many tasks as it has
		// parts; whatever reads it cuts a stage above it.
		return f, nil
	}
	if n.Streams == 1 && (f.wide || f.n.Streams > 1) && !streamFree(n.Kind) && !f.groupsWhole {
		// NB: the embedded plan ran n as one stream: whatever follows
		// (ORDER BY, LIMIT, a global aggregate) relies on seeing all
		// rows in one stream.
		return d.single(f)
	}
	return f, nil
}

// streamFree: the node's rows do not depend on how its input is split
// into streams or tasks (filters and projections work row by row; a hash
// join distributes its inputs itself), so a wide input stays wide through
// it even where the embedded plan ran it as one stream. The first node
// above that needs one stream gathers (walkNode), as does the root.
func streamFree(k phys.PhysKind) bool {
	return k == phys.PhysFilter || k == phys.PhysProject || k == phys.PhysHashJoin
}

func (d *distPlanner) walkNode(n *phys.PhysNode) (frag, error) {
	switch n.Kind {
	case phys.PhysScan:
		f := frag{n: with(n, n.Streams), wide: n.Streams > 1, pure: n.Streams == 1, rows: n.Scan.TableRows}
		if f.wide {
			for _, cc := range n.Scan.Clustered {
				f.cands = append(f.cands, rangeCand{col: cc.Out, scanID: n.ID, cc: cc})
			}
		}
		return f, nil
	case phys.PhysValues, phys.PhysSeries:
		return frag{n: with(n, 1), pure: true}, nil
	case phys.PhysSharedScan:
		def := d.sharedDef(n.Shared.Def)
		if def == nil {
			return frag{}, nferr.Internalf("distributed plan: shared subplan %d is not defined", n.Shared.Def)
		}
		if d.unshared[def.ID] {
			f, err := d.walk(d.renumber(def.Root))
			if err != nil {
				return f, err
			}
			return d.single(f)
		}
		if d.shared[def.ID] == nil {
			// Planned once, in one task (its readers' stage; see plan1).
			f, err := d.walk(def.Root)
			if err != nil {
				return f, err
			}
			if f, err = d.single(f); err != nil {
				return f, err
			}
			d.shared[def.ID] = &phys.PhysShared{ID: def.ID, Name: def.Name, Root: f.n}
		}
		return frag{n: with(n, 1)}, nil
	case phys.PhysRecursive, phys.PhysApply:
		return d.rerun(n)
	case phys.PhysExchange:
		return d.exchange(n)
	case phys.PhysHashJoin:
		return d.hashJoin(n)
	case phys.PhysNLJoin:
		return d.nlJoin(n)
	case phys.PhysUnion:
		return d.union(n)
	case phys.PhysHashAgg:
		if f, ok, err := d.splitRepartitionedAgg(n); ok || err != nil {
			return f, err
		}
		if f, ok, err := d.finalInPlace(n); ok || err != nil {
			return f, err
		}
	case phys.PhysRemote:
		if isHeld(n) {
			return frag{n: with(n, n.Streams), wide: true, tasks: len(n.Remote.Parts)}, nil
		}
		return frag{}, nferr.Internalf("distributed plan: the physical plan has a remote node already")
	}
	// One input, one operator per stream.
	if len(n.Inputs) != 1 {
		return frag{}, nferr.Internalf("distributed plan: %s node %d has %d inputs", n.Kind, n.ID, len(n.Inputs))
	}
	in, err := d.walk(n.Inputs[0])
	if err != nil {
		return in, err
	}
	return d.oneInput(n, in)
}

// oneInput plans node n of one input (one operator per stream) over in,
// its input planned.
func (d *distPlanner) oneInput(n *phys.PhysNode, in frag) (frag, error) {
	var err error
	if n.Streams == 1 && !streamFree(n.Kind) && (in.wide || in.n.Streams > 1) {
		if in, err = d.single(in); err != nil {
			return in, err
		}
	}
	out := frag{n: with(n, in.n.Streams, in.n), wide: in.wide, tasks: in.tasks}
	switch n.Kind {
	case phys.PhysFilter:
		out.hash, out.pure, out.rows = in.hash, in.pure, in.rows
		out.cands, out.ranged, out.keyed = in.cands, in.ranged, in.keyed
	case phys.PhysProject:
		out.pure, out.rows = in.pure, in.rows
		out.hash = projectKeys(n.Project, in.hash)
		col := func(c int) int {
			if m := projectKeys(n.Project, []int{c}); m != nil {
				return m[0]
			}
			return -1
		}
		out.keyed = shiftKeyed(in.keyed, col)
		out.cands, out.ranged = in.mapRange(col)
	case phys.PhysHashAgg:
		// Rows keyed on group columns stay so: their groups' rows are
		// in one task.
		out.keyed = aggKeyed(n.Agg, in.keyed)
	}
	return out, nil
}

// projectKeys maps hash columns through a projection (nil when one is not
// passed through as a bare column).
func projectKeys(p *phys.ProjectOp, keys []int) []int {
	if keys == nil {
		return nil
	}
	out := make([]int, len(keys))
	for i, k := range keys {
		out[i] = -1
		for j, x := range p.Exprs {
			if x.Kind == expr.KindColumn && x.Index == k {
				out[i] = j
				break
			}
		}
		if out[i] < 0 {
			return nil
		}
	}
	return out
}

func (d *distPlanner) sharedDef(id int) *phys.PhysShared {
	for _, s := range d.plan.Shared {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// renumber copies a subtree with fresh node IDs (a shared subplan planned
// at several readers).
func (d *distPlanner) renumber(n *phys.PhysNode) *phys.PhysNode {
	c := *n
	c.ID = d.id()
	c.Inputs = make([]*phys.PhysNode, len(n.Inputs))
	for i, in := range n.Inputs {
		c.Inputs[i] = d.renumber(in)
	}
	if t := n.Rerun(); t != nil {
		return c.WithRerun(d.renumber(t))
	}
	return &c
}

// rerun plans a recursive CTE (phys/recursive.go) or a subquery run per
// row (phys/apply.go) into one task: the input (the anchor, the rows the
// subquery runs for) is gathered there, and the tree built again for
// every run, which the physical planner left reading only work tables,
// constants and shared subplans, runs there whole (its exchanges local);
// the shared subplans it reads (its parts that do not change between
// runs) are planned like any other, so they read the cluster's tables in
// their own stages, once.
func (d *distPlanner) rerun(n *phys.PhysNode) (frag, error) {
	in, err := d.walk(n.Inputs[0])
	if err != nil {
		return in, err
	}
	if in, err = d.single(in); err != nil {
		return in, err
	}
	t, err := d.localTerm(n.Rerun())
	if err != nil {
		return frag{}, err
	}
	return frag{n: with(n.WithRerun(t), 1, in.n)}, nil
}

// localTerm copies a recursive term or a subquery run per row, planning
// the shared subplans it reads; its exchanges stay local ones.
func (d *distPlanner) localTerm(n *phys.PhysNode) (*phys.PhysNode, error) {
	switch n.Kind {
	case phys.PhysSharedScan:
		if d.unshared[n.Shared.Def] {
			// NB: a subplan planned at each reader would put network
			// receivers into the term, which is built again every run.
			return nil, nferr.Queryf("this query reads a subplan of a recursive CTE or of a subquery evaluated row by row from several stages of a distributed plan, which is not supported yet; run it embedded")
		}
		f, err := d.walkNode(n)
		return f.n, err
	case phys.PhysScan, phys.PhysRemote:
		return nil, nferr.Internalf("distributed plan: a recursive term or a subquery run per row has a %s node", n.Kind)
	}
	c := *n
	c.Inputs = make([]*phys.PhysNode, len(n.Inputs))
	for i, in := range n.Inputs {
		var err error
		if c.Inputs[i], err = d.localTerm(in); err != nil {
			return nil, err
		}
	}
	if t := n.Rerun(); t != nil {
		// A recursive CTE or an apply inside (it reads the outer work
		// table or parameters): local too.
		lt, err := d.localTerm(t)
		if err != nil {
			return nil, err
		}
		return c.WithRerun(lt), nil
	}
	return &c, nil
}

func (d *distPlanner) exchange(n *phys.PhysNode) (frag, error) {
	in, err := d.walk(n.Inputs[0])
	if err != nil {
		return in, err
	}
	return d.exchangeOver(n, in)
}

// exchangeOver plans exchange node n over in, its input planned.
func (d *distPlanner) exchangeOver(n *phys.PhysNode, in frag) (frag, error) {
	x := n.Exchange
	if x.Kind == exec.ExchangeBroadcast {
		// Broadcasts feed nested-loop joins, which plan them (nlJoin); one
		// found elsewhere runs in one task.
		in = d.gatherWide(in)
		return frag{n: with(n, x.Outputs, in.n)}, nil
	}
	if !in.wide {
		streams := 1
		if x.Kind == exec.ExchangeHash {
			streams = x.Outputs
		}
		return frag{n: with(n, streams, in.n)}, nil
	}
	switch x.Kind {
	case exec.ExchangeGather:
		return d.cut(in, exec.ExchangeGather, nil, 1, false), nil
	case exec.ExchangeMerge:
		// NB: receivers do not know which sender a payload came from, so
		// an ordered merge across the network is a gather and a sort.
		g := d.cut(in, exec.ExchangeGather, nil, 1, false)
		s := &phys.PhysNode{ID: d.id(), Kind: phys.PhysSort, Streams: 1, Columns: n.Columns, EstRows: n.EstRows,
			Sort: &exec.SortSpec{Keys: x.SortKeys}, Inputs: []*phys.PhysNode{g.n}}
		return frag{n: s}, nil
	case exec.ExchangeHash:
		return d.repartition(in, x.Keys), nil
	}
	return frag{}, nferr.Internalf("distributed plan: exchange kind %q", x.Kind)
}

// splitRepartitionedAgg plans a single-phase aggregate over a hash
// repartition of a wide input as partial -> network repartition -> final.
func (d *distPlanner) splitRepartitionedAgg(n *phys.PhysNode) (frag, bool, error) {
	x := n.Inputs[0]
	if n.Agg.Phase != "" && n.Agg.Phase != exec.AggSingle || x.Kind != phys.PhysExchange || x.Exchange.Kind != exec.ExchangeHash {
		return frag{}, false, nil
	}
	for _, a := range n.Agg.Aggs {
		if exec.NeedsAllRows(a) {
			return frag{}, false, nil
		}
	}
	if !equalInts(x.Exchange.Keys, n.Agg.GroupCols) {
		return frag{}, false, nil
	}
	in, err := d.walk(x.Inputs[0])
	if err != nil {
		return in, true, err
	}
	if !in.wide {
		return frag{n: with(n, x.Exchange.Outputs, with(x, x.Exchange.Outputs, in.n))}, true, nil
	}
	if in.keyedOn(n.Agg.GroupCols) {
		// Every group is whole in one task already (its rows were
		// repartitioned on some of its columns): one phase, the exchange
		// between the task's streams local.
		return frag{n: with(n, x.Exchange.Outputs, with(x, x.Exchange.Outputs, in.n)), wide: true, keyed: aggKeyed(n.Agg, in.keyed)}, true, nil
	}
	for i, g := range n.Agg.GroupCols {
		rp := d.rangeFor(in, g)
		if rp == nil {
			continue
		}
		// Split by value range on a group column, every group is whole in
		// one task: one phase, the exchange between its streams local;
		// or none, segmented, when the scan's row groups hold disjoint
		// ranges of that column (Q3, Q18: each group in one stream and
		// one row group; the local exchange cost Q3 1,473 batches of 20
		// rows on 3 workers).
		in = d.applyRange(in, g, rp.Cuts)
		an := with(n, x.Exchange.Outputs, with(x, x.Exchange.Outputs, in.n))
		if !n.Agg.Segmented && phys.SegmentsOn(in.n, g) && !d.plan.RuleDisabled(phys.RuleSegmentedAgg) {
			seg := *n.Agg
			seg.Segmented = true
			an = with(n, in.n.Streams, in.n)
			an.Agg = &seg
		}
		out := frag{n: an, wide: true}
		out.ranged = &rangedOn{cols: []int{i}, rp: in.ranged.rp} // group columns come first
		return out, true, nil
	}
	if d.partialUseless(n, in) || d.plan.RuleDisabled(phys.RulePartialAgg) {
		// Nearly one group per row in each task: a partial pass would
		// cost a hash table and send as many rows; repartition the rows.
		r := d.repartition(in, x.Exchange.Keys)
		return frag{n: with(n, r.n.Streams, r.n), wide: true, keyed: aggKeyed(n.Agg, r.keyed)}, true, nil
	}
	partial, final, err := exec.SplitAgg(*n.Agg)
	if err != nil {
		return frag{}, true, err
	}
	pn := &phys.PhysNode{ID: d.id(), Kind: phys.PhysHashAgg, Streams: in.n.Streams, Agg: &partial, Inputs: []*phys.PhysNode{in.n}, EstRows: n.EstRows * float64(in.n.Streams*d.opts.Workers)}
	sch, err := phys.OutputSchema(pn, []*arrow.Schema{phys.ColumnsSchema(in.n.Columns)})
	if err != nil {
		return frag{}, true, err
	}
	if pn.Columns, err = physColumns(sch); err != nil {
		return frag{}, true, err
	}
	keys := make([]int, len(final.GroupCols))
	copy(keys, final.GroupCols)
	r := d.repartition(frag{n: pn, wide: true}, keys)
	fn := &phys.PhysNode{ID: n.ID, Kind: phys.PhysHashAgg, Streams: r.n.Streams, Agg: &final, Columns: n.Columns, EstRows: n.EstRows, Inputs: []*phys.PhysNode{r.n}}
	return frag{n: fn, wide: true}, true, nil
}

// finalInPlace plans a final aggregate over a gather of partial
// aggregates (an aggregate of few groups: phys partial -> gather -> final)
// whose input holds each group's rows in one task: keyed on some group
// columns (repartitioned on them), or split, or splittable, by value range
// on one (a table stored in key order). Every task then finishes its own
// groups (partial per stream, a local gather, final) and the aggregate
// stays wide: no network gather, and what follows (a join on the group
// key: TPC-H Q2's minimum supply cost per part, joined back to partsupp)
// keeps the rows where they are. D75.
func (d *distPlanner) finalInPlace(n *phys.PhysNode) (frag, bool, error) {
	if n.Agg.Phase != exec.AggFinal || len(n.Agg.GroupCols) == 0 || len(n.Inputs) != 1 || d.opts.Workers < 2 {
		return frag{}, false, nil
	}
	x := n.Inputs[0]
	if x.Kind != phys.PhysExchange || x.Exchange.Kind != exec.ExchangeGather || len(x.Inputs) != 1 {
		return frag{}, false, nil
	}
	p := x.Inputs[0]
	if p.Kind != phys.PhysHashAgg || p.Agg.Phase != exec.AggPartial || len(p.Agg.GroupCols) != len(n.Agg.GroupCols) || len(p.Inputs) != 1 {
		return frag{}, false, nil
	}
	in, err := d.walk(p.Inputs[0])
	if err != nil {
		return in, true, err
	}
	whole := in.wide && in.keyedOn(p.Agg.GroupCols)
	var ranged *rangedOn
	if in.wide && !whole {
		for i, g := range p.Agg.GroupCols {
			if rp := d.rangeFor(in, g); rp != nil && len(rp.Cuts) == rp.Parts-1 {
				in = d.applyRange(in, g, rp.Cuts)
				ranged = &rangedOn{cols: []int{i}, rp: in.ranged.rp} // group columns come first
				whole = true
				break
			}
		}
	}
	pf, err := d.oneInput(p, in)
	if err == nil {
		pf, err = d.settle(p, pf)
	}
	if err != nil {
		return pf, true, err
	}
	if whole {
		fn := with(n, 1, with(x, 1, pf.n))
		return frag{n: fn, wide: true, tasks: pf.tasks, groupsWhole: true, keyed: pf.keyed, ranged: ranged}, true, nil
	}
	// As walkNode plans the three nodes, over the input walked once (a
	// walk cuts stages): the partial in every task, a network gather, the
	// final in one task.
	xf, err := d.exchangeOver(x, pf)
	if err == nil {
		xf, err = d.settle(x, xf)
	}
	if err != nil {
		return xf, true, err
	}
	f, err := d.oneInput(n, xf)
	return f, true, err
}

// aggKeyed maps the keyed column sets of an aggregate's input to its
// output, where group column i is column i (sets with another column
// drop).
func aggKeyed(a *exec.HashAggSpec, keyed [][]int) [][]int {
	return shiftKeyed(keyed, func(c int) int { return slices.Index(a.GroupCols, c) })
}

// partialUseless: the partial phase of aggregate n would hardly reduce
// its input in each of the Workers tasks (estimated distinct groups per
// task above PartialRatio of the task's rows; groups spread uniformly
// over the rows).
func (d *distPlanner) partialUseless(n *phys.PhysNode, in frag) bool {
	groups, rows := n.EstRows, in.n.EstRows/float64(d.opts.Workers)
	if len(n.Agg.GroupCols) == 0 || groups <= 0 || rows <= 0 {
		return false
	}
	distinct := groups * -math.Expm1(-rows/groups)
	return distinct > d.opts.PartialRatio*rows
}

func physColumns(sch *arrow.Schema) ([]phys.PhysColumn, error) {
	cols := make([]phys.PhysColumn, sch.NumFields())
	for i, f := range sch.Fields() {
		t, err := expr.TypeOf(f.Type)
		if err != nil {
			return nil, err
		}
		cols[i] = phys.PhysColumn{Name: f.Name, Type: t, Nullable: f.Nullable}
	}
	return cols, nil
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// replicate marks the scans of a pure single-task pipeline as read whole
// by every task.
func replicate(f frag) frag {
	return frag{n: withScans(f.n, func(_ *phys.PhysNode, s *phys.ScanOp) { s.Replicated = true }), wide: true}
}

// withScans copies the tree n with every scan's ScanOp copied and passed
// to set (with its node) to change.
func withScans(n *phys.PhysNode, set func(n *phys.PhysNode, s *phys.ScanOp)) *phys.PhysNode {
	c := *n
	c.Inputs = make([]*phys.PhysNode, len(n.Inputs))
	for i, in := range n.Inputs {
		c.Inputs[i] = withScans(in, set)
	}
	if c.Kind == phys.PhysScan {
		s := *c.Scan
		set(&c, &s)
		c.Scan = &s
	}
	return &c
}

// broadcastable: every task may join its probe rows against all build
// rows; false when the join keeps state per build row (outer joins
// preserving the build side, semi/anti/mark joins building on the left).
func broadcastable(s *exec.HashJoinSpec) bool { return s.EmitsWhileProbing() }

func (d *distPlanner) hashJoin(n *phys.PhysNode) (frag, error) {
	l, err := d.walk(n.Inputs[0])
	if err != nil {
		return l, err
	}
	r, err := d.walk(n.Inputs[1])
	if err != nil {
		return r, err
	}
	spec := n.Join
	buildLeft := spec.Build == exec.SideLeft
	probe, build := l, r
	pkeys, bkeys := spec.LeftKeys, spec.RightKeys
	if buildLeft {
		probe, build = r, l
		pkeys, bkeys = spec.RightKeys, spec.LeftKeys
	}
	canBroadcast := broadcastable(spec)
	canPartition := !spec.NullAware && len(pkeys) > 0
	ranged := false
	replicateBuild := func() {
		if build.pure && !build.wide && build.rows <= d.opts.ReplicateRows {
			build = replicate(build)
		} else {
			build = d.cut(build, exec.ExchangeBroadcast, nil, 1, true)
		}
	}
	partitioned := false
	partitionBoth := func() {
		partitioned = true
		if !(probe.wide && equalInts(probe.hash, pkeys)) {
			if dk, ok := d.distinctKeys(n, probe, build, pkeys); ok {
				// The probe now carries its keys alone, as columns 0..k-1.
				probe, pkeys = dk, seq(len(pkeys))
				js := *spec
				js.RightKeys = pkeys
				spec = &js
				n = with(n, n.Streams, n.Inputs...)
				n.Join = spec
			}
			probe = d.repartition(probe, pkeys)
		}
		if !(build.wide && equalInts(build.hash, bkeys)) {
			build = d.repartition(build, bkeys)
		}
	}
	// rk is the join key the sides are split by value range on (ranged).
	rk := 0
	// rangeBuild sends the build by value range to the tasks of the probe
	// split on key rk (D72): the probe does not move, and each task builds
	// a hash table of its own range only.
	rangeBuild := func() bool {
		i, rp := d.rangeBuildKey(n, probe, build, pkeys, bkeys)
		if rp == nil {
			return false
		}
		rk, ranged = i, true
		probe = d.applyRange(probe, pkeys[i], rp.Cuts)
		build = d.cutRange(build, bkeys[i], rp)
		return true
	}
	switch {
	case !probe.wide && !build.wide:
	case probe.wide && !build.wide:
		// NB: a build side in one task is broadcast unless that sends
		// more than repartitioning both sides would: Q10's 57,000
		// customer-order rows with four strings each, broadcast to 16
		// workers, sent 12x its probe's bytes and built 16 hash tables.
		bcast := canBroadcast && (!canPartition || broadcastCheaper(build.n, probe.n, d.opts, planMargin(build.n, probe.n)))
		switch {
		case bcast && build.pure && build.rows <= d.opts.ReplicateRows:
			replicateBuild() // every task reads it: nothing crosses
		case rangeBuild():
		case bcast:
			replicateBuild()
		case canPartition:
			partitionBoth()
		default:
			probe = d.gatherWide(probe)
		}
	case !probe.wide && build.wide:
		// The probe is in one task: bring the build there when it is the
		// smaller side (Q10's filtered orders to the customer scan),
		// rather than repartitioning both.
		if canPartition && estSize(build.n) > estSize(probe.n) {
			partitionBoth()
		} else {
			build = d.gatherWide(build)
		}
	default:
		coLocated := probe.hash != nil && build.hash != nil && equalInts(probe.hash, pkeys) && equalInts(build.hash, bkeys)
		small := broadcastCheaper(build.n, probe.n, d.opts, planMargin(build.n, probe.n))
		var pr, br *phys.RangePart
		if len(pkeys) == 1 && !spec.NullAware {
			pr, br = d.rangeFor(probe, pkeys[0]), d.rangeFor(build, bkeys[0])
		}
		var cuts []int64
		switch {
		case pr == nil || br == nil:
		case probe.ranged != nil && build.ranged != nil:
			if pr.Same(br) {
				cuts = pr.Cuts
			}
		case probe.ranged != nil:
			cuts = pr.Cuts
		case build.ranged != nil:
			cuts = br.Cuts
		case len(br.Col.Min) > len(pr.Col.Min):
			cuts = br.Cuts // the finer row groups set the bounds
		default:
			cuts = pr.Cuts
		}
		switch {
		case coLocated:
			partitioned = true
		case cuts != nil:
			// Both sides split alike by value range on the keys (or can
			// be): equal keys are in the same task already.
			probe, build = d.applyRange(probe, pkeys[0], cuts), d.applyRange(build, bkeys[0], cuts)
			ranged = true
		case rangeBuild():
		case canBroadcast && (small || !canPartition):
			replicateBuild()
		case canPartition:
			partitionBoth()
		default:
			probe, build = d.gatherWide(probe), d.gatherWide(build)
		}
	}
	l, r = probe, build
	if buildLeft {
		l, r = build, probe
	}
	out := frag{n: with(n, probe.n.Streams, l.n, r.n), wide: probe.wide, tasks: probe.tasks}
	// The probe rows stay where they were: what is known of their
	// distribution carries over (their columns first, or after the left
	// input's when the build is on the left and the join keeps them).
	shift := func(col int) int { return col + len(l.n.Columns) }
	keepRight := spec.Type == exec.JoinInner || spec.Type == exec.JoinLeft || spec.Type == exec.JoinRight || spec.Type == exec.JoinFull
	switch {
	case !probe.wide:
	case !buildLeft:
		out.cands, out.ranged, out.keyed, out.hash = probe.cands, probe.ranged, probe.keyed, probe.hash
	case keepRight:
		out.cands, out.ranged = probe.mapRange(shift)
		out.keyed = shiftKeyed(probe.keyed, shift)
		out.hash = shiftCols(probe.hash, shift)
	}
	// Both sides split by range, or repartitioned, on the keys: the keys
	// say where a row is, except a key an outer join fills with NULLs for
	// unmatched rows of the other side.
	switch {
	case ranged:
		out.cands, out.ranged = nil, nil
		if cols := joinKeyCols(spec.Type, spec.LeftKeys[rk:rk+1], shiftCols(spec.RightKeys[rk:rk+1], shift)); cols != nil {
			out.ranged = &rangedOn{cols: slices.Concat(cols...), rp: l.ranged.rp}
		}
	case partitioned && probe.wide:
		out.keyed = joinKeyCols(spec.Type, spec.LeftKeys, shiftCols(spec.RightKeys, shift))
	}
	return out, nil
}

// rangeBuildKey picks the join key by whose value range join n's build
// side may be sent to the probe's tasks (D72): the probe is split, or can
// be, by value range on that key (rangeFor: a table stored in key order)
// and the build's key is an integer column. The range exchange moves the
// build once (its bytes x (Workers-1)/Workers) where a broadcast sends it
// to every worker and builds Workers hash tables of all of it, and a
// repartition moves the probe too; so it wins whenever it applies, except
// against a build every task reads for itself (replicated). Not for
// null-aware joins (every task must see a NULL build key), a build that
// is itself split by range (the sides are then split alike, or not at
// all), or with RuleRangeBuild disabled.
func (d *distPlanner) rangeBuildKey(n *phys.PhysNode, probe, build frag, pkeys, bkeys []int) (int, *phys.RangePart) {
	if n.Join.NullAware || !probe.wide || build.ranged != nil || d.plan.RuleDisabled(phys.RuleRangeBuild) {
		return 0, nil
	}
	for i, k := range pkeys {
		if i >= len(bkeys) || bkeys[i] < 0 || bkeys[i] >= len(build.n.Columns) {
			continue
		}
		if t := build.n.Columns[bkeys[i]].Type.ID; t != expr.TypeInt32 && t != expr.TypeInt64 {
			continue
		}
		if rp := d.rangeFor(probe, k); rp != nil && len(rp.Cuts) == rp.Parts-1 {
			return i, rp
		}
	}
	return 0, nil
}

// cutRange cuts f into a stage whose rows go, by the value of column key,
// to the tasks of a consumer split by value range at rp (an
// exec.ExchangeRange, one receiver per task): task t receives the rows
// whose key lies in rp's part t.
func (d *distPlanner) cutRange(f frag, key int, rp *phys.RangePart) frag {
	out := d.cut(f, exec.ExchangeRange, []int{key}, 1, true)
	st := d.stages[len(d.stages)-1]
	st.Out.Cuts = slices.Clone(rp.Cuts)
	out.ranged = &rangedOn{cols: []int{key}, rp: rp}
	return out
}

// distinctKeys: a semi, anti or mark join that builds on its left input
// uses the probe side (right) only for its keys, so a repartitioned probe
// can send each task's distinct keys instead of its rows (TPC-H Q22 sent
// all 1.5M orders to join 42,000 customers). Worth it when the probe has
// more rows than Workers times the build's: the join's key filter (on the
// probe's scans) lets through only keys the build holds, so each task
// keeps at most about the build's rows. Not for null-aware joins or a
// residual condition (it reads the probe's other columns).
func (d *distPlanner) distinctKeys(n *phys.PhysNode, probe, build frag, pkeys []int) (frag, bool) {
	spec := n.Join
	switch {
	case spec.Build != exec.SideLeft || spec.NullAware || spec.Residual != nil || len(pkeys) == 0:
		return frag{}, false
	case spec.Type != exec.JoinSemi && spec.Type != exec.JoinAnti && spec.Type != exec.JoinMark:
		return frag{}, false
	case d.plan.RuleDisabled(phys.RuleSemiDistinctKeys):
		return frag{}, false
	}
	bound := build.n.EstRows * float64(d.opts.Workers)
	if probe.n.EstRows <= 2*bound {
		return frag{}, false
	}
	agg := &exec.HashAggSpec{GroupCols: slices.Clone(pkeys)}
	an := &phys.PhysNode{ID: d.id(), Kind: phys.PhysHashAgg, Streams: probe.n.Streams, Agg: agg, Inputs: []*phys.PhysNode{probe.n}, EstRows: min(probe.n.EstRows, bound)}
	sch, err := phys.OutputSchema(an, []*arrow.Schema{phys.ColumnsSchema(probe.n.Columns)})
	if err != nil {
		return frag{}, false
	}
	if an.Columns, err = physColumns(sch); err != nil {
		return frag{}, false
	}
	return frag{n: an, wide: probe.wide, tasks: probe.tasks}, true
}

// seq is 0, 1, ..., k-1.
func seq(k int) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = i
	}
	return out
}

// joinKeyCols are the join key columns of the output (left's, right's)
// that still hold every row's key: both for an inner join, the right
// ones for a right join, none for a full join, the left ones otherwise
// (left, semi, anti and mark joins output the left input's rows).
func joinKeyCols(t exec.JoinType, left, right []int) [][]int {
	switch t {
	case exec.JoinInner:
		return [][]int{left, right}
	case exec.JoinRight:
		return [][]int{right}
	case exec.JoinFull:
		return nil
	}
	return [][]int{left}
}

// shiftCols maps columns through m (nil stays nil).
func shiftCols(cols []int, m func(int) int) []int {
	if cols == nil {
		return nil
	}
	out := make([]int, len(cols))
	for i, c := range cols {
		out[i] = m(c)
	}
	return out
}

// estSize estimates the size of n's output in column values (rows x
// columns): what moving it across the network costs, roughly.
func estSize(n *phys.PhysNode) float64 { return n.EstRows * float64(max(len(n.Columns), 1)) }

// broadcastCheaper: sending build, were it factor times its estimate, to
// every other worker moves at most BroadcastFactor times the bytes of the
// probe side (broadcasting sends the build's bytes to Workers-1 workers
// and builds a hash table on each; repartitioning both sends (build +
// probe) x (Workers-1)/Workers, where the probe's bytes dominate). Bytes,
// not rows: a build of a few wide rows (strings) weighs more than as many
// narrow probe rows. The planner asks with factor 1, the adaptive margin
// (robustChoice) with AdaptiveMargin.
func broadcastCheaper(build, probe *phys.PhysNode, o DistOptions, factor float64) bool {
	return estBytes(build)*factor*float64(o.Workers-1) <= o.BroadcastFactor*estBytes(probe)
}

// planMargin is the factor the static plan applies to a build's estimate
// before it broadcasts it: 1, or confidentMargin for a large build (at
// least probePointRows) against a probe whose estimate is not confident.
// Such a probe may be far smaller than estimated (a semi join on a HAVING
// aggregate: TPC-H Q18's 624 orders at SF 10, estimated 15M), and then
// every worker builds a hash table of the whole build for nothing (Q18 at
// SF 10 broadcast 1.5M customers and built 4 tables of 588 MiB each);
// adaptive execution cannot correct it when the probe is too large to
// hold (fits). Repartitioning both sides costs at most the probe's
// bytes more when the estimate was right.
func planMargin(build, probe *phys.PhysNode) float64 {
	if build.EstRows >= probePointRows && !confident(probe) {
		return confidentMargin
	}
	return 1
}

// estBytes estimates n's output in bytes: its estimated rows times a
// row's width (estRowBytes).
func estBytes(n *phys.PhysNode) float64 { return n.EstRows * estRowBytes(n.Columns) }

// estStringBytes is the width assumed for a string or binary value (its
// bytes and its 4-byte offset): TPC-H's names, phones and addresses are
// 10 to 40 bytes, its comments longer.
const estStringBytes = 28

// estRowBytes is a row's width in Arrow: each column's fixed width, or
// estStringBytes for strings and binary (and per array element).
func estRowBytes(cols []phys.PhysColumn) float64 {
	w := 0.0
	for _, c := range cols {
		w += typeBytes(c.Type)
	}
	return max(w, 1)
}

func typeBytes(t expr.Type) float64 {
	switch t.ID {
	case expr.TypeBool:
		return 1
	case expr.TypeInt32, expr.TypeDate:
		return 4
	case expr.TypeDecimal:
		if t.Precision > expr.MaxDecimal64Precision {
			return 16
		}
		return 8
	case expr.TypeInterval:
		return 16
	case expr.TypeString, expr.TypeBinary:
		return estStringBytes
	case expr.TypeArray:
		if t.Elem != nil {
			return 4 + 4*typeBytes(*t.Elem)
		}
		return estStringBytes
	default: // int64, float64, timestamps, time
		return 8
	}
}

func (d *distPlanner) nlJoin(n *phys.PhysNode) (frag, error) {
	l, err := d.walk(n.Inputs[0])
	if err != nil {
		return l, err
	}
	rn := n.Inputs[1]
	var bx *phys.PhysNode
	if rn.Kind == phys.PhysExchange && rn.Exchange.Kind == exec.ExchangeBroadcast {
		bx, rn = rn, rn.Inputs[0]
	}
	r, err := d.walk(rn)
	if err != nil {
		return r, err
	}
	// The right side must reach every left stream of every task.
	spread := func(r frag, m int) frag {
		if r.n.Streams == 1 && m == 1 {
			return r
		}
		r, _ = d.single(r)
		x := bx
		if x == nil {
			x = &phys.PhysNode{ID: d.id(), Kind: phys.PhysExchange, Columns: r.n.Columns, EstRows: r.n.EstRows}
		}
		b := with(x, m, r.n)
		b.Exchange = &exec.ExchangeSpec{Kind: exec.ExchangeBroadcast, Outputs: m}
		return frag{n: b, pure: r.pure}
	}
	m := l.n.Streams
	switch {
	case !l.wide:
		r = spread(d.gatherWide(r), m)
	case r.pure && !r.wide && r.rows <= d.opts.ReplicateRows:
		r = replicate(spread(r, m))
	default:
		r = d.cut(r, exec.ExchangeBroadcast, nil, m, true)
	}
	return frag{n: with(n, m, l.n, r.n), wide: l.wide}, nil
}

func (d *distPlanner) union(n *phys.PhysNode) (frag, error) {
	fs := make([]frag, len(n.Inputs))
	allWide := true
	for i, in := range n.Inputs {
		f, err := d.walk(in)
		if err != nil {
			return f, err
		}
		fs[i] = f
		allWide = allWide && f.wide
	}
	var ins []*phys.PhysNode
	streams := 0
	for _, f := range fs {
		if !allWide {
			f = d.gatherWide(f)
		}
		ins = append(ins, f.n)
		streams += f.n.Streams
	}
	return frag{n: with(n, streams, ins...), wide: allWide}, nil
}

// ExplainDistributed describes the stages of a distributed plan, the root
// stage first; stats (nil for EXPLAIN) holds EXPLAIN ANALYZE figures.
func ExplainDistributed(dp *DistPlan, stats *DistStats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Distributed plan: %d stages, %d workers x %d streams\n", len(dp.Stages), dp.Workers, dp.Parallelism)
	switch {
	case len(dp.Adaptive) > 0:
		for _, st := range dp.Adaptive {
			fmt.Fprintf(&b, "Adaptive %s\n", st)
		}
	case dp.CanAdapt():
		n := len(adaptPoints(dp, dp.phys, dp.opts))
		fmt.Fprintf(&b, "Adaptive: %d join build side(s) run first, and the stages after them are planned again with their real sizes (SET adaptive = off: this plan)\n", n)
	}
	for i := len(dp.Stages) - 1; i >= 0; i-- {
		explainStage(&b, dp, dp.Stages[i], stats)
	}
	for _, w := range dp.Waves {
		if w.Stats == nil {
			continue
		}
		fmt.Fprintf(&b, "Wave %d (ran before the stages above, %s): %d stage(s)\n", w.Wave, phys.FormatDuration(w.Wall), len(w.Plan.Stages))
		for i := len(w.Plan.Stages) - 1; i >= 0; i-- {
			explainStage(&b, w.Plan, w.Plan.Stages[i], w.Stats)
		}
	}
	return b.String()
}

// explainStage describes stage s of dp, with its tasks' and operators'
// figures when stats has them.
func explainStage(b *strings.Builder, dp *DistPlan, s *Stage, stats *DistStats) {
	out := "to the coordinator"
	if s.Out != nil {
		switch s.Out.Kind {
		case exec.ExchangeRange:
			out = fmt.Sprintf("range [%s] at %v to stage %d (exchange %d, %d receivers)", phys.ColNames(s.Root.Columns, s.Out.Keys), s.Out.Cuts, s.Out.Consumer, s.Out.Exchange, dp.Receivers(s))
		case exec.ExchangeHash:
			out = fmt.Sprintf("hash [%s] to stage %d (exchange %d, %d receivers)", phys.ColNames(s.Root.Columns, s.Out.Keys), s.Out.Consumer, s.Out.Exchange, dp.Receivers(s))
			for _, st := range s.Out.Splits {
				how := "spread over"
				if s.Out.SplitCopy {
					how = "copied to"
				}
				out += fmt.Sprintf(", task %d's partitions %s tasks %v too", st.Task, how, st.Extra)
			}
		default:
			out = fmt.Sprintf("%s to stage %d (exchange %d, %d receivers)", s.Out.Kind, s.Out.Consumer, s.Out.Exchange, dp.Receivers(s))
		}
	}
	tasks := fmt.Sprintf("%d task(s)", s.Tasks)
	if len(s.Coalesced) > 0 {
		tasks += fmt.Sprintf(" (coalesced from %d)", len(s.Coalesced))
	}
	fmt.Fprintf(b, "Stage %d: %s, output %s\n", s.ID, tasks, out)
	for _, f := range dp.KeyFilters {
		switch s.ID {
		case f.JoinStage:
			fmt.Fprintf(b, "  join filter %d: node %d publishes %s to stage %d\n", f.ID, f.Join, f.Name, f.ScanStage)
		case f.ScanStage:
			fmt.Fprintf(b, "  join filter %d: node %d applies %s from stage %d\n", f.ID, f.Scan, f.Name, f.JoinStage)
		}
	}
	var st map[int]*phys.OpStats
	if stats != nil {
		st = stats.Ops[s.ID]
		for _, t := range stats.Tasks[s.ID] {
			fmt.Fprintf(b, "  task %d on %s: %d rows out, sent %s, received %s, time %s\n", t.Task, t.Node, t.Rows, exec.FormatBytes(t.BytesSent), exec.FormatBytes(t.BytesReceived), phys.FormatDuration(t.Wall))
		}
	}
	sub := phys.ExplainPhysical(&phys.PhysPlan{Root: s.Root, Shared: s.Shared}, st)
	for _, line := range strings.Split(strings.TrimRight(sub, "\n"), "\n") {
		b.WriteString("  " + line + "\n")
	}
}

// widestScan is the most row-group tasks any scan of pp has (at least 1),
// or 0 when a scan's row groups are unknown (a table without storage: a
// test catalog).
func widestScan(pp *phys.PhysPlan) int {
	widest, unknown := 1, false
	visit := func(n *phys.PhysNode) {
		if isHeld(n) {
			widest = max(widest, len(n.Remote.Parts))
			return
		}
		if n.Kind != phys.PhysScan || n.Scan == nil {
			return
		}
		if n.Scan.RowGroups < 0 {
			unknown = true
		}
		widest = max(widest, len(n.Scan.Tasks))
	}
	pp.Root.Walk(visit)
	for _, s := range pp.Shared {
		s.Root.Walk(visit)
	}
	if unknown {
		return 0
	}
	return widest
}
