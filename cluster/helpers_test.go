package cluster

import (
	"context"
	"flag"
	"fmt"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// TestMain doubles as a nicflow node: LocalCluster tests re-execute the test
// binary with NICFLOW_TEST_NODE=1 and "<role> <flags>" (the flags the
// launcher passes to `nicflow <role>`), so process-level tests need no
// separately built binary.
func TestMain(m *testing.M) {
	if os.Getenv("NICFLOW_TEST_NODE") == "1" {
		os.Exit(runTestNode(os.Args[1:]))
	}
	if dir := os.Getenv("NICFLOW_TEST_LAUNCHER"); dir != "" {
		os.Exit(runTestLauncher(dir, os.Getenv("NICFLOW_TEST_PIDS")))
	}
	code := m.Run()
	if sharedKeys != "" {
		os.RemoveAll(sharedKeys)
	}
	os.Exit(code)
}

func runTestNode(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "test node: missing role")
		return 2
	}
	role, err := ParseRole(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	var o Options
	var ready, join, dir string
	fs.StringVar(&o.NodeID, "node-id", "", "")
	fs.StringVar(&o.KeyDir, "keys", "", "")
	fs.StringVar(&o.AdvertiseHost, "advertise", "", "")
	fs.StringVar(&o.GossipAddr, "gossip", "", "")
	fs.StringVar(&o.AdminAddr, "admin", "", "")
	fs.StringVar(&o.ControlAddr, "listen", "", "")
	fs.StringVar(&ready, "ready-file", "", "")
	fs.StringVar(&join, "join", "", "")
	fs.StringVar(&dir, "dir", "", "")
	fs.IntVar(&o.Cores, "cores", 0, "")
	fs.Int64Var(&o.Memory, "memory", 0, "")
	fs.Int("replication", 0, "")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if join != "" {
		o.Join = strings.Split(join, ",")
	}
	o.Role = role
	if role == RoleStorage && o.ControlAddr != "" {
		// --listen is the Flight port of a storage node; a listener stands in
		// for the Flight service, advertised as the real one would be.
		lis, err := net.Listen("tcp", o.ControlAddr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer lis.Close()
		o.FlightAddr, o.ControlAddr = lis.Addr().String(), ""
	}
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := StartNode(ctx, o, testServices(role))
	if err != nil {
		fmt.Fprintln(os.Stderr, "test node:", err)
		return 1
	}
	defer n.Close()
	if ready != "" {
		if err := WriteReadyFile(ready, n.Self()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	select {
	case <-ctx.Done():
	case <-n.Done():
	}
	return 0
}

// Test request and task kinds.
const (
	kindSleep = "test.sleep" // tasks block until canceled
	kindFail  = "test.fail"  // tasks fail with a KindData error
	kindPanic = "test.panic" // tasks panic
	kindQuery = "test.badquery"
	kindSlow  = "test.slow" // tasks run 2 s, then send one row
	// kindTail: a two-stage query (tailRunner). Stage 0's task sends one
	// row, then goes on until canceled (a task whose output was all
	// consumed but whose end is still to come: a shuffle sender closing,
	// or one upstream of a LIMIT satisfied downstream); stage 1's task,
	// the root, sends one row and ends. The query ends after the root.
	// With Params["flood"], stage 0 goes on sending rows (nobody reads
	// them) until canceled.
	kindTail = "test.tail"
)

// liveTasks counts test tasks running in this process (all in-process
// workers share it).
var liveTasks atomic.Int64

func testExecutors() ExecutorMux {
	return ExecutorMux{
		CheckTaskKind: CheckExecutor{},
		kindSleep: ExecutorFunc(func(ctx context.Context, tc *TaskContext) error {
			liveTasks.Add(1)
			defer liveTasks.Add(-1)
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return nferr.With(nferr.KindCanceled, context.Cause(ctx))
				case <-t.C:
					tc.Stats.Rows.Add(1)
				}
			}
		}),
		kindSlow: ExecutorFunc(func(ctx context.Context, tc *TaskContext) error {
			liveTasks.Add(1)
			defer liveTasks.Add(-1)
			select {
			case <-ctx.Done():
				return nferr.With(nferr.KindCanceled, context.Cause(ctx))
			case <-time.After(2 * time.Second):
			}
			rec := oneRow(int64(tc.Spec.Index))
			defer rec.Release()
			return tc.Send(rec)
		}),
		kindTail: ExecutorFunc(func(ctx context.Context, tc *TaskContext) error {
			liveTasks.Add(1)
			defer liveTasks.Add(-1)
			rec := oneRow(int64(tc.Spec.Stage))
			defer rec.Release()
			if err := tc.Send(rec); err != nil {
				return err
			}
			if tc.Spec.Stage != 0 {
				return nil
			}
			if tc.Spec.Meta["flood"] != "" {
				b := array.NewInt64Builder(memory.DefaultAllocator)
				b.AppendValues(make([]int64, 8192), nil)
				col := b.NewArray()
				b.Release()
				big := array.NewRecordBatch(rec.Schema(), []arrow.Array{col}, 8192)
				col.Release()
				defer big.Release()
				for ctx.Err() == nil {
					if err := tc.Send(big); err != nil {
						return err
					}
				}
			}
			select {
			case <-ctx.Done():
				return nferr.With(nferr.KindCanceled, context.Cause(ctx))
			case <-time.After(10 * time.Second):
				return nferr.Internalf("tail task was not stopped when its query ended")
			}
		}),
		kindFail: ExecutorFunc(func(ctx context.Context, tc *TaskContext) error {
			return nferr.Dataf("bad row 42 in file part-%d.parquet", tc.Spec.Index)
		}),
		kindPanic: ExecutorFunc(func(ctx context.Context, tc *TaskContext) error {
			var m map[string]int
			m["boom"]++
			return nil
		}),
	}
}

// oneRow is a one-row batch {task: v}.
func oneRow(v int64) arrow.RecordBatch {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.Append(v)
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "task", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 1)
}

