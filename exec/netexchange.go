package exec

// Network exchanges: the operators that connect the stages of a
// distributed plan through the shuffle layer (package shuffle).
//
// A network exchange is one shuffle channel. Its senders are the output
// streams of the producing stage's tasks (NetSend drives each stream on
// its own goroutine, encodes its batches as Arrow IPC payloads and sends
// them: to receiver 0 for a gather, to every receiver for a broadcast, to
// the receiver HashPartitioner picks for a hash repartition (through
// NetSendSpec.Route when the consumer was coalesced) or RangePartitioner
// for a range exchange, where slices smaller
// than half a batch are first collected per receiver into batches of
// about Env.BatchSize rows: coalescer); its
// receivers are the input streams of the consuming stage's tasks
// (NetReceiver, one operator per stream). Both ends know the schema from
// the plan; payloads carry its fingerprint, so a plan mismatch is an
// error, not misread columns.
//
// INVARIANT: a hash repartition across the network uses NewHashPartitioner
// over all receivers of the channel (or over Route's partitions, each
// mapped to one receiver), the same function local repartitions use, so
// equal keys meet in one receiver whatever task sent them.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/shuffle"
)

// NetSendSpec says how NetSend routes rows.
type NetSendSpec struct {
	// Kind is ExchangeGather (every row to receiver 0), ExchangeBroadcast
	// (every row to every receiver), ExchangeHash (by Keys) or
	// ExchangeRange (by the value of Keys[0] against Cuts).
	Kind ExchangeKind
	// Keys are the hash columns (ExchangeHash) or the one range key
	// (ExchangeRange).
	Keys []int
	// Cuts (ExchangeRange) are the lowest values of receivers 1 to
	// Receivers-1 (RangePartitioner).
	Cuts []int64
	// Receivers is the number of receivers of the channel (the hash
	// partitions, unless Splits adds receivers).
	Receivers int
	// Splits (adaptive skew splits: engine/dist/adaptive.go) lists hash
	// partitions that several receivers share: partition q's rows go to
	// the receivers Splits[q] (q itself first), spread over them (each
	// slice to the next, round-robin) or, with SplitCopy, copied to every
	// one. The hash partitions are then the first Receivers-extra
	// receivers, extra counting the receivers the splits add.
	Splits    map[int][]int
	SplitCopy bool
	// Route (adaptive coalescing: engine/dist/coalesce.go) maps hash
	// partitions to receivers: there are len(Route) partitions, and
	// partition q's rows go to receiver Route[q] (fewer receivers than
	// partitions: several partitions share one). Never with Splits.
	Route []int
}

// partitions is the number of hash partitions: Route's, or the receivers
// less those the splits add.
func (s NetSendSpec) partitions() int {
	if len(s.Route) > 0 {
		return len(s.Route)
	}
	m := s.Receivers
	for _, d := range s.Splits {
		m -= len(d) - 1
	}
	return m
}

// NetCounters count what network exchange operators moved (updated
// atomically; one set may be shared by several operators).
type NetCounters struct {
	Rows, Batches, Bytes atomic.Int64
	// Stream, when set (before the operators run), is called as each
	// stream of an exchange ends after carrying at least one payload, with
	// the time from its first payload to its end: a sending stream's close
	// once its last payload is handed to the shuffle layer, a receiving
	// stream's end of stream (every sender closed). The latency of the
	// shuffle as each end saw it (nicflow_shuffle_seconds).
	Stream func(time.Duration)
}

