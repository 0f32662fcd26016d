package exec

import (
	"context"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// q1Schema is the input of TPC-H Q1's aggregation after the projection
// computes disc_price and charge, typed as the binder types them (D8):
// decimal(15,2) * decimal(16,2) products are decimal128.
var q1Schema = arrow.NewSchema([]arrow.Field{
	{Name: "l_returnflag", Type: arrow.BinaryTypes.String},
	{Name: "l_linestatus", Type: arrow.BinaryTypes.String},
	{Name: "l_quantity", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
	{Name: "l_extendedprice", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
	{Name: "l_discount", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
	{Name: "disc_price", Type: &arrow.Decimal128Type{Precision: 31, Scale: 4}},
	{Name: "charge", Type: &arrow.Decimal128Type{Precision: 38, Scale: 6}},
}, nil)

// q1Spec is Q1's aggregation: 4 groups, 8 aggregates.
var q1Spec = HashAggSpec{GroupCols: []int{0, 1}, Aggs: []AggSpec{
	{Func: AggSum, Arg: 2}, {Func: AggSum, Arg: 3}, {Func: AggSum, Arg: 5}, {Func: AggSum, Arg: 6},
	{Func: AggAvg, Arg: 2}, {Func: AggAvg, Arg: 3}, {Func: AggAvg, Arg: 4}, {Func: AggCountStar},
}}

// q1Records generates n lineitem-like rows in batches of DefaultBatchSize,
// with the value distributions of dbgen (quantity 1..50, price up to
// ~100k, discount 0..0.10, tax 0..0.08).
func q1Records(n int) []arrow.RecordBatch {
	r := rand.New(rand.NewPCG(1, 1))
	mem := memory.NewGoAllocator()
	var recs []arrow.RecordBatch
	for done := 0; done < n; {
		m := min(DefaultBatchSize, n-done)
		b := array.NewRecordBuilder(mem, q1Schema)
		for i := 0; i < m; i++ {
			rf, ls := "N", "O"
			switch r.IntN(4) {
			case 0:
				rf, ls = "A", "F"
			case 1:
				rf, ls = "R", "F"
			case 2:
				rf, ls = "N", "F"
			}
			q := int64(1+r.IntN(50)) * 100
			p := q / 100 * int64(90000+r.IntN(10000))
			d := int64(r.IntN(11))
			tax := int64(r.IntN(9))
			dp := p * (100 - d)
			ch := dp * (100 + tax)
			b.Field(0).(*array.StringBuilder).Append(rf)
			b.Field(1).(*array.StringBuilder).Append(ls)
			b.Field(2).(*array.Decimal64Builder).Append(decimal.Decimal64(q))
			b.Field(3).(*array.Decimal64Builder).Append(decimal.Decimal64(p))
			b.Field(4).(*array.Decimal64Builder).Append(decimal.Decimal64(d))
			b.Field(5).(*array.Decimal128Builder).Append(decimal128.FromI64(dp))
			b.Field(6).(*array.Decimal128Builder).Append(decimal128.FromI64(ch))
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
		done += m
	}
	return recs
}

func benchEnv() *Env {
	env := NewEnv(context.Background())
	env.Budget = NewBudget(0)
	return env
}

// drain runs op to the end and returns the number of output rows.
func drain(b *testing.B, env *Env, op Operator) int {
	if err := op.Open(env); err != nil {
		b.Fatal(err)
	}
	n := 0
	for {
		out, err := op.Next()
		if err != nil {
			b.Fatal(err)
		}
		if out == nil {
			break
		}
		n += out.Len()
	}
	if err := op.Close(); err != nil {
		b.Fatal(err)
	}
	return n
}

// benchClock measures wall time and the process's CPU time.
type benchClock struct {
	wall time.Time
	cpu  time.Duration
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startClock() benchClock { return benchClock{wall: time.Now(), cpu: cpuTime()} }

// reportRows prints throughput for rows processed per iteration on cores
// pipelines: wall-clock rows/s, rows/s per core, and rows per CPU-second
// of the process (the fair figure when other processes share the cores).
func reportRows(b *testing.B, rows int, cores int, start benchClock) {
	sec := time.Since(start.wall).Seconds() / float64(b.N)
	cpu := (cpuTime() - start.cpu).Seconds() / float64(b.N)
	b.ReportMetric(float64(rows)/sec/1e6, "Mrows/s")
	b.ReportMetric(float64(rows)/sec/1e6/float64(cores), "Mrows/s/core")
	if cpu > 0 {
		b.ReportMetric(float64(rows)/cpu/1e6, "Mrows/cpu-s")
	}
	b.ReportMetric(sec*1e3, "ms/op")
	b.ReportMetric(cpu*1e3, "cpu-ms/op")
}

// q1Sels is the selection Q1's filter (l_shipdate <= 1998-09-02) leaves:
// about 98.5% of the rows.
func q1Sels(recs []arrow.RecordBatch) [][]int32 {
	r := rand.New(rand.NewPCG(3, 3))
	sels := make([][]int32, len(recs))
	for i, rec := range recs {
		for j := 0; j < int(rec.NumRows()); j++ {
			if r.IntN(1000) >= 15 {
				sels[i] = append(sels[i], int32(j))
			}
		}
	}
	return sels
}

// BenchmarkHashAggQ1 is TPC-H Q1's aggregation over 6M rows (SF1) on one
// core: two 1-char string keys, 4 groups, 8 aggregates over decimals, rows
// arriving through the filter's selection vector as in the query.
func BenchmarkHashAggQ1(b *testing.B) {
	const n = 6_000_000
	recs := q1Records(n)
	defer releaseRecs(recs)
	sels := q1Sels(recs)
	env := benchEnv()
	b.ReportAllocs()
	b.ResetTimer()
	start := startClock()
	for i := 0; i < b.N; i++ {
		src, _ := NewBatchSourceWithSel(q1Schema, recs, sels)
		agg, err := NewHashAgg(src, q1Spec)
		if err != nil {
			b.Fatal(err)
		}
		if got := drain(b, env, agg); got != 4 {
			b.Fatalf("%d groups, want 4", got)
		}
	}
	reportRows(b, n, 1, start)
}

// BenchmarkHashAggHighCard aggregates 6M rows into 1.5M int64 groups
// (lineitem grouped by l_orderkey) with a decimal sum and a count.
func BenchmarkHashAggHighCard(b *testing.B) {
	const n, groups = 6_000_000, 1_500_000
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
	}, nil)
	recs := intKeyRecords(schema, n, groups, 2)
	defer releaseRecs(recs)
	env := benchEnv()
	spec := HashAggSpec{GroupCols: []int{0}, Aggs: []AggSpec{{Func: AggSum, Arg: 1}, {Func: AggCountStar}}}
	b.ReportAllocs()
	b.ResetTimer()
	start := startClock()
	for i := 0; i < b.N; i++ {
		src, _ := NewBatchSource(schema, recs...)
		agg, _ := NewHashAgg(src, spec)
		if got := drain(b, env, agg); got != groups {
			b.Fatalf("%d groups, want %d", got, groups)
		}
	}
	reportRows(b, n, 1, start)
}

// intKeyRecords makes n rows of (int64 key, decimal64 value) with keys
// drawn from [0, keys) such that every key appears; seed varies the order.
func intKeyRecords(schema *arrow.Schema, n, keys int, seed uint64) []arrow.RecordBatch {
	r := rand.New(rand.NewPCG(seed, 7))
	perm := r.Perm(keys)
	mem := memory.NewGoAllocator()
	var recs []arrow.RecordBatch
	for done := 0; done < n; {
		m := min(DefaultBatchSize, n-done)
		bld := array.NewRecordBuilder(mem, schema)
		for i := 0; i < m; i++ {
			k := done + i
			var key int
			if k < keys {
				key = perm[k]
			} else {
				key = r.IntN(keys)
			}
			bld.Field(0).(*array.Int64Builder).Append(int64(key) * 4) // orderkeys are sparse
			for c := 1; c < schema.NumFields(); c++ {
				switch fb := bld.Field(c).(type) {
				case *array.Decimal64Builder:
					fb.Append(decimal.Decimal64(r.Int64N(10_000_000)))
				case *array.Int64Builder:
					fb.Append(r.Int64N(1 << 40))
				case *array.Int32Builder:
					fb.Append(r.Int32N(10000))
				}
			}
		}
		recs = append(recs, bld.NewRecordBatch())
		bld.Release()
		done += m
	}
	return recs
}

func releaseRecs(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// splitRecs deals records round-robin into n sources.
func splitRecs(schema *arrow.Schema, recs []arrow.RecordBatch, n int) []Operator {
	parts := make([][]arrow.RecordBatch, n)
	for i, r := range recs {
		parts[i%n] = append(parts[i%n], r)
	}
	ops := make([]Operator, n)
	for i := range parts {
		src, _ := NewBatchSource(schema, parts[i]...)
		ops[i] = src
	}
	return ops
}

// splitRecsSel is splitRecs with selections.
func splitRecsSel(schema *arrow.Schema, recs []arrow.RecordBatch, sels [][]int32, n int) []Operator {
	parts := make([][]arrow.RecordBatch, n)
	psels := make([][][]int32, n)
	for i, r := range recs {
		parts[i%n] = append(parts[i%n], r)
		psels[i%n] = append(psels[i%n], sels[i])
	}
	ops := make([]Operator, n)
	for i := range parts {
		src, _ := NewBatchSourceWithSel(schema, parts[i], psels[i])
		ops[i] = src
	}
	return ops
}

// BenchmarkHashAggQ1Parallel is Q1's aggregation with one partial
// aggregate per core and a final aggregate behind a gather.
func BenchmarkHashAggQ1Parallel(b *testing.B) {
	const n = 6_000_000
	recs := q1Records(n)
	defer releaseRecs(recs)
	sels := q1Sels(recs)
	env := benchEnv()
	cores := env.Parallelism
	b.ReportAllocs()
	b.ResetTimer()
	start := startClock()
	for i := 0; i < b.N; i++ {
		op, err := NewParallelHashAgg(splitRecsSel(q1Schema, recs, sels, cores), q1Spec, AggSplitPartial)
		if err != nil {
			b.Fatal(err)
		}
		if got := drain(b, env, op); got != 4 {
			b.Fatalf("%d groups, want 4", got)
		}
	}
	reportRows(b, n, cores, start)
}

// BenchmarkHashAggHighCardParallel repartitions 6M rows by key into one
// aggregate per core (1.5M groups).
func BenchmarkHashAggHighCardParallel(b *testing.B) {
	const n, groups = 6_000_000, 1_500_000
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
	}, nil)
	recs := intKeyRecords(schema, n, groups, 2)
	defer releaseRecs(recs)
	env := benchEnv()
	cores := env.Parallelism
	spec := HashAggSpec{GroupCols: []int{0}, Aggs: []AggSpec{{Func: AggSum, Arg: 1}, {Func: AggCountStar}}}
	b.ReportAllocs()
	b.ResetTimer()
	start := startClock()
	for i := 0; i < b.N; i++ {
		op, _ := NewParallelHashAgg(splitRecs(schema, recs, cores), spec, AggSplitRepartition)
		if got := drain(b, env, op); got != groups {
			b.Fatalf("%d groups, want %d", got, groups)
		}
	}
	reportRows(b, n, cores, start)
}
