package exec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestHLLMerge: sketches of overlapping sets, built apart (as two workers
// do) and merged through their partial states, estimate the union; small
// sets stay exact through the merge.
func TestHLLMerge(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	ints := func(lo, hi int64) arrow.Array {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for v := lo; v < hi; v++ {
			b.Append(v)
		}
		b.AppendNull()
		return b.NewArray()
	}
	for _, c := range []struct {
		lo1, hi1, lo2, hi2 int64
		want               int64
		exact              bool
	}{
		{0, 50, 25, 100, 100, true},              // sparse + sparse
		{0, 60000, 40000, 100000, 100000, false}, // dense + dense
		{0, 100, 0, 70000, 70000, false},         // sparse into dense
	} {
		var parts []arrow.Array
		for _, r := range [][2]int64{{c.lo1, c.hi1}, {c.lo2, c.hi2}} {
			fn, _, ok := newHLLFn(arrow.PrimitiveTypes.Int64, false)
			if !ok {
				t.Fatal("no sketch for int64")
			}
			fn.grow(1)
			a := ints(r[0], r[1])
			if err := fn.update(make([]uint32, a.Len()), a, nil, a.Len()); err != nil {
				t.Fatal(err)
			}
			a.Release()
			parts = append(parts, fn.partial(mem, 0, 1)...)
		}
		final, _, ok := newHLLFn(arrow.BinaryTypes.Binary, true)
		if !ok {
			t.Fatal("no final sketch")
		}
		final.grow(1)
		for _, p := range parts {
			if err := final.merge([]uint32{0}, []arrow.Array{p}, nil, 1); err != nil {
				t.Fatal(err)
			}
			p.Release()
		}
		res, err := final.result(mem, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		got := res.(*array.Int64).Value(0)
		res.Release()
		tol := c.want / 20 // 5%: three standard errors
		if c.exact {
			tol = 0
		}
		if got < c.want-tol || got > c.want+tol {
			t.Errorf("union of [%d,%d) and [%d,%d): %d, want %d +- %d", c.lo1, c.hi1, c.lo2, c.hi2, got, c.want, tol)
		}
	}
	// A malformed state is a data error, not a panic.
	final, _, _ := newHLLFn(arrow.BinaryTypes.Binary, true)
	final.grow(1)
	b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	b.Append([]byte{hllDenseTag, 1, 2})
	bad := b.NewArray()
	b.Release()
	defer bad.Release()
	if err := final.merge([]uint32{0}, []arrow.Array{bad}, nil, 1); err == nil {
		t.Error("a malformed state merged")
	}
}
