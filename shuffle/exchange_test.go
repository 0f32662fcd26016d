package shuffle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// buildBatch builds rows [from, from+n) of the test schema, keeping only
// rows whose key hashes to dest (dest < 0: all rows).
func buildBatch(mem memory.Allocator, from, n, dest, ndest int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	k := b.Field(0).(*array.Int64Builder)
	v := b.Field(1).(*array.Decimal64Builder)
	s := b.Field(2).(*array.StringBuilder)
	for i := from; i < from+n; i++ {
		if dest >= 0 && i%ndest != dest {
			continue
		}
		k.Append(int64(i))
		if i%7 == 0 {
			v.AppendNull()
			s.AppendNull()
		} else {
			v.Append(decimal.Decimal64(1234 + int64(i)))
			s.Append(fmt.Sprintf("row-%d", i))
		}
	}
	return b.NewRecordBatch()
}

func TestBatchCodecRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	enc, err := NewBatchEncoder(testSchema, mem)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := NewBatchDecoder(testSchema, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for _, n := range []int{0, 1, 100, 5000} {
		rec := buildBatch(mem, 10, n, -1, 1)
		p, err := enc.Encode(rec)
		if err != nil {
			t.Fatal(err)
		}
		// A slice of a batch encodes only its rows.
		got, err := dec.Decode(p)
		if err != nil {
			t.Fatalf("decode %d rows: %v", n, err)
		}
		if !array.RecordEqual(rec, got) {
			t.Fatalf("round trip of %d rows differs", n)
		}
		got.Release()
		if n > 10 {
			sl := rec.NewSlice(3, 9)
			p, err := enc.Encode(sl)
			if err != nil {
				t.Fatal(err)
			}
			got, err := dec.Decode(p)
			if err != nil {
				t.Fatal(err)
			}
			if !array.RecordEqual(sl, got) {
				t.Fatal("round trip of a slice differs")
			}
			got.Release()
			sl.Release()
		}
		rec.Release()
	}
}

func TestBatchDecodeRejectsCorruptAndForeign(t *testing.T) {
	mem := memory.NewGoAllocator()
	enc, _ := NewBatchEncoder(testSchema, mem)
	dec, _ := NewBatchDecoder(testSchema, mem)
	defer dec.Close()
	rec := buildBatch(mem, 0, 50, -1, 1)
	defer rec.Release()
	p, err := enc.Encode(rec)
	if err != nil {
		t.Fatal(err)
	}
	other := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32}}, nil)
	odec, _ := NewBatchDecoder(other, mem)
	if _, err := odec.Decode(p); !nferr.Is(err, nferr.KindInternal) || !strings.Contains(err.Error(), "plans disagree") {
		t.Fatalf("foreign schema: got %v, want a KindInternal schema mismatch", err)
	}
	for _, cut := range []int{0, 7, 12, 30, len(p) - 1} {
		if _, err := dec.Decode(p[:cut]); !nferr.Is(err, nferr.KindData) {
			t.Errorf("payload cut at %d: got %v, want KindData", cut, err)
		}
	}
	// Flip bytes in the metadata and body: an error or a valid batch, never
	// a panic; and the decoder keeps working afterwards.
	for i := fingerprintSize; i < len(p); i += 13 {
		q := append([]byte(nil), p...)
		q[i] ^= 0xFF
		if r, err := dec.Decode(q); err == nil {
			r.Release()
		} else if !nferr.Is(err, nferr.KindData) {
			t.Fatalf("flip at %d: %v is not KindData", i, err)
		}
	}
	got, err := dec.Decode(p)
	if err != nil {
		t.Fatalf("decoder broken after corrupt payloads: %v", err)
	}
	got.Release()
}

