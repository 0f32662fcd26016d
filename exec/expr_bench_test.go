package exec

import (
	"context"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Benchmarks of the expression engine in the shape of TPC-H Q6 over
// in-memory SF1-sized synthetic lineitem columns (6M rows), generated here
// (no dependency on package tpch):
//
//	select sum(l_extendedprice * l_discount) from lineitem
//	where l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01'
//	  and l_discount between 0.05 and 0.07 and l_quantity < 24
//
// go test -run '^$' -bench 'Q6|Kernel' -benchtime 5x ./exec

const q6Rows = 6_000_000

var q6Schema = arrow.NewSchema([]arrow.Field{
	{Name: "l_quantity", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
	{Name: "l_extendedprice", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
	{Name: "l_discount", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
	{Name: "l_shipdate", Type: arrow.FixedWidthTypes.Date32},
}, nil)

var (
	q6Once sync.Once
	q6Recs []arrow.RecordBatch
)

// q6Data returns lineitem-like records of DefaultBatchSize rows with
// dbgen's value distributions: quantity 1..50, discount 0.00..0.10, ship
// dates over 1992-01-02..1998-12-01, price = quantity * part price.
func q6Data() []arrow.RecordBatch {
	q6Once.Do(func() {
		r := rand.New(rand.NewPCG(6, 6))
		mem := memory.NewGoAllocator()
		lo, hi := mustDate("1992-01-02"), mustDate("1998-12-01")
		for start := 0; start < q6Rows; start += DefaultBatchSize {
			n := min(DefaultBatchSize, q6Rows-start)
			qty := make([]decimal.Decimal64, n)
			price := make([]decimal.Decimal64, n)
			disc := make([]decimal.Decimal64, n)
			ship := make([]arrow.Date32, n)
			for i := 0; i < n; i++ {
				q := int64(1 + r.IntN(50))
				qty[i] = decimal.Decimal64(q * 100)
				price[i] = decimal.Decimal64(q * (90000 + r.Int64N(110000)))
				disc[i] = decimal.Decimal64(r.IntN(11))
				ship[i] = arrow.Date32(lo + r.Int32N(hi-lo+1))
			}
			cols := []arrow.Array{
				decimalArray(mem, q6Schema.Field(0).Type, qty),
				decimalArray(mem, q6Schema.Field(1).Type, price),
				decimalArray(mem, q6Schema.Field(2).Type, disc),
				dateArray(mem, ship),
			}
			q6Recs = append(q6Recs, array.NewRecordBatch(q6Schema, cols, int64(n)))
			for _, c := range cols {
				c.Release()
			}
		}
	})
	return q6Recs
}

func decimalArray(mem memory.Allocator, dt arrow.DataType, v []decimal.Decimal64) arrow.Array {
	b := array.NewDecimal64Builder(mem, dt.(*arrow.Decimal64Type))
	defer b.Release()
	b.AppendValues(v, nil)
	return b.NewArray()
}

func dateArray(mem memory.Allocator, v []arrow.Date32) arrow.Array {
	b := array.NewDate32Builder(mem)
	defer b.Release()
	b.AppendValues(v, nil)
	return b.NewArray()
}

func q6Pred() expr.Expr {
	ship, disc, qty := expr.Col(3, "l_shipdate"), expr.Col(2, "l_discount"), expr.Col(0, "l_quantity")
	return expr.And(
		expr.Ge(ship, expr.LitDate(mustDate("1994-01-01"))),
		expr.Lt(ship, expr.Add(expr.LitDate(mustDate("1994-01-01")), expr.LitInterval(12, 0, 0))),
		expr.Between(disc, expr.Sub(dec("0.06"), dec("0.01")), expr.Add(dec("0.06"), dec("0.01"))),
		expr.Lt(qty, expr.LitInt32(24)),
	)
}

// sumDecimal128 adds the live rows of a decimal128 column (the aggregate's
// inner loop, here so the benchmark measures the whole query shape).
func sumDecimal128(a arrow.Array, sel []int32, n int, acc *decimal128.Num) {
	vals := a.(*array.Decimal128).Values()
	hi, lo := acc.HighBits(), acc.LowBits()
	if sel == nil {
		for _, v := range vals[:n] {
			var c uint64
			lo, c = bits.Add64(lo, v.LowBits(), 0)
			hi += v.HighBits() + int64(c)
		}
	} else {
		for _, i := range sel {
			v := vals[i]
			var c uint64
			lo, c = bits.Add64(lo, v.LowBits(), 0)
			hi += v.HighBits() + int64(c)
		}
	}
	*acc = decimal128.New(hi, lo)
}

// runQ6 runs BatchSource -> Filter -> Project -> sum once.
func runQ6(b testing.TB, env *Env) decimal128.Num {
	src, err := NewBatchSource(q6Schema, q6Data()...)
	if err != nil {
		b.Fatal(err)
	}
	f, err := NewFilter(src, q6Pred())
	if err != nil {
		b.Fatal(err)
	}
	p, err := NewProject(f, []expr.Expr{expr.Mul(expr.Col(1, "l_extendedprice"), expr.Col(2, "l_discount"))}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if err := p.Open(env); err != nil {
		b.Fatal(err)
	}
	var acc decimal128.Num
	for {
		bt, err := p.Next()
		if err != nil {
			b.Fatal(err)
		}
		if bt == nil {
			return acc
		}
		sumDecimal128(bt.Cols[0], bt.Sel, bt.N, &acc)
	}
}

// q6Fused is the same query as one hand-written loop over the typed slices
// of the Arrow arrays: the floor any vector representation could reach.
func q6Fused() decimal128.Num {
	lo, hi := int32(mustDate("1994-01-01")), int32(mustDate("1995-01-01"))
	var acc decimal128.Num
	ahi, alo := int64(0), uint64(0)
	for _, r := range q6Data() {
		qty := r.Column(0).(*array.Decimal64).Values()
		price := r.Column(1).(*array.Decimal64).Values()
		disc := r.Column(2).(*array.Decimal64).Values()
		ship := r.Column(3).(*array.Date32).Values()
		for i := range ship {
			s := int32(ship[i])
			d := int64(disc[i])
			if s >= lo && s < hi && d >= 5 && d <= 7 && int64(qty[i]) < 2400 {
				p := expr.Mul64to128(int64(price[i]), d)
				var c uint64
				alo, c = bits.Add64(alo, p.LowBits(), 0)
				ahi += p.HighBits() + int64(c)
			}
		}
	}
	acc = decimal128.New(ahi, alo)
	return acc
}

// threadCPU is the CPU time consumed by the calling OS thread: on a shared
// machine it excludes the time spent waiting for a core, which wall-clock
// ns/op does not. Callers lock their goroutine to the thread.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rusageThread is RUSAGE_THREAD (Linux): usage of the calling thread.
const rusageThread = 1

// cpuTimer measures the thread CPU time of a benchmark's loop.
type cpuTimer struct{ start time.Duration }

func startCPU(b *testing.B) *cpuTimer {
	runtime.LockOSThread()
	b.Cleanup(runtime.UnlockOSThread)
	return &cpuTimer{start: threadCPU()}
}

func (c *cpuTimer) report(b *testing.B) {
	b.ReportMetric(float64((threadCPU()-c.start).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
}

// reportPerRow reports thread CPU nanoseconds per row.
func (c *cpuTimer) reportPerRow(b *testing.B, rows int) {
	b.ReportMetric(float64((threadCPU()-c.start).Nanoseconds())/float64(b.N)/float64(rows), "cpu-ns/row")
}

func reportQ6Rows(b *testing.B, rows int) {
	b.SetBytes(int64(rows) * (8 + 8 + 8 + 4)) // the four input columns
	perOp := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(rows)/perOp, "rows/s")
	b.ReportMetric(perOp*1e3, "ms/op")
}

// BenchmarkQ6FilterProjectSum is the Q6 shape through the operators, on
// one core.
func BenchmarkQ6FilterProjectSum(b *testing.B) {
	q6Data()
	env := NewTestEnv(memory.NewGoAllocator())
	want := q6Fused()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b)
	var got decimal128.Num
	for i := 0; i < b.N; i++ {
		got = runQ6(b, env)
	}
	b.StopTimer()
	cpu.report(b)
	if got != want {
		b.Fatalf("sum %s, fused loop says %s", got.ToString(4), want.ToString(4))
	}
	reportQ6Rows(b, q6Rows)
}

// BenchmarkQ6Fused is the hand-fused loop (lower bound, no operator or
// vector abstraction at all).
func BenchmarkQ6Fused(b *testing.B) {
	q6Data()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b)
	for i := 0; i < b.N; i++ {
		q6Fused()
	}
	b.StopTimer()
	cpu.report(b)
	reportQ6Rows(b, q6Rows)
}

// BenchmarkQ6Parallel runs the operator pipeline on every core over a
// share of the batches, as the planner will (one pipeline per core).
func BenchmarkQ6Parallel(b *testing.B) {
	recs := q6Data()
	cores := max(1, env2Cores())
	b.ReportAllocs()
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		var wg sync.WaitGroup
		for c := 0; c < cores; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				var mine []arrow.RecordBatch
				for i := c; i < len(recs); i += cores {
					mine = append(mine, recs[i])
				}
				src, _ := NewBatchSource(q6Schema, mine...)
				f, _ := NewFilter(src, q6Pred())
				p, _ := NewProject(f, []expr.Expr{expr.Mul(expr.Col(1, "l_extendedprice"), expr.Col(2, "l_discount"))}, nil)
				env := NewTestEnv(memory.NewGoAllocator())
				env.Ctx = context.Background()
				_ = p.Open(env)
				var acc decimal128.Num
				for {
					bt, err := p.Next()
					if err != nil || bt == nil {
						break
					}
					sumDecimal128(bt.Cols[0], bt.Sel, bt.N, &acc)
				}
				p.Close()
			}(c)
		}
		wg.Wait()
	}
	reportQ6Rows(b, q6Rows)
	b.ReportMetric(float64(cores), "cores")
}

func env2Cores() int { return NewEnv(context.Background()).Parallelism }

// ------------------------------------------------------------- kernels

func kernelBatch(b *testing.B) *Batch {
	r := q6Data()[0]
	return &Batch{Cols: r.Columns(), N: int(r.NumRows())}
}

func benchEval(b *testing.B, e expr.Expr, schema *arrow.Schema, batch *Batch) {
	ce, err := expr.CompileExpr(e, schema)
	if err != nil {
		b.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	b.ReportAllocs()
	b.SetBytes(int64(batch.Len()) * 8)
	b.ResetTimer()
	cpu := startCPU(b)
	for i := 0; i < b.N; i++ {
		a, err := ce.Eval(mem, batch)
		if err != nil {
			b.Fatal(err)
		}
		a.Release()
	}
	b.StopTimer()
	cpu.reportPerRow(b, batch.Len())
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(batch.Len()), "ns/row")
}

func benchFilter(b *testing.B, e expr.Expr, schema *arrow.Schema, batch *Batch) {
	ce, err := expr.CompileExpr(e, schema)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(batch.Len()) * 4)
	b.ResetTimer()
	cpu := startCPU(b)
	for i := 0; i < b.N; i++ {
		if _, err := ce.EvalFilter(batch); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu.reportPerRow(b, batch.Len())
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(batch.Len()), "ns/row")
}

