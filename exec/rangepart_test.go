package exec

import (
	"fmt"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// rangePartOf is the reference: the number of cuts at or below v.
func rangePartOf(cuts []int64, v int64) int {
	n := 0
	for _, c := range cuts {
		if c <= v {
			n++
		}
	}
	return n
}

// TestRangePartitioner: every live row goes to the partition whose range
// holds its key (the bounds inclusive below, exclusive above, values
// beyond the first and last cut to the first and last partition), a NULL
// key to partition 0, a selection is honoured, and int32 keys work alike.
func TestRangePartitioner(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cuts := []int64{-3, 10, 11, 500}
	vals := []int64{math.MinInt64, -4, -3, -2, 0, 9, 10, 11, 12, 499, 500, 501, math.MaxInt64, 0, 7}
	nulls := map[int]bool{13: true}
	for _, typ := range []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32} {
		var col arrow.Array
		switch typ.ID() {
		case arrow.INT64:
			b := array.NewInt64Builder(mem)
			for i, v := range vals {
				if nulls[i] {
					b.AppendNull()
				} else {
					b.Append(v)
				}
			}
			col = b.NewArray()
			b.Release()
		default:
			b := array.NewInt32Builder(mem)
			for i, v := range vals {
				if nulls[i] {
					b.AppendNull()
				} else {
					b.Append(int32(max(min(v, math.MaxInt32), math.MinInt32)))
				}
			}
			col = b.NewArray()
			b.Release()
		}
		sch := arrow.NewSchema([]arrow.Field{{Name: "k", Type: typ, Nullable: true}}, nil)
		p, err := NewRangePartitioner(sch, 0, cuts)
		if err != nil {
			t.Fatal(err)
		}
		if p.Partitions() != 5 {
			t.Errorf("%s: %d partitions, want 5", typ, p.Partitions())
		}
		for _, sel := range [][]int32{nil, {1, 2, 6, 7, 13, 14}} {
			b := &Batch{Cols: []arrow.Array{col}, N: len(vals), Sel: sel}
			want := make([][]int32, 5)
			for j := range b.Len() {
				i := rowAt(sel, j)
				q := 0
				if !nulls[i] {
					v := vals[i]
					if typ.ID() == arrow.INT32 {
						v = int64(int32(max(min(v, math.MaxInt32), math.MinInt32)))
					}
					q = rangePartOf(cuts, v)
				}
				want[q] = append(want[q], int32(i))
			}
			got := p.Split(b)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s, selection %v: %v, want %v", typ, sel, got, want)
			}
		}
		col.Release()
	}
	sch := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	for _, c := range []struct {
		key  int
		cuts []int64
	}{{0, []int64{5, 5}}, {0, []int64{6, 5}}, {1, []int64{5}}, {2, nil}} {
		if _, err := NewRangePartitioner(sch, c.key, c.cuts); err == nil {
			t.Errorf("key %d, cuts %v: no error", c.key, c.cuts)
		}
	}
}

// TestNetSendRange: a range exchange sends every row once, to the
// receiver whose range holds its key (NULL keys to receiver 0), and
// refuses a spec whose receivers do not match its cuts.
func TestNetSendRange(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sch := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	env := &Env{Ctx: t.Context(), Alloc: mem, BatchSize: 64}
	for _, bad := range []NetSendSpec{
		{Kind: ExchangeRange, Keys: []int{0}, Cuts: []int64{10}, Receivers: 3},
		{Kind: ExchangeRange, Keys: []int{0, 0}, Cuts: []int64{10}, Receivers: 2},
		{Kind: ExchangeRange, Keys: []int{0}, Cuts: []int64{10}, Receivers: 2, Route: []int{0, 1}},
	} {
		if err := NetSend(env, nil, sch, nil, bad, nil); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	cuts := []int64{100, 250}
	var recs []arrow.RecordBatch
	for r := range 10 {
		b := array.NewInt64Builder(mem)
		for i := range 40 {
			if (r*40+i)%17 == 0 {
				b.AppendNull()
			} else {
				b.Append(int64(r*40+i) - 20)
			}
		}
		k := b.NewArray()
		recs = append(recs, array.NewRecordBatch(sch, []arrow.Array{k}, 40))
		k.Release()
		b.Release()
	}
	x, done, stop := startNetSend(t, "mem:range", env, sch, recs, NetSendSpec{Kind: ExchangeRange, Keys: []int{0}, Cuts: cuts, Receivers: len(cuts) + 1}, nil)
	defer stop()
	total, nullsAt0 := 0, 0
	for r := range len(cuts) + 1 {
		receiveAll(t, x, r, sch, mem, func(rec arrow.RecordBatch) {
			ks := rec.Column(0).(*array.Int64)
			for i := range ks.Len() {
				total++
				if ks.IsNull(i) {
					if r != 0 {
						t.Errorf("a NULL key at receiver %d", r)
					}
					nullsAt0++
					continue
				}
				if q := rangePartOf(cuts, ks.Value(i)); q != r {
					t.Errorf("key %d at receiver %d, want %d", ks.Value(i), r, q)
				}
			}
		})
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if total != 400 || nullsAt0 != 24 {
		t.Errorf("%d rows received (%d NULL keys), want 400 (24)", total, nullsAt0)
	}
}
