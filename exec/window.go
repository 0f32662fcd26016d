package exec

// Window functions.
//
// The operator materializes its input, sorts it by (PARTITION BY keys,
// ORDER BY keys) with the stable sort of sort.go, computes every function
// over each partition, and emits the input columns followed by one column
// per function, in that sorted order.
//
// Out of core: with Env.Spill set, the sort is external (sort_spill.go).
// When it spilled, the sorted rows arrive from its merge, and the operator
// works through them a chunk at a time: whole partitions, as many as fit
// in a quarter of the budget (at least one), evaluated and emitted before
// the next chunk is read. A single partition larger than the budget fails
// with a memory error naming it; so does a window without PARTITION BY
// over more rows than fit (the whole input is one partition).
//
// Frames. Without a frame clause a function with ORDER BY sees RANGE
// BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW: the rows up to the current
// row and all its peers (rows equal on the ORDER BY keys); without ORDER
// BY it sees the whole partition. ROWS frames take any bounds (UNBOUNDED
// PRECEDING, n PRECEDING, CURRENT ROW, n FOLLOWING, UNBOUNDED FOLLOWING);
// RANGE frames take UNBOUNDED and CURRENT ROW bounds (peers) and, over one
// ORDER BY key of a number, date or timestamp, offsets by value: n
// PRECEDING starts at the first row whose key is at least the current
// key - n (+ n when descending), found by a pointer that only moves
// forward. A row whose key is NULL sees its NULL peers. GROUPS frames
// count peer groups (groupBounds). A frame whose start is after its end
// is empty. EXCLUDE splits a frame into the rows before the excluded ones
// and the rows after (framePieces; TIES keeps the current row between
// them): each part slides on its own and the parts are merged per row. With IGNORE NULLS the value functions skip the rows whose
// argument is NULL (evalValueIgnoreNulls).
//
// Evaluation is O(rows) per function: frame starts and ends never move
// backwards as the current row advances, so sums and counts slide (add the
// rows entering, subtract the rows leaving; exact 128-bit integers for
// integer and decimal sums; float sums keep NaN and infinities apart so
// they leave the frame cleanly), and min/max keep a monotonic deque of row
// numbers. Ranking functions read peer boundaries.
//
// Result types follow the aggregates (agg_funcs.go): row_number, rank,
// dense_rank, ntile and count are int64; sum, avg, min and max as in
// HashAgg; percent_rank and cume_dist float64; the value functions (lag,
// lead, first_value, last_value, nth_value) the argument's type.

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/civil"
	"github.com/nicflow/nicflow/internal/nferr"
)

// WindowFunc names a window function.
type WindowFunc string

// The window functions.
const (
	WinRowNumber WindowFunc = "row_number"
	WinRank      WindowFunc = "rank"
	WinDenseRank WindowFunc = "dense_rank"
	WinCountStar WindowFunc = "count_star"
	WinCount     WindowFunc = "count"
	WinSum       WindowFunc = "sum"
	WinAvg       WindowFunc = "avg"
	WinMin       WindowFunc = "min"
	WinMax       WindowFunc = "max"

	// Value functions: the argument's value at another row. lag and lead
	// read N rows before or after the current row in the partition
	// (NULL beyond it) and ignore the frame; first_value, last_value and
	// nth_value (the Nth row, from 1) read the frame.
	WinLag        WindowFunc = "lag"
	WinLead       WindowFunc = "lead"
	WinFirstValue WindowFunc = "first_value"
	WinLastValue  WindowFunc = "last_value"
	WinNthValue   WindowFunc = "nth_value"

	// Distribution functions: ntile(N) is the bucket 1..N of the row
	// (the first partition-size mod N buckets one row larger);
	// percent_rank is (rank - 1) / (rows - 1), 0 for one row; cume_dist
	// the share of rows up to the current row's last peer.
	WinNtile       WindowFunc = "ntile"
	WinPercentRank WindowFunc = "percent_rank"
	WinCumeDist    WindowFunc = "cume_dist"
)

// FrameMode is ROWS, RANGE or GROUPS.
type FrameMode string

// The frame modes.
const (
	FrameRows  FrameMode = "rows"
	FrameRange FrameMode = "range"
	// FrameGroups counts peer groups: n PRECEDING starts at the first row
	// of the group n groups before the current row's, n FOLLOWING ends
	// after the last row of the group n groups after it.
	FrameGroups FrameMode = "groups"
)

// BoundKind is the kind of a frame bound.
type BoundKind string

// The frame bounds.
const (
	UnboundedPreceding BoundKind = "unbounded_preceding"
	Preceding          BoundKind = "preceding"
	CurrentRow         BoundKind = "current_row"
	Following          BoundKind = "following"
	UnboundedFollowing BoundKind = "unbounded_following"
)

// FrameBound is one end of a frame; Offset counts rows for Preceding and
// Following in a ROWS frame. In a RANGE frame it is the distance in the
// ORDER BY key's own units (integers, days for dates, microseconds for
// timestamps, unscaled units for decimals), or OffsetF for a double key.
type FrameBound struct {
	Kind    BoundKind
	Offset  int64
	OffsetF float64 `json:",omitempty"`
	// Months (RANGE over a date or timestamp key) come before Offset, in
	// calendar arithmetic: key - '1 month' is the same day of the month
	// before (clamped to its end), as date - interval computes it.
	Months int32 `json:",omitempty"`
}

// FrameExclusion is a frame's EXCLUDE clause.
type FrameExclusion string

// The exclusions: the current row, its peer group, or its peers but not
// itself ("": EXCLUDE NO OTHERS).
const (
	ExcludeNone       FrameExclusion = ""
	ExcludeCurrentRow FrameExclusion = "current row"
	ExcludeGroup      FrameExclusion = "group"
	ExcludeTies       FrameExclusion = "ties"
)

// WindowFrame is a frame clause.
type WindowFrame struct {
	Mode       FrameMode
	Start, End FrameBound
	Exclude    FrameExclusion `json:",omitempty"`
}

// WindowFuncSpec is one window function call.
type WindowFuncSpec struct {
	Func WindowFunc
	// Arg is the argument column (aggregates except count_star).
	Arg int
	// N is the offset of lag and lead, the row of nth_value (from 1) and
	// the buckets of ntile.
	N int64
	// Frame is the frame clause; nil means the SQL default.
	Frame *WindowFrame
	// Name is the output column name (default "func(column)").
	Name string
	// IgnoreNulls (lag, lead, first_value, last_value, nth_value): rows
	// whose argument is NULL are skipped, as if they were not there.
	IgnoreNulls bool `json:",omitempty"`
}

