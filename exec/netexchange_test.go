package exec

import (
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/shuffle"
)

// TestCoalescer checks the hash exchange's per-receiver batching: every
// row reaches its receiver once, in arrival order, nulls kept, in batches
// of at least the target except each receiver's last, and nothing leaks.
func TestCoalescer(t *testing.T) {
	alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer alloc.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	const receivers, target, batches, rows = 3, 100, 40, 37
	got := make([][]string, receivers)
	sizes := make([][]int, receivers)
	co := newCoalescer(alloc, schema, receivers, target, func(q int, cols []arrow.Array, n int) error {
		defer releaseArrays(cols)
		k, s := cols[0].(*array.Int64), cols[1].(*array.String)
		for i := 0; i < n; i++ {
			v := "null"
			if k.IsValid(i) {
				v = fmt.Sprint(k.Value(i))
			}
			if s.IsValid(i) {
				v += "/" + s.Value(i)
			}
			got[q] = append(got[q], v)
		}
		sizes[q] = append(sizes[q], n)
		return nil
	})
	if co == nil {
		t.Fatal("no coalescer for int64 and utf8 columns")
	}
	want := make([][]string, receivers)
	id := 0
	for b := 0; b < batches; b++ {
		kb, sb := array.NewInt64Builder(alloc), array.NewStringBuilder(alloc)
		for i := 0; i < rows; i++ {
			if id%11 == 0 {
				kb.AppendNull()
			} else {
				kb.Append(int64(id))
			}
			sb.Append(fmt.Sprintf("v%d", id))
			id++
		}
		batch := &Batch{Cols: []arrow.Array{kb.NewArray(), sb.NewArray()}, N: rows}
		kb.Release()
		sb.Release()
		// Every other batch carries a selection: odd rows only.
		var live []int32
		for i := 0; i < rows; i++ {
			if b%2 == 0 || i%2 == 1 {
				live = append(live, int32(i))
			}
		}
		parts := make([][]int32, receivers)
		for _, r := range live {
			q := int(r) % receivers
			parts[q] = append(parts[q], r)
		}
		k, s := batch.Cols[0].(*array.Int64), batch.Cols[1].(*array.String)
		for q, sel := range parts {
			for _, r := range sel {
				v := "null"
				if k.IsValid(int(r)) {
					v = fmt.Sprint(k.Value(int(r)))
				}
				want[q] = append(want[q], v+"/"+s.Value(int(r)))
			}
			if err := co.add(q, batch, sel); err != nil {
				t.Fatal(err)
			}
		}
		releaseArrays(batch.Cols)
	}
	if err := co.flushAll(); err != nil {
		t.Fatal(err)
	}
	for q := range got {
		if fmt.Sprint(got[q]) != fmt.Sprint(want[q]) {
			t.Fatalf("receiver %d got %d rows %v..., want %d rows %v...", q, len(got[q]), got[q][:5], len(want[q]), want[q][:5])
		}
		for i, n := range sizes[q] {
			if n < target && i != len(sizes[q])-1 {
				t.Errorf("receiver %d: batch %d of %d rows, want at least %d", q, i, n, target)
			}
		}
	}
}

// TestNetSendRoute: a partition route (a coalesced consumer) must send
// every partition to a receiver of the channel, only on a hash exchange
// and never with splits; its partitions are the route's, not the
// receivers.
func TestNetSendRoute(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	env := &Env{Ctx: t.Context(), Alloc: memory.NewGoAllocator()}
	for _, c := range []struct {
		spec NetSendSpec
		ok   bool
	}{
		{NetSendSpec{Kind: ExchangeHash, Keys: []int{0}, Receivers: 2, Route: []int{0, 1, 0, 1}}, true},
		{NetSendSpec{Kind: ExchangeHash, Keys: []int{0}, Receivers: 2, Route: []int{0, 2}}, false},
		{NetSendSpec{Kind: ExchangeHash, Keys: []int{0}, Receivers: 2, Route: []int{-1, 0}}, false},
		{NetSendSpec{Kind: ExchangeBroadcast, Receivers: 2, Route: []int{0, 1}}, false},
		{NetSendSpec{Kind: ExchangeHash, Keys: []int{0}, Receivers: 3, Route: []int{0, 1}, Splits: map[int][]int{0: {0, 2}}}, false},
	} {
		err := NetSend(env, nil, sch, nil, c.spec, nil)
		if c.ok != (err == nil) {
			t.Errorf("%+v: %v", c.spec, err)
		}
	}
	if got := (NetSendSpec{Receivers: 2, Route: []int{0, 0, 1, 1, 1, 1}}).partitions(); got != 6 {
		t.Errorf("a route of 6 partitions over 2 receivers: %d partitions", got)
	}
}

