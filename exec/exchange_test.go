package exec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

// checkNoGoroutineLeak fails t if more goroutines run at the end of the test
// than at its start (after letting exiting goroutines finish).
func checkNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			buf = buf[:runtime.Stack(buf, true)]
			t.Errorf("%d goroutines leaked:\n%s", n-before, buf)
		}
	})
}

// splitInput repartitions one input into n pipelines by column col.
func splitInput(in Operator, col, n int) []Operator {
	parts, err := NewHashRepartition([]Operator{in}, []int{col}, n)
	if err != nil {
		panic(err)
	}
	return parts
}

func TestExchangeHarness(t *testing.T) {
	checkNoGoroutineLeak(t)
	rows := sortRows(11, 700)
	all := func(in [][][]any) ([][]any, error) { return in[0], nil }
	allSorted := func(in [][][]any) ([][]any, error) {
		var keys []SortKey
		for i := 0; i < sortTestSchema.NumFields(); i++ {
			keys = append(keys, SortKey{Col: i})
		}
		return refSort(in[0], keys), nil
	}
	for _, tc := range []struct {
		name    string
		build   func(in []Operator) (Operator, error)
		ref     func(in [][][]any) ([][]any, error)
		ordered bool
	}{
		{"gather-of-repartition", func(in []Operator) (Operator, error) {
			return NewGather(splitInput(in[0], 2, 3))
		}, all, false},
		{"gather-of-repartition-multikey", func(in []Operator) (Operator, error) {
			parts, err := NewHashRepartition(in, []int{0, 3, 7}, 4)
			if err != nil {
				return nil, err
			}
			return NewGather(parts)
		}, all, false},
		{"gather-single", func(in []Operator) (Operator, error) { return NewGather(in) }, all, false},
		{"broadcast", func(in []Operator) (Operator, error) {
			outs, err := NewBroadcast(in, 3)
			if err != nil {
				return nil, err
			}
			return NewGather(outs)
		}, func(in [][][]any) ([][]any, error) {
			var out [][]any
			for k := 0; k < 3; k++ {
				out = append(out, in[0]...)
			}
			return out, nil
		}, false},
		{"parallel-sort-merge", func(in []Operator) (Operator, error) {
			var keys []SortKey
			for i := 0; i < sortTestSchema.NumFields(); i++ {
				keys = append(keys, SortKey{Col: i})
			}
			parts := splitInput(in[0], 1, 3)
			for i, p := range parts {
				s, err := NewSort(p, SortSpec{Keys: keys})
				if err != nil {
					return nil, err
				}
				parts[i] = s
			}
			return NewOrderedMerge(parts, keys)
		}, allSorted, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			RunOpTest(t, OpTest{
				Name:       tc.name,
				Inputs:     []HarnessInput{{Schema: sortTestSchema, Rows: rows}},
				Ordered:    tc.ordered,
				BatchSizes: []int{1, 7, 1024},
				Build:      tc.build,
				Ref:        tc.ref,
			})
		})
	}
}

// TestOrderedMergeTies checks the merge breaks ties by input order.
func TestOrderedMergeTies(t *testing.T) {
	checkNoGoroutineLeak(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int32}, {Name: "src", Type: arrow.PrimitiveTypes.Int32}}, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var ins []Operator
	var want [][]any
	for s := 0; s < 4; s++ {
		var rows [][]any
		for k := 0; k < 50; k++ {
			rows = append(rows, []any{int32(k / 3), int32(s)})
		}
		rec := MakeRecord(t, mem, schema, rows)
		src, _ := NewBatchSource(schema, rec)
		rec.Release()
		ins = append(ins, src)
	}
	for k := 0; k < 17; k++ {
		for s := 0; s < 4; s++ {
			for r := 0; r < 50; r++ {
				if r/3 == k {
					want = append(want, []any{int32(k), int32(s)})
				}
			}
		}
	}
	m, err := NewOrderedMerge(ins, []SortKey{{Col: 0}})
	if err != nil {
		t.Fatal(err)
	}
	env := NewTestEnv(mem)
	env.BatchSize = 7
	got, err := CollectRows(env, m)
	if err != nil {
		t.Fatal(err)
	}
	AssertRowsEqual(t, got, want, true)
}

