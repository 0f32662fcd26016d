package exec

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/storage"
)

// remoteLike is a storage.Source whose iterator does not apply key
// filters (as a storage node's scan over Flight).
type remoteLike struct {
	schema *arrow.Schema
	recs   []arrow.RecordBatch
}

func (r *remoteLike) ScanSchema(storage.ScanSpec) (*arrow.Schema, error) { return r.schema, nil }
func (r *remoteLike) OpenScan(_ context.Context, _ storage.ScanSpec, _ storage.ScanOptions) (storage.RecordIterator, error) {
	return &remoteIt{r: r}, nil
}

type remoteIt struct {
	r *remoteLike
	i int
}

func (it *remoteIt) Schema() *arrow.Schema { return it.r.schema }
func (it *remoteIt) Next(context.Context) (arrow.RecordBatch, error) {
	if it.i >= len(it.r.recs) {
		return nil, nil
	}
	rec := it.r.recs[it.i]
	it.i++
	rec.Retain()
	return rec, nil
}
func (it *remoteIt) Stats() storage.ScanStats { return storage.ScanStats{} }
func (it *remoteIt) Close() error             { return nil }

// A scan over a source that does not apply key filters applies them to
// the records it receives: integer and string keys, NULLs dropped, a
// record with no survivor skipped, nothing dropped before publication.
func TestScanAppliesKeyFiltersToRemoteRecords(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	src := &remoteLike{schema: schema, recs: []arrow.RecordBatch{
		MakeRecord(t, mem, schema, [][]any{{int64(1), "a"}, {int64(2), "b"}, {nil, "c"}, {int64(3), nil}}),
		MakeRecord(t, mem, schema, [][]any{{int64(7), "x"}, {int64(8), "y"}}),
		MakeRecord(t, mem, schema, [][]any{{int64(2), "b"}, {int64(9), "b"}}),
	}}
	defer func() {
		for _, r := range src.recs {
			r.Release()
		}
	}()
	kf := storage.NewKeyFilter("k")
	sf := storage.NewKeyFilter("s")
	scan := func() [][]any {
		sc, err := NewScan(src, storage.ScanSpec{Table: "t", Columns: []string{"k", "s"}},
			ScanConfig{KeyFilters: []storage.ScanKeyFilter{{Column: "k", Filter: kf}, {Column: "s", Filter: sf}}})
		if err != nil {
			t.Fatal(err)
		}
		env := NewTestEnv(mem)
		if err := sc.Open(env); err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		var rows [][]any
		for {
			b, err := sc.Next()
			if err != nil {
				t.Fatal(err)
			}
			if b == nil {
				return rows
			}
			for j := 0; j < b.Len(); j++ {
				i := rowAt(b.Sel, j)
				var k, s any
				if b.Cols[0].IsValid(i) {
					k = valuesOf[int64](b.Cols[0])[i]
				}
				if b.Cols[1].IsValid(i) {
					s = b.Cols[1].ValueStr(i)
				}
				rows = append(rows, []any{k, s})
			}
		}
	}
	if got := scan(); len(got) != 8 {
		t.Fatalf("unpublished filters dropped rows: %v", got)
	}
	b := storage.NewKeyFilterBuilder(true)
	storage.AddInts(b, []int64{2, 3, 9}, nil)
	kf.Publish(b)
	sb := storage.NewKeyFilterBuilder(false)
	sb.AddBytes([]byte("b"))
	sf.Publish(sb)
	got := scan()
	want := [][]any{{int64(2), "b"}, {int64(2), "b"}, {int64(9), "b"}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i][0] != want[i][0] || got[i][1] != want[i][1] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if st := kf.Stats(); st.Tested != 8 || st.Passed != 4 {
		t.Errorf("k filter counted %d tested, %d passed; want 8, 4", st.Tested, st.Passed)
	}
}
