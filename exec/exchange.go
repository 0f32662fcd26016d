package exec

// Local exchanges: the operators that connect parallel pipelines on one
// node, with the shapes the distributed planner uses between nodes.
//
//	Gather          N inputs -> 1 output (order between inputs unspecified)
//	HashRepartition N inputs -> M outputs, rows routed by HashPartitioner
//	                over key columns (the same function as the network
//	                shuffle, so local and remote repartitions agree)
//	Broadcast       N inputs -> M outputs, every output gets every row
//	OrderedMerge    N sorted inputs -> 1 sorted output (exchange_merge.go)
//
// Mechanics (one "router" serves the first three):
//
//   - The first output to be opened opens every input (with an Env whose
//     context the exchange can cancel) and starts one producer goroutine
//     per input. A producer pulls batches, Retains their arrays (they are
//     borrowed), copies their selection, and sends them to the outputs'
//     bounded queues (depth max(2, N) batches per output), charging the
//     queued bytes to the "exchange" account.
//   - An output's Next returns the next queued batch; the arrays stay
//     valid until its next Next or Close, then are released.
//   - Errors: the first error of any producer (or of opening an input)
//     cancels the other producers and is returned by every output's Next.
//     Cancellation of env.Ctx stops producers and consumers alike.
//   - Close: an output closed early stops receiving (producers drop its
//     rows). When the last output closes, the exchange cancels its
//     producers, waits for them (no goroutine outlives Close), releases
//     every queued batch and closes the inputs.
//   - NB: the M outputs of a repartition or broadcast must be consumed
//     concurrently (each by its own pipeline goroutine, e.g. under a
//     Gather): a producer blocks when one output's queue is full.

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

// ExchangeKind names a local exchange.
type ExchangeKind string

// The exchange kinds.
const (
	ExchangeGather    ExchangeKind = "gather"
	ExchangeHash      ExchangeKind = "hash"
	ExchangeBroadcast ExchangeKind = "broadcast"
	ExchangeMerge     ExchangeKind = "merge"
	// ExchangeHeld (distributed plans only) keeps a stage's output on the
	// node that computed it, for a later wave of the query to read
	// (adaptive execution: engine/dist/adaptive.go).
	ExchangeHeld ExchangeKind = "held"
	// ExchangeRange (distributed plans only) sends a row to the receiver
	// whose value range holds its key (RangePartitioner): the task of a
	// range-split scan that reads that key, so rows join a table where it
	// is read instead of the table moving (engine/dist: D72).
	ExchangeRange ExchangeKind = "range"
)

// ExchangeSpec describes an exchange as plain data: the planner uses the
// same spec for local exchanges (NewLocalExchange) and for network
// exchanges between stages.
type ExchangeSpec struct {
	Kind ExchangeKind
	// Keys are the hash columns (ExchangeHash).
	Keys []int
	// Outputs is the number of outputs (ExchangeHash, ExchangeBroadcast).
	Outputs int
	// SortKeys order the inputs and the output (ExchangeMerge).
	SortKeys []SortKey
}

// NewLocalExchange builds the local exchange spec describes over inputs
// and returns its outputs (one for gather and merge).
func NewLocalExchange(spec ExchangeSpec, inputs []Operator) ([]Operator, error) {
	switch spec.Kind {
	case ExchangeGather:
		g, err := NewGather(inputs)
		if err != nil {
			return nil, err
		}
		return []Operator{g}, nil
	case ExchangeHash:
		return NewHashRepartition(inputs, spec.Keys, spec.Outputs)
	case ExchangeBroadcast:
		return NewBroadcast(inputs, spec.Outputs)
	case ExchangeMerge:
		m, err := NewOrderedMerge(inputs, spec.SortKeys)
		if err != nil {
			return nil, err
		}
		return []Operator{m}, nil
	}
	return nil, nferr.Internalf("exchange: unknown kind %q", spec.Kind)
}

// syncAccount is an Account shared by goroutines.
type syncAccount struct {
	mu sync.Mutex
	a  *Account
}

func (s *syncAccount) grow(n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.a.Grow(n)
}

func (s *syncAccount) shrink(n int64) {
	s.mu.Lock()
	s.a.Shrink(n)
	s.mu.Unlock()
}

func (s *syncAccount) close() {
	s.mu.Lock()
	s.a.Close()
	s.mu.Unlock()
}

// exItem is a queued batch: retained arrays and an owned selection.
type exItem struct {
	b     Batch
	bytes int64
}

