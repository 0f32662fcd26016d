package exec

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
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