// WindowSpec configures a window operator: every function shares the
// partitioning and ordering (the planner stacks operators for different
// window definitions).
type WindowSpec struct {
	PartitionBy []int
	OrderBy     []SortKey
	Funcs       []WindowFuncSpec
}

// winFunc is a validated function.
type winFunc struct {
	spec   WindowFuncSpec
	frame  WindowFrame
	argCol colInfo
	result arrow.DataType
	scale  int32 // decimal argument scale
	// byValue: a RANGE or GROUPS frame with an offset bound (frame bounds
	// computed by rangeBounds or groupBounds into rs, re).
	byValue bool
}

// Window is the window operator; see the file comment.
type Window struct {
	in       Operator
	spec     WindowSpec
	schema   *arrow.Schema
	infos    []colInfo
	sortSpec []SortKey
	sortKeys []sortKeyInfo
	partRC   *rowComparer
	peerRC   *rowComparer
	funcs    []winFunc

	env      *Env
	acct     *Account // the results; without a sort, the store too
	x        *extSort // the sort (nil without keys)
	chunk    *Account // spilled: the chunk's rows
	store    *rowStore
	perm     []uint32
	tail     *rowStore // spilled: rows of a partition the next chunk continues
	drained  bool      // spilled: the merge has ended
	results  []winResult
	computed bool
	ps, pe   []int32 // peer bounds of the current partition
	rs, re   []int32 // RANGE- or GROUPS-with-offset frames of the current partition (rangeBounds, groupBounds)
	gid, gs  []int32 // groupBounds: each position's peer group, each group's first position
	nnCnt    []int32 // IGNORE NULLS: non-NULL positions before each position
	nnPos    []int32 // IGNORE NULLS: the non-NULL positions
	rkeyI    []int64
	rkeyF    []float64
	pos      int
	idx      []int32
	opState
}

// winResult is one function's output over all rows in sorted order.
type winResult struct {
	i64   []int64
	f64   []float64
	d128  []i128
	idx   []int32 // min/max: the row holding the value (-1: NULL)
	valid []bool  // nil: all valid
}

// NewWindow validates spec against the input schema.
func NewWindow(in Operator, spec WindowSpec) (*Window, error) {
	const op = "window"
	s := in.Schema()
	w := &Window{in: in, spec: spec}
	fields := append([]arrow.Field(nil), s.Fields()...)
	for i := 0; i < s.NumFields(); i++ {
		c, err := classifyCol(s, i, op, "input")
		if err != nil {
			return nil, err
		}
		w.infos = append(w.infos, c)
	}
	var keys []SortKey
	for _, p := range spec.PartitionBy {
		keys = append(keys, SortKey{Col: p})
	}
	keys = append(keys, spec.OrderBy...)
	if len(keys) > 0 {
		sk, err := checkSortKeys(s, keys, op)
		if err != nil {
			return nil, err
		}
		w.sortKeys, w.sortSpec = sk, keys
		w.partRC = newRowComparer(sk[:len(spec.PartitionBy)])
		w.peerRC = newRowComparer(sk[len(spec.PartitionBy):])
	}
	if len(spec.Funcs) == 0 {
		return nil, nferr.Queryf("%s: no functions", op)
	}
	for i, f := range spec.Funcs {
		wf := winFunc{spec: f}
		name := f.Name
		switch f.Func {
		case WinRowNumber, WinRank, WinDenseRank, WinCountStar, WinNtile, WinPercentRank, WinCumeDist:
			wf.result = typInt64
			if f.Func == WinPercentRank || f.Func == WinCumeDist {
				wf.result = arrow.PrimitiveTypes.Float64
			}
			if f.Func == WinNtile && f.N <= 0 {
				return nil, nferr.Queryf("%s: argument of ntile must be greater than zero", op)
			}
			if name == "" {
				name = string(f.Func) + "()"
			}
		case WinLag, WinLead, WinFirstValue, WinLastValue, WinNthValue:
			c, err := classifyCol(s, f.Arg, op, "argument")
			if err != nil {
				return nil, err
			}
			if f.Func == WinNthValue && f.N <= 0 {
				return nil, nferr.Queryf("%s: argument of nth_value must be greater than zero", op)
			}
			wf.argCol, wf.result = c, c.dt
			if name == "" {
				name = string(f.Func) + "(" + s.Field(f.Arg).Name + ")"
			}
		case WinCount, WinSum, WinAvg, WinMin, WinMax:
			c, err := classifyCol(s, f.Arg, op, "argument")
			if err != nil {
				return nil, err
			}
			wf.argCol = c
			if name == "" {
				name = string(f.Func) + "(" + s.Field(f.Arg).Name + ")"
			}
			switch f.Func {
			case WinCount:
				wf.result = typInt64
			case WinMin, WinMax:
				if !c.ordered() {
					return nil, nferr.Queryf("%s: %s(%s) is not supported", op, f.Func, c.dt)
				}
				wf.result = c.dt
			default:
				_, t, err := newAggFn(AggFunc(f.Func), c.dt, false, op)
				if err != nil {
					return nil, err
				}
				wf.result = t.result
				if dt, ok := c.dt.(arrow.DecimalType); ok {
					wf.scale = dt.GetScale()
				}
			}
		default:
			return nil, nferr.Queryf("%s: unknown window function %q", op, f.Func)
		}
		frame, err := resolveFrame(f, len(spec.OrderBy) > 0)
		if err != nil {
			return nil, nferr.Wrap(nferr.KindQuery, err, "%s: function %d (%s)", op, i, f.Func)
		}
		wf.frame = frame
		if frame.Mode == FrameRange && (isOffset(frame.Start.Kind) || isOffset(frame.End.Kind)) {
			if len(spec.OrderBy) != 1 {
				return nil, nferr.Queryf("%s: RANGE with an offset needs exactly one ORDER BY key", op)
			}
			c := w.infos[spec.OrderBy[0].Col]
			if c.class != pcInt && c.class != pcFloat || c.class == pcInt && c.width < 4 {
				return nil, nferr.Queryf("%s: RANGE with an offset needs a number, date or timestamp ORDER BY key, not %s", op, c.dt)
			}
			wf.byValue = true
		}
		if frame.Mode == FrameGroups {
			if len(spec.OrderBy) == 0 {
				return nil, nferr.Queryf("%s: GROUPS mode requires an ORDER BY clause", op)
			}
			wf.byValue = isOffset(frame.Start.Kind) || isOffset(frame.End.Kind)
		}
		if f.IgnoreNulls {
			switch f.Func {
			case WinLag, WinLead, WinFirstValue, WinLastValue, WinNthValue:
			default:
				return nil, nferr.Queryf("%s: IGNORE NULLS applies to lag, lead, first_value, last_value and nth_value, not %s", op, f.Func)
			}
		}
		w.funcs = append(w.funcs, wf)
		fields = append(fields, arrow.Field{Name: name, Type: wf.result, Nullable: true})
	}
	w.schema = arrow.NewSchema(fields, nil)
	return w, nil
}

