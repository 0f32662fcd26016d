package exec

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var sortBenchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "o_orderdate", Type: arrow.FixedWidthTypes.Date32},
	{Name: "o_totalprice", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
	{Name: "o_orderkey", Type: arrow.PrimitiveTypes.Int64},
	{Name: "o_clerk", Type: arrow.BinaryTypes.String},
}, nil)

// sortBenchData is 1M orders-like rows.
func sortBenchData(n int) []arrow.RecordBatch {
	r := rand.New(rand.NewPCG(8, 8))
	mem := memory.NewGoAllocator()
	var recs []arrow.RecordBatch
	b := array.NewRecordBuilder(mem, sortBenchSchema)
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Date32Builder).Append(arrow.Date32(8035 + r.IntN(2400)))
		b.Field(1).(*array.Decimal64Builder).Append(decimal.Decimal64(100000 + r.Int64N(50_000_000)))
		b.Field(2).(*array.Int64Builder).Append(int64(i))
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("Clerk#%09d", r.IntN(1000)))
		if b.Field(0).Len() == DefaultBatchSize || i == n-1 {
			recs = append(recs, b.NewRecordBatch())
		}
	}
	b.Release()
	return recs
}

var sortBenchKeys = map[string][]SortKey{
	"date,price-desc": {{Col: 0}, {Col: 1, Desc: true}},
	"clerk,key":       {{Col: 3}, {Col: 2}},
}

// BenchmarkSort sorts 1M rows by two keys on one core.
func BenchmarkSort(b *testing.B) {
	const n = 1_000_000
	recs := sortBenchData(n)
	defer releaseRecs(recs)
	env := benchEnv()
	for name, keys := range sortBenchKeys {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			start := startClock()
			for i := 0; i < b.N; i++ {
				src, _ := NewBatchSource(sortBenchSchema, recs...)
				s, _ := NewSort(src, SortSpec{Keys: keys})
				if got := drain(b, env, s); got != n {
					b.Fatalf("%d rows", got)
				}
			}
			reportRows(b, n, 1, start)
		})
	}
}

// BenchmarkSortParallel sorts on every core and merges.
func BenchmarkSortParallel(b *testing.B) {
	const n = 1_000_000
	recs := sortBenchData(n)
	defer releaseRecs(recs)
	env := benchEnv()
	cores := env.Parallelism
	for name, keys := range sortBenchKeys {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			start := startClock()
			for i := 0; i < b.N; i++ {
				parts := splitRecs(sortBenchSchema, recs, cores)
				for k, p := range parts {
					s, _ := NewSort(p, SortSpec{Keys: keys})
					parts[k] = s
				}
				m, _ := NewOrderedMerge(parts, keys)
				if got := drain(b, env, m); got != n {
					b.Fatalf("%d rows", got)
				}
			}
			reportRows(b, n, cores, start)
		})
	}
}

// BenchmarkTopN keeps the first 100 of 1M rows by two keys on one core.
func BenchmarkTopN(b *testing.B) {
	const n = 1_000_000
	recs := sortBenchData(n)
	defer releaseRecs(recs)
	env := benchEnv()
	for name, keys := range sortBenchKeys {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			start := startClock()
			for i := 0; i < b.N; i++ {
				src, _ := NewBatchSource(sortBenchSchema, recs...)
				t, _ := NewTopN(src, TopNSpec{Keys: keys, Limit: 100})
				if got := drain(b, env, t); got != 100 {
					b.Fatalf("%d rows", got)
				}
			}
			reportRows(b, n, 1, start)
		})
	}
}
