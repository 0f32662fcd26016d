package exec

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

// badOp returns what it is told to, breaking the contract on purpose.
type badOp struct {
	schema  *arrow.Schema
	batches []*Batch
}

func (b *badOp) Schema() *arrow.Schema { return b.schema }
func (b *badOp) Open(*Env) error       { return nil }
func (b *badOp) Close() error          { return nil }
func (b *badOp) Next() (*Batch, error) {
	if len(b.batches) == 0 {
		return nil, nil
	}
	x := b.batches[0]
	b.batches = b.batches[1:]
	return x, nil
}

// TestChecked: each broken rule of the Operator contract is an internal
// error naming the operator; a well-behaved operator passes unchanged.
func TestChecked(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rec := MakeRecord(t, mem, schema, [][]any{{int64(1)}, {int64(2)}, {int64(3)}})
	defer rec.Release()
	cols := rec.Columns()
	env := NewTestEnv(mem)
	for _, tc := range []struct {
		name string
		b    *Batch
		want string
	}{
		{"empty", &Batch{Cols: cols, N: 3, Sel: []int32{}}, "without live rows"},
		{"columns", &Batch{Cols: nil, N: 3}, "0 columns"},
		{"length", &Batch{Cols: cols, N: 4}, "has 3 rows"},
		{"selection", &Batch{Cols: cols, N: 3, Sel: []int32{2, 1}}, "not ascending"},
	} {
		op := Checked(&badOp{schema: schema, batches: []*Batch{tc.b}}, "bad "+tc.name)
		if err := op.Open(env); err != nil {
			t.Fatal(err)
		}
		_, err := op.Next()
		if !nferr.Is(err, nferr.KindInternal) || !strings.Contains(err.Error(), "bad "+tc.name) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an internal error saying %q", tc.name, err, tc.want)
		}
		op.Close()
	}
	op := Checked(&badOp{schema: schema}, "early")
	if _, err := op.Next(); err == nil || !strings.Contains(err.Error(), "Next before Open") {
		t.Errorf("Next before Open: %v", err)
	}
	src, _ := NewBatchSource(schema, rec)
	good := Checked(src, "source")
	rows, err := CollectRows(env, good)
	if err != nil || len(rows) != 3 {
		t.Fatalf("a good operator: %d rows, %v", len(rows), err)
	}
	if _, err := good.Next(); err == nil || !strings.Contains(err.Error(), "Next after Close") {
		t.Errorf("Next after Close: %v", err)
	}
}
