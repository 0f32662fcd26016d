package cluster

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

// The cluster check is a built-in request kind that exercises the whole
// cluster path without the SQL engine: the coordinator places N generator
// tasks on the workers, each worker generates rows of a known pseudo-random
// sequence and streams them back, and the coordinator verifies every value
// and reports per-task rows, bytes and throughput. `nicflow cluster check`
// sends it; tests use it as the reference QueryRunner and Executor.
const (
	// CheckKind is the request kind of the cluster check.
	CheckKind = "nicflow.check"
	// CheckTaskKind is the task kind of its generator tasks.
	CheckTaskKind = "nicflow.check.gen"
)

// CheckParams are the cluster check's options (QueryRequest.Params).
type CheckParams struct {
	// Tasks is the number of generator tasks (default: one per worker core).
	Tasks int
	// Rows per task (default 1,000,000).
	Rows int64
	// Batch rows per batch (default 8192).
	Batch int
	// Pace sleeps between batches (0: as fast as possible); slows tasks
	// down to watch progress or test cancellation.
	Pace time.Duration
	// Discard: tasks generate their batches but send nothing back
	// (measures generation and control-plane overhead without the data).
	Discard bool
}

// Params encodes p for a QueryRequest.
func (p CheckParams) Params() map[string]string {
	m := map[string]string{}
	if p.Tasks > 0 {
		m["tasks"] = strconv.Itoa(p.Tasks)
	}
	if p.Rows > 0 {
		m["rows"] = strconv.FormatInt(p.Rows, 10)
	}
	if p.Batch > 0 {
		m["batch"] = strconv.Itoa(p.Batch)
	}
	if p.Pace > 0 {
		m["pace"] = p.Pace.String()
	}
	if p.Discard {
		m["discard"] = "true"
	}
	return m
}

func parseCheckParams(m map[string]string) (CheckParams, error) {
	p := CheckParams{Rows: 1_000_000, Batch: 8192}
	for k, v := range m {
		var err error
		switch k {
		case "tasks":
			p.Tasks, err = strconv.Atoi(v)
			if err == nil && (p.Tasks < 1 || p.Tasks > 100_000) {
				err = nferr.Queryf("must be between 1 and 100000")
			}
		case "rows":
			p.Rows, err = strconv.ParseInt(v, 10, 64)
			if err == nil && p.Rows < 0 {
				err = nferr.Queryf("must not be negative")
			}
		case "batch":
			p.Batch, err = strconv.Atoi(v)
			// NB: 1M rows of the 3 fixed-width columns is 20 MiB, under the
			// default 64 MiB message limit.
			if err == nil && (p.Batch < 1 || p.Batch > 1<<20) {
				err = nferr.Queryf("must be between 1 and 1048576")
			}
		case "pace":
			p.Pace, err = time.ParseDuration(v)
			if err == nil && (p.Pace < 0 || p.Pace > time.Minute) {
				err = nferr.Queryf("must be between 0 and 1m")
			}
		case "discard":
			p.Discard, err = strconv.ParseBool(v)
		case ParamRetries: // the coordinator's (coordinator.go)
		default:
			return p, nferr.Queryf("cluster check: unknown parameter %q (tasks, rows, batch, pace, discard)", k)
		}
		if err != nil {
			return p, nferr.Queryf("cluster check: parameter %s=%q: %v", k, v, err)
		}
	}
	return p, nil
}

// checkValue is the value of row seq of task: splitmix64, so that any lost,
// repeated or corrupted row is caught.
func checkValue(task int32, seq int64) int64 {
	z := uint64(seq) + uint64(task)<<40 + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int64(z ^ (z >> 31))
}

