package exec

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var (
	ordersSchema = arrow.NewSchema([]arrow.Field{
		{Name: "o_orderkey", Type: arrow.PrimitiveTypes.Int64},
		{Name: "o_orderdate", Type: arrow.FixedWidthTypes.Date32},
		{Name: "o_shippriority", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	lineitemSchema = arrow.NewSchema([]arrow.Field{
		{Name: "l_orderkey", Type: arrow.PrimitiveTypes.Int64},
		{Name: "l_extendedprice", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
		{Name: "l_discount", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
	}, nil)
)

// joinBenchData makes orders (1.5M rows, sparse unique keys as dbgen's)
// and lineitem (6M rows, 1 to 7 lines per order, in order key order like
// dbgen's files).
func joinBenchData() (orders, lineitem []arrow.RecordBatch) {
	const nOrders = 1_500_000
	r := rand.New(rand.NewPCG(5, 5))
	mem := memory.NewGoAllocator()
	ob := array.NewRecordBuilder(mem, ordersSchema)
	lb := array.NewRecordBuilder(mem, lineitemSchema)
	flush := func(b *array.RecordBuilder, out *[]arrow.RecordBatch) {
		*out = append(*out, b.NewRecordBatch())
	}
	lines := 0
	for o := 0; o < nOrders; o++ {
		key := int64(o/8*32 + o%8 + 1) // dbgen: 8 of every 32 keys used
		ob.Field(0).(*array.Int64Builder).Append(key)
		ob.Field(1).(*array.Date32Builder).Append(arrow.Date32(8035 + r.IntN(2400)))
		ob.Field(2).(*array.Int32Builder).Append(0)
		if ob.Field(0).Len() == DefaultBatchSize {
			flush(ob, &orders)
		}
		for l := 0; l < 1+r.IntN(7) && lines < 6_000_000; l++ {
			lb.Field(0).(*array.Int64Builder).Append(key)
			lb.Field(1).(*array.Decimal64Builder).Append(decimal.Decimal64(100000 + r.Int64N(10_000_000)))
			lb.Field(2).(*array.Decimal64Builder).Append(decimal.Decimal64(r.Int64N(11)))
			lines++
			if lb.Field(0).Len() == DefaultBatchSize {
				flush(lb, &lineitem)
			}
		}
	}
	if ob.Field(0).Len() > 0 {
		flush(ob, &orders)
	}
	if lb.Field(0).Len() > 0 {
		flush(lb, &lineitem)
	}
	ob.Release()
	lb.Release()
	return orders, lineitem
}

func countRows(recs []arrow.RecordBatch) int {
	n := 0
	for _, r := range recs {
		n += int(r.NumRows())
	}
	return n
}

// BenchmarkHashJoin joins lineitem (6M probe rows) with orders (1.5M build
// rows) on the int64 order key, on one core; every probe row matches.
func BenchmarkHashJoin(b *testing.B) {
	orders, lineitem := joinBenchData()
	defer releaseRecs(orders)
	defer releaseRecs(lineitem)
	probeRows := countRows(lineitem)
	env := benchEnv()
	spec := HashJoinSpec{Type: JoinInner, LeftKeys: []int{0}, RightKeys: []int{0}}
	b.ReportAllocs()
	b.ResetTimer()
	start := startClock()
	for i := 0; i < b.N; i++ {
		l, _ := NewBatchSource(lineitemSchema, lineitem...)
		o, _ := NewBatchSource(ordersSchema, orders...)
		j, err := NewHashJoin(l, o, spec)
		if err != nil {
			b.Fatal(err)
		}
		if got := drain(b, env, j); got != probeRows {
			b.Fatalf("%d rows, want %d", got, probeRows)
		}
	}
	reportRows(b, probeRows+countRows(orders), 1, start)
}

// BenchmarkHashJoinParallel is BenchmarkHashJoin with one build and one
// probe pipeline per core sharing one hash table.
func BenchmarkHashJoinParallel(b *testing.B) {
	orders, lineitem := joinBenchData()
	defer releaseRecs(orders)
	defer releaseRecs(lineitem)
	probeRows := countRows(lineitem)
	env := benchEnv()
	cores := env.Parallelism
	spec := HashJoinSpec{Type: JoinInner, LeftKeys: []int{0}, RightKeys: []int{0}}
	b.ReportAllocs()
	b.ResetTimer()
	start := startClock()
	for i := 0; i < b.N; i++ {
		ops, err := NewParallelHashJoin(splitRecs(lineitemSchema, lineitem, cores), splitRecs(ordersSchema, orders, cores), spec)
		if err != nil {
			b.Fatal(err)
		}
		g, _ := NewGather(ops)
		if got := drain(b, env, g); got != probeRows {
			b.Fatalf("%d rows, want %d", got, probeRows)
		}
	}
	reportRows(b, probeRows+countRows(orders), cores, start)
}