// BenchmarkKernelDecimalMul: decimal(15,2) * decimal(15,2) -> decimal128.
func BenchmarkKernelDecimalMul(b *testing.B) {
	benchEval(b, expr.Mul(expr.Col(1, "p"), expr.Col(2, "d")), q6Schema, kernelBatch(b))
}

// BenchmarkKernelDecimalMul64: decimal(9,2) * decimal(9,2) stays decimal64.
func BenchmarkKernelDecimalMul64(b *testing.B) {
	e := expr.Mul(expr.Cast(expr.Col(0, "q"), expr.DecimalType(9, 2)), expr.Cast(expr.Col(2, "d"), expr.DecimalType(9, 2)))
	benchEval(b, e, q6Schema, kernelBatch(b))
}

// BenchmarkKernelDiscPrice: l_extendedprice * (1 - l_discount) (Q1).
func BenchmarkKernelDiscPrice(b *testing.B) {
	benchEval(b, expr.Mul(expr.Col(1, "p"), expr.Sub(expr.LitInt32(1), expr.Col(2, "d"))), q6Schema, kernelBatch(b))
}

// BenchmarkKernelCharge: l_extendedprice * (1 - l_discount) * (1 +
// l_tax) (Q1's sum_charge; l_discount stands in for l_tax): a decimal128
// times a decimal64.
func BenchmarkKernelCharge(b *testing.B) {
	e := expr.Mul(expr.Mul(expr.Col(1, "p"), expr.Sub(expr.LitInt32(1), expr.Col(2, "d"))), expr.Add(expr.LitInt32(1), expr.Col(2, "d")))
	benchEval(b, e, q6Schema, kernelBatch(b))
}

