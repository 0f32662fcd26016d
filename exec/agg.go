package exec

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
)

// AggFunc names an aggregate function.
type AggFunc string

// The aggregate functions. Result and state types are listed in
// agg_funcs.go.
const (
	AggCountStar AggFunc = "count_star" // count(*): rows, NULLs included
	AggCount     AggFunc = "count"      // count(x): non-NULL values
	AggSum       AggFunc = "sum"
	AggAvg       AggFunc = "avg"
	AggMin       AggFunc = "min"
	AggMax       AggFunc = "max"
)

// AggPhase says which part of a split aggregation an operator computes.
type AggPhase string

// The phases. A distributed (or parallel) plan runs Partial where the data
// is and Final after a repartition or gather; a local plan runs Single.
const (
	// AggSingle reads raw rows and emits results ("" means AggSingle).
	AggSingle AggPhase = "single"
	// AggPartial reads raw rows and emits group keys and partial states.
	AggPartial AggPhase = "partial"
	// AggFinal reads AggPartial's output and emits results.
	AggFinal AggPhase = "final"
)

// AggSpec is one aggregate of a HashAggSpec.
type AggSpec struct {
	Func AggFunc
	// Arg is the input column of the argument (ignored by count(*)). In
	// the final phase it is the first of the aggregate's state columns.
	Arg int
	// Distinct aggregates each distinct value once per group
	// (count(DISTINCT x)). Phase Single only: a split plan rewrites
	// DISTINCT aggregates into two aggregation levels.
	Distinct bool
	// Name is the output column name (default "func(column)").
	Name string
	// Sep is string_agg's separator.
	Sep string `json:",omitempty"`
	// Quantile is quantile_cont's and percentile_disc's fraction.
	Quantile float64 `json:",omitempty"`
	// Desc: percentile_disc over a descending order.
	Desc bool `json:",omitempty"`
	// Filter is the input column of a boolean FILTER (WHERE ...): only the
	// rows where it is TRUE reach the aggregate (DISTINCT sees the rows
	// left). nil: every row. The final phase ignores it (SplitAgg drops
	// it: the partial applied it).
	Filter *int `json:",omitempty"`
}

// HashAggSpec configures a hash aggregate: plain data, shipped to workers.
type HashAggSpec struct {
	// GroupCols are the input columns of the group key; none gives a
	// global aggregate (exactly one output row, even over no input).
	GroupCols []int
	Aggs      []AggSpec
	Phase     AggPhase
	// Segmented (single phase, no DISTINCT or ordered-set aggregate): the
	// input arrives in segments whose groups are disjoint (a scan of a
	// table stored in key order, one row group a segment, grouped on the
	// key). With a SegmentClock attached (SetSegmentClocks) the
	// aggregate emits and forgets its groups at each segment's end, so it
	// holds one segment's groups at a time; without one it aggregates as
	// usual (still right: the planner only sets it where every group's
	// rows reach one instance).
	Segmented bool `json:"segmented,omitempty"`
}

// SegmentClock counts the segments a scan started (exec's side of
// HashAggSpec.Segmented): the scan ticks it when it starts reading a new
// segment, and the aggregate in the same pipeline (same goroutine)
// compares it between batches. Not safe for concurrent use.
type SegmentClock struct{ n uint64 }

// Tick marks the start of a new segment.
func (c *SegmentClock) Tick() { c.n++ }

// SetSegmentClocks attaches clocks[i] to hash aggregate ops[i] when its
// spec is Segmented (one clock per stream, ticked by that stream's scan).
// Call before Open.
func SetSegmentClocks(ops []Operator, clocks []*SegmentClock) {
	for i, o := range ops {
		a, ok := o.(*HashAgg)
		if !ok || i >= len(clocks) || !a.spec.Segmented || a.spec.phase() != AggSingle || len(a.spec.GroupCols) == 0 {
			continue
		}
		all := false
		for _, ag := range a.spec.Aggs {
			all = all || NeedsAllRows(ag)
		}
		if !all {
			a.seg = clocks[i]
		}
	}
}