// TestNetSendCoalescesWhole: a gather or a broadcast collects small batches
// into full ones before they cross (Q5 on 16 workers broadcast 46,000 rows
// as 3,072 batches), sends a large batch as it is, and every receiver gets
// every row once. NB: not in order: the shuffle sends a large payload at
// once and aggregates small ones, so payloads may overtake each other
// (nothing reads order off the network: an ordered merge across stages is
// a gather and a sort).
func TestNetSendCoalescesWhole(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	for _, kind := range []ExchangeKind{ExchangeGather, ExchangeBroadcast} {
		t.Run(string(kind), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			receivers := 1
			if kind == ExchangeBroadcast {
				receivers = 3
			}
			// 40 batches of 10 rows, one of 300, 40 more of 10: with a
			// target of 100, 4 full batches, the large one, 4 more.
			var recs []arrow.RecordBatch
			next := int64(0)
			add := func(n int) {
				kb := array.NewInt64Builder(mem)
				sb := array.NewStringBuilder(mem)
				for range n {
					kb.Append(next)
					sb.Append(fmt.Sprint("v", next))
					next++
				}
				k, s := kb.NewArray(), sb.NewArray()
				recs = append(recs, array.NewRecordBatch(sch, []arrow.Array{k, s}, int64(n)))
				k.Release()
				s.Release()
				kb.Release()
				sb.Release()
			}
			for range 40 {
				add(10)
			}
			add(300)
			for range 40 {
				add(10)
			}
			env := &Env{Ctx: t.Context(), Alloc: mem, BatchSize: 100}
			sent := &NetCounters{}
			x, done, stop := startNetSend(t, "mem:coalesce-"+string(kind), env, sch, recs, NetSendSpec{Kind: kind, Receivers: receivers}, sent)
			defer stop()
			for r := range receivers {
				var sizes []int64
				seen := map[int64]int{}
				receiveAll(t, x, r, sch, mem, func(rec arrow.RecordBatch) {
					sizes = append(sizes, rec.NumRows())
					ks := rec.Column(0).(*array.Int64)
					for i := range ks.Len() {
						seen[ks.Value(i)]++
					}
				})
				for k := range next {
					if seen[k] != 1 {
						t.Errorf("receiver %d got key %d %d times, want once", r, k, seen[k])
					}
				}
				if len(seen) != int(next) {
					t.Errorf("receiver %d got %d keys, want %d", r, len(seen), next)
				}
				slices.Sort(sizes)
				if fmt.Sprint(sizes) != "[100 100 100 100 100 100 100 100 300]" {
					t.Errorf("receiver %d: batches of %v rows, want eight of 100 and the 300", r, sizes)
				}
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			// NB: a broadcast counts a batch once, whatever the receivers.
			if got := sent.Batches.Load(); got != 9 {
				t.Errorf("%d batches sent, want 9", got)
			}
		})
	}
}

// receiveAll decodes every payload receiver r of x gets until its end and
// hands each record (released after) to f.
func receiveAll(t *testing.T, x *shuffle.Exchange, r int, sch *arrow.Schema, mem memory.Allocator, f func(arrow.RecordBatch)) {
	t.Helper()
	rcv, err := x.Receiver(r)
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	dec, err := shuffle.NewBatchDecoder(sch, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for {
		p, err := rcv.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if p == nil {
			return
		}
		rec, err := dec.Decode(p)
		if err != nil {
			t.Fatal(err)
		}
		f(rec)
		rec.Release()
	}
}

// startNetSend sends recs (released here) through NetSend with spec from
// one sender on a fresh in-memory shuffle agent named peer, to
// spec.Receivers receivers of the returned exchange; done gets NetSend's
// result. stop closes the exchange and the agent (defer it after the
// allocator's check, so that it runs first).
func startNetSend(t *testing.T, peer string, env *Env, sch *arrow.Schema, recs []arrow.RecordBatch, spec NetSendSpec, sent *NetCounters) (x *shuffle.Exchange, done <-chan error, stop func()) {
	t.Helper()
	agent, err := shuffle.NewAgent(shuffle.AgentConfig{Node: 0, Peers: []string{peer}, Mem: shuffle.NewMemNetwork(), Options: shuffle.Options{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := agent.Client()
	if err != nil {
		agent.Close()
		t.Fatal(err)
	}
	stop = func() {
		if x != nil {
			x.Close()
		}
		c.Close()
		agent.Close()
	}
	x, err = shuffle.OpenExchange(c, &shuffle.Spec{ID: 7, Senders: []int{0}, Receivers: make([]int, spec.Receivers)})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	src, err := NewBatchSource(sch, recs...)
	for _, r := range recs {
		r.Release()
	}
	if err != nil {
		stop()
		t.Fatal(err)
	}
	s, err := x.Sender(0)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	ch := make(chan error, 1)
	go func() { ch <- NetSend(env, []Operator{src}, sch, []*shuffle.Sender{s}, spec, sent) }()
	return x, ch, stop
}