func (it *exItem) release(acct *syncAccount) {
	releaseArrays(it.b.Cols)
	if acct != nil && it.bytes > 0 {
		acct.shrink(it.bytes)
	}
	it.b = Batch{}
	it.bytes = 0
}

type routeKind int

const (
	routeGather routeKind = iota
	routeHash
	routeBroadcast
)

// router moves batches from N inputs to M outputs; see the file comment.
type router struct {
	name   string
	kind   routeKind
	inputs []Operator
	schema *arrow.Schema
	keys   []int
	outs   []*exchangeOut

	startOnce sync.Once
	ctx       context.Context
	cancel    context.CancelFunc
	acct      *syncAccount
	wg        sync.WaitGroup
	failed    atomic.Pointer[error]
	closedN   atomic.Int32
	finishMu  sync.Mutex
	finished  bool
}

// exchangeOut is one output of a router.
type exchangeOut struct {
	r      *router
	idx    int
	ch     chan exItem
	stop   chan struct{} // closed when the consumer closes
	env    *Env
	cur    exItem
	done   bool
	closed bool
}

func newRouter(name string, kind routeKind, inputs []Operator, keys []int, m int) (*router, error) {
	if len(inputs) == 0 {
		return nil, nferr.Internalf("%s: no inputs", name)
	}
	if m < 1 {
		return nil, nferr.Internalf("%s: %d outputs", name, m)
	}
	schema := inputs[0].Schema()
	for i, in := range inputs[1:] {
		if err := checkSchemaTypes(schema, in.Schema()); err != nil {
			return nil, nferr.Wrap(nferr.KindInternal, err, "%s: input %d", name, i+1)
		}
	}
	if kind == routeHash {
		// Validate the keys once; producers build their own partitioners.
		if _, err := NewHashPartitioner(schema, keys, m); err != nil {
			return nil, err
		}
	}
	r := &router{name: name, kind: kind, inputs: inputs, schema: schema, keys: keys}
	depth := max(2, len(inputs))
	for q := 0; q < m; q++ {
		r.outs = append(r.outs, &exchangeOut{r: r, idx: q, ch: make(chan exItem, depth), stop: make(chan struct{})})
	}
	return r, nil
}

func (r *router) operators() []Operator {
	ops := make([]Operator, len(r.outs))
	for i, o := range r.outs {
		ops[i] = o
	}
	return ops
}

func (r *router) setErr(err error) {
	r.failed.CompareAndSwap(nil, &err)
	r.cancel()
}