func (s HashAggSpec) phase() AggPhase {
	if s.Phase == "" {
		return AggSingle
	}
	return s.Phase
}

// numStates is the number of partial state columns of an aggregate.
func numStates(f AggFunc) int {
	switch {
	case f == AggAvg:
		return 2
	case isVarianceAgg(f):
		return 3
	}
	return 1
}

// SplitAgg splits a single-phase aggregate into a partial aggregate (run
// where the rows are) and the final aggregate over the partial's output:
// group keys first, then each aggregate's state columns in order.
func SplitAgg(s HashAggSpec) (partial, final HashAggSpec, err error) {
	if s.phase() != AggSingle {
		return partial, final, nferr.Internalf("split aggregate: phase %s is already split", s.Phase)
	}
	for _, a := range s.Aggs {
		if NeedsAllRows(a) {
			return partial, final, nferr.Internalf("split aggregate: %s (DISTINCT or a quantile) needs all of a group's rows in one place, not a split", a.Func)
		}
	}
	partial = HashAggSpec{GroupCols: append([]int(nil), s.GroupCols...), Aggs: append([]AggSpec(nil), s.Aggs...), Phase: AggPartial}
	final = HashAggSpec{Phase: AggFinal}
	for i := range s.GroupCols {
		final.GroupCols = append(final.GroupCols, i)
	}
	col := len(s.GroupCols)
	for _, a := range s.Aggs {
		fa := a
		fa.Arg, fa.Filter = col, nil
		col += numStates(a.Func)
		final.Aggs = append(final.Aggs, fa)
	}
	return partial, final, nil
}

// HashAgg is the hash aggregate operator: it consumes its whole input into
// a keyTable and per-group states, then emits one row per group (in order
// of first appearance) in batches of env.BatchSize.
type HashAgg struct {
	in     Operator
	spec   HashAggSpec
	schema *arrow.Schema
	keys   []colInfo
	argDT  []arrow.DataType // per aggregate: argument type (final: first state type)
	op     string

	env      *Env
	acct     *Account
	table    *keyTable
	fns      []aggFn
	dist     []*keyTable // per aggregate, DISTINCT filter tables
	fnBytes  int64
	ngroups  int
	consumed bool
	emitted  int
	opState

	gids, dgids, subGids []uint32
	gphys                []uint32
	subSel               []int32
	fGids                []uint32 // the rows a FILTER keeps
	fSel                 []int32
	keyCols, stCols      []arrow.Array
	zeros                []uint32

	level    int       // spill recursion depth: 0 for the planned operator
	sp       *aggSpill // set once the aggregate spills
	distAcct *Account  // DISTINCT sets of a spilling aggregate
	pending  *Batch    // partial phase: the batch to aggregate after a flush
	flushing bool      // partial phase: emitting early to free memory
	flushes  int       // partial phase: early flushes so far

	seg     *SegmentClock // segmented: the input's segment clock
	segAt   uint64        // segmented: the segment of the groups held
	segDone bool          // the flush under way ends a segment
}

