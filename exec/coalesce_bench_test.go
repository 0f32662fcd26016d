package exec

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkCoalescer is a hash repartition's sending side for one task:
// 32 batches of 8192 rows (an integer key and two strings, as TPC-H
// Q16's brand and type) cut over 8 receivers and collected into full
// batches per receiver. Each iteration makes its coalescer anew, as each
// task does.
func BenchmarkCoalescer(b *testing.B) {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "brand", Type: arrow.BinaryTypes.String},
		{Name: "type", Type: arrow.BinaryTypes.String},
		{Name: "size", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	const rows, batches, receivers = DefaultBatchSize, 32, 8
	var recs []arrow.RecordBatch
	for i := range batches {
		data := make([][]any, rows)
		for r := range data {
			k := int64(i*rows + r)
			data[r] = []any{k, fmt.Sprintf("Brand#%d%d", k%5, k%7), fmt.Sprintf("STANDARD POLISHED %d", k%150), int32(k % 50)}
		}
		recs = append(recs, MakeRecord(b, mem, schema, data))
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	part, err := NewHashPartitioner(schema, []int{0}, receivers)
	if err != nil {
		b.Fatal(err)
	}
	in := make([]*Batch, len(recs))
	for i, r := range recs {
		in[i] = &Batch{Cols: r.Columns(), N: int(r.NumRows())}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		co := newCoalescer(mem, schema, receivers, DefaultBatchSize, func(_ int, cols []arrow.Array, _ int) error {
			releaseArrays(cols)
			return nil
		})
		for _, bt := range in {
			for q, sel := range part.Split(bt) {
				if err := co.add(q, bt, sel); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := co.flushAll(); err != nil {
			b.Fatal(err)
		}
	}
}