// TestHashRepartitionRouting checks every row lands in the partition
// HashPartitioner assigns, with outputs drained concurrently.
func TestHashRepartitionRouting(t *testing.T) {
	checkNoGoroutineLeak(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := sortRows(12, 3000)
	var ins []Operator
	for k := 0; k < 3; k++ {
		rec := MakeRecord(t, mem, sortTestSchema, rows[k*1000:(k+1)*1000])
		src, _ := NewBatchSource(sortTestSchema, rec)
		rec.Release()
		ins = append(ins, src)
	}
	keys := []int{2, 5}
	outs, err := NewHashRepartition(ins, keys, 5)
	if err != nil {
		t.Fatal(err)
	}
	env := NewTestEnv(mem)
	env.BatchSize = 100
	var wg sync.WaitGroup
	total := make([]int, 5)
	errs := make([]error, 5)
	for q, o := range outs {
		wg.Add(1)
		go func(q int, o Operator) {
			defer wg.Done()
			part, _ := NewHashPartitioner(sortTestSchema, keys, 5)
			defer o.Close()
			if err := o.Open(env); err != nil {
				errs[q] = err
				return
			}
			for {
				b, err := o.Next()
				if err != nil {
					errs[q] = err
					return
				}
				if b == nil {
					return
				}
				for _, p := range part.Partition(b) {
					if int(p) != q {
						errs[q] = fmt.Errorf("row of partition %d in output %d", p, q)
						return
					}
				}
				total[q] += b.Len()
			}
		}(q, o)
	}
	wg.Wait()
	n := 0
	for q := range outs {
		if errs[q] != nil {
			t.Fatal(errs[q])
		}
		n += total[q]
	}
	if n != 3000 {
		t.Fatalf("%d rows out, want 3000", n)
	}
}

// failingSource fails after a number of batches.
type failingSource struct {
	*BatchSource
	after int
	err   error
}

func (f *failingSource) Next() (*Batch, error) {
	if f.after == 0 {
		return nil, f.err
	}
	f.after--
	return f.BatchSource.Next()
}

// TestExchangeErrorsAndEarlyClose: an input's error reaches the consumer,
// early Close stops everything, nothing leaks.
func TestExchangeErrorsAndEarlyClose(t *testing.T) {
	checkNoGoroutineLeak(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := sortRows(13, 2000)
	mkSources := func(n int, failAt int) []Operator {
		var ins []Operator
		for k := 0; k < n; k++ {
			var recs []arrow.RecordBatch
			for s := 0; s < 2000; s += 50 {
				recs = append(recs, MakeRecord(t, mem, sortTestSchema, rows[s:s+50]))
			}
			src, _ := NewBatchSource(sortTestSchema, recs...)
			for _, r := range recs {
				r.Release()
			}
			if k == 1 && failAt >= 0 {
				ins = append(ins, &failingSource{BatchSource: src, after: failAt, err: nferr.Dataf("bad file x.parquet")})
			} else {
				ins = append(ins, src)
			}
		}
		return ins
	}
	// Error propagation through gather, repartition and merge.
	for _, mk := range []func([]Operator) (Operator, error){
		func(in []Operator) (Operator, error) { return NewGather(in) },
		func(in []Operator) (Operator, error) {
			parts, err := NewHashRepartition(in, []int{0}, 3)
			if err != nil {
				return nil, err
			}
			return NewGather(parts)
		},
		func(in []Operator) (Operator, error) {
			for i, p := range in {
				s, _ := NewSort(p, SortSpec{Keys: []SortKey{{Col: 0}}})
				in[i] = s
			}
			return NewOrderedMerge(in, []SortKey{{Col: 0}})
		},
		func(in []Operator) (Operator, error) {
			return NewParallelHashAgg(in, HashAggSpec{GroupCols: []int{0}, Aggs: []AggSpec{{Func: AggCountStar}}}, AggSplitPartial)
		},
	} {
		op, err := mk(mkSources(3, 5))
		if err != nil {
			t.Fatal(err)
		}
		env := NewTestEnv(mem)
		_, err = CollectRows(env, op)
		if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), "x.parquet") {
			t.Fatalf("got %v, want the input's data error", err)
		}
	}
	// Early close after one batch, with producers blocked on full queues.
	for _, mk := range []func([]Operator) (Operator, error){
		func(in []Operator) (Operator, error) { return NewGather(in) },
		func(in []Operator) (Operator, error) {
			parts, err := NewHashRepartition(in, []int{0}, 3)
			if err != nil {
				return nil, err
			}
			return NewGather(parts)
		},
		func(in []Operator) (Operator, error) {
			outs, err := NewBroadcast(in, 2)
			if err != nil {
				return nil, err
			}
			return NewGather(outs)
		},
		func(in []Operator) (Operator, error) { return NewOrderedMerge(in, []SortKey{{Col: 4}}) },
	} {
		op, err := mk(mkSources(3, -1))
		if err != nil {
			t.Fatal(err)
		}
		env := NewTestEnv(mem)
		env.BatchSize = 10
		if err := op.Open(env); err != nil {
			t.Fatal(err)
		}
		if b, err := op.Next(); err != nil || b == nil {
			t.Fatalf("first batch: %v %v", b, err)
		}
		time.Sleep(10 * time.Millisecond) // let producers fill their queues
		if err := op.Close(); err != nil {
			t.Fatal(err)
		}
		if env.Budget.Used() != 0 {
			t.Fatalf("budget holds %d after Close", env.Budget.Used())
		}
	}
	// Close before Open closes the inputs.
	ins := mkSources(2, -1)
	g, _ := NewGather(ins)
	g.Close()
	for _, in := range ins {
		if !in.(*BatchSource).closed {
			t.Fatal("Close before Open left an input open")
		}
	}
}