// BenchmarkKernelDateCompare: l_shipdate >= date '1994-01-01' as a filter.
func BenchmarkKernelDateCompare(b *testing.B) {
	benchFilter(b, expr.Ge(expr.Col(3, "s"), expr.LitDate(mustDate("1994-01-01"))), q6Schema, kernelBatch(b))
}

// BenchmarkKernelDateRangeSel: the second conjunct of a date range runs
// over the first one's selection.
func BenchmarkKernelDateRangeSel(b *testing.B) {
	s := expr.Col(3, "s")
	benchFilter(b, expr.And(expr.Ge(s, expr.LitDate(mustDate("1994-01-01"))), expr.Lt(s, expr.LitDate(mustDate("1995-01-01")))), q6Schema, kernelBatch(b))
}

var commentWords = []string{"special", "requests", "furiously", "carefully", "ironic", "final", "deposits", "packages", "accounts", "pending", "blithely", "regular", "express"}

func likeBatch(b *testing.B) (*arrow.Schema, *Batch) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "c", Type: arrow.BinaryTypes.String}}, nil)
	r := rand.New(rand.NewPCG(1, 2))
	bld := array.NewStringBuilder(memory.NewGoAllocator())
	for i := 0; i < DefaultBatchSize; i++ {
		s := ""
		for w := 3 + r.IntN(6); w > 0; w-- {
			s += commentWords[r.IntN(len(commentWords))] + " "
		}
		bld.Append(s)
	}
	a := bld.NewArray()
	b.Cleanup(a.Release)
	return schema, &Batch{Cols: []arrow.Array{a}, N: a.Len()}
}