var checkGenSchema = arrow.NewSchema([]arrow.Field{
	{Name: "task", Type: arrow.PrimitiveTypes.Int32},
	{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
	{Name: "value", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// CheckResultSchema is the schema of the cluster check's result: one row
// per task.
var CheckResultSchema = arrow.NewSchema([]arrow.Field{
	{Name: "task", Type: arrow.PrimitiveTypes.Int32},
	{Name: "node", Type: arrow.BinaryTypes.String},
	{Name: "rows", Type: arrow.PrimitiveTypes.Int64},
	{Name: "bytes", Type: arrow.PrimitiveTypes.Int64},
	{Name: "millis", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// CheckExecutor generates the check's rows on a worker.
type CheckExecutor struct{}

// Execute generates Meta["rows"] rows in batches of Meta["batch"].
func (CheckExecutor) Execute(ctx context.Context, tc *TaskContext) error {
	p, err := parseCheckParams(tc.Spec.Meta)
	if err != nil {
		return err
	}
	task := int32(tc.Spec.Index)
	b := array.NewRecordBuilder(tc.Alloc, checkGenSchema)
	defer b.Release()
	taskB := b.Field(0).(*array.Int32Builder)
	seqB := b.Field(1).(*array.Int64Builder)
	valB := b.Field(2).(*array.Int64Builder)
	var pace *time.Ticker
	if p.Pace > 0 {
		pace = time.NewTicker(p.Pace)
		defer pace.Stop()
	}
	for seq := int64(0); seq < p.Rows; {
		if pace != nil {
			select {
			case <-pace.C:
			case <-ctx.Done():
				return nferr.With(nferr.KindCanceled, context.Cause(ctx))
			}
		} else if err := ctx.Err(); err != nil {
			return nferr.With(nferr.KindCanceled, context.Cause(ctx))
		}
		n := min(int64(p.Batch), p.Rows-seq)
		taskB.Reserve(int(n))
		seqB.Reserve(int(n))
		valB.Reserve(int(n))
		for i := int64(0); i < n; i++ {
			taskB.UnsafeAppend(task)
			seqB.UnsafeAppend(seq + i)
			valB.UnsafeAppend(checkValue(task, seq+i))
		}
		rec := b.NewRecordBatch()
		if !p.Discard {
			err = tc.Send(rec)
		}
		rec.Release()
		if err != nil {
			return err
		}
		seq += n
		tc.Stats.Rows.Add(n)
		tc.Stats.Batches.Add(1)
	}
	return nil
}

// CheckRunner runs the cluster check on the coordinator.
type CheckRunner struct {
	// Alloc allocates decoded batches (default memory.DefaultAllocator).
	Alloc memory.Allocator
}

// RunQuery places, starts and verifies the generator tasks.
func (r CheckRunner) RunQuery(q *Query, out ResultWriter) error {
	p, err := parseCheckParams(q.Params)
	if err != nil {
		return err
	}
	alloc := r.Alloc
	if alloc == nil {
		alloc = memory.DefaultAllocator
	}
	if p.Tasks == 0 {
		for _, w := range q.Workers() {
			p.Tasks += w.Cores
		}
		if p.Tasks == 0 {
			return nferr.Unavailablef("cluster check: no workers in the cluster")
		}
	}
	q.DefineStage(0, "generate", p.Tasks)
	reqs := make([]TaskRequest, p.Tasks)
	for i := range reqs {
		reqs[i] = TaskRequest{Stage: 0, Cores: 1}
	}
	places, err := q.Place(reqs)
	if err != nil {
		return err
	}
	meta := p.Params()
	meta["rows"] = strconv.FormatInt(p.Rows, 10)
	meta["batch"] = strconv.Itoa(p.Batch)
	tasks := make([]*Task, 0, len(places))
	for i, pl := range places {
		t, err := q.Start(pl, TaskSpec{Kind: CheckTaskKind, Stage: 0, Index: i, Meta: meta})
		if err != nil {
			q.Release(places[i+1:]...)
			return err
		}
		tasks = append(tasks, t)
	}
	type res struct {
		rows, bytes int64
		err         error
	}
	results := make([]res, len(tasks))
	var wg sync.WaitGroup
	for i, t := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i].rows, results[i].err = verifyCheckOutput(t, int32(i), p, alloc)
			if results[i].err != nil {
				q.Fail(results[i].err)
			}
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r.err != nil {
			return r.err
		}
	}
	b := array.NewRecordBuilder(alloc, CheckResultSchema)
	defer b.Release()
	for i, t := range tasks {
		st, err := t.Wait()
		if err != nil {
			return err
		}
		if want := p.Rows; results[i].rows != want {
			return nferr.Internalf("cluster check: task %d on %s delivered %d rows, want %d", i, t.Node().ID, results[i].rows, want)
		}
		b.Field(0).(*array.Int32Builder).Append(int32(i))
		b.Field(1).(*array.StringBuilder).Append(t.Node().ID)
		b.Field(2).(*array.Int64Builder).Append(st.Rows)
		b.Field(3).(*array.Int64Builder).Append(st.BytesOut)
		b.Field(4).(*array.Int64Builder).Append(st.Wall.Milliseconds())
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := out.SetSchema(CheckResultSchema); err != nil {
		return err
	}
	return out.Write(rec)
}

// verifyCheckOutput reads a generator task's output and checks every value.
func verifyCheckOutput(t *Task, task int32, p CheckParams, alloc memory.Allocator) (int64, error) {
	o := t.Output()
	o.SetAllocator(alloc)
	defer o.Release()
	var next int64
	for {
		rec, err := o.Next()
		if err != nil {
			return next, err
		}
		if rec == nil {
			break
		}
		if !rec.Schema().Equal(checkGenSchema) {
			return next, nferr.Dataf("cluster check: task %d on %s sent schema %v", task, t.Node().ID, rec.Schema())
		}
		tc := rec.Column(0).(*array.Int32).Int32Values()
		sc := rec.Column(1).(*array.Int64).Int64Values()
		vc := rec.Column(2).(*array.Int64).Int64Values()
		for i := range sc {
			if tc[i] != task || sc[i] != next || vc[i] != checkValue(task, next) {
				return next, nferr.Dataf("cluster check: task %d on %s: row %d is (%d, %d, %d), want (%d, %d, %d)",
					task, t.Node().ID, next, tc[i], sc[i], vc[i], task, next, checkValue(task, next))
			}
			next++
		}
	}
	if p.Discard {
		return p.Rows, nil
	}
	return next, nil
}