// resolveFrame applies the SQL default and validates bounds.
func resolveFrame(f WindowFuncSpec, ordered bool) (WindowFrame, error) {
	if f.Frame == nil {
		if ordered {
			return WindowFrame{Mode: FrameRange, Start: FrameBound{Kind: UnboundedPreceding}, End: FrameBound{Kind: CurrentRow}}, nil
		}
		return WindowFrame{Mode: FrameRows, Start: FrameBound{Kind: UnboundedPreceding}, End: FrameBound{Kind: UnboundedFollowing}}, nil
	}
	fr := *f.Frame
	if fr.Mode != FrameRows && fr.Mode != FrameRange && fr.Mode != FrameGroups {
		return fr, nferr.Queryf("unknown frame mode %q", fr.Mode)
	}
	for _, b := range []FrameBound{fr.Start, fr.End} {
		switch b.Kind {
		case UnboundedPreceding, CurrentRow, UnboundedFollowing:
		case Preceding, Following:
			if b.Offset < 0 || b.OffsetF < 0 {
				return fr, nferr.Queryf("frame offset %d must not be negative", b.Offset)
			}
		default:
			return fr, nferr.Queryf("unknown frame bound %q", b.Kind)
		}
	}
	if fr.Start.Kind == UnboundedFollowing || fr.End.Kind == UnboundedPreceding {
		return fr, nferr.Queryf("frame from %s to %s is not allowed", fr.Start.Kind, fr.End.Kind)
	}
	switch fr.Exclude {
	case ExcludeNone, ExcludeCurrentRow, ExcludeGroup, ExcludeTies:
	default:
		return fr, nferr.Queryf("unknown frame exclusion %q", fr.Exclude)
	}
	return fr, nil
}

// Schema implements Operator: the input columns, then one per function.
func (w *Window) Schema() *arrow.Schema { return w.schema }

// Open implements Operator.
func (w *Window) Open(env *Env) error {
	w.env = env
	w.acct = env.Budget.NewAccount("window")
	if w.sortKeys != nil {
		w.x = newExtSort(env, "window", w.in.Schema(), w.sortSpec, w.sortKeys, w.infos, newRowComparer(w.sortKeys))
		w.chunk = env.Budget.NewForcedAccount("window partitions")
	} else {
		w.store = newRowStore(w.infos)
	}
	return w.in.Open(env)
}

// Next implements Operator.
func (w *Window) Next() (*Batch, error) {
	if done, err := w.begin(); done {
		return nil, err
	}
	if !w.computed {
		if err := w.compute(); err != nil {
			return w.fail(err)
		}
		w.computed = true
	}
	if w.pos >= len(w.perm) {
		if w.x == nil || w.x.merge == nil {
			return nil, nil
		}
		if err := w.nextChunk(); err != nil {
			return w.fail(err)
		}
		if len(w.perm) == 0 {
			return nil, nil
		}
	}
	if err := w.env.Ctx.Err(); err != nil {
		return w.fail(nferr.With(nferr.KindCanceled, err))
	}
	start := w.pos
	end := min(start+max(w.env.BatchSize, 1), len(w.perm))
	w.pos = end
	w.idx = w.idx[:0]
	for _, r := range w.perm[start:end] {
		w.idx = append(w.idx, int32(r))
	}
	alloc := w.env.Alloc
	cols := w.store.gather(alloc, w.idx, nil)
	for i := range w.funcs {
		cols = append(cols, w.resultArray(alloc, i, start, end))
	}
	return w.produce(cols, end-start), nil
}

func (w *Window) resultArray(alloc memory.Allocator, i, start, end int) arrow.Array {
	f, r := &w.funcs[i], &w.results[i]
	var valid []bool
	if r.valid != nil {
		valid = r.valid[start:end]
	}
	switch {
	case r.idx != nil:
		return w.store.vecs[f.spec.Arg].Gather(alloc, r.idx[start:end])
	case r.d128 != nil:
		return arrayFromSlice(alloc, f.result, r.d128[start:end], valid)
	case r.f64 != nil:
		return arrayFromSlice(alloc, f.result, r.f64[start:end], valid)
	}
	return arrayFromSlice(alloc, f.result, r.i64[start:end], valid)
}

// compute materializes and sorts the input, then evaluates every function
// (over the first chunk when the sort spilled).
func (w *Window) compute() error {
	if w.x == nil {
		if err := drainInto(w.env, w.in, w.store, w.acct); err != nil {
			return err
		}
		w.perm = identityPerm(w.perm, w.store.n)
		return w.evaluate()
	}
	if err := w.x.drain(w.in); err != nil {
		return err
	}
	perm, err := w.x.finish()
	if err != nil {
		return err
	}
	if w.x.merge != nil {
		return w.nextChunk()
	}
	w.store, w.perm = w.x.store, perm
	return w.evaluate()
}

func identityPerm(p []uint32, n int) []uint32 {
	p = resize(p, n)
	for i := range p {
		p[i] = uint32(i)
	}
	return p
}

// nextChunk reads the next whole partitions from the spilled sort's merge
// into a new store (w.perm empty at the end) and evaluates them.
func (w *Window) nextChunk() error {
	w.chunk.Shrink(w.chunk.Used()) // the previous chunk and its results
	w.store, w.perm, w.results, w.pos = nil, w.perm[:0], nil, 0
	st := w.tail
	if st == nil {
		st = newRowStore(w.infos)
	}
	w.tail = nil
	// NB: the chunk is charged beyond the budget if it must (the merge's
	// batches may already fill a small one); what bounds it is the target
	// and, for a partition that goes on, the spillable share of the budget.
	w.chunk.ForceGrow(st.bytes() - w.chunk.Used())
	limit := w.env.Budget.root().Limit()
	target := max(limit/4, 1)
	cut := 0
	for {
		if st.n > 0 && (w.drained || st.bytes() >= target) {
			if w.drained {
				cut = st.n
				break
			}
			if !w.onePartition(st) {
				cut = w.lastPartitionStart(st)
				break
			}
			// One partition so far, and it goes on: read on.
		}
		if w.drained {
			break
		}
		b, err := w.x.merge.Next()
		if err != nil {
			return err
		}
		if b == nil {
			w.drained = true
			continue
		}
		st.appendBatch(b)
		w.chunk.ForceGrow(st.bytes() - w.chunk.Used())
		if limit > 0 && st.bytes() > limit-limit/spillHeadroom && w.onePartition(st) {
			return nferr.Resourcef("memory limit exceeded in window: a partition of more than %d rows (%s) does not fit in the %s budget (raise --memory-limit)",
				st.n, FormatBytes(st.bytes()), FormatBytes(limit))
		}
	}
	if cut < st.n {
		// The last partition may go on in the next batches: it starts the
		// next chunk. NB: its rows stay in st too, unused.
		w.tail = newRowStore(w.infos)
		for c, v := range w.tail.vecs {
			v.AppendVec(st.vecs[c], cut, st.n)
		}
		w.tail.n = st.n - cut
	}
	w.store, w.perm = st, identityPerm(w.perm, cut)
	return w.evaluate()
}

