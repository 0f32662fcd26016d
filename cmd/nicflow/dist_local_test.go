package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/tpch"
)

// smallGroupDirs caches TPC-H data written with small row groups (so that
// even SF 0.01 tables spread over several tasks of a distributed plan).
var smallGroupDirs struct {
	sync.Mutex
	dirs map[float64]string
}

func tpchSmallGroups(t testing.TB, sf float64) string {
	t.Helper()
	smallGroupDirs.Lock()
	defer smallGroupDirs.Unlock()
	if d, ok := smallGroupDirs.dirs[sf]; ok {
		return d
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("nicflow-tpch-rg-sf%g-", sf))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {}) // removed by TestMain through tpchDirs
	// NB: 20,000-row groups: lineitem SF 0.1 has 30 of them, orders 8,
	// customer and part 1 (the replicated small tables).
	opts := tpch.GenOptions{SF: sf, Dir: dir, Format: tpch.FormatParquet, Parquet: tpch.ParquetOptions{RowGroupRows: 20_000, RowGroupsPerFile: 4}}
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := runTpchGen(context.Background(), opts, &bytes.Buffer{}, os.Stderr); err != nil {
		t.Fatal(err)
	}
	if smallGroupDirs.dirs == nil {
		smallGroupDirs.dirs = map[float64]string{}
	}
	smallGroupDirs.dirs[sf] = dir
	tpchDirs.Lock()
	if tpchDirs.dirs == nil {
		tpchDirs.dirs = map[float64]string{}
	}
	tpchDirs.dirs[-sf] = dir // for TestMain's cleanup
	tpchDirs.Unlock()
	return dir
}

// distLocalAnswer runs a TPC-H query text (a script for Q15) through the
// distributed planner and the in-process runner.
func distLocalAnswer(t *testing.T, sess *engine.Session, text string, opts engine.DistOptions, alloc memory.Allocator) (tpch.Result, int64) {
	t.Helper()
	stmts, err := engine.SplitScript(text)
	if err != nil {
		t.Fatal(err)
	}
	var out tpch.Result
	var shuffled int64
	for k := range stmts {
		dq, err := sess.PrepareDistributed(context.Background(), text, k, opts)
		if err != nil {
			t.Fatalf("statement %d: %v", k+1, err)
		}
		if dq.Plan == nil {
			continue
		}
		res, err := engine.RunDistributedLocal(context.Background(), dq.Plan, engine.LocalDistOptions{Source: sess.DB(), Alloc: alloc})
		if err != nil {
			t.Fatalf("statement %d: %v\n%s", k+1, err, engine.ExplainDistributed(dq.Plan, nil))
		}
		shuffled += res.BytesShuffled
		out = tpch.Result{Columns: dq.Plan.Names}
		for _, rec := range res.Records {
			rows, err := engine.RowsText(rec, "")
			if err != nil {
				t.Fatal(err)
			}
			out.Rows = append(out.Rows, rows...)
			rec.Release()
		}
	}
	return out, shuffled
}

// TestDistributedPlansInProcess runs the 22 TPC-H queries through the
// distributed planner on 1, 2 and 4 simulated workers (shuffle agents on
// an in-process network) and checks every answer.
func TestDistributedPlansInProcess(t *testing.T) {
	sf := 0.01
	dir := tpchSmallGroups(t, sf)
	sess, err := engine.Open(dir, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for _, w := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("workers=%d", w), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			for q := 1; q <= tpch.NumQueries; q++ {
				params, _ := tpch.AnswerParams(q, sf)
				text, err := tpch.Query(q, params)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := distLocalAnswer(t, sess, text, engine.DistOptions{Workers: w, Parallelism: 2}, mem)
				if err := tpch.CheckAnswer(q, sf, got); err != nil {
					t.Errorf("Q%d on %d workers: %v", q, w, err)
				}
			}
		})
	}
}
