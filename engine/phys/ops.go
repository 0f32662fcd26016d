package phys

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
)

// The few operators the physical plan needs beyond exec's: a morsel-driven
// table scan over a shared queue of row groups, the reader of a shared
// (materialized) subplan, the scalar-subquery checks, and the counting
// wrapper of EXPLAIN ANALYZE. They follow exec.Operator's contract.

// ---------------------------------------------------------------- scans

// TaskQueue hands out a scan's row-group tasks to the scan instances of
// one node, in order.
type TaskQueue struct {
	tasks []storage.FileRange
	next  atomic.Int64

	mu    sync.Mutex
	stats storage.ScanStats
}

func (q *TaskQueue) take() (storage.FileRange, bool) {
	i := q.next.Add(1) - 1
	if i >= int64(len(q.tasks)) {
		return storage.FileRange{}, false
	}
	return q.tasks[i], true
}

func (q *TaskQueue) AddStats(s storage.ScanStats) {
	q.mu.Lock()
	q.stats.RowGroupsTotal += s.RowGroupsTotal
	q.stats.RowGroupsPruned += s.RowGroupsPruned
	q.stats.RowsRead += s.RowsRead
	q.stats.RowsReturned += s.RowsReturned
	q.stats.BytesRead += s.BytesRead
	q.stats.LocalScans += s.LocalScans
	q.stats.ByteScans += s.ByteScans
	q.stats.WireBytes += s.WireBytes
	q.mu.Unlock()
}

func (q *TaskQueue) Totals() storage.ScanStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.stats
}

// morselScan is one instance of a parallel table scan: it takes the next
// row group from the node's queue whenever it finishes one, and reads it
// with an exec.Scan (pruning and filtering at the data).
type morselScan struct {
	src    storage.Source
	spec   storage.ScanSpec
	q      *TaskQueue
	schema *arrow.Schema
	// keyFilters are the join key filters the scan applies.
	keyFilters []storage.ScanKeyFilter
	// clock, when set, is ticked at every task (row group): a segmented
	// aggregate in this stream's pipeline flushes its groups then.
	clock *exec.SegmentClock

	env    *exec.Env
	cur    *exec.Scan
	done   bool
	err    error
	closed bool
}

func (s *morselScan) Schema() *arrow.Schema { return s.schema }

func (s *morselScan) Open(env *exec.Env) error {
	s.env = env
	return nil
}

func (s *morselScan) Next() (*exec.Batch, error) {
	if s.err != nil {
		return nil, s.err
	}
	for !s.done && !s.closed {
		if s.cur == nil {
			if err := s.env.Ctx.Err(); err != nil {
				s.err = nferr.With(nferr.KindCanceled, err)
				return nil, s.err
			}
			t, ok := s.q.take()
			if !ok {
				s.done = true
				break
			}
			if s.clock != nil {
				s.clock.Tick()
			}
			spec := s.spec
			if t.Path != "" {
				spec.Files = []storage.FileRange{t}
			}
			sc, err := exec.NewScan(s.src, spec, exec.ScanConfig{KeyFilters: s.keyFilters})
			if err != nil {
				s.err = err
				return nil, err
			}
			if err := sc.Open(s.env); err != nil {
				sc.Close()
				s.err = err
				return nil, err
			}
			s.cur = sc
		}
		b, err := s.cur.Next()
		if err != nil {
			s.err = err
			return nil, err
		}
		if b != nil {
			return b, nil
		}
		s.finishCur()
	}
	return nil, nil
}

func (s *morselScan) finishCur() error {
	if s.cur == nil {
		return nil
	}
	s.q.AddStats(s.cur.Stats())
	err := s.cur.Close()
	s.cur = nil
	return err
}

func (s *morselScan) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.finishCur()
}

// ---------------------------------------------------------------- shared subplans

// sharedMat is the materialization of a shared subplan (a view or CTE
// read twice): the first reader to need rows runs the subplan to the end
// and keeps its batches (compacted, charged to the "shared subplan"
// account); every reader then walks them. The last reader to close frees
// them.
type sharedMat struct {
	def    *PhysShared
	schema *arrow.Schema
	// root is the subplan's operator tree, built with the plan and run by
	// the first reader that needs rows.
	root exec.Operator
	refs atomic.Int32

	once       sync.Once
	batches    []exec.Batch
	acct       *exec.Account
	err        error
	rootClosed bool
}