// onePartition says whether the rows of st (sorted, at least one) are all
// of one partition: its first and last row are. NB: checked per batch
// while a partition goes on, so it must not scan the partition.
func (w *Window) onePartition(st *rowStore) bool {
	return w.partRC == nil || len(w.partRC.fns) == 0 || w.partRC.compare(st, st, 0, st.n-1) == 0
}

// lastPartitionStart returns the row where the last partition of st
// (sorted, more than one partition) starts.
func (w *Window) lastPartitionStart(st *rowStore) int {
	last, k := st.n-1, st.n-1
	for k > 0 && w.partRC.compare(st, st, k-1, last) == 0 {
		k--
	}
	return k
}

// evaluate computes every function over the rows of w.perm.
func (w *Window) evaluate() error {
	n := len(w.perm)
	// Result memory: at most 17 bytes per row per function (i128 + valid);
	// a chunk's is bounded with the chunk.
	res := int64(n) * 17 * int64(len(w.funcs))
	if w.x != nil && w.x.merge != nil {
		w.chunk.ForceGrow(res)
	} else if err := w.acct.Grow(res); err != nil {
		return err
	}
	w.results = make([]winResult, len(w.funcs))
	for i := range w.funcs {
		w.results[i] = w.allocResult(&w.funcs[i], n)
	}
	// Partition and peer boundaries in sorted order.
	for start := 0; start < n; {
		if err := w.env.Ctx.Err(); err != nil {
			return nferr.With(nferr.KindCanceled, err)
		}
		end := start + 1
		for end < n && w.samePartition(start, end) {
			end++
		}
		peerStart, peerEnd := w.peers(start, end)
		for i := range w.funcs {
			if w.funcs[i].byValue {
				if w.funcs[i].frame.Mode == FrameGroups {
					w.groupBounds(&w.funcs[i], end-start, peerStart, peerEnd)
				} else {
					w.rangeBounds(&w.funcs[i], start, end-start, peerStart, peerEnd)
				}
			}
			if err := w.evalPartition(i, start, end, peerStart, peerEnd); err != nil {
				return err
			}
		}
		start = end
	}
	return nil
}

func (w *Window) samePartition(a, b int) bool {
	if w.partRC == nil || len(w.partRC.fns) == 0 {
		return true
	}
	return w.partRC.compare(w.store, w.store, int(w.perm[a]), int(w.perm[b])) == 0
}

// peers returns, for each position of partition [start, end), the first
// and last+1 position of its peer group (relative to start).
func (w *Window) peers(start, end int) ([]int32, []int32) {
	n := end - start
	w.ps, w.pe = resize(w.ps, n), resize(w.pe, n)
	ps, pe := w.ps, w.pe
	// Without ORDER BY every row of the partition is a peer.
	ordered := w.peerRC != nil && len(w.peerRC.fns) > 0
	g := 0
	for i := 1; i <= n; i++ {
		if i == n || (ordered && w.peerRC.compare(w.store, w.store, int(w.perm[start+i-1]), int(w.perm[start+i])) != 0) {
			for k := g; k < i; k++ {
				ps[k], pe[k] = int32(g), int32(i)
			}
			g = i
		}
	}
	return ps, pe
}

func (w *Window) allocResult(f *winFunc, n int) winResult {
	r := winResult{}
	switch f.spec.Func {
	case WinMin, WinMax, WinLag, WinLead, WinFirstValue, WinLastValue, WinNthValue:
		r.idx = make([]int32, n)
		return r
	case WinRowNumber, WinRank, WinDenseRank, WinCount, WinCountStar, WinNtile:
		r.i64 = make([]int64, n)
		return r
	case WinPercentRank, WinCumeDist:
		r.f64 = make([]float64, n)
		return r
	}
	r.valid = make([]bool, n)
	switch f.result.ID() {
	case arrow.DECIMAL128:
		r.d128 = make([]i128, n)
	case arrow.FLOAT64:
		r.f64 = make([]float64, n)
	default:
		r.i64 = make([]int64, n)
	}
	return r
}

func isOffset(k BoundKind) bool { return k == Preceding || k == Following }

// frameAt is the frame [s, e) of position i of a partition: frameOf's, or
// for a RANGE frame with offsets the bounds rangeBounds computed.
func (w *Window) frameAt(f *winFunc, i, n int, ps, pe []int32) (int, int) {
	if f.byValue {
		return int(w.rs[i]), int(w.re[i])
	}
	return frameOf(f.frame, i, n, ps, pe)
}