// NewHashAgg validates spec against the input schema and builds the
// operator.
func NewHashAgg(in Operator, spec HashAggSpec) (*HashAgg, error) {
	a := &HashAgg{in: in, spec: spec, op: "hash aggregate"}
	if p := spec.phase(); p != AggSingle && p != AggPartial && p != AggFinal {
		return nil, nferr.Internalf("hash aggregate: unknown phase %q", spec.Phase)
	}
	s := in.Schema()
	var fields []arrow.Field
	for _, g := range spec.GroupCols {
		c, err := classifyCol(s, g, a.op, "group")
		if err != nil {
			return nil, err
		}
		a.keys = append(a.keys, c)
		f := s.Field(g)
		fields = append(fields, arrow.Field{Name: f.Name, Type: f.Type, Nullable: true})
	}
	final := spec.phase() == AggFinal
	for i, ag := range spec.Aggs {
		name := ag.Name
		var dt arrow.DataType = typInt64
		if ag.Func != AggCountStar || final {
			width := 1
			if final {
				width = numStates(ag.Func)
			}
			if ag.Arg < 0 || ag.Arg+width > s.NumFields() {
				return nil, nferr.Queryf("%s: aggregate %d (%s) argument column %d out of range (input has %d columns)", a.op, i, ag.Func, ag.Arg, s.NumFields())
			}
			dt = s.Field(ag.Arg).Type
			if name == "" {
				name = fmt.Sprintf("%s(%s)", ag.Func, s.Field(ag.Arg).Name)
			}
		} else if name == "" {
			name = "count(*)"
		}
		if f := ag.Filter; f != nil && !final {
			if *f < 0 || *f >= s.NumFields() || s.Field(*f).Type.ID() != arrow.BOOL {
				return nil, nferr.Queryf("%s: aggregate %d (%s) filter column %d is not a boolean input column", a.op, i, ag.Func, *f)
			}
		}
		if ag.Distinct && spec.phase() != AggSingle {
			return nil, nferr.Queryf("%s: %s(DISTINCT) only runs in a single-phase aggregate", a.op, ag.Func)
		}
		_, t, err := newAggFn(ag.Func, dt, final, a.op)
		if err != nil {
			return nil, err
		}
		if final {
			for k := 1; k < numStates(ag.Func); k++ {
				if got := s.Field(ag.Arg + k).Type; !arrow.TypeEqual(got, t.states[k]) {
					return nil, nferr.Queryf("%s: %s state column %d has type %s, want %s", a.op, ag.Func, ag.Arg+k, got, t.states[k])
				}
			}
		}
		a.argDT = append(a.argDT, dt)
		if spec.phase() == AggPartial {
			for k, st := range t.states {
				fields = append(fields, arrow.Field{Name: fmt.Sprintf("%s$%d", name, k), Type: st, Nullable: true})
			}
		} else {
			fields = append(fields, arrow.Field{Name: name, Type: t.result, Nullable: ag.Func != AggCount && ag.Func != AggCountStar})
		}
	}
	a.schema = arrow.NewSchema(fields, nil)
	return a, nil
}

// Schema implements Operator: group columns, then one column per aggregate
// (Partial: its state columns).
func (a *HashAgg) Schema() *arrow.Schema { return a.schema }

// Open implements Operator.
func (a *HashAgg) Open(env *Env) error {
	a.env = env
	if len(a.keys) > 0 {
		a.acct = env.NewSpillableAccount(a.op)
		a.table = newKeyTable(a.keys, a.acct)
	} else {
		// NB: a global aggregate holds one group and cannot spill: it
		// must not stop at the spill headroom.
		a.acct = env.Budget.NewAccount(a.op)
	}
	final := a.spec.phase() == AggFinal
	a.fns = make([]aggFn, len(a.spec.Aggs))
	a.dist = make([]*keyTable, len(a.spec.Aggs))
	for i, ag := range a.spec.Aggs {
		fn, err := newAggFnOf(ag, a.argDT[i], final, a.op)
		if err != nil {
			return err
		}
		a.fns[i] = fn
		if ag.Distinct {
			c, ok := classify(a.argDT[i])
			if !ok {
				// NB: an unclassified key would hash every value alike.
				return nferr.Queryf("%s: %s(DISTINCT %s) is not supported", a.op, ag.Func, expr.TypeName(a.argDT[i]))
			}
			acct := a.acct
			if env.Spill != nil && a.table != nil {
				// NB: a spilling aggregate keeps the groups it has in
				// memory, and their DISTINCT sets keep growing; they
				// make the table's next growth fail and spill instead.
				if a.distAcct == nil {
					a.distAcct = env.Budget.NewForcedAccount(a.op + " distinct values")
				}
				acct = a.distAcct
			}
			a.dist[i] = newKeyTable([]colInfo{{dt: arrow.PrimitiveTypes.Uint32, class: pcUint, width: 4}, c}, acct)
		}
	}
	if len(a.keys) == 0 {
		a.ngroups = 1
		for _, fn := range a.fns {
			fn.grow(1)
		}
	}
	return a.in.Open(env)
}