func (m *sharedMat) get(env *exec.Env) ([]exec.Batch, error) {
	m.once.Do(func() { m.err = m.materialize(env) })
	return m.batches, m.err
}

func (m *sharedMat) materialize(env *exec.Env) error {
	defer m.closeRoot()
	m.acct = env.Budget.NewAccount("shared subplan " + m.def.Name)
	if err := m.root.Open(env); err != nil {
		return err
	}
	for {
		b, err := m.root.Next()
		if err != nil {
			return err
		}
		if b == nil {
			return nil
		}
		c := exec.Compact(env.Alloc, b)
		m.batches = append(m.batches, *c)
		if err := m.acct.Grow(batchBytes(c)); err != nil {
			return err
		}
	}
}

func (m *sharedMat) closeRoot() {
	if !m.rootClosed {
		m.rootClosed = true
		m.root.Close()
	}
}

// batchBytes is the size of a batch's buffers.
func batchBytes(b *exec.Batch) int64 {
	var n int64
	for _, a := range b.Cols {
		for _, buf := range a.Data().Buffers() {
			if buf != nil {
				n += int64(buf.Len())
			}
		}
	}
	return n
}

func (m *sharedMat) release() {
	if m.refs.Add(-1) != 0 {
		return
	}
	// INVARIANT: every reader closed, so no one is inside get.
	m.once.Do(func() {})
	m.closeRoot()
	for _, b := range m.batches {
		for _, a := range b.Cols {
			a.Release()
		}
	}
	m.batches = nil
	if m.acct != nil {
		m.acct.Close()
	}
}

// sharedReader streams the rows of a shared subplan.
type sharedReader struct {
	m      *sharedMat
	env    *exec.Env
	pos    int
	out    exec.Batch
	closed bool
}

func (r *sharedReader) Schema() *arrow.Schema { return r.m.schema }

func (r *sharedReader) Open(env *exec.Env) error {
	r.env = env
	return nil
}

func (r *sharedReader) Next() (*exec.Batch, error) {
	if r.closed {
		return nil, nil
	}
	bs, err := r.m.get(r.env)
	if err != nil {
		return nil, err
	}
	if err := r.env.Ctx.Err(); err != nil {
		return nil, nferr.With(nferr.KindCanceled, err)
	}
	for r.pos < len(bs) {
		b := bs[r.pos]
		r.pos++
		if b.N > 0 {
			r.out = exec.Batch{Cols: b.Cols, N: b.N}
			return &r.out, nil
		}
	}
	return nil, nil
}

func (r *sharedReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.m.release()
	return nil
}

// ---------------------------------------------------------------- scalar subqueries

// ErrTooManyRows is PostgreSQL's message for a scalar subquery with two
// rows.
const ErrTooManyRows = "more than one row returned by a subquery used as an expression"

// maxOneRow passes its input through and fails when it has a second row:
// the right side of an uncorrelated scalar subquery's join.
type maxOneRow struct {
	in   exec.Operator
	rows int
}

func (m *maxOneRow) Schema() *arrow.Schema    { return m.in.Schema() }
func (m *maxOneRow) Open(env *exec.Env) error { return m.in.Open(env) }
func (m *maxOneRow) Close() error             { return m.in.Close() }
func (m *maxOneRow) Next() (*exec.Batch, error) {
	b, err := m.in.Next()
	if err != nil || b == nil {
		return b, err
	}
	m.rows += b.Len()
	if m.rows > 1 {
		return nil, nferr.Queryf(ErrTooManyRows)
	}
	return b, nil
}

// rowIDOp appends an int64 column numbering the rows of its stream, unique
// over all streams of the node (the stream index is in the high bits).
type rowIDOp struct {
	in     exec.Operator
	schema *arrow.Schema
	base   int64
	next   int64

	env   *exec.Env
	ids   *array.Int64
	cols  []arrow.Array
	out   exec.Batch
	build *array.Int64Builder
}