// rangeBounds computes the frames of a RANGE frame with offsets over the
// sorted partition [start, start+n) into w.rs, w.re: two pointers over the
// key values (descending keys are negated, so that the frame always runs
// from smaller to larger keys). NULL keys frame their NULL peers.
func (w *Window) rangeBounds(f *winFunc, start, n int, ps, pe []int32) {
	w.rs, w.re = resize(w.rs, n), resize(w.re, n)
	key := w.spec.OrderBy[0]
	v := w.store.vecs[key.Col]
	c := w.infos[key.Col]
	perm := w.perm[start : start+n]
	ik := resize(w.rkeyI, n)
	fk := resize(w.rkeyF, n)
	w.rkeyI, w.rkeyF = ik, fk
	null := func(j int) bool { return v.IsNull(int(perm[j])) }
	float := c.class == pcFloat
	for j, r := range perm {
		switch {
		case float && c.width == 8:
			fk[j] = math.Float64frombits(v.(*fixedVec[uint64]).vals[r])
		case float:
			fk[j] = float64(math.Float32frombits(v.(*fixedVec[uint32]).vals[r]))
		case c.width == 8:
			ik[j] = int64(v.(*fixedVec[uint64]).vals[r])
		default:
			ik[j] = int64(int32(v.(*fixedVec[uint32]).vals[r]))
		}
		if key.Desc {
			ik[j], fk[j] = -ik[j], -fk[j]
		}
	}
	// calendar is key(i) + sign*(months, offset) computed on the real (not
	// negated) key; ok is false past the range of timestamps.
	calendar := func(i int, b FrameBound, sign int) (int64, bool) {
		k, s := ik[i], int64(sign)
		if key.Desc {
			k, s = -k, -s
		}
		var v int64
		if c.width == 4 { // a date: Offset counts days
			v = civil.AddMonths(int32(k), s*int64(b.Months)) + s*b.Offset
			if v < math.MinInt32 || v > math.MaxInt32 {
				return 0, false
			}
		} else {
			var ok bool
			if v, ok = expr.TimestampAddInterval(k, arrow.MonthDayNanoInterval{Months: b.Months, Nanoseconds: b.Offset * 1000}, s); !ok {
				return 0, false
			}
		}
		if key.Desc {
			v = -v
		}
		return v, true
	}
	// less(a, limit): key a is below limit = key(i) + delta (saturating).
	within := func(j, i int, b FrameBound, sign int) bool { // key(j) >= key(i) + sign*delta
		if float {
			return fk[j] >= fk[i]+float64(sign)*b.OffsetF
		}
		if b.Months != 0 {
			lim, ok := calendar(i, b, sign)
			if !ok {
				return sign < 0
			}
			return ik[j] >= lim
		}
		d := b.Offset * int64(sign)
		lim := ik[i] + d
		if (d > 0 && lim < ik[i]) || (d < 0 && lim > ik[i]) { // overflow: beyond every key
			return d < 0
		}
		return ik[j] >= lim
	}
	atMost := func(j, i int, b FrameBound, sign int) bool { // key(j) <= key(i) + sign*delta
		if float {
			return fk[j] <= fk[i]+float64(sign)*b.OffsetF
		}
		if b.Months != 0 {
			lim, ok := calendar(i, b, sign)
			if !ok {
				return sign > 0
			}
			return ik[j] <= lim
		}
		d := b.Offset * int64(sign)
		lim := ik[i] + d
		if (d > 0 && lim < ik[i]) || (d < 0 && lim > ik[i]) {
			return d > 0
		}
		return ik[j] <= lim
	}
	fr := f.frame
	// NULL keys sort together at one end: the others are [nnLo, nnHi).
	nnLo, nnHi := 0, n
	for nnLo < n && null(nnLo) {
		nnLo++
	}
	for nnHi > nnLo && null(nnHi-1) {
		nnHi--
	}
	lo, hi := nnLo, nnLo
	for i := 0; i < n; i++ {
		// UNBOUNDED and CURRENT ROW bounds; offsets replace them below.
		s, _ := peerBound(fr.Start.Kind, true, i, n, ps, pe)
		e, _ := peerBound(fr.End.Kind, false, i, n, ps, pe)
		if null(i) {
			// NULL keys: offsets reach their NULL peers.
			if isOffset(fr.Start.Kind) {
				s = int(ps[i])
			}
			if isOffset(fr.End.Kind) {
				e = int(pe[i])
			}
		} else {
			if isOffset(fr.Start.Kind) {
				sign := -1
				if fr.Start.Kind == Following {
					sign = 1
				}
				for lo < nnHi && !within(lo, i, fr.Start, sign) {
					lo++
				}
				s = lo
			}
			if isOffset(fr.End.Kind) {
				sign := -1
				if fr.End.Kind == Following {
					sign = 1
				}
				for hi < nnHi && atMost(hi, i, fr.End, sign) {
					hi++
				}
				e = hi
			}
		}
		if s > e {
			s = e
		}
		w.rs[i], w.re[i] = int32(s), int32(e)
	}
}

// peerBound is a frame bound that needs no offset, at position i of a
// partition of n positions: UNBOUNDED, or CURRENT ROW as the edge of the
// row's peer group (RANGE and GROUPS frames); ok is false for an offset
// bound (PRECEDING, FOLLOWING), which the caller computes.
func peerBound(k BoundKind, start bool, i, n int, ps, pe []int32) (int, bool) {
	switch k {
	case UnboundedPreceding:
		return 0, true
	case UnboundedFollowing:
		return n, true
	case CurrentRow:
		if start {
			return int(ps[i]), true
		}
		return int(pe[i]), true
	}
	return 0, false
}

// groupBounds computes the frames of a GROUPS frame with offsets over a
// partition of n positions into w.rs, w.re: a bound n groups away is the
// first (start) or last+1 (end) position of that peer group, clamped to
// the partition.
func (w *Window) groupBounds(f *winFunc, n int, ps, pe []int32) {
	w.rs, w.re = resize(w.rs, n), resize(w.re, n)
	// gs[g] is the first position of group g, gs[groups] = n; gid the
	// group of each position.
	gid := resize(w.gid, n)
	gs := w.gs[:0]
	for i := 0; i < n; i++ {
		if i == 0 || ps[i] != ps[i-1] {
			gs = append(gs, int32(i))
		}
		gid[i] = int32(len(gs) - 1)
	}
	groups := int64(len(gs))
	gs = append(gs, int32(n))
	w.gid, w.gs = gid, gs
	bound := func(b FrameBound, i int, start bool) int {
		if p, ok := peerBound(b.Kind, start, i, n, ps, pe); ok {
			return p
		}
		g := int64(gid[i])
		if b.Kind == Preceding {
			g -= b.Offset
		} else {
			g += b.Offset
		}
		switch {
		case g < 0:
			return 0
		case g >= groups:
			return n
		case start:
			return int(gs[g])
		default:
			return int(gs[g+1])
		}
	}
	for i := 0; i < n; i++ {
		s, e := bound(f.frame.Start, i, true), bound(f.frame.End, i, false)
		if s > e {
			s = e
		}
		w.rs[i], w.re[i] = int32(s), int32(e)
	}
}

// framePieces are the positions of a frame with an exclusion, in order:
// [a0, a1), then the current row when cur, then [b0, b1).
type framePieces struct {
	a0, a1, b0, b1 int
	cur            bool
}

func (p framePieces) size() int {
	n := p.a1 - p.a0 + p.b1 - p.b0
	if p.cur {
		n++
	}
	return n
}

// nth is the position of the nth (from 0) row of the pieces, or -1.
func (p framePieces) nth(i, k int) int {
	if i < p.a1-p.a0 {
		return p.a0 + i
	}
	i -= p.a1 - p.a0
	if p.cur {
		if i == 0 {
			return k
		}
		i--
	}
	if i < p.b1-p.b0 {
		return p.b0 + i
	}
	return -1
}

// piecesAt is the frame of position k less its exclusion: the part
// before the excluded rows, the current row (EXCLUDE TIES keeps it), and
// the part after. Every bound is non-decreasing in k, as the frame's are,
// so each part slides.
func (w *Window) piecesAt(f *winFunc, k, n int, ps, pe []int32) framePieces {
	s, e := w.frameAt(f, k, n, ps, pe)
	x0, x1 := k, k+1
	if f.frame.Exclude == ExcludeGroup || f.frame.Exclude == ExcludeTies {
		x0, x1 = int(ps[k]), int(pe[k])
	}
	a1 := min(max(x0, s), e)
	b0 := max(min(x1, e), s)
	return framePieces{a0: s, a1: a1, b0: b0, b1: e, cur: f.frame.Exclude == ExcludeTies && s <= k && k < e}
}