// Next implements Operator.
func (a *HashAgg) Next() (*Batch, error) {
	if done, err := a.begin(); done {
		return nil, err
	}
	if !a.consumed {
		if err := a.consume(); err != nil {
			return a.fail(err)
		}
		a.consumed = true
	}
	for a.flushing && a.emitted >= a.ngroups {
		// A partial aggregate emitted its groups early to free memory, or
		// a segmented one ended a segment: start afresh with the rest of
		// the input.
		if err := a.restart(); err != nil {
			return a.fail(err)
		}
		if err := a.consume(); err != nil {
			return a.fail(err)
		}
	}
	if a.emitted >= a.ngroups {
		if a.sp != nil {
			b, err := a.sp.next(a)
			if err != nil {
				a.err = err
			}
			return b, err
		}
		// NB: free the memory now, not at Close: the operators above
		// may still need it.
		a.releaseState()
		return nil, nil
	}
	if err := a.env.Ctx.Err(); err != nil {
		return a.fail(nferr.With(nferr.KindCanceled, err))
	}
	start := a.emitted
	end := min(start+max(a.env.BatchSize, 1), a.ngroups)
	cols, err := a.emit(start, end)
	if err != nil {
		return a.fail(err)
	}
	a.emitted = end
	return a.produce(cols, end-start), nil
}

func (a *HashAgg) emit(start, end int) ([]arrow.Array, error) {
	alloc := a.env.Alloc
	var cols []arrow.Array
	if a.table != nil {
		cols = a.table.decodeKeys(alloc, start, end)
	}
	for _, fn := range a.fns {
		if a.spec.phase() == AggPartial {
			cols = append(cols, fn.partial(alloc, start, end)...)
			continue
		}
		r, err := fn.result(alloc, start, end)
		if err != nil {
			releaseArrays(cols)
			return nil, nferr.Wrap(nferr.KindQuery, err, "%s", a.op)
		}
		cols = append(cols, r)
	}
	return cols, nil
}

func (a *HashAgg) consume() error {
	for {
		if err := a.env.Ctx.Err(); err != nil {
			return nferr.With(nferr.KindCanceled, err)
		}
		b := a.pending
		a.pending = nil
		if b == nil {
			var err error
			if b, err = a.in.Next(); err != nil {
				return err
			}
			if b != nil && a.seg != nil && a.seg.n != a.segAt {
				// A new segment: its groups are none of those held.
				a.segAt = a.seg.n
				if a.sp == nil && a.table.groups() > 0 {
					a.pending, a.flushing, a.segDone = b, true, true
					return nil
				}
			}
		}
		if b == nil {
			if a.sp != nil {
				return a.sp.finish(a)
			}
			return nil
		}
		if a.sp != nil {
			if err := a.sp.consume(a, b); err != nil {
				return err
			}
			continue
		}
		m := b.Len()
		var gids []uint32
		if a.table != nil {
			a.gids = resize(a.gids, m)
			gids = a.gids
			a.keyCols = a.keyCols[:0]
			for _, g := range a.spec.GroupCols {
				a.keyCols = append(a.keyCols, b.Cols[g])
			}
			before := a.table.groups()
			if a.spec.phase() == AggPartial && before == 0 && (a.env.Spill != nil || a.flushes > 0) {
				// NB: a fresh partial table holds at least one batch's
				// groups, whatever the budget says: otherwise a flush
				// could free nothing and the batch would never fit.
				a.acct.force = true
			}
			err := a.table.findOrInsert(a.keyCols, b.Sel, b.N, gids)
			a.acct.force = false
			if err != nil {
				if a.canFlush(err) {
					// NB: the batch's keys inserted so far are emitted
					// with empty states (harmless to the final phase);
					// the batch is aggregated after the restart.
					a.growStates()
					a.forceChargeFns()
					a.pending, a.flushing = b, true
					return nil
				}
				if !a.canSpill(err) {
					return err
				}
				// The batch is not aggregated yet (its new keys may be):
				// spill from here on, starting with it.
				a.growStates()
				a.forceChargeFns()
				if err := a.startSpill(); err != nil {
					return err
				}
				if err := a.sp.consume(a, b); err != nil {
					return err
				}
				continue
			}
			a.growStates()
		} else {
			if len(a.zeros) < m {
				a.zeros = make([]uint32, m)
			}
			gids = a.zeros[:m]
		}
		if err := a.update(b, gids); err != nil {
			return err
		}
		if err := a.chargeFns(); err != nil {
			if a.canFlush(err) {
				a.forceChargeFns()
				a.flushing = true
				return nil
			}
			if !a.canSpill(err) {
				return err
			}
			a.forceChargeFns()
			if err := a.startSpill(); err != nil {
				return err
			}
		}
	}
}