// rowIDStreamBits leaves 2^40 rows per stream: more than a node scans.
const rowIDStreamBits = 40

func newRowID(in exec.Operator, stream int) *rowIDOp {
	fields := append(append([]arrow.Field(nil), in.Schema().Fields()...), arrow.Field{Name: "row_id", Type: arrow.PrimitiveTypes.Int64})
	return &rowIDOp{in: in, schema: arrow.NewSchema(fields, nil), base: int64(stream) << rowIDStreamBits}
}

func (r *rowIDOp) Schema() *arrow.Schema { return r.schema }

func (r *rowIDOp) Open(env *exec.Env) error {
	r.env = env
	alloc := env.Alloc
	if alloc == nil {
		alloc = memory.DefaultAllocator
	}
	r.build = array.NewInt64Builder(alloc)
	return r.in.Open(env)
}

func (r *rowIDOp) release() {
	if r.ids != nil {
		r.ids.Release()
		r.ids = nil
	}
}

func (r *rowIDOp) Next() (*exec.Batch, error) {
	r.release()
	b, err := r.in.Next()
	if err != nil || b == nil {
		return b, err
	}
	r.build.Reserve(b.N)
	for i := 0; i < b.N; i++ {
		r.build.UnsafeAppend(r.base + r.next + int64(i))
	}
	r.next += int64(b.N)
	r.ids = r.build.NewInt64Array()
	r.cols = append(append(r.cols[:0], b.Cols...), r.ids)
	r.out = exec.Batch{Cols: r.cols, N: b.N, Sel: b.Sel}
	return &r.out, nil
}

func (r *rowIDOp) Close() error {
	r.release()
	if r.build != nil {
		r.build.Release()
		r.build = nil
	}
	return r.in.Close()
}

// singleCheck fails when two consecutive rows of its stream have the same
// row id: a left row matched twice in the join of a scalar subquery.
type singleCheck struct {
	in   exec.Operator
	col  int
	prev int64
	seen bool
}