// frameOf returns the frame [s, e) of position i of a partition of n rows.
func frameOf(fr WindowFrame, i, n int, ps, pe []int32) (int, int) {
	bound := func(b FrameBound, start bool) int {
		switch b.Kind {
		case UnboundedPreceding:
			return 0
		case UnboundedFollowing:
			return n
		case CurrentRow:
			if fr.Mode == FrameRange || fr.Mode == FrameGroups {
				if start {
					return int(ps[i])
				}
				return int(pe[i])
			}
			if start {
				return i
			}
			return i + 1
		case Preceding:
			off := int(min(b.Offset, int64(n)))
			if start {
				return i - off
			}
			return i - off + 1
		default: // Following
			off := int(min(b.Offset, int64(n)))
			if start {
				return i + off
			}
			return i + off + 1
		}
	}
	s, e := bound(fr.Start, true), bound(fr.End, false)
	s = max(s, 0)
	e = min(e, n)
	if s > e {
		s = e
	}
	return s, e
}

// evalPartition computes function i over sorted positions [start, end).
func (w *Window) evalPartition(i, start, end int, ps, pe []int32) error {
	f, r := &w.funcs[i], &w.results[i]
	n := end - start
	switch f.spec.Func {
	case WinRowNumber:
		for k := 0; k < n; k++ {
			r.i64[start+k] = int64(k + 1)
		}
		return nil
	case WinRank:
		for k := 0; k < n; k++ {
			r.i64[start+k] = int64(ps[k]) + 1
		}
		return nil
	case WinDenseRank:
		d := int64(0)
		for k := 0; k < n; k++ {
			if k == 0 || ps[k] != ps[k-1] {
				d++
			}
			r.i64[start+k] = d
		}
		return nil
	case WinMin, WinMax:
		if f.frame.Exclude != ExcludeNone {
			w.evalMinMaxExcluded(f, r, start, n, ps, pe)
			return nil
		}
		w.evalMinMax(f, r, start, n, ps, pe)
		return nil
	case WinLag, WinLead, WinFirstValue, WinLastValue, WinNthValue:
		w.evalValue(f, r, start, n, ps, pe)
		return nil
	case WinNtile:
		evalNtile(r.i64[start:end], f.spec.N)
		return nil
	case WinPercentRank:
		for k := 0; k < n; k++ {
			if n > 1 {
				r.f64[start+k] = float64(ps[k]) / float64(n-1)
			} else {
				r.f64[start+k] = 0
			}
		}
		return nil
	case WinCumeDist:
		for k := 0; k < n; k++ {
			r.f64[start+k] = float64(pe[k]) / float64(n)
		}
		return nil
	}
	if f.frame.Exclude != ExcludeNone {
		return w.evalAccumExcluded(f, r, start, n, ps, pe)
	}
	acc := newWinAccum(f, w.store, w.perm[start:end])
	ws, we := 0, 0
	for k := 0; k < n; k++ {
		s, e := w.frameAt(f, k, n, ps, pe)
		if s >= we {
			acc.reset()
			ws, we = s, s
		}
		for ; we < e; we++ {
			acc.add(we)
		}
		for ; ws < s; ws++ {
			acc.remove(ws)
		}
		if err := acc.result(r, start+k); err != nil {
			return nferr.Wrap(nferr.KindQuery, err, "window")
		}
	}
	return nil
}

// accSlider slides an accumulator over [ws, we) as both ends advance.
type accSlider struct {
	acc    *winAccum
	ws, we int
}

func (a *accSlider) moveTo(s, e int) {
	if s >= a.we {
		a.acc.reset()
		a.ws, a.we = s, s
	}
	for ; a.we < e; a.we++ {
		a.acc.add(a.we)
	}
	for ; a.ws < s; a.ws++ {
		a.acc.remove(a.ws)
	}
}

// evalAccumExcluded is count, sum and avg over frames with an exclusion:
// one sliding accumulator per piece (framePieces), merged per row.
func (w *Window) evalAccumExcluded(f *winFunc, r *winResult, start, n int, ps, pe []int32) error {
	perm := w.perm[start : start+n]
	a := &accSlider{acc: newWinAccum(f, w.store, perm)}
	b := &accSlider{acc: newWinAccum(f, w.store, perm)}
	for k := 0; k < n; k++ {
		p := w.piecesAt(f, k, n, ps, pe)
		a.moveTo(p.a0, p.a1)
		b.moveTo(p.b0, p.b1)
		sum := *a.acc
		sum.merge(b.acc)
		if p.cur {
			sum.add(k)
		}
		if err := sum.result(r, start+k); err != nil {
			return nferr.Wrap(nferr.KindQuery, err, "window")
		}
	}
	return nil
}

// evalMinMaxExcluded is min and max over frames with an exclusion: a
// monotonic deque per piece, the better of their fronts and the current
// row (EXCLUDE TIES).
func (w *Window) evalMinMaxExcluded(f *winFunc, r *winResult, start, n int, ps, pe []int32) {
	v, perm, better := w.minMaxOrder(f, start, n)
	var da, db bestDeque
	for k := 0; k < n; k++ {
		p := w.piecesAt(f, k, n, ps, pe)
		da.slide(p.a0, p.a1, v, perm, better)
		db.slide(p.b0, p.b1, v, perm, better)
		best := -1
		consider := func(i int) {
			if best < 0 || better(i, best) {
				best = i
			}
		}
		if len(da.dq) > 0 {
			consider(da.dq[0])
		}
		if len(db.dq) > 0 {
			consider(db.dq[0])
		}
		if p.cur && !v.IsNull(int(perm[k])) {
			consider(k)
		}
		r.idx[start+k] = -1
		if best >= 0 {
			r.idx[start+k] = int32(perm[best])
		}
	}
}