func (r *router) err() error {
	if p := r.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// start opens the inputs and starts the producers (once).
func (r *router) start(env *Env) {
	r.startOnce.Do(func() {
		r.ctx, r.cancel = context.WithCancel(env.Ctx)
		r.acct = &syncAccount{a: env.Budget.NewAccount(r.name)}
		cenv := *env
		cenv.Ctx = r.ctx
		for _, in := range r.inputs {
			if err := in.Open(&cenv); err != nil {
				r.setErr(err)
				break
			}
		}
		var live atomic.Int32
		live.Store(int32(len(r.inputs)))
		for i, in := range r.inputs {
			r.wg.Add(1)
			go func(i int, in Operator) {
				defer r.wg.Done()
				if r.err() == nil {
					if err := r.produce(in); err != nil {
						r.setErr(err)
					}
				}
				if live.Add(-1) == 0 {
					// The last producer ends every output's stream.
					for _, o := range r.outs {
						close(o.ch)
					}
				}
			}(i, in)
		}
	})
}

// produce drains one input into the outputs.
func (r *router) produce(in Operator) error {
	var part *HashPartitioner
	if r.kind == routeHash {
		part, _ = NewHashPartitioner(r.schema, r.keys, len(r.outs))
	}
	for {
		if err := r.ctx.Err(); err != nil {
			return nil // canceled by Close or by another producer's error
		}
		b, err := in.Next()
		if err != nil {
			if r.ctx.Err() != nil && nferr.Is(err, nferr.KindCanceled) {
				return nil
			}
			return err
		}
		if b == nil {
			return nil
		}
		// NB: Arrow computes a sliced array's null count lazily, writing
		// it into the array; force it here, before the arrays are shared
		// with consumer goroutines, so that they only read it.
		for _, c := range b.Cols {
			c.NullN()
		}
		switch r.kind {
		case routeGather:
			if err := r.send(r.outs[0], b, b.Sel, true); err != nil {
				return err
			}
		case routeBroadcast:
			var sel []int32
			if b.Sel != nil {
				sel = append([]int32(nil), b.Sel...)
			}
			for _, o := range r.outs {
				if err := r.send(o, b, sel, false); err != nil {
					return err
				}
			}
		case routeHash:
			for q, sel := range part.Split(b) {
				if len(sel) == 0 {
					continue
				}
				if err := r.send(r.outs[q], b, sel, true); err != nil {
					return err
				}
			}
		}
	}
}

// send queues the rows sel of b for output o (copying sel when copySel).
func (r *router) send(o *exchangeOut, b *Batch, sel []int32, copySel bool) error {
	select {
	case <-o.stop:
		return nil // the consumer is gone
	default:
	}
	it := exItem{b: Batch{Cols: make([]arrow.Array, len(b.Cols)), N: b.N}}
	for i, c := range b.Cols {
		c.Retain()
		it.b.Cols[i] = c
	}
	if sel != nil {
		if copySel {
			sel = append([]int32(nil), sel...)
		}
		it.b.Sel = sel
	}
	it.bytes = batchBytes(&it.b)
	if err := r.acct.grow(it.bytes); err != nil {
		it.bytes = 0
		it.release(nil)
		return err
	}
	select {
	case o.ch <- it:
		return nil
	case <-o.stop:
	case <-r.ctx.Done():
	}
	it.release(r.acct)
	return nil
}

// finish stops the producers, releases queued batches and closes the
// inputs; it runs when the last output closes.
func (r *router) finish() error {
	r.finishMu.Lock()
	defer r.finishMu.Unlock()
	if r.finished {
		return nil
	}
	r.finished = true
	if r.cancel != nil {
		r.cancel()
		r.wg.Wait()
		for _, o := range r.outs {
			for it := range o.ch {
				it.release(r.acct)
			}
		}
	}
	var first error
	for _, in := range r.inputs {
		if err := in.Close(); err != nil && first == nil {
			first = err
		}
	}
	if r.acct != nil {
		r.acct.close()
	}
	return first
}

// Schema implements Operator.
func (o *exchangeOut) Schema() *arrow.Schema { return o.r.schema }

// Open implements Operator.
func (o *exchangeOut) Open(env *Env) error {
	o.env = env
	o.r.start(env)
	return o.r.err()
}

// Next implements Operator.
func (o *exchangeOut) Next() (*Batch, error) {
	o.cur.release(o.r.acct)
	if o.closed || o.done {
		if err := o.r.err(); err != nil && !o.closed {
			return nil, err
		}
		return nil, nil
	}
	if err := o.r.err(); err != nil {
		return nil, err
	}
	if err := o.env.Ctx.Err(); err != nil {
		return nil, nferr.With(nferr.KindCanceled, err)
	}
	select {
	case it, ok := <-o.ch:
		if !ok {
			if err := o.r.err(); err != nil {
				return nil, err
			}
			if err := o.env.Ctx.Err(); err != nil {
				return nil, nferr.With(nferr.KindCanceled, err)
			}
			o.done = true
			return nil, nil
		}
		if err := o.r.err(); err != nil {
			it.release(o.r.acct)
			return nil, err
		}
		o.cur = it
		return &o.cur.b, nil
	case <-o.env.Ctx.Done():
		return nil, nferr.With(nferr.KindCanceled, o.env.Ctx.Err())
	}
}

// Close implements Operator.
func (o *exchangeOut) Close() error {
	if o.closed {
		return nil
	}
	o.closed = true
	o.cur.release(o.r.acct)
	close(o.stop)
	if int(o.r.closedN.Add(1)) == len(o.r.outs) {
		return o.r.finish()
	}
	return nil
}

// NewGather returns an operator that emits the union of inputs, each driven
// by its own goroutine. Row order between inputs is unspecified.
func NewGather(inputs []Operator) (Operator, error) {
	r, err := newRouter("gather exchange", routeGather, inputs, nil, 1)
	if err != nil {
		return nil, err
	}
	return r.outs[0], nil
}

// NewHashRepartition returns m operators; output q emits the rows of all
// inputs whose key columns hash (HashPartitioner) to partition q.
func NewHashRepartition(inputs []Operator, keys []int, m int) ([]Operator, error) {
	r, err := newRouter("hash repartition exchange", routeHash, inputs, keys, m)
	if err != nil {
		return nil, err
	}
	return r.operators(), nil
}

// NewBroadcast returns m operators that each emit every row of all inputs.
func NewBroadcast(inputs []Operator, m int) ([]Operator, error) {
	r, err := newRouter("broadcast exchange", routeBroadcast, inputs, nil, m)
	if err != nil {
		return nil, err
	}
	return r.operators(), nil
}