// tailRunner runs kindTail: stage 0 (one task) and the root stage 1 (one
// task, on another worker when there is one). It reads stage 0's one row
// (all of its output), then the root's output to the end, writes the
// root's rows and returns: stage 0's task is still running then.
func tailRunner() QueryRunner {
	return QueryRunnerFunc(func(q *Query, out ResultWriter) error {
		q.DefineStage(0, "producer", 1)
		q.DefineStage(1, "root", 1)
		ps, err := q.Place([]TaskRequest{{Cores: 1}, {Cores: 1}})
		if err != nil {
			return err
		}
		var tasks [2]*Task
		for i, p := range ps {
			if tasks[i], err = q.Start(p, TaskSpec{Kind: kindTail, Stage: i, Meta: map[string]string{"flood": q.Params["flood"]}}); err != nil {
				return err
			}
		}
		o := tasks[0].Output()
		defer o.Release()
		if rec, err := o.Next(); err != nil || rec == nil {
			return nferr.Internalf("producer's row: %v, %v", rec, err)
		}
		if q.Params["flood"] != "" {
			// Let the flood fill the stream's flow control window.
			time.Sleep(300 * time.Millisecond)
		}
		ro := tasks[1].Output()
		defer ro.Release()
		for {
			rec, err := ro.Next()
			if err != nil {
				return err
			}
			if rec == nil {
				break
			}
			if err := out.Write(rec); err != nil {
				return err
			}
		}
		_, err = tasks[1].Wait()
		return err
	})
}

// runTasksRunner places one task of the request's kind per worker (or
// Params["tasks"]) and waits for all of them.
func runTasksRunner(kind string) QueryRunner {
	return QueryRunnerFunc(func(q *Query, out ResultWriter) error {
		n := len(q.Workers())
		if s := q.Params["tasks"]; s != "" {
			fmt.Sscan(s, &n)
		}
		reqs := make([]TaskRequest, n)
		for i := range reqs {
			reqs[i] = TaskRequest{Cores: 1}
		}
		ps, err := q.Place(reqs)
		if err != nil {
			return err
		}
		var needs []string
		if s := q.Params["needs"]; s != "" {
			needs = strings.Split(s, ",")
		}
		var tasks []*Task
		for i, p := range ps {
			t, err := q.Start(p, TaskSpec{Kind: kind, Index: i, Needs: needs})
			if err != nil {
				return err
			}
			tasks = append(tasks, t)
		}
		for _, t := range tasks {
			o := t.Output()
			for {
				rec, err := o.Next()
				if err != nil {
					o.Release()
					return err
				}
				if rec == nil {
					break
				}
				if err := out.Write(rec); err != nil {
					o.Release()
					return err
				}
			}
			o.Release()
			if _, err := t.Wait(); err != nil {
				return err
			}
		}
		return nil
	})
}

func testServices(role Role) Services {
	switch role {
	case RoleCoordinator:
		return Services{Runner: RunnerMux{
			CheckKind: CheckRunner{},
			kindSleep: runTasksRunner(kindSleep),
			kindFail:  runTasksRunner(kindFail),
			kindSlow:  runTasksRunner(kindSlow),
			kindPanic: runTasksRunner(kindPanic),
			kindTail:  tailRunner(),
			kindQuery: QueryRunnerFunc(func(q *Query, _ ResultWriter) error {
				return nferr.Queryf("syntax error at 1:8 near %q", q.Text)
			}),
		}}
	case RoleWorker:
		return Services{Executor: testExecutors()}
	}
	return Services{}
}