// evalValue computes lag, lead, first_value, last_value and nth_value:
// the store row whose argument value each position takes (-1: NULL).
func (w *Window) evalValue(f *winFunc, r *winResult, start, n int, ps, pe []int32) {
	perm := w.perm[start : start+n]
	out := r.idx[start : start+n]
	at := func(j int, ok bool) int32 {
		if !ok || j < 0 || j >= n {
			return -1
		}
		return int32(perm[j])
	}
	off := int(min(max(f.spec.N, -int64(n)), int64(n))) // |N| beyond the partition reads nothing
	if f.spec.IgnoreNulls {
		w.evalValueIgnoreNulls(f, out, perm, off, ps, pe)
		return
	}
	for k := 0; k < n; k++ {
		switch f.spec.Func {
		case WinLag:
			out[k] = at(k-off, true)
		case WinLead:
			out[k] = at(k+off, true)
		default:
			if f.frame.Exclude != ExcludeNone {
				p := w.piecesAt(f, k, n, ps, pe)
				i := 0 // first_value
				switch f.spec.Func {
				case WinLastValue:
					i = p.size() - 1
				case WinNthValue:
					i = int(min(f.spec.N, int64(n+1))) - 1
				}
				j := p.nth(i, k)
				out[k] = at(j, i >= 0 && j >= 0)
				continue
			}
			s, e := w.frameAt(f, k, n, ps, pe)
			switch f.spec.Func {
			case WinFirstValue:
				out[k] = at(s, s < e)
			case WinLastValue:
				out[k] = at(e-1, s < e)
			default: // nth_value
				ok := f.spec.N <= int64(e-s)
				out[k] = at(s+int(min(f.spec.N, int64(n)))-1, ok)
			}
		}
	}
}

// evalValueIgnoreNulls is evalValue skipping the rows whose argument is
// NULL: cnt[j] counts the non-NULL positions before j and nn lists them,
// so each answer is one lookup.
func (w *Window) evalValueIgnoreNulls(f *winFunc, out []int32, perm []uint32, off int, ps, pe []int32) {
	n := len(perm)
	v := w.store.vecs[f.spec.Arg]
	cnt := resize(w.nnCnt, n+1)
	nn := w.nnPos[:0]
	for j, r := range perm {
		cnt[j] = int32(len(nn))
		if !v.IsNull(int(r)) {
			nn = append(nn, int32(j))
		}
	}
	cnt[n] = int32(len(nn))
	w.nnCnt, w.nnPos = cnt, nn
	pick := func(i int) int32 {
		if i < 0 || i >= len(nn) {
			return -1
		}
		return int32(perm[nn[i]])
	}
	for k := 0; k < n; k++ {
		fn, o := f.spec.Func, off
		if fn == WinLag && o < 0 {
			fn, o = WinLead, -o
		} else if fn == WinLead && o < 0 {
			fn, o = WinLag, -o
		}
		switch fn {
		case WinLag, WinLead:
			switch {
			case o == 0:
				out[k] = int32(perm[k])
				if v.IsNull(int(perm[k])) {
					out[k] = -1
				}
			case fn == WinLag:
				out[k] = pick(int(cnt[k]) - o)
			default:
				out[k] = pick(int(cnt[k+1]) + o - 1)
			}
		default:
			if f.frame.Exclude != ExcludeNone {
				p := w.piecesAt(f, k, n, ps, pe)
				na, nb := int(cnt[p.a1]-cnt[p.a0]), int(cnt[p.b1]-cnt[p.b0])
				curOK := p.cur && !v.IsNull(int(perm[k]))
				total := na + nb
				if curOK {
					total++
				}
				i := 0
				switch fn {
				case WinLastValue:
					i = total - 1
				case WinNthValue:
					i = int(min(f.spec.N, int64(n+1))) - 1
				}
				out[k] = -1
				switch {
				case i < 0 || i >= total:
				case i < na:
					out[k] = pick(int(cnt[p.a0]) + i)
				case curOK && i == na:
					out[k] = int32(perm[k])
				default:
					if curOK {
						i--
					}
					out[k] = pick(int(cnt[p.b0]) + i - na)
				}
				continue
			}
			s, e := w.frameAt(f, k, n, ps, pe)
			lo, hi := int(cnt[s]), int(cnt[e]) // the non-NULL rows of the frame
			switch fn {
			case WinFirstValue:
				out[k] = -1
				if lo < hi {
					out[k] = pick(lo)
				}
			case WinLastValue:
				out[k] = -1
				if lo < hi {
					out[k] = pick(hi - 1)
				}
			default: // nth_value
				out[k] = -1
				if int64(hi-lo) >= f.spec.N {
					out[k] = pick(lo + int(f.spec.N) - 1)
				}
			}
		}
	}
}

// evalNtile fills the buckets 1..buckets of a partition's positions out:
// rows/buckets rows each, the first rows%buckets buckets one more.
func evalNtile(out []int64, buckets int64) {
	n := int64(len(out))
	per, extra := n/buckets, n%buckets
	for k := int64(0); k < n; k++ {
		if big := extra * (per + 1); k < big {
			out[k] = k/(per+1) + 1
		} else {
			out[k] = extra + (k-big)/per + 1
		}
	}
}

// evalMinMax slides a monotonic deque of candidate positions: the front is
// the frame's extreme; a new row evicts the rows it beats from the back.
func (w *Window) evalMinMax(f *winFunc, r *winResult, start, n int, ps, pe []int32) {
	v, perm, better := w.minMaxOrder(f, start, n)
	var d bestDeque
	for k := 0; k < n; k++ {
		s, e := w.frameAt(f, k, n, ps, pe)
		d.slide(s, e, v, perm, better)
		r.idx[start+k] = -1
		if len(d.dq) > 0 {
			r.idx[start+k] = int32(perm[d.dq[0]])
		}
	}
}

// minMaxOrder is what min and max compare: the argument's column, the
// partition's positions, and whether position a's value beats b's.
func (w *Window) minMaxOrder(f *winFunc, start, n int) (colVec, []uint32, func(a, b int) bool) {
	v := w.store.vecs[f.spec.Arg]
	cmpv := makeKeyCmp(sortKeyInfo{SortKey: SortKey{Col: f.spec.Arg}, info: f.argCol})
	perm := w.perm[start : start+n]
	better := func(a, b int) bool {
		c := cmpv(w.store, w.store, int(perm[a]), int(perm[b]))
		if f.spec.Func == WinMax {
			return c > 0
		}
		return c < 0
	}
	return v, perm, better
}

// bestDeque is a monotonic deque of the positions of [ws, we) whose value
// no later position beats: its front is the frame's min or max.
type bestDeque struct {
	dq     []int
	ws, we int
}

// slide moves the deque's frame to [s, e) (both ends never move back).
func (d *bestDeque) slide(s, e int, v colVec, perm []uint32, better func(a, b int) bool) {
	if s >= d.we {
		d.dq = d.dq[:0]
		d.ws, d.we = s, s
	}
	for ; d.we < e; d.we++ {
		if v.IsNull(int(perm[d.we])) {
			continue
		}
		for len(d.dq) > 0 && !better(d.dq[len(d.dq)-1], d.we) {
			d.dq = d.dq[:len(d.dq)-1]
		}
		d.dq = append(d.dq, d.we)
	}
	d.ws = s
	for len(d.dq) > 0 && d.dq[0] < d.ws {
		d.dq = d.dq[1:]
	}
}

