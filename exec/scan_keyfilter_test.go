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

// reportingIt is remoteIt whose source filtered some records already
// (storage.KeyFilterReporter): a storage node's scan read here.
type reportingIt struct {
	remoteIt
	filtered []bool
	last     bool
}

func (it *reportingIt) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if it.i < len(it.filtered) {
		it.last = it.filtered[it.i]
	}
	return it.remoteIt.Next(ctx)
}
func (it *reportingIt) LastFiltered() bool { return it.last }

type reportingLike struct {
	remoteLike
	filtered []bool
}

func (r *reportingLike) OpenScan(_ context.Context, _ storage.ScanSpec, _ storage.ScanOptions) (storage.RecordIterator, error) {
	return &reportingIt{remoteIt: remoteIt{r: &r.remoteLike}, filtered: r.filtered}, nil
}

// A record its source says it filtered is not filtered again (nor
// counted again); the others are.
func TestScanFiltersOnlyUnfilteredRecords(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	src := &reportingLike{remoteLike: remoteLike{schema: schema, recs: []arrow.RecordBatch{
		// Filtered at the source: passes as it is (5 would not pass).
		MakeRecord(t, mem, schema, [][]any{{int64(2)}, {int64(5)}}),
		// Not filtered: 7 is dropped here.
		MakeRecord(t, mem, schema, [][]any{{int64(2)}, {int64(7)}, {int64(3)}}),
	}}, filtered: []bool{true, false}}
	defer func() {
		for _, r := range src.recs {
			r.Release()
		}
	}()
	kf := storage.NewKeyFilter("k")
	b := storage.NewKeyFilterBuilder(true)
	storage.AddInts(b, []int64{2, 3}, nil)
	kf.Publish(b)
	sc, err := NewScan(src, storage.ScanSpec{Table: "t", Columns: []string{"k"}}, ScanConfig{KeyFilters: []storage.ScanKeyFilter{{Column: "k", Filter: kf}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Open(NewTestEnv(mem)); err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var got []int64
	for {
		b, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		for j := 0; j < b.Len(); j++ {
			got = append(got, valuesOf[int64](b.Cols[0])[rowAt(b.Sel, j)])
		}
	}
	if len(got) != 4 || got[0] != 2 || got[1] != 5 || got[2] != 2 || got[3] != 3 {
		t.Errorf("rows %v, want [2 5 2 3]", got)
	}
	if st := kf.Stats(); st.Tested != 3 || st.Passed != 2 {
		t.Errorf("filter counted %d tested, %d passed; want 3, 2 (the unfiltered record only)", st.Tested, st.Passed)
	}
}