// NetSend drives every input on its own goroutine and sends its batches
// through the matching sender (senders[i] for inputs[i]); schema is the
// channel's schema (the inputs' columns, relabeled). Senders are closed
// when their input ends, or failed with the error. NetSend opens and
// closes the inputs and returns the first error, after every goroutine
// has stopped.
func NetSend(env *Env, inputs []Operator, schema *arrow.Schema, senders []*shuffle.Sender, spec NetSendSpec, sent *NetCounters) error {
	if len(inputs) != len(senders) {
		closeOps(inputs)
		return nferr.Internalf("network exchange: %d inputs, %d senders", len(inputs), len(senders))
	}
	switch spec.Kind {
	case ExchangeGather, ExchangeBroadcast, ExchangeHash:
	case ExchangeRange:
		if len(spec.Keys) != 1 || spec.Receivers != len(spec.Cuts)+1 || len(spec.Splits) > 0 || len(spec.Route) > 0 {
			closeOps(inputs)
			return nferr.Internalf("network exchange: range exchange on %d keys with %d cuts to %d receivers", len(spec.Keys), len(spec.Cuts), spec.Receivers)
		}
	default:
		closeOps(inputs)
		return nferr.Internalf("network exchange: kind %q cannot cross the network", spec.Kind)
	}
	if spec.Receivers < 1 {
		closeOps(inputs)
		return nferr.Internalf("network exchange: %d receivers", spec.Receivers)
	}
	if m := spec.partitions(); len(spec.Splits) > 0 {
		if spec.Kind != ExchangeHash || m < 1 {
			closeOps(inputs)
			return nferr.Internalf("network exchange: splits of a %s exchange of %d receivers", spec.Kind, spec.Receivers)
		}
		for q, d := range spec.Splits {
			if q < 0 || q >= m || len(d) == 0 || d[0] != q {
				closeOps(inputs)
				return nferr.Internalf("network exchange: split of partition %d to %v (partitions %d)", q, d, m)
			}
			for _, r := range d[1:] {
				if r < m || r >= spec.Receivers {
					closeOps(inputs)
					return nferr.Internalf("network exchange: split of partition %d to receiver %d (partitions %d, receivers %d)", q, r, m, spec.Receivers)
				}
			}
		}
	}
	if len(spec.Route) > 0 {
		if spec.Kind != ExchangeHash || len(spec.Splits) > 0 {
			closeOps(inputs)
			return nferr.Internalf("network exchange: a partition route on a %s exchange (splits %d)", spec.Kind, len(spec.Splits))
		}
		for q, r := range spec.Route {
			if r < 0 || r >= spec.Receivers {
				closeOps(inputs)
				return nferr.Internalf("network exchange: partition %d routed to receiver %d of %d", q, r, spec.Receivers)
			}
		}
	}
	ctx, cancel := context.WithCancelCause(env.Ctx)
	defer cancel(nil)
	senv := *env
	senv.Ctx = ctx
	var wg sync.WaitGroup
	errs := make([]error, len(inputs))
	for i := range inputs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var first time.Time
			err := netSendOne(&senv, inputs[i], schema, senders[i], spec, sent, &first)
			if err != nil {
				senders[i].Fail(err)
				cancel(err)
			} else if cerr := senders[i].Close(); cerr != nil {
				err = cerr
				cancel(err)
			} else if sent != nil && sent.Stream != nil && !first.IsZero() {
				sent.Stream(time.Since(first))
			}
			errs[i] = err
		}(i)
	}
	wg.Wait()
	if c := context.Cause(ctx); c != nil && env.Ctx.Err() == nil {
		return c
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if env.Ctx.Err() != nil {
		return nferr.With(nferr.KindCanceled, context.Cause(env.Ctx))
	}
	return nil
}

func closeOps(ops []Operator) {
	for _, o := range ops {
		if o != nil {
			o.Close()
		}
	}
}