// growStates sizes the aggregate states for the table's groups (after an
// insert, also one that failed part way: the keys it added are groups).
func (a *HashAgg) growStates() {
	a.ngroups = a.table.groups()
	for _, fn := range a.fns {
		fn.grow(a.ngroups)
	}
}

// releaseState drops the groups and states once they are emitted.
func (a *HashAgg) releaseState() {
	if a.fns == nil {
		return
	}
	if a.table != nil {
		a.table.release()
	}
	for _, d := range a.dist {
		if d != nil {
			d.release()
		}
	}
	a.fns, a.dist = nil, nil
	a.acct.Shrink(a.fnBytes)
	a.fnBytes = 0
}

// canFlush says whether a partial aggregate out of memory can emit its
// groups early (the final phase merges them with later ones) and start
// afresh: memory relief without disk.
func (a *HashAgg) canFlush(err error) bool {
	return nferr.Is(err, nferr.KindResource) && a.spec.phase() == AggPartial && a.table != nil && a.table.groups() > 0
}

// restart drops the emitted groups of an early flush.
func (a *HashAgg) restart() error {
	a.flushing = false
	if a.segDone {
		// NB: the next segment's groups reuse the table's memory: fresh
		// slot arrays for every segment would fault in new pages each
		// time.
		a.segDone = false
		a.table.reset()
	} else {
		a.table.release()
		a.table = newKeyTable(a.keys, a.acct)
	}
	for i, ag := range a.spec.Aggs {
		fn, err := newAggFnOf(ag, a.argDT[i], false, a.op)
		if err != nil {
			return err
		}
		a.fns[i] = fn
	}
	a.acct.Shrink(a.fnBytes)
	a.fnBytes = 0
	a.ngroups, a.emitted = 0, 0
	a.flushes++
	return nil
}

// update folds the live rows of b into the groups gids (one per live row).
func (a *HashAgg) update(b *Batch, gids []uint32) error {
	final := a.spec.phase() == AggFinal
	for i, ag := range a.spec.Aggs {
		fn := a.fns[i]
		if final {
			a.stCols = a.stCols[:0]
			for k := 0; k < numStates(ag.Func); k++ {
				a.stCols = append(a.stCols, b.Cols[ag.Arg+k])
			}
			if err := fn.merge(gids, a.stCols, b.Sel, b.N); err != nil {
				return nferr.Wrap(nferr.KindQuery, err, "%s", a.op)
			}
			continue
		}
		var arg arrow.Array
		if ag.Func != AggCountStar {
			arg = b.Cols[ag.Arg]
		}
		g, sel := gids, b.Sel
		if ag.Filter != nil {
			if g, sel = a.filterRows(b.Cols[*ag.Filter], gids, b.Sel); len(g) == 0 {
				continue
			}
		}
		if a.dist[i] != nil {
			if err := a.updateDistinct(i, g, sel, b.N, b); err != nil {
				return err
			}
			continue
		}
		if err := fn.update(g, arg, sel, b.N); err != nil {
			return nferr.Wrap(nferr.KindQuery, err, "%s", a.op)
		}
	}
	return nil
}