// TestExchangeCancel: canceling the context stops a gather blocked on slow
// producers.
func TestExchangeCancel(t *testing.T) {
	checkNoGoroutineLeak(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := sortRows(14, 100)
	rec := MakeRecord(t, mem, sortTestSchema, rows)
	src, _ := NewBatchSource(sortTestSchema, rec)
	rec.Release()
	slow := &blockingSource{Operator: src, release: make(chan struct{})}
	g, _ := NewGather([]Operator{slow})
	ctx, cancel := context.WithCancel(context.Background())
	env := NewTestEnv(mem)
	env.Ctx = ctx
	if err := g.Open(env); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	_, err := g.Next()
	if !nferr.Is(err, nferr.KindCanceled) {
		t.Fatalf("got %v, want canceled", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}

// blockingSource blocks in Next until its context is canceled.
type blockingSource struct {
	Operator
	env     *Env
	release chan struct{}
}

func (b *blockingSource) Open(env *Env) error { b.env = env; return b.Operator.Open(env) }
func (b *blockingSource) Next() (*Batch, error) {
	select {
	case <-b.env.Ctx.Done():
		return nil, nferr.With(nferr.KindCanceled, b.env.Ctx.Err())
	case <-b.release:
		return b.Operator.Next()
	}
}

// TestParallelOperators runs the parallel join and aggregate helpers under
// the harness.
func TestParallelOperators(t *testing.T) {
	checkNoGoroutineLeak(t)
	rows := aggRows(21, 900, 30)
	spec := HashAggSpec{GroupCols: []int{1}, Aggs: allAggs()}
	for _, strat := range []ParallelAggStrategy{AggSplitPartial, AggSplitRepartition} {
		for _, sp := range []HashAggSpec{spec, {Aggs: allAggs()}, {GroupCols: []int{0}, Aggs: []AggSpec{{Func: AggCount, Arg: 2, Distinct: true}}}} {
			sp := sp
			name := fmt.Sprintf("agg/%s/groups=%v/distinct=%v", strat, sp.GroupCols, sp.Aggs[0].Distinct)
			t.Run(name, func(t *testing.T) {
				RunOpTest(t, OpTest{
					Name:       name,
					Inputs:     []HarnessInput{{Schema: aggTestSchema, Rows: rows}},
					BatchSizes: []int{7, 1024},
					Build: func(in []Operator) (Operator, error) {
						return NewParallelHashAgg(splitInput(in[0], 2, 3), sp, strat)
					},
					Ref: func(in [][][]any) ([][]any, error) { return refHashAgg(aggTestSchema, in[0], sp) },
				})
			})
		}
	}
	l, r := joinInputs(22, 300, 200, 30)
	for _, typ := range []JoinType{JoinInner, JoinLeft, JoinRight, JoinFull, JoinSemi, JoinAnti, JoinMark} {
		for _, build := range []JoinSide{SideRight, SideLeft} {
			jspec := HashJoinSpec{Type: typ, LeftKeys: []int{0}, RightKeys: []int{0}, Build: build}
			e := testResidual
			jspec.Residual = &e
			name := fmt.Sprintf("join/%s/build=%s", typ, build)
			t.Run(name, func(t *testing.T) {
				RunOpTest(t, OpTest{
					Name:       name,
					Inputs:     []HarnessInput{{Schema: joinLeftSchema, Rows: l}, {Schema: joinRightSchema, Rows: r}},
					BatchSizes: []int{7, 1024},
					Build: func(in []Operator) (Operator, error) {
						probes, builds := splitInput(in[0], 2, 3), splitInput(in[1], 2, 2)
						if build == SideLeft {
							probes, builds = splitInput(in[1], 2, 3), splitInput(in[0], 2, 2)
						}
						ops, err := NewParallelHashJoin(probes, builds, jspec)
						if err != nil {
							return nil, err
						}
						return NewGather(ops)
					},
					Ref: func(in [][][]any) ([][]any, error) { return refHashJoin(in[0], in[1], jspec), nil },
				})
			})
		}
	}
}

// TestParallelSpills: a shared join build and parallel aggregates spill
// at tiny budgets, for every join type (NOT IN aside), with one prober or
// several.
func TestParallelSpills(t *testing.T) {
	rows := aggRows(23, 48000, 20000)
	spec := HashAggSpec{GroupCols: []int{0}, Aggs: allAggs()[:8]}
	// NB: AggSplitPartial's partials flush early (TestHashAggSpills); its
	// gather's queue of flushed groups needs more than this budget.
	for _, strat := range []ParallelAggStrategy{AggSplitRepartition} {
		t.Run(fmt.Sprintf("agg/%s", strat), func(t *testing.T) {
			runSpillCase(t, 3<<20, func(mem memory.Allocator) (Operator, error) {
				return NewParallelHashAgg(splitSources(t, mem, aggTestSchema, rows, 2), spec, strat)
			}, func() ([][]any, error) { return refHashAgg(aggTestSchema, canonicalRows(t, aggTestSchema, rows), spec) })
		})
	}
	// A partitioned build (two build inputs filling one table) spills, with
	// two probers. NB: not through RunOpTest: its layouts feed one batch of
	// the whole input, which no exchange queue holds in so small a budget.
	bl, br := joinInputs(25, 8000, 8000, 3000)
	for _, typ := range []JoinType{JoinInner, JoinLeft, JoinSemi, JoinAnti, JoinRight} {
		t.Run("join/parallel-build/"+string(typ), func(t *testing.T) {
			bspec := HashJoinSpec{Type: typ, LeftKeys: []int{0}, RightKeys: []int{0}}
			budget := int64(384 << 10)
			if typ == JoinSemi || typ == JoinAnti {
				budget = 224 << 10 // keys only
			}
			runSpillCase(t, budget, func(mem memory.Allocator) (Operator, error) {
				ops, err := NewParallelHashJoin(splitSources(t, mem, joinLeftSchema, bl, 2), splitSources(t, mem, joinRightSchema, br, 2), bspec)
				if err != nil {
					return nil, err
				}
				return &concat{ops: ops}, nil
			}, func() ([][]any, error) {
				return refHashJoin(canonicalRows(t, joinLeftSchema, bl), canonicalRows(t, joinRightSchema, br), bspec), nil
			})
		})
	}
	// Regression (issue 31, TPC-H Q21 at SF 1 under 32 MiB): a shared build
	// whose join emits build rows at the end (right/full outer, semi, anti
	// and mark built on the left) spills too, with two probers driven
	// concurrently or one after the other (nobody waits for a sibling).
	for _, typ := range []JoinType{JoinRight, JoinFull, JoinSemi, JoinAnti, JoinMark} {
		for _, serial := range []bool{false, true} {
			build := SideRight
			if typ == JoinSemi || typ == JoinAnti || typ == JoinMark {
				build = SideLeft
			}
			bspec := HashJoinSpec{Type: typ, LeftKeys: []int{0}, RightKeys: []int{0}, Build: build}
			t.Run(fmt.Sprintf("join/shared-tracked/%s/build=%s/serial=%v", typ, build, serial), func(t *testing.T) {
				runSpillCase(t, 384<<10, func(mem memory.Allocator) (Operator, error) {
					left, right := splitSources(t, mem, joinLeftSchema, bl, 2), splitSources(t, mem, joinRightSchema, br, 2)
					probes, builds := left, right
					if build == SideLeft {
						probes, builds = right, left
					}
					ops, err := NewParallelHashJoin(probes, builds, bspec)
					if err != nil {
						return nil, err
					}
					return &concat{ops: ops, serial: serial}, nil
				}, func() ([][]any, error) {
					return refHashJoin(canonicalRows(t, joinLeftSchema, bl), canonicalRows(t, joinRightSchema, br), bspec), nil
				})
			})
		}
	}
	// A shared build with one prober spills for every join type.
	l, r := joinInputs(24, 5000, 5000, 2000)
	for _, typ := range []JoinType{JoinInner, JoinLeft, JoinRight, JoinFull, JoinSemi, JoinAnti, JoinMark} {
		for _, build := range []JoinSide{SideRight, SideLeft} {
			jspec := HashJoinSpec{Type: typ, LeftKeys: []int{0}, RightKeys: []int{0}, Build: build}
			e := testResidual
			jspec.Residual = &e
			name := fmt.Sprintf("join/%s/build=%s/probers=1", typ, build)
			t.Run(name, func(t *testing.T) {
				var spilled int
				RunOpTest(t, OpTest{
					Name:            name,
					Inputs:          []HarnessInput{{Schema: joinLeftSchema, Rows: l}, {Schema: joinRightSchema, Rows: r}},
					BatchSizes:      []int{1024},
					NoNullInjection: true,
					Budget:          288 << 10,
					Spill:           true,
					SpillRuns:       &spilled,
					Build: func(in []Operator) (Operator, error) {
						// NB: builds unsplit: a repartition's queues would
						// take much of so small a budget.
						probes, builds := []Operator{in[0]}, []Operator{in[1]}
						if build == SideLeft {
							probes, builds = []Operator{in[1]}, []Operator{in[0]}
						}
						ops, err := NewParallelHashJoin(probes, builds, jspec)
						if err != nil {
							return nil, err
						}
						return ops[0], nil
					},
					Ref: func(in [][][]any) ([][]any, error) { return refHashJoin(in[0], in[1], jspec), nil },
				})
				if spilled == 0 {
					t.Fatal("no run spilled")
				}
			})
		}
	}
}

// concat drains its inputs concurrently (each in its own goroutine, as
// parallel probers must be) into memory, without an exchange's accounted
// queue, and emits their rows; serial drains them one after the other.
type concat struct {
	ops    []Operator
	rows   [][][]any
	done   bool
	out    []*Batch
	serial bool
}

func (c *concat) Schema() *arrow.Schema { return c.ops[0].Schema() }
func (c *concat) Open(env *Env) error {
	for _, op := range c.ops {
		if err := op.Open(env); err != nil {
			return err
		}
	}
	return nil
}
func (c *concat) Next() (*Batch, error) {
	if c.done {
		return nil, nil
	}
	c.done = true
	errs := make([]error, len(c.ops))
	c.rows = make([][][]any, len(c.ops))
	var wg sync.WaitGroup
	for i, op := range c.ops {
		wg.Add(1)
		drain := func() {
			defer wg.Done()
			for {
				b, err := op.Next()
				if err != nil || b == nil {
					errs[i] = err
					return
				}
				c.rows[i] = append(c.rows[i], BatchRows(b)...)
			}
		}
		if c.serial {
			drain()
		} else {
			go drain()
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return nil, nil
}
func (c *concat) Close() error {
	for _, op := range c.ops {
		op.Close()
	}
	return nil
}

// all is the rows the inputs produced.
func (c *concat) all() [][]any {
	var out [][]any
	for _, r := range c.rows {
		out = append(out, r...)
	}
	return out
}

// splitSources deals rows, 1024 at a time, to n batch sources (parallel
// inputs without an exchange, whose queues would not fit tiny budgets).
func splitSources(t *testing.T, mem memory.Allocator, schema *arrow.Schema, rows [][]any, n int) []Operator {
	var ops []Operator
	for i := 0; i < n; i++ {
		var recs []arrow.RecordBatch
		for off := i * 1024; off < len(rows); off += n * 1024 {
			recs = append(recs, MakeRecord(t, mem, schema, rows[off:min(off+1024, len(rows))]))
		}
		src, _ := NewBatchSource(schema, recs...)
		for _, r := range recs {
			r.Release()
		}
		ops = append(ops, src)
	}
	return ops
}

// runSpillCase runs op under budget with a spill space and checks its rows
// (or error) against want, that something spilled (when rows are
// expected), and that no memory, reservation or file is left.
func runSpillCase(t *testing.T, budget int64, build func(memory.Allocator) (Operator, error), want func() ([][]any, error)) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	op, err := build(mem)
	if err != nil {
		t.Fatal(err)
	}
	env := NewTestEnv(mem)
	env.Budget = NewBudget(budget)
	root := t.TempDir()
	env.Spill = NewSpill(root, "t", 0)
	defer env.Spill.Close()
	got, err := CollectRows(env, op)
	if c, ok := op.(*concat); ok {
		got = c.all()
	}
	wantRows, wantErr := want()
	switch {
	case wantErr != nil:
		if nferr.KindOf(err) != nferr.KindOf(wantErr) || !strings.Contains(fmt.Sprint(err), wantErr.Error()) {
			t.Fatalf("got %v, want %v", err, wantErr)
		}
	case err != nil:
		t.Fatal(err)
	default:
		AssertRowsEqual(t, got, wantRows, false)
		if env.Spill.Written() == 0 {
			t.Fatal("nothing spilled")
		}
	}
	if u := env.Budget.Used(); u != 0 {
		t.Fatalf("%d bytes still reserved", u)
	}
	if left := filesUnder(root); len(left) > 0 {
		t.Fatalf("spill files left: %v", left)
	}
}

var _ = rand.IntN

// TestEarlyClose closes every stateful operator after its first batch:
// nothing may leak (allocator, budget, goroutines).
func TestEarlyClose(t *testing.T) {
	checkNoGoroutineLeak(t)
	rows := aggRows(61, 3000, 400)
	l, r := joinInputs(62, 2000, 1500, 300)
	one := func(mk func(in Operator) (Operator, error)) func(a, b Operator) (Operator, error) {
		return func(a, b Operator) (Operator, error) { b.Close(); return mk(a) }
	}
	for _, tc := range []struct {
		name string
		join bool
		mk   func(a, b Operator) (Operator, error)
	}{
		{"agg", false, one(func(in Operator) (Operator, error) {
			return NewHashAgg(in, HashAggSpec{GroupCols: []int{2}, Aggs: allAggs()})
		})},
		{"sort", false, one(func(in Operator) (Operator, error) {
			return NewSort(in, SortSpec{Keys: []SortKey{{Col: 0}}})
		})},
		{"topn", false, one(func(in Operator) (Operator, error) {
			return NewTopN(in, TopNSpec{Keys: []SortKey{{Col: 0}}, Limit: 500})
		})},
		{"distinct", false, one(func(in Operator) (Operator, error) { return NewDistinct(in, DistinctSpec{}) })},
		{"window", false, one(func(in Operator) (Operator, error) {
			return NewWindow(in, WindowSpec{PartitionBy: []int{1}, OrderBy: []SortKey{{Col: 5}}, Funcs: []WindowFuncSpec{{Func: WinSum, Arg: 3}}})
		})},
		{"parallel-agg", false, one(func(in Operator) (Operator, error) {
			return NewParallelHashAgg(splitInput(in, 2, 3), HashAggSpec{GroupCols: []int{2}, Aggs: allAggs()}, AggSplitRepartition)
		})},
		{"parallel-sort", false, one(func(in Operator) (Operator, error) {
			parts := splitInput(in, 2, 2)
			for i, p := range parts {
				parts[i], _ = NewSort(p, SortSpec{Keys: []SortKey{{Col: 0}}})
			}
			return NewOrderedMerge(parts, []SortKey{{Col: 0}})
		})},
		{"hash-join", true, func(a, b Operator) (Operator, error) {
			return NewHashJoin(a, b, HashJoinSpec{Type: JoinFull, LeftKeys: []int{1}, RightKeys: []int{1}})
		}},
		{"nl-join", true, func(a, b Operator) (Operator, error) {
			e := testResidual
			return NewNestedLoopJoin(a, b, NestedLoopJoinSpec{Type: JoinLeft, Condition: &e})
		}},
		{"parallel-join", true, func(a, b Operator) (Operator, error) {
			ops, err := NewParallelHashJoin(splitInput(a, 0, 2), splitInput(b, 0, 2), HashJoinSpec{Type: JoinRight, LeftKeys: []int{1}, RightKeys: []int{1}})
			if err != nil {
				return nil, err
			}
			return NewGather(ops)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			var a, b Operator
			if tc.join {
				lrec := MakeRecord(t, mem, joinLeftSchema, l)
				rrec := MakeRecord(t, mem, joinRightSchema, r)
				a, _ = NewBatchSource(joinLeftSchema, lrec)
				b, _ = NewBatchSource(joinRightSchema, rrec)
				lrec.Release()
				rrec.Release()
			} else {
				var recs []arrow.RecordBatch
				for s := 0; s < len(rows); s += 100 {
					recs = append(recs, MakeRecord(t, mem, aggTestSchema, rows[s:s+100]))
				}
				a, _ = NewBatchSource(aggTestSchema, recs...)
				b, _ = NewBatchSource(aggTestSchema)
				releaseRecs(recs)
			}
			op, err := tc.mk(a, b)
			if err != nil {
				t.Fatal(err)
			}
			env := NewTestEnv(mem)
			env.BatchSize = 7
			if err := op.Open(env); err != nil {
				t.Fatal(err)
			}
			if b, err := op.Next(); err != nil || b == nil {
				t.Fatalf("first Next: %v, %v", b != nil, err)
			}
			if err := op.Close(); err != nil {
				t.Fatal(err)
			}
			if err := op.Close(); err != nil {
				t.Fatal(err)
			}
			if u := env.Budget.Used(); u != 0 {
				t.Fatalf("budget holds %d after Close", u)
			}
		})
	}
}