// TestExchangeRepartition hash-repartitions Arrow batches over 3 nodes
// (senders and receivers of different counts) and checks every row arrives
// once at the right receiver, with no Arrow memory leaked.
func TestExchangeRepartition(t *testing.T) {
	for _, mode := range []clusterMode{allModes[0], allModes[2]} {
		t.Run(mode.name, func(t *testing.T) {
			c := newCluster(t, 3, mode, Options{AggSize: 4096, Credits: 64 << 10})
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			spec := &Spec{ID: nextChanID(), Senders: []int{0, 0, 1, 2, 2, 2}, Receivers: []int{0, 1, 1, 2}}
			nrecv := len(spec.Receivers)
			const rowsPerSender = 3000
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			xs := make([]*Exchange, 3)
			for i := range xs {
				x, err := OpenExchange(c.clients[i], spec)
				if err != nil {
					t.Fatal(err)
				}
				defer x.Close()
				xs[i] = x
			}
			var wg sync.WaitGroup
			errs := make(chan error, 20)
			for s, node := range spec.Senders {
				snd, err := xs[node].Sender(s)
				if err != nil {
					t.Fatal(err)
				}
				wg.Add(1)
				go func(s int, snd *Sender) {
					defer wg.Done()
					enc, _ := NewBatchEncoder(testSchema, mem)
					for from := s * rowsPerSender; from < (s+1)*rowsPerSender; from += 500 {
						for d := 0; d < nrecv; d++ {
							rec := buildBatch(mem, from, 500, d, nrecv)
							p, err := enc.Encode(rec)
							rec.Release()
							if err == nil {
								err = snd.Send(ctx, d, p)
							}
							if err != nil {
								errs <- err
								snd.Fail(err)
								return
							}
						}
					}
					if err := snd.Close(); err != nil {
						errs <- err
					}
				}(s, snd)
			}
			rows := make([]map[int64]int, nrecv)
			for r, node := range spec.Receivers {
				rcv, err := xs[node].Receiver(r)
				if err != nil {
					t.Fatal(err)
				}
				rows[r] = map[int64]int{}
				wg.Add(1)
				go func(r int, rcv *Receiver) {
					defer wg.Done()
					dec, _ := NewBatchDecoder(testSchema, mem)
					defer dec.Close()
					for {
						p, err := rcv.Next(ctx)
						if err != nil {
							errs <- err
							return
						}
						if p == nil {
							return
						}
						rec, err := dec.Decode(p)
						if err != nil {
							errs <- err
							return
						}
						keys := rec.Column(0).(*array.Int64).Int64Values()
						for _, k := range keys {
							rows[r][k]++
						}
						rec.Release()
					}
				}(r, rcv)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			total := 0
			for r := range rows {
				for k, n := range rows[r] {
					if n != 1 || int(k)%nrecv != r {
						t.Fatalf("row %d: %d copies at receiver %d", k, n, r)
					}
					total++
				}
			}
			if want := len(spec.Senders) * rowsPerSender; total != want {
				t.Fatalf("received %d rows, want %d", total, want)
			}
		})
	}
}

// TestExchangeErrorPropagation: a sender's error reaches every receiver
// with its kind and the sender named; a sender dropped without Close
// reaches them as KindCanceled.
func TestExchangeErrorPropagation(t *testing.T) {
	c := newCluster(t, 2, allModes[0], Options{})
	spec := &Spec{ID: nextChanID(), Senders: []int{0, 1}, Receivers: []int{0, 1, 1}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	x0, _ := OpenExchange(c.clients[0], spec)
	x1, _ := OpenExchange(c.clients[1], spec)
	defer x0.Close()
	defer x1.Close()
	s0, _ := x0.Sender(0)
	s1, _ := x1.Sender(1)
	if err := s0.Send(ctx, 2, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	s0.Fail(nferr.Dataf("bad row 17 in lineitem.parquet"))
	s1.Close()
	for r, x := range []*Exchange{x0, x1, x1} {
		rcv, err := x.Receiver(r)
		if err != nil {
			t.Fatal(err)
		}
		var got error
		for got == nil {
			p, err := rcv.Next(ctx)
			if err == nil && p == nil {
				t.Fatalf("receiver %d reached the end despite a failed sender", r)
			}
			got = err
		}
		if !nferr.Is(got, nferr.KindData) || !strings.Contains(got.Error(), "bad row 17") || !strings.Contains(got.Error(), "sender 0") {
			t.Fatalf("receiver %d: got %v, want the sender's KindData error naming sender 0", r, got)
		}
	}

	// A sender closed by Exchange.Close before its end of stream.
	spec2 := &Spec{ID: nextChanID(), Senders: []int{0}, Receivers: []int{1}}
	y0, _ := OpenExchange(c.clients[0], spec2)
	y1, _ := OpenExchange(c.clients[1], spec2)
	defer y1.Close()
	if _, err := y0.Sender(0); err != nil {
		t.Fatal(err)
	}
	y0.Close()
	rcv, _ := y1.Receiver(0)
	if _, err := rcv.Next(ctx); !nferr.Is(err, nferr.KindCanceled) {
		t.Fatalf("got %v, want KindCanceled for an abandoned sender", err)
	}
}

func TestExchangeCancellation(t *testing.T) {
	c := newCluster(t, 2, allModes[0], Options{})
	spec := &Spec{ID: nextChanID(), Senders: []int{0}, Receivers: []int{1}}
	x1, _ := OpenExchange(c.clients[1], spec)
	defer x1.Close()
	rcv, _ := x1.Receiver(0)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := rcv.Next(ctx)
	if !nferr.Is(err, nferr.KindCanceled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want KindCanceled", err)
	}
}

// TestEmbeddedSingleNode: one agent, no listener, no network, no security
// needed: the embedded engine's configuration.
func TestEmbeddedSingleNode(t *testing.T) {
	a, err := NewAgent(AgentConfig{Node: 0, Peers: []string{""}, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Addr() != "" {
		t.Fatalf("single node listens on %q", a.Addr())
	}
	c, err := a.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	spec := &Spec{ID: nextChanID(), Senders: []int{0, 0}, Receivers: []int{0}}
	x, err := OpenExchange(c, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		s, _ := x.Sender(i)
		for q := 0; q < 10; q++ {
			s.Send(ctx, 0, payloadFor(i, q, 30))
		}
		s.Close()
		if m, b := s.Sent(); m != 10 || b != 300 {
			t.Fatalf("Sent() = %d messages, %d bytes; want 10, 300", m, b)
		}
	}
	r, _ := x.Receiver(0)
	n := countMessages(t, ctx, r)
	if n != 20 {
		t.Fatalf("got %d of 20 messages", n)
	}
	if m, b := r.Received(); m != 20 || b != 20*30 {
		t.Fatalf("Received() = %d messages, %d bytes; want 20, 600", m, b)
	}
}