func (s *singleCheck) Schema() *arrow.Schema    { return s.in.Schema() }
func (s *singleCheck) Open(env *exec.Env) error { return s.in.Open(env) }
func (s *singleCheck) Close() error             { return s.in.Close() }
func (s *singleCheck) Next() (*exec.Batch, error) {
	b, err := s.in.Next()
	if err != nil || b == nil {
		return b, err
	}
	ids := b.Cols[s.col].(*array.Int64).Int64Values()
	check := func(id int64) error {
		if s.seen && id == s.prev {
			return nferr.Queryf(ErrTooManyRows)
		}
		s.prev, s.seen = id, true
		return nil
	}
	if b.Sel != nil {
		for _, i := range b.Sel {
			if err := check(ids[i]); err != nil {
				return nil, err
			}
		}
	} else {
		for _, id := range ids[:b.N] {
			if err := check(id); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// ---------------------------------------------------------------- stubs and instrumentation

// schemaStub stands for an input when the planner instantiates an exec
// operator only to learn its output schema (and validate its spec).
type schemaStub struct{ schema *arrow.Schema }

func (s schemaStub) Schema() *arrow.Schema    { return s.schema }
func (schemaStub) Open(*exec.Env) error       { return nil }
func (schemaStub) Next() (*exec.Batch, error) { return nil, nil }
func (schemaStub) Close() error               { return nil }

// OpStats are what EXPLAIN ANALYZE reports for one physical node, summed
// over its parallel instances.
type OpStats struct {
	Instances int
	Rows      atomic.Int64
	Batches   atomic.Int64
	// Nanos is the wall time spent inside the instances' Open, Next and
	// Close, children in the same pipeline included.
	Nanos   atomic.Int64
	budgets []*exec.Budget
	Scan    *TaskQueue
	// KeyFilters are the join key filters a scan node applies.
	KeyFilters []*storage.KeyFilter
	// RemotePeak, RemoteSpilled and RemoteSpillFiles are counted elsewhere
	// (by the tasks of a distributed stage) and added here.
	RemotePeak, RemoteSpilled, RemoteSpillFiles int64

	mu     sync.Mutex
	spills []*exec.Spill // the instances' views of the query's spill space
}

// Spilled sums what the node's instances wrote to spill files: bytes, and
// files (a sorted run, a partition, a merge pass's output each).
func (s *OpStats) Spilled() (bytes, files int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	bytes, files = s.RemoteSpilled, s.RemoteSpillFiles
	for _, sp := range s.spills {
		bytes += sp.Written()
		files += sp.Files()
	}
	return bytes, files
}

// PeakBytes sums the peak memory of the node's instances.
func (s *OpStats) PeakBytes() int64 {
	n := s.RemotePeak
	for _, b := range s.budgets {
		n += b.Peak()
	}
	return n
}

// instrumented wraps an operator instance with counters; it gives the
// operator its own child budget, so that its peak memory can be read.
type instrumented struct {
	op     exec.Operator
	st     *OpStats
	budget *exec.Budget
	env    exec.Env
}

func (w *instrumented) Schema() *arrow.Schema { return w.op.Schema() }

func (w *instrumented) Open(env *exec.Env) error {
	t := time.Now()
	w.env = *env
	w.env.Budget = w.budget
	if env.Spill != nil {
		w.env.Spill = env.Spill.Child()
		w.st.mu.Lock()
		w.st.spills = append(w.st.spills, w.env.Spill)
		w.st.mu.Unlock()
	}
	err := w.op.Open(&w.env)
	w.st.Nanos.Add(int64(time.Since(t)))
	return err
}

func (w *instrumented) Next() (*exec.Batch, error) {
	t := time.Now()
	b, err := w.op.Next()
	w.st.Nanos.Add(int64(time.Since(t)))
	if b != nil {
		w.st.Rows.Add(int64(b.Len()))
		w.st.Batches.Add(1)
	}
	return b, err
}

func (w *instrumented) Close() error {
	t := time.Now()
	err := w.op.Close()
	w.st.Nanos.Add(int64(time.Since(t)))
	return err
}

// ---------------------------------------------------------------- recursive CTEs

// recursive builds a recursive node: an exec.RecursiveUnion whose term is
// built again, by this builder, for every run. The term's shared subplans
// stay referenced until the union closes (a run's readers closing must not
// free rows the next run reads).
func (b *builder) recursive(n *PhysNode, ins [][]exec.Operator) ([]exec.Operator, error) {
	if len(ins) != 1 {
		for _, o := range ins {
			CloseAll(o)
		}
		return nil, nferr.Internalf("build: recursive node %d has %d inputs, want 1", n.ID, len(ins))
	}
	anchor, err := GatherOps(ins[0])
	if err != nil {
		return nil, err
	}
	work := exec.NewWorkTable(ColumnsSchema(n.Columns))
	if b.work == nil {
		b.work = map[int]*exec.WorkTable{}
	}
	b.work[n.Recursive.Work] = work
	h, err := b.holdShared(n.Recursive.Term)
	if err == nil {
		term := n.Recursive.Term
		h.Operator, err = exec.NewRecursiveUnion(anchor, work, func() (exec.Operator, error) {
			b.mu.Lock()
			ops, err := b.build(term)
			b.mu.Unlock()
			if err != nil {
				return nil, err
			}
			return GatherOps(ops)
		}, n.Recursive.Distinct)
	}
	if err != nil {
		anchor.Close()
		h.release()
		return nil, err
	}
	return []exec.Operator{h}, nil
}

// holdShared takes a reference on every shared subplan tree reads, for
// an operator that builds tree again and again.
func (b *builder) holdShared(tree *PhysNode) (*holdShared, error) {
	h := &holdShared{}
	var err error
	tree.Walk(func(t *PhysNode) {
		if t.Kind != PhysSharedScan {
			return
		}
		if m := b.shared[t.Shared.Def]; m != nil {
			m.refs.Add(1)
			h.held = append(h.held, m)
		} else if err == nil {
			err = nferr.Internalf("build: shared subplan %d is not defined", t.Shared.Def)
		}
	})
	return h, err
}

// holdShared is an operator holding references on shared subplans, which
// it releases when it closes.
type holdShared struct {
	exec.Operator
	held []*sharedMat
}

func (h *holdShared) Close() error {
	err := h.Operator.Close()
	h.release()
	return err
}

func (h *holdShared) release() {
	for _, m := range h.held {
		m.release()
	}
	h.held = nil
}

// ---------------------------------------------------------------- apply

// maxApplyCache bounds the distinct bindings an apply operator remembers
// the value of; beyond it, new bindings run without being remembered.
const maxApplyCache = 1 << 16

// applyOps builds an apply node: one operator per input stream, each with
// its own cache of values and its own references on the shared subplans
// the subquery reads.
func (b *builder) applyOps(n *PhysNode, ins [][]exec.Operator) ([]exec.Operator, error) {
	if len(ins) != 1 {
		for _, o := range ins {
			CloseAll(o)
		}
		return nil, nferr.Internalf("build: apply node %d has %d inputs, want 1", n.ID, len(ins))
	}
	sch := ColumnsSchema(n.Columns)
	ops := make([]exec.Operator, len(ins[0]))
	for i, in := range ins[0] {
		h, err := b.holdShared(n.Apply.Sub)
		if err != nil {
			h.release()
			CloseAll(ops[:i])
			CloseAll(ins[0][i:])
			return nil, err
		}
		h.Operator = &applyOp{in: in, b: b, spec: n.Apply, schema: sch, cache: map[string]arrow.Array{}, rows: map[string]*lateralRows{}}
		ops[i] = h
	}
	return ops, nil
}

// applyOp is one stream of an apply node: each input batch, compacted,
// with the subquery's value for each row as a last column.
type applyOp struct {
	in     exec.Operator
	b      *builder
	spec   *ApplyOp
	schema *arrow.Schema
	env    *exec.Env
	cache  map[string]arrow.Array
	// rows caches a table apply's rows per binding; cachedRows counts
	// them (bounded by maxApplyRows).
	rows       map[string]*lateralRows
	cachedRows int
	vals       []arrow.Array
	key        []byte
	out        exec.Batch
	owned      []arrow.Array
	err        error
	closed     bool
}

func (a *applyOp) Schema() *arrow.Schema { return a.schema }

func (a *applyOp) Open(env *exec.Env) error {
	a.env = env
	return a.in.Open(env)
}

func (a *applyOp) Next() (*exec.Batch, error) {
	if a.err != nil || a.closed {
		return nil, a.err
	}
	for {
		a.releaseOut()
		b, err := a.in.Next()
		if err == nil && b != nil {
			var out *exec.Batch
			if out, err = a.apply(b); err == nil {
				if out.N == 0 {
					continue // a table apply whose rows all joined nothing
				}
				return out, nil
			}
		}
		if err != nil {
			a.err = err
		}
		return nil, err
	}
}

// apply computes the value column of batch b.
func (a *applyOp) apply(b *exec.Batch) (*exec.Batch, error) {
	if err := a.env.Ctx.Err(); err != nil {
		return nil, nferr.With(nferr.KindCanceled, err)
	}
	if a.spec.Table {
		return a.applyTable(b)
	}
	c := exec.Compact(a.env.Alloc, b)
	a.owned = c.Cols
	a.vals = a.vals[:0]
	var uncached []arrow.Array // values not kept in the cache
	defer func() {
		for _, v := range uncached {
			v.Release()
		}
	}()
	lits := make(map[int]expr.Expr, len(a.spec.Params))
	for row := 0; row < c.N; row++ {
		if err := a.bindingKey(c, row, lits); err != nil {
			return nil, err
		}
		v, ok := a.cache[string(a.key)]
		if !ok {
			var err error
			if v, err = a.run(lits); err != nil {
				return nil, err
			}
			if len(a.cache) < maxApplyCache {
				a.cache[string(a.key)] = v
			} else {
				uncached = append(uncached, v)
			}
		}
		a.vals = append(a.vals, v)
	}
	col, err := array.Concatenate(a.vals, a.env.Alloc)
	if err != nil {
		return nil, nferr.Wrap(nferr.KindInternal, err, "apply: the values of subquery %d", a.spec.SubID)
	}
	a.owned = append(a.owned, col)
	a.out = exec.Batch{Cols: a.owned, N: c.N}
	return &a.out, nil
}

// openSub builds the subquery's tree with the parameters lits bound and
// opens it; the caller closes it.
func (a *applyOp) openSub(lits map[int]expr.Expr) (exec.Operator, error) {
	sub := bindParams(a.spec.Sub, lits)
	a.b.mu.Lock()
	ops, err := a.b.build(sub)
	a.b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	root, err := GatherOps(ops)
	if err != nil {
		return nil, err
	}
	if err := root.Open(a.env); err != nil {
		root.Close()
		return nil, err
	}
	return root, nil
}

// run evaluates the subquery with the parameters lits: a one-row array of
// its value (NULL when it has no row).
func (a *applyOp) run(lits map[int]expr.Expr) (arrow.Array, error) {
	root, err := a.openSub(lits)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var v arrow.Array
	rows := 0
	for {
		b, err := root.Next()
		if err != nil || b == nil {
			if err == nil && rows > 1 {
				err = nferr.Queryf(ErrTooManyRows)
			}
			if err != nil {
				if v != nil {
					v.Release()
				}
				return nil, err
			}
			break
		}
		if rows == 0 {
			i := 0 // the first live row
			if b.Sel != nil {
				i = int(b.Sel[0])
			}
			v = array.NewSlice(b.Cols[0], int64(i), int64(i+1))
		}
		rows += b.Len()
	}
	if v == nil {
		v = array.MakeArrayOfNull(a.env.Alloc, a.schema.Field(a.schema.NumFields()-1).Type, 1)
	}
	return v, nil
}

// maxApplyRows bounds the rows a table apply keeps cached over all its
// bindings; beyond it, new bindings run without being remembered.
const maxApplyRows = 1 << 20

// lateralRows are the rows a table apply's subquery returned for one
// binding: one dense array per column, n rows.
type lateralRows struct {
	cols []arrow.Array
	n    int
}

func (r *lateralRows) release() {
	for _, c := range r.cols {
		c.Release()
	}
	r.cols = nil
}

// bindingKey encodes the parameters of row of c as a cache key, filling
// lits with them.
func (a *applyOp) bindingKey(c *exec.Batch, row int, lits map[int]expr.Expr) error {
	a.key = a.key[:0]
	for i, slot := range a.spec.Params {
		l, err := expr.LiteralAt(c.Cols[a.spec.Cols[i]], row)
		if err != nil {
			return err
		}
		lits[slot] = l
		if l.Null {
			a.key = append(a.key, 'N', 0)
		} else {
			a.key = appendLitKey(append(a.key, 'V'), l)
		}
	}
	return nil
}

// appendLitKey appends a key of the literal l (LiteralAt's: a value, or an
// array's text cast to its type) to dst: the literal's text, with its
// arguments', each ended by 0 and its length.
func appendLitKey(dst []byte, l expr.Expr) []byte {
	dst = append(append(dst, l.Kind...), 0)
	dst = append(dst, l.Value...)
	dst = binary.AppendUvarint(append(dst, 0), uint64(len(l.Value)))
	for _, a := range l.Args {
		dst = appendLitKey(dst, a)
	}
	return append(dst, byte(len(l.Args)))
}

// applyTable joins each row of b with the rows of the subquery for its
// binding (a LATERAL join).
func (a *applyOp) applyTable(b *exec.Batch) (*exec.Batch, error) {
	alloc := a.env.Alloc
	c := exec.Compact(alloc, b)
	defer func() {
		for _, col := range c.Cols {
			col.Release()
		}
	}()
	var uncached []*lateralRows
	defer func() {
		for _, r := range uncached {
			r.release()
		}
	}()
	lits := make(map[int]expr.Expr, len(a.spec.Params))
	var parts []*lateralRows
	base := map[*lateralRows]int32{}
	total := int32(0)
	var lidx, ridx []int32
	for row := 0; row < c.N; row++ {
		if err := a.bindingKey(c, row, lits); err != nil {
			return nil, err
		}
		r, ok := a.rows[string(a.key)]
		if !ok {
			var err error
			if r, err = a.runTable(lits); err != nil {
				return nil, err
			}
			if len(a.rows) < maxApplyCache && a.cachedRows+r.n <= maxApplyRows {
				a.rows[string(a.key)] = r
				a.cachedRows += r.n
			} else {
				uncached = append(uncached, r)
			}
		}
		if r.n == 0 {
			if a.spec.Left {
				lidx, ridx = append(lidx, int32(row)), append(ridx, -1)
			}
			continue
		}
		at, seen := base[r]
		if !seen {
			at = total
			base[r] = at
			parts = append(parts, r)
			total += int32(r.n)
		}
		for k := int32(0); k < int32(r.n); k++ {
			lidx, ridx = append(lidx, int32(row)), append(ridx, at+k)
		}
	}
	nin := len(c.Cols)
	out := make([]arrow.Array, 0, a.schema.NumFields())
	fail := func(err error) (*exec.Batch, error) {
		for _, o := range out {
			o.Release()
		}
		return nil, nferr.Wrap(nferr.KindInternal, err, "apply: the rows of lateral subquery %d", a.spec.SubID)
	}
	for _, col := range c.Cols {
		out = append(out, exec.TakeRows(alloc, col, lidx))
	}
	for j := nin; j < a.schema.NumFields(); j++ {
		if len(parts) == 0 {
			out = append(out, array.MakeArrayOfNull(alloc, a.schema.Field(j).Type, len(ridx)))
			continue
		}
		if len(parts) == 1 {
			out = append(out, exec.TakeOrNull(alloc, parts[0].cols[j-nin], ridx))
			continue
		}
		src := make([]arrow.Array, len(parts))
		for i, p := range parts {
			src[i] = p.cols[j-nin]
		}
		all, err := array.Concatenate(src, alloc)
		if err != nil {
			return fail(err)
		}
		out = append(out, exec.TakeOrNull(alloc, all, ridx))
		all.Release()
	}
	a.owned = out
	a.out = exec.Batch{Cols: out, N: len(lidx)}
	return &a.out, nil
}

// runTable evaluates the subquery with the parameters lits: all its rows.
func (a *applyOp) runTable(lits map[int]expr.Expr) (*lateralRows, error) {
	root, err := a.openSub(lits)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	ncol := len(a.spec.Sub.Columns)
	batches := make([][]arrow.Array, ncol)
	release := func() {
		for _, bs := range batches {
			for _, x := range bs {
				x.Release()
			}
		}
	}
	n := 0
	for {
		b, err := root.Next()
		if err != nil {
			release()
			return nil, err
		}
		if b == nil {
			break
		}
		if b.Len() == 0 {
			continue
		}
		d := exec.Compact(a.env.Alloc, b)
		for j := range ncol {
			batches[j] = append(batches[j], d.Cols[j])
		}
		n += d.N
	}
	if n == 0 {
		release()
		return &lateralRows{}, nil
	}
	r := &lateralRows{cols: make([]arrow.Array, ncol), n: n}
	for j, bs := range batches {
		if len(bs) == 1 {
			r.cols[j] = bs[0]
			bs[0].Retain()
			continue
		}
		col, err := array.Concatenate(bs, a.env.Alloc)
		if err != nil {
			release()
			for _, c := range r.cols[:j] {
				c.Release()
			}
			return nil, nferr.Wrap(nferr.KindInternal, err, "apply: the rows of lateral subquery %d", a.spec.SubID)
		}
		r.cols[j] = col
	}
	release()
	return r, nil
}

func (a *applyOp) releaseOut() {
	for _, c := range a.owned {
		c.Release()
	}
	a.owned = nil
	a.out = exec.Batch{}
}

func (a *applyOp) Close() error {
	if a.closed {
		return nil
	}
	a.closed = true
	a.releaseOut()
	for _, v := range a.cache {
		v.Release()
	}
	a.cache = nil
	for _, r := range a.rows {
		r.release()
	}
	a.rows = nil
	return a.in.Close()
}