// netSendOne sends one input's batches; *first is set to the time of its
// first payload.
func netSendOne(env *Env, in Operator, schema *arrow.Schema, s *shuffle.Sender, spec NetSendSpec, sent *NetCounters, first *time.Time) (err error) {
	defer func() {
		if cerr := in.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if in.Schema().NumFields() != schema.NumFields() {
		return nferr.Internalf("network exchange: input has %d columns, the channel %d", in.Schema().NumFields(), schema.NumFields())
	}
	if err := in.Open(env); err != nil {
		return err
	}
	enc, err := shuffle.NewBatchEncoder(schema, env.Alloc)
	if err != nil {
		return err
	}
	var part interface{ Split(*Batch) [][]int32 }
	switch spec.Kind {
	case ExchangeHash:
		if part, err = NewHashPartitioner(schema, spec.Keys, spec.partitions()); err != nil {
			return err
		}
	case ExchangeRange:
		if part, err = NewRangePartitioner(schema, spec.Keys[0], spec.Cuts); err != nil {
			return err
		}
	}
	// next is each split partition's next receiver (spread splits).
	var next map[int]int
	if len(spec.Splits) > 0 && !spec.SplitCopy {
		next = make(map[int]int, len(spec.Splits))
	}
	// sendColsTo encodes n rows (cols, released here) and sends them to
	// dest, or to every receiver, or (a copied split) to every receiver
	// sharing partition dest.
	sendColsTo := func(cols []arrow.Array, rows int, dest int, broadcast bool) error {
		rec := array.NewRecordBatch(schema, cols, int64(rows))
		p, err := enc.Encode(rec)
		rec.Release()
		releaseArrays(cols)
		if err != nil {
			return err
		}
		n := int64(len(p))
		if first.IsZero() {
			*first = time.Now()
		}
		copies := int64(1)
		switch d := spec.Splits[dest]; {
		case broadcast:
			err = s.Broadcast(env.Ctx, p)
		case spec.SplitCopy && len(d) > 1:
			// NB: the payload is not modified once sent, so the receivers
			// of a copied split share it as a broadcast's do.
			for _, r := range d {
				if err = s.Send(env.Ctx, r, p); err != nil {
					break
				}
			}
			copies = int64(len(d))
		default:
			err = s.Send(env.Ctx, dest, p)
		}
		if err != nil {
			return err
		}
		if sent != nil {
			sent.Rows.Add(int64(rows) * copies)
			sent.Batches.Add(copies)
			sent.Bytes.Add(n * copies)
		}
		return nil
	}
	send := func(b *Batch, sel []int32, dest int, broadcast bool) error {
		d := Compact(env.Alloc, &Batch{Cols: b.Cols, N: b.N, Sel: sel})
		return sendColsTo(d.Cols, d.N, dest, broadcast)
	}
	target := env.BatchSize
	if target <= 0 {
		target = DefaultBatchSize
	}
	var co *coalescer
	switch {
	case (spec.Kind == ExchangeHash || spec.Kind == ExchangeRange) && spec.Receivers > 1:
		co = newCoalescer(env.Alloc, schema, spec.Receivers, target, func(q int, cols []arrow.Array, n int) error {
			// NB: a copied split's rows are collected under the
			// partition's first receiver and sent to all of them.
			return sendColsTo(cols, n, q, false)
		})
	case spec.Kind == ExchangeGather || spec.Kind == ExchangeBroadcast:
		// Small batches (a selective filter's, a join's over small
		// inputs, a held output's) are collected into full ones before
		// they cross: a broadcast sends each batch to every receiver, and
		// each costs a frame, a decode and an operator call there (Q5 on
		// 16 workers broadcast 46,000 rows as 3,072 batches of 240).
		bc := spec.Kind == ExchangeBroadcast
		co = newCoalescer(env.Alloc, schema, 1, target, func(_ int, cols []arrow.Array, n int) error {
			return sendColsTo(cols, n, 0, bc)
		})
	}
	// sendWhole sends a batch of a gather or broadcast: a small one joins
	// the collected rows; a large one goes as it is, after them. NB: the
	// shuffle does not keep payloads in order (a large one is sent at
	// once, small ones are aggregated), and nothing downstream needs it.
	sendWhole := func(b *Batch, broadcast bool) error {
		if co == nil {
			return send(b, b.Sel, 0, broadcast)
		}
		rows := b.N
		if b.Sel != nil {
			rows = len(b.Sel)
		}
		if rows < target/2 {
			return co.add(0, b, b.Sel)
		}
		if err := co.send(0); err != nil {
			return err
		}
		return send(b, b.Sel, 0, broadcast)
	}
	for {
		if err := env.Ctx.Err(); err != nil {
			return nferr.With(nferr.KindCanceled, context.Cause(env.Ctx))
		}
		b, err := in.Next()
		if err != nil {
			return err
		}
		if b == nil {
			if co != nil {
				return co.flushAll()
			}
			return nil
		}
		switch spec.Kind {
		case ExchangeGather:
			err = sendWhole(b, false)
		case ExchangeBroadcast:
			err = sendWhole(b, true)
		case ExchangeHash, ExchangeRange:
			for q, sel := range part.Split(b) {
				if len(sel) == 0 {
					continue
				}
				if len(spec.Route) > 0 {
					// A coalesced consumer: the partition's task's receiver.
					q = spec.Route[q]
				}
				if d := spec.Splits[q]; next != nil && len(d) > 1 {
					// A spread split: this slice to the partition's next
					// receiver.
					i := next[q]
					next[q] = (i + 1) % len(d)
					q = d[i]
				}
				if co != nil && len(sel) < co.target/2 {
					err = co.add(q, b, sel)
				} else {
					err = send(b, sel, q, false)
				}
				if err != nil {
					break
				}
			}
		}
		if err != nil {
			return err
		}
	}
}

// coalescer collects the small slices a hash repartition cuts from each
// batch (a batch split over R receivers leaves about 1/R of it for each)
// into one batch per receiver of about target rows before they are
// encoded: fewer, larger messages cost less to encode, route and decode,
// and the receiving operators see full batches.
type coalescer struct {
	alloc  memory.Allocator
	target int
	stores []*rowStore
	idx    []int32 // the identity selection gathering a whole store
	// flush sends n rows (cols, owned by flush) to receiver q.
	flush func(q int, cols []arrow.Array, n int) error
}

// newCoalescer returns nil when a column type cannot be stored (the
// exchange then sends slices as they come).
func newCoalescer(alloc memory.Allocator, schema *arrow.Schema, receivers, target int, flush func(q int, cols []arrow.Array, n int) error) *coalescer {
	cols := make([]colInfo, schema.NumFields())
	for i := range cols {
		c, ok := classify(schema.Field(i).Type)
		if !ok {
			return nil
		}
		cols[i] = c
	}
	c := &coalescer{alloc: alloc, target: target, stores: make([]*rowStore, receivers), flush: flush}
	for q := range c.stores {
		c.stores[q] = newRowStore(cols)
	}
	return c
}

func (c *coalescer) add(q int, b *Batch, sel []int32) error {
	st := c.stores[q]
	st.appendCols(b.Cols, sel, b.N)
	if st.n >= c.target {
		return c.send(q)
	}
	return nil
}

func (c *coalescer) send(q int) error {
	st := c.stores[q]
	if st.n == 0 {
		return nil
	}
	n := st.n
	cols := st.gatherAll(c.alloc, &c.idx, nil)
	st.reset()
	return c.flush(q, cols, n)
}

// flushAll sends what every receiver's store holds.
func (c *coalescer) flushAll() error {
	for q := range c.stores {
		if err := c.send(q); err != nil {
			return err
		}
	}
	return nil
}

// NetReceiver is the operator reading one receiver of a network exchange:
// it decodes the payloads into batches of its schema.
type NetReceiver struct {
	schema *arrow.Schema
	rcv    *shuffle.Receiver
	recvd  *NetCounters
	env    *Env
	dec    *shuffle.BatchDecoder
	cur    arrow.RecordBatch
	out    Batch
	done   bool
	err    error
	first  time.Time // the first payload's arrival
}

// NewNetReceiver returns the operator reading rcv; recvd (optional)
// counts the rows, batches and payload bytes received.
func NewNetReceiver(schema *arrow.Schema, rcv *shuffle.Receiver, recvd *NetCounters) *NetReceiver {
	return &NetReceiver{schema: schema, rcv: rcv, recvd: recvd}
}

// Schema implements Operator.
func (r *NetReceiver) Schema() *arrow.Schema { return r.schema }

// Open implements Operator.
func (r *NetReceiver) Open(env *Env) error {
	r.env = env
	dec, err := shuffle.NewBatchDecoder(r.schema, env.Alloc)
	if err != nil {
		return err
	}
	r.dec = dec
	return nil
}

func (r *NetReceiver) releaseCur() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

// Next implements Operator.
func (r *NetReceiver) Next() (*Batch, error) {
	r.releaseCur()
	if r.err != nil {
		return nil, r.err
	}
	if r.done {
		return nil, nil
	}
	for {
		p, err := r.rcv.Next(r.env.Ctx)
		if err != nil {
			r.err = err
			return nil, err
		}
		if p == nil {
			r.done = true
			if r.recvd != nil && r.recvd.Stream != nil && !r.first.IsZero() {
				r.recvd.Stream(time.Since(r.first))
			}
			return nil, nil
		}
		if r.first.IsZero() {
			r.first = time.Now()
		}
		rec, err := r.dec.Decode(p)
		if err != nil {
			r.err = err
			return nil, err
		}
		if r.recvd != nil {
			r.recvd.Rows.Add(rec.NumRows())
			r.recvd.Batches.Add(1)
			r.recvd.Bytes.Add(int64(len(p)))
		}
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		r.cur = rec
		r.out = Batch{Cols: rec.Columns(), N: int(rec.NumRows())}
		return &r.out, nil
	}
}

// Close implements Operator.
func (r *NetReceiver) Close() error {
	r.releaseCur()
	if r.dec != nil {
		r.dec.Close()
		r.dec = nil
	}
	if r.rcv != nil {
		r.rcv.Close()
		r.rcv = nil
	}
	if r.err == nil {
		r.done = true
	}
	return nil
}