// winAccum is a sliding sum/count/avg over positions of one partition.
type winAccum struct {
	f      *winFunc
	star   bool
	vec    colVec
	perm   []uint32
	get    func(row int) (int64, bool) // integer-like values (ints, decimal64)
	get128 func(row int) (i128, bool)
	getF   func(row int) (float64, bool)

	cnt              int64
	sum              i128
	fsum, fc         float64 // Kahan-Babuska sum of finite values
	nan, pinf, ninf  int64
	overflowedInt128 bool
}

func newWinAccum(f *winFunc, s *rowStore, perm []uint32) *winAccum {
	a := &winAccum{f: f, perm: perm, star: f.spec.Func == WinCountStar}
	if a.star {
		return a
	}
	v := s.vecs[f.spec.Arg]
	a.vec = v
	c := f.argCol
	switch {
	case c.class == pcFloat && c.width == 4:
		vals := castSlice[float32](v.(*fixedVec[uint32]).vals)
		a.getF = func(r int) (float64, bool) { return float64(vals[r]), !v.IsNull(r) }
	case c.class == pcFloat:
		vals := castSlice[float64](v.(*fixedVec[uint64]).vals)
		a.getF = func(r int) (float64, bool) { return vals[r], !v.IsNull(r) }
	case c.class == pcDec128:
		vals := castSlice[i128](v.(*fixedVec[[2]uint64]).vals)
		a.get128 = func(r int) (i128, bool) { return vals[r], !v.IsNull(r) }
	case c.class == pcInt:
		switch c.width {
		case 1:
			vals := castSlice[int8](v.(*fixedVec[uint8]).vals)
			a.get = func(r int) (int64, bool) { return int64(vals[r]), !v.IsNull(r) }
		case 2:
			vals := castSlice[int16](v.(*fixedVec[uint16]).vals)
			a.get = func(r int) (int64, bool) { return int64(vals[r]), !v.IsNull(r) }
		case 4:
			vals := castSlice[int32](v.(*fixedVec[uint32]).vals)
			a.get = func(r int) (int64, bool) { return int64(vals[r]), !v.IsNull(r) }
		default:
			vals := castSlice[int64](v.(*fixedVec[uint64]).vals)
			a.get = func(r int) (int64, bool) { return vals[r], !v.IsNull(r) }
		}
	default:
		// count(x) of any other type only needs NULLs.
		a.get = func(r int) (int64, bool) { return 0, !v.IsNull(r) }
	}
	return a
}

func (a *winAccum) reset() {
	a.cnt, a.sum, a.fsum, a.fc, a.nan, a.pinf, a.ninf = 0, i128{}, 0, 0, 0, 0, 0
}

func (a *winAccum) update(pos int, sign int64) {
	if a.star {
		a.cnt += sign
		return
	}
	r := int(a.perm[pos])
	switch {
	case a.getF != nil:
		x, ok := a.getF(r)
		if !ok {
			return
		}
		a.cnt += sign
		switch {
		case x != x:
			a.nan += sign
		case math.IsInf(x, 1):
			a.pinf += sign
		case math.IsInf(x, -1):
			a.ninf += sign
		default:
			a.kahan(float64(sign) * x)
		}
	case a.get128 != nil:
		x, ok := a.get128(r)
		if !ok {
			return
		}
		a.cnt += sign
		if sign < 0 {
			x = x.neg()
		}
		var of bool
		a.sum, of = a.sum.add(x)
		a.overflowedInt128 = a.overflowedInt128 || of
	default:
		x, ok := a.get(r)
		if !ok {
			return
		}
		a.cnt += sign
		a.sum.addInt64(sign * x)
	}
}

// kahan adds x with Neumaier's compensation.
func (a *winAccum) kahan(x float64) {
	t := a.fsum + x
	if math.Abs(a.fsum) >= math.Abs(x) {
		a.fc += (a.fsum - t) + x
	} else {
		a.fc += (x - t) + a.fsum
	}
	a.fsum = t
}

func (a *winAccum) add(pos int) { a.update(pos, 1) }

// merge adds b's rows to a's (a copy's: the sliders keep theirs).
func (a *winAccum) merge(b *winAccum) {
	a.cnt += b.cnt
	var of bool
	a.sum, of = a.sum.add(b.sum)
	a.overflowedInt128 = a.overflowedInt128 || b.overflowedInt128 || of
	a.kahan(b.fsum)
	a.kahan(b.fc)
	a.nan += b.nan
	a.pinf += b.pinf
	a.ninf += b.ninf
}
func (a *winAccum) remove(pos int) { a.update(pos, -1) }

// result stores the frame's value at sorted position p.
func (a *winAccum) result(r *winResult, p int) error {
	f := a.f
	switch f.spec.Func {
	case WinCount, WinCountStar:
		r.i64[p] = a.cnt
		return nil
	}
	if a.cnt == 0 {
		return nil // NULL (valid stays false)
	}
	r.valid[p] = true
	avg := f.spec.Func == WinAvg
	switch {
	case a.getF != nil:
		var s float64
		switch {
		case a.nan > 0 || (a.pinf > 0 && a.ninf > 0):
			s = math.NaN()
		case a.pinf > 0:
			s = math.Inf(1)
		case a.ninf > 0:
			s = math.Inf(-1)
		default:
			s = a.fsum + a.fc
		}
		if avg {
			s /= float64(a.cnt)
		}
		r.f64[p] = s
	case f.result.ID() == arrow.DECIMAL128:
		if a.overflowedInt128 {
			return errDecOverflow(string(f.spec.Func))
		}
		if !avg {
			if !a.sum.fits38() {
				return errDecOverflow("sum")
			}
			r.d128[p] = a.sum
			return nil
		}
		m, of := a.sum.mulPow10(int(avgScale(f.scale) - f.scale))
		if of {
			return errDecOverflow("avg")
		}
		q := m.divRound(uint64(a.cnt))
		if !q.fits38() {
			return errDecOverflow("avg")
		}
		r.d128[p] = q
	case avg:
		r.f64[p] = a.sum.float64() / float64(a.cnt)
	default:
		if a.sum.hi != int64(a.sum.lo)>>63 { // does not fit int64
			return errSumOverflow
		}
		r.i64[p] = int64(a.sum.lo)
	}
	return nil
}

// Close implements Operator.
func (w *Window) Close() error {
	if !w.closing() {
		return nil
	}
	w.store, w.perm, w.results, w.tail = nil, nil, nil, nil
	if w.x != nil {
		w.x.close()
		w.chunk.Close()
	}
	if w.acct != nil {
		w.acct.Close()
	}
	return w.in.Close()
}