var (
	sharedKeysOnce sync.Once
	sharedKeys     string
)

// testKeyDir returns a key directory shared by the tests of this binary
// (creating a CA costs little, but one directory keeps logs readable).
func testKeyDir(t testing.TB) string {
	sharedKeysOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nicflow-keys-")
		if err != nil {
			t.Fatal(err)
		}
		if err := InitKeys(dir, false); err != nil {
			t.Fatal(err)
		}
		sharedKeys = dir
	})
	return sharedKeys
}

// testOptions are options for an in-process node on 127.0.0.1 with
// ephemeral ports.
func testOptions(t testing.TB, role Role, id string, keys string, join ...string) Options {
	lvl := slog.LevelWarn
	if testing.Verbose() {
		lvl = slog.LevelInfo
	}
	var w io.Writer = os.Stderr
	return Options{
		Role: role, NodeID: id, KeyDir: keys,
		GossipAddr: "127.0.0.1:0", ControlAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
		AdvertiseHost: "127.0.0.1", Join: join, JoinTimeout: Duration(10 * time.Second),
		Cores: 2, Memory: 1 << 30,
		Logger: slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl})).With("test", t.Name()),
	}
}

type testCluster struct {
	coord   *Node
	workers []*Node
	keys    string
	client  *Client
}

// startCluster starts a coordinator and n workers in this process and waits
// until the coordinator sees them all.
func startCluster(t testing.TB, n int) *testCluster {
	t.Helper()
	keys := testKeyDir(t)
	ctx := context.Background()
	co := testOptions(t, RoleCoordinator, "coord", keys)
	coord, err := StartNode(ctx, co, testServices(RoleCoordinator))
	if err != nil {
		t.Fatalf("coordinator: %v", err)
	}
	tc := &testCluster{coord: coord, keys: keys}
	t.Cleanup(tc.close)
	for i := 0; i < n; i++ {
		wo := testOptions(t, RoleWorker, fmt.Sprintf("w%d", i+1), keys, coord.Self().GossipAddr)
		w, err := StartNode(ctx, wo, testServices(RoleWorker))
		if err != nil {
			t.Fatalf("worker %d: %v", i+1, err)
		}
		tc.workers = append(tc.workers, w)
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := coord.WaitMembers(wctx, func(ms []NodeInfo) bool { return countRole(ms, RoleWorker) == n }); err != nil {
		t.Fatal(err)
	}
	// The scheduler learns of workers through the same events; wait for it.
	deadline := time.Now().Add(5 * time.Second)
	for len(coord.Coordinator().Workers()) != n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	tc.client, err = Dial(coord.Self().ControlAddr, ClientOptions{KeyDir: keys, Name: "test-client"})
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

func (tc *testCluster) close() {
	if tc.client != nil {
		tc.client.Close()
	}
	for _, w := range tc.workers {
		w.Close()
	}
	tc.coord.Close()
}

func countRole(ms []NodeInfo, r Role) int {
	n := 0
	for _, m := range ms {
		if m.Role == r {
			n++
		}
	}
	return n
}

// drain reads a result to the end and returns the number of rows.
func drain(r *Result) (int64, error) {
	var n int64
	for {
		rec, err := r.Next()
		if err != nil {
			return n, err
		}
		if rec == nil {
			return n, nil
		}
		n += rec.NumRows()
	}
}

// checkRow is one row of a check query's result (CheckResultSchema).
type checkRow struct {
	task        int32
	node        string
	rows, bytes int64
}

// checkRows reads a check query's result to the end; an error fails the
// test.
func checkRows(t testing.TB, res *Result) []checkRow {
	t.Helper()
	var out []checkRow
	for {
		rec, err := res.Next()
		if err != nil {
			t.Fatal(err)
		}
		if rec == nil {
			return out
		}
		task := rec.Column(0).(*array.Int32)
		node := rec.Column(1).(*array.String)
		rows := rec.Column(2).(*array.Int64)
		bytes := rec.Column(3).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			out = append(out, checkRow{task.Value(i), node.Value(i), rows.Value(i), bytes.Value(i)})
		}
	}
}

// runKind runs a request of kind with params and drains it.
func (tc *testCluster) runKind(ctx context.Context, kind string, params map[string]string) (int64, error) {
	res, err := tc.client.Query(ctx, "", QueryOptions{Kind: kind, Params: params})
	if err != nil {
		return 0, err
	}
	defer res.Close()
	return drain(res)
}

// waitFor polls cond every 10 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