// filterRows is the live rows (gids, sel) where the boolean column f is
// TRUE: FILTER (WHERE ...) of an aggregate.
func (a *HashAgg) filterRows(f arrow.Array, gids []uint32, sel []int32) ([]uint32, []int32) {
	c := f.(*array.Boolean)
	a.fGids, a.fSel = a.fGids[:0], a.fSel[:0]
	for j, g := range gids {
		if i := rowAt(sel, j); c.IsValid(i) && c.Value(i) {
			a.fGids = append(a.fGids, g)
			a.fSel = append(a.fSel, int32(i))
		}
	}
	return a.fGids, a.fSel
}

// updateDistinct passes to aggregate i only the rows (gids, sel of b's n)
// whose (group, value) pair is new.
func (a *HashAgg) updateDistinct(i int, gids []uint32, sel []int32, n int, b *Batch) error {
	ag := a.spec.Aggs[i]
	arg := b.Cols[ag.Arg]
	a.gphys = resize(a.gphys, n)
	for j, g := range gids {
		a.gphys[rowAt(sel, j)] = g
	}
	buf := memory.NewBufferBytes(castSlice[byte](a.gphys))
	data := array.NewData(arrow.PrimitiveTypes.Uint32, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	gidArr := array.MakeFromData(data)
	data.Release()
	defer gidArr.Release()
	t := a.dist[i]
	next := uint32(t.groups())
	a.dgids = resize(a.dgids, len(gids))
	if err := t.findOrInsert([]arrow.Array{gidArr, arg}, sel, n, a.dgids); err != nil {
		return err
	}
	a.subGids, a.subSel = a.subGids[:0], a.subSel[:0]
	for j, d := range a.dgids {
		if d == next {
			next++
			a.subGids = append(a.subGids, gids[j])
			a.subSel = append(a.subSel, int32(rowAt(sel, j)))
		}
	}
	if len(a.subGids) == 0 {
		return nil
	}
	if err := a.fns[i].update(a.subGids, arg, a.subSel, b.N); err != nil {
		return nferr.Wrap(nferr.KindQuery, err, "%s", a.op)
	}
	return nil
}

// fnsBytes is the memory of the aggregate states and scratch.
func (a *HashAgg) fnsBytes() int64 {
	var n int64
	for _, fn := range a.fns {
		n += fn.bytes()
	}
	return n + int64(cap(a.gids)+cap(a.dgids)+cap(a.subGids)+cap(a.gphys)+cap(a.subSel)+cap(a.fGids)+cap(a.fSel)+cap(a.zeros))*4
}

// forceChargeFns charges the states even beyond the budget: they exist
// already (a spilling aggregate adds no groups, so this is bounded).
func (a *HashAgg) forceChargeFns() {
	if n := a.fnsBytes(); n > a.fnBytes {
		a.acct.ForceGrow(n - a.fnBytes)
		a.fnBytes = n
	}
}

// chargeFns brings the account up to date with the aggregate states.
func (a *HashAgg) chargeFns() error { return a.acct.chargeTo(&a.fnBytes, a.fnsBytes()) }

// Close implements Operator.
func (a *HashAgg) Close() error {
	if !a.closing() {
		return nil
	}
	if a.sp != nil {
		a.sp.close()
	}
	a.fns, a.dist, a.table = nil, nil, nil
	if a.acct != nil {
		a.acct.Close()
	}
	if a.distAcct != nil {
		a.distAcct.Close()
	}
	return a.in.Close()
}