func BenchmarkKernelLike(b *testing.B) {
	for _, p := range []string{"special%", "%ironic", "%special%", "%special%requests%", "%sp_cial%"} {
		b.Run(p, func(b *testing.B) {
			schema, batch := likeBatch(b)
			benchFilter(b, expr.Like(expr.Col(0, "c"), p), schema, batch)
		})
	}
}

// TestQ6Figures prints the Q6-shape timing when NICFLOW_BENCH_PRINT is set
// (a convenience for docs/decisions.md; the benchmarks are the measure).
func TestQ6Figures(t *testing.T) {
	if testingShortOrNoPrint() {
		t.Skip("set NICFLOW_BENCH_PRINT=1 to print Q6 figures")
	}
	env := NewTestEnv(memory.NewGoAllocator())
	runQ6(t, env)
	best := time.Hour
	for i := 0; i < 5; i++ {
		st := time.Now()
		runQ6(t, env)
		best = min(best, time.Since(st))
	}
	fbest := time.Hour
	for i := 0; i < 5; i++ {
		st := time.Now()
		q6Fused()
		fbest = min(fbest, time.Since(st))
	}
	fmt.Printf("Q6 filter+project+sum over %d rows: operators %v, fused loop %v\n", q6Rows, best, fbest)
}

func testingShortOrNoPrint() bool { return testing.Short() || os.Getenv("NICFLOW_BENCH_PRINT") == "" }

