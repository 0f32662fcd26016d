package exec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/exec/expr"
)

// gatherAll (the coalescer's bulk path) builds the same arrays as Gather
// of every row: NULLs and empty strings in every column kind, rows
// appended whole and through selections, the store reset and refilled,
// and no buffer leaked.
func TestRowStoreGatherAll(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	}, nil)
	rec := MakeRecord(t, mem, schema, [][]any{
		{int64(1), "a", true, arrow.Date32(1)},
		{nil, "", false, nil},
		{int64(3), nil, nil, arrow.Date32(3)},
		{int64(4), "dddd", true, arrow.Date32(4)},
		{nil, nil, nil, nil},
		{int64(6), "ffffff", false, arrow.Date32(6)},
	})
	defer rec.Release()
	noNulls := MakeRecord(t, mem, schema, [][]any{{int64(7), "g", true, arrow.Date32(7)}, {int64(8), "hh", false, arrow.Date32(8)}})
	defer noNulls.Release()
	infos := make([]colInfo, schema.NumFields())
	for i := range infos {
		c, ok := classify(schema.Field(i).Type)
		if !ok {
			t.Fatalf("column %d: no colVec", i)
		}
		infos[i] = c
	}
	st := newRowStore(infos)
	check := func(what string) {
		t.Helper()
		var idx []int32
		want := st.gather(mem, expr.SelAll(&idx, nil, st.n), nil)
		got := st.gatherAll(mem, &idx, nil)
		for i := range want {
			if !array.Equal(want[i], got[i]) {
				t.Errorf("%s, column %d: gatherAll %v, Gather %v", what, i, got[i], want[i])
			}
		}
		releaseArrays(want)
		releaseArrays(got)
	}
	b := &Batch{Cols: rec.Columns(), N: int(rec.NumRows())}
	st.appendCols(b.Cols, nil, b.N)
	check("whole batch")
	st.appendCols(b.Cols, []int32{5, 1, 2}, b.N)
	check("whole batch and a selection")
	st.reset()
	nb := &Batch{Cols: noNulls.Columns(), N: int(noNulls.NumRows())}
	st.appendCols(nb.Cols, []int32{1}, nb.N)
	check("after reset, no NULL")
	st.appendCols(b.Cols, []int32{4, 0}, b.N)
	check("after reset, NULLs")
	st.reset()
	check("empty")
}