// q6Typed runs the same vectorized steps as the operator pipeline (range
// selection on the date, range on the discount, compare on the quantity,
// multiply and sum over the selection) directly on typed slices taken from
// the Arrow arrays: what a custom vector type with no Batch, Operator or
// expression-tree layer would cost. Docs/decisions.md D3 compares it with
// BenchmarkQ6FilterProjectSum.
func q6Typed() decimal128.Num {
	lo, hi := mustDate("1994-01-01"), mustDate("1995-01-01")-1
	s1 := make([]int32, DefaultBatchSize)
	s2 := make([]int32, DefaultBatchSize)
	s3 := make([]int32, DefaultBatchSize)
	prod := make([]decimal128.Num, DefaultBatchSize)
	var acc decimal128.Num
	for _, r := range q6Data() {
		n := int(r.NumRows())
		qty := r.Column(0).(*array.Decimal64).Values()
		price := r.Column(1).(*array.Decimal64).Values()
		disc := r.Column(2).(*array.Decimal64).Values()
		ship := r.Column(3).(*array.Date32).Values()
		sel := expr.SelRange32(s1, castSlice[int32](ship), lo, hi, nil, n)
		sel = expr.SelRange64(s2, castSlice[int64](disc), 5, 7, sel, n)
		sel = expr.SelLtC(s3, castSlice[int64](qty), 2400, sel, n)
		for _, i := range sel {
			prod[i] = expr.Mul64to128(int64(price[i]), int64(disc[i]))
		}
		hi, lo := acc.HighBits(), acc.LowBits()
		for _, i := range sel {
			v := prod[i]
			var c uint64
			lo, c = bits.Add64(lo, v.LowBits(), 0)
			hi += v.HighBits() + int64(c)
		}
		acc = decimal128.New(hi, lo)
	}
	return acc
}

// BenchmarkQ6TypedSlices: the vectorized plan without the operator layer.
func BenchmarkQ6TypedSlices(b *testing.B) {
	q6Data()
	want := q6Fused()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b)
	var got decimal128.Num
	for i := 0; i < b.N; i++ {
		got = q6Typed()
	}
	b.StopTimer()
	cpu.report(b)
	if got != want {
		b.Fatalf("sum %s, want %s", got.ToString(4), want.ToString(4))
	}
	reportQ6Rows(b, q6Rows)
}

// BenchmarkLikeVsRegexp compares the LIKE matcher with Go's regexp on the
// same pattern (docs/decisions.md D11).
func BenchmarkLikeVsRegexp(b *testing.B) {
	_, batch := likeBatch(b)
	a := batch.Cols[0].(*array.String)
	strs := make([]string, a.Len())
	byts := make([][]byte, a.Len())
	for j := range strs {
		strs[j] = a.Value(j)
		byts[j] = []byte(strs[j])
	}
	for _, c := range []struct{ like, re string }{
		{"%special%requests%", `^(?s:.*special.*requests.*)$`},
		{"special%", `^(?s:special.*)$`},
	} {
		m, _ := expr.CompileLikePattern([]byte(c.like), -1)
		re := regexp.MustCompile(c.re)
		b.Run("like/"+c.like, func(b *testing.B) {
			cpu := startCPU(b)
			defer cpu.reportPerRow(b, len(byts))
			for i := 0; i < b.N; i++ {
				for _, v := range byts {
					m.Match(v)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*a.Len()), "ns/row")
		})
		b.Run("regexp/"+c.like, func(b *testing.B) {
			cpu := startCPU(b)
			defer cpu.reportPerRow(b, len(strs))
			for i := 0; i < b.N; i++ {
				for _, v := range strs {
					re.MatchString(v)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*a.Len()), "ns/row")
		})
	}
}
