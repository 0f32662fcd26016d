package cluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"

	"github.com/nicflow/nicflow/internal/nferr"
)

func TestClusterCheck(t *testing.T) {
	tc := startCluster(t, 2)
	ctx := context.Background()
	var mu sync.Mutex
	var progress []Progress
	res, err := tc.client.Query(ctx, "", QueryOptions{
		Kind:       CheckKind,
		Params:     CheckParams{Tasks: 5, Rows: 100_000, Batch: 4096}.Params(),
		OnProgress: func(p Progress) { mu.Lock(); progress = append(progress, p); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	if sc, err := res.Schema(); err != nil || !sc.Equal(CheckResultSchema) {
		t.Fatalf("schema %v, %v", sc, err)
	}
	nodes := map[string]int{}
	var rows int64
	for _, cr := range checkRows(t, res) {
		nodes[cr.node]++
		rows += cr.rows
		if cr.bytes < 100_000*20 {
			t.Errorf("task %d sent %d bytes, want at least 20 per row", cr.task, cr.bytes)
		}
	}
	res.Close()
	if rows != 500_000 {
		t.Errorf("rows = %d, want 500000", rows)
	}
	// 5 tasks on two 2-core workers: the scheduler balances by free cores.
	if len(nodes) != 2 || nodes["w1"] < 2 || nodes["w2"] < 2 {
		t.Errorf("placement %v, want tasks on both workers (2 or 3 each)", nodes)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) == 0 {
		t.Fatal("no progress received")
	}
	last := progress[len(progress)-1]
	if last.State != "done" || len(last.Stages) != 1 || last.Stages[0].Done != 5 || last.Stages[0].Rows != 500_000 || last.Stages[0].Name != "generate" {
		t.Errorf("final progress %+v", last)
	}
	// Resources are released when the query ends.
	for _, w := range tc.coord.Coordinator().Workers() {
		if w.UsedCores != 0 || w.RunningTasks != 0 {
			t.Errorf("worker %s still holds %d cores, %d tasks", w.Node.ID, w.UsedCores, w.RunningTasks)
		}
	}
}

func TestCheckLeakFree(t *testing.T) {
	tc := startCluster(t, 1)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	q, err := tc.coord.Coordinator().newQuery(context.Background(), QueryRequest{Kind: CheckKind, Params: CheckParams{Tasks: 2, Rows: 20_000, Batch: 1000}.Params()})
	if err != nil {
		t.Fatal(err)
	}
	tc.coord.Coordinator().runner = RunnerMux{CheckKind: CheckRunner{Alloc: mem}}
	out := &collectResult{}
	if err := tc.coord.Coordinator().runRegistered(q, out); err != nil {
		t.Fatal(err)
	}
	if out.rows != 2 {
		t.Errorf("result rows = %d, want 2", out.rows)
	}
	mem.AssertSize(t, 0)
}

type collectResult struct{ rows int64 }

func (c *collectResult) SetSchema(*arrow.Schema) error { return nil }
func (c *collectResult) Write(rec arrow.RecordBatch) error {
	c.rows += rec.NumRows()
	return nil
}

func TestMembersAndAdmin(t *testing.T) {
	tc := startCluster(t, 1)
	ms, err := tc.client.Members(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Role != RoleCoordinator || ms[1].Role != RoleWorker || ms[1].ID != "w1" {
		t.Fatalf("members %+v", ms)
	}
	w := ms[1]
	if w.Cores != 2 || w.Memory != 1<<30 || w.ControlAddr == "" || w.AdminAddr == "" || w.NICBandwidth != defaultNICBandwidth {
		t.Errorf("worker info %+v", w)
	}
	if _, err := tc.runKind(context.Background(), CheckKind, CheckParams{Tasks: 1, Rows: 10}.Params()); err != nil {
		t.Fatal(err)
	}
	get := func(addr, path string) string {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	m := get(w.AdminAddr, "/metrics")
	for _, want := range []string{
		`nicflow_tasks_finished_total{node="w1",result="ok",role="worker"} 1`,
		`nicflow_members{member_role="worker",node="w1",role="worker"} 1`,
		`nicflow_control_bytes_sent_total{node="w1",role="worker"}`,
		`nicflow_task_rows_total{node="w1",role="worker"} 10`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("worker /metrics lacks %s", want)
		}
	}
	cm := get(tc.coord.Self().AdminAddr, "/metrics")
	if !strings.Contains(cm, `nicflow_queries_finished_total{node="coord",result="ok",role="coordinator"} 1`) {
		t.Errorf("coordinator /metrics lacks the finished query:\n%s", grep(cm, "nicflow_queries"))
	}
	var st NodeStatus
	if err := json.Unmarshal([]byte(get(tc.coord.Self().AdminAddr, "/status")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Self.ID != "coord" || len(st.Members) != 2 || len(st.Load) != 1 {
		t.Errorf("status %+v", st)
	}
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestErrorKindsCrossTheWire(t *testing.T) {
	tc := startCluster(t, 1)
	ctx := context.Background()
	for _, c := range []struct {
		kind string
		want nferr.Kind
		msg  []string
	}{
		{kindFail, nferr.KindData, []string{"bad row 42 in file part-0.parquet", "w1"}},
		{kindPanic, nferr.KindInternal, []string{"panicked on worker w1", "assignment to entry in nil map"}},
		{kindQuery, nferr.KindQuery, []string{"syntax error at 1:8"}},
		{"no.such.kind", nferr.KindQuery, []string{`does not run "no.such.kind"`}},
	} {
		_, err := tc.runKind(ctx, c.kind, nil)
		if nferr.KindOf(err) != c.want {
			t.Errorf("%s: got %v (kind %v), want kind %v", c.kind, err, nferr.KindOf(err), c.want)
			continue
		}
		for _, m := range c.msg {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%s: error %q does not mention %q", c.kind, err, m)
			}
		}
	}
	// Plain SQL tickets (generic Flight clients) reach the "sql" runner.
	res, err := tc.client.Query(ctx, "select 1", QueryOptions{})
	if err == nil {
		_, err = drain(res)
		res.Close()
	}
	if err == nil || !strings.Contains(err.Error(), `does not run "sql"`) {
		t.Errorf("sql without a runner: %v", err)
	}
	// The cluster still works after failures, and nothing is left running.
	if _, err := tc.runKind(ctx, CheckKind, CheckParams{Tasks: 2, Rows: 1000}.Params()); err != nil {
		t.Fatal(err)
	}
}

func TestCancelStopsAllTasks(t *testing.T) {
	base := runtime.NumGoroutine()
	func() {
		tc := startCluster(t, 2)
		defer tc.close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := tc.runKind(ctx, kindSleep, map[string]string{"tasks": "4"})
			done <- err
		}()
		waitFor(t, 10*time.Second, "4 sleeping tasks", func() bool { return liveTasks.Load() == 4 })
		start := time.Now()
		cancel() // the client goes away (Ctrl-C)
		err := <-done
		if !nferr.Is(err, nferr.KindCanceled) {
			t.Errorf("client error %v, want canceled", err)
		}
		waitFor(t, 5*time.Second, "tasks to stop", func() bool { return liveTasks.Load() == 0 })
		t.Logf("all tasks stopped %v after cancel", time.Since(start))
		waitFor(t, 5*time.Second, "the query to end on the coordinator", func() bool { return len(tc.coord.Coordinator().runningProgress()) == 0 })

		// Explicit cancel by query ID from a second connection.
		res, err := tc.client.Query(context.Background(), "", QueryOptions{ID: "q-cancel-me", Kind: kindSleep, Params: map[string]string{"tasks": "2"}})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "2 sleeping tasks", func() bool { return liveTasks.Load() == 2 })
		if err := tc.client.Cancel(context.Background(), "q-cancel-me"); err != nil {
			t.Fatal(err)
		}
		_, err = drain(res)
		res.Close()
		if !nferr.Is(err, nferr.KindCanceled) || !strings.Contains(err.Error(), "canceled by the client") {
			t.Errorf("canceled query: %v", err)
		}
		waitFor(t, 5*time.Second, "tasks to stop", func() bool { return liveTasks.Load() == 0 })
	}()
	// No goroutine leaks once the nodes and the client are closed.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base+2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base+2 {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after shutdown, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

func TestWorkerCrashFailsQueryAndIsAvoided(t *testing.T) {
	tc := startCluster(t, 2)
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		// Retries off: sleeping tasks would sleep on the survivor forever.
		_, err := tc.runKind(ctx, kindSleep, map[string]string{"tasks": "4", ParamRetries: "0"})
		done <- err
	}()
	waitFor(t, 10*time.Second, "4 sleeping tasks", func() bool { return liveTasks.Load() == 4 })
	start := time.Now()
	tc.workers[1].crash()
	select {
	case err := <-done:
		el := time.Since(start)
		if !nferr.Is(err, nferr.KindUnavailable) || !strings.Contains(err.Error(), "w2") {
			t.Errorf("query error %v (kind %v), want unavailable naming w2", err, nferr.KindOf(err))
		}
		t.Logf("query failed %v after the crash: %v", el, err)
	case <-time.After(10 * time.Second):
		t.Fatal("query did not fail within 10 s of a worker crash")
	}
	waitFor(t, 5*time.Second, "tasks on w1 to stop", func() bool { return liveTasks.Load() == 0 })
	waitFor(t, 5*time.Second, "membership to drop w2", func() bool {
		_, ok := tc.coord.Member("w2")
		return !ok && len(tc.coord.Coordinator().Workers()) == 1
	})
	// Later queries run on the survivor only.
	res, err := tc.client.Query(ctx, "", QueryOptions{Kind: CheckKind, Params: CheckParams{Tasks: 3, Rows: 1000}.Params()})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	for _, cr := range checkRows(t, res) {
		if cr.node != "w1" {
			t.Errorf("task %d ran on %s after w2 died", cr.task, cr.node)
		}
	}
}

// TestQueryRetriedAfterWorkerCrash: a query whose worker dies mid-way is
// run again without it and succeeds; the client sees one result. Errors
// that are the query's own are never retried, and a client's retry limit
// is kept.
func TestQueryRetriedAfterWorkerCrash(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := context.Background()
	done := make(chan error, 1)
	var rows int64
	go func() {
		var err error
		rows, err = tc.runKind(ctx, kindSlow, map[string]string{"tasks": "3"})
		done <- err
	}()
	waitFor(t, 10*time.Second, "3 slow tasks", func() bool { return liveTasks.Load() == 3 })
	start := time.Now()
	tc.workers[2].crash()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("query with a worker crash: %v", err)
		}
		t.Logf("query finished %v after the crash", time.Since(start).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("query did not finish within 30 s of a worker crash")
	}
	if rows != 3 {
		t.Errorf("%d result rows, want 3 (one per task of the successful attempt)", rows)
	}
	last := func() Progress {
		c := tc.coord.Coordinator()
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.recent[len(c.recent)-1].Progress
	}
	p := last()
	if p.Attempt != 1 || len(p.Retried) != 1 || !strings.Contains(p.Retried[0], "w3") {
		t.Errorf("final progress: attempt %d, retried %q; want one retry naming w3", p.Attempt, p.Retried)
	}
	// The query's own error: at once, no retry, whatever the limit.
	start = time.Now()
	_, err := tc.runKind(ctx, kindFail, map[string]string{ParamRetries: "5"})
	if !nferr.Is(err, nferr.KindData) || time.Since(start) > 5*time.Second {
		t.Errorf("failing query: %v after %v", err, time.Since(start))
	}
	if p := last(); p.Attempt != 0 {
		t.Errorf("a data error was retried %d times", p.Attempt)
	}
}

func TestStorageNodeFailureFailsQuery(t *testing.T) {
	tc := startCluster(t, 1)
	so := testOptions(t, RoleStorage, "s1", tc.keys, tc.coord.Self().GossipAddr)
	so.ControlAddr = ""
	s, err := JoinAsStorage(context.Background(), so)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	waitFor(t, 10*time.Second, "storage to join", func() bool {
		_, ok1 := tc.coord.Member("s1")
		_, ok2 := tc.workers[0].Member("s1")
		return ok1 && ok2
	})
	done := make(chan error, 1)
	go func() {
		_, err := tc.runKind(context.Background(), kindSleep, map[string]string{"tasks": "2", "needs": "s1", ParamRetries: "0"})
		done <- err
	}()
	waitFor(t, 10*time.Second, "2 sleeping tasks", func() bool { return liveTasks.Load() == 2 })
	start := time.Now()
	s.crash() // no goodbye: only gossip probes can tell
	select {
	case err := <-done:
		if !nferr.Is(err, nferr.KindUnavailable) || !strings.Contains(err.Error(), "s1") {
			t.Errorf("query error %v, want unavailable naming s1", err)
		}
		t.Logf("query failed %v after the storage node died: %v", time.Since(start), err)
	case <-time.After(15 * time.Second):
		t.Fatal("query did not fail within 15 s of a storage node death")
	}
	waitFor(t, 5*time.Second, "tasks to stop", func() bool { return liveTasks.Load() == 0 })
	// A task needing a node that is gone fails at once (and every retry
	// with it).
	_, err = tc.runKind(context.Background(), kindSleep, map[string]string{"tasks": "1", "needs": "s1"})
	if !nferr.Is(err, nferr.KindUnavailable) || !strings.Contains(err.Error(), "s1") {
		t.Errorf("task needing a dead node: %v", err)
	}
}

func TestWrongOrMissingKeyCannotJoin(t *testing.T) {
	tc := startCluster(t, 1)
	other := t.TempDir()
	if err := InitKeys(other, false); err != nil {
		t.Fatal(err)
	}
	o := testOptions(t, RoleWorker, "intruder", other, tc.coord.Self().GossipAddr)
	o.JoinTimeout = Duration(20 * time.Second)
	start := time.Now()
	_, err := StartWorker(context.Background(), o, testExecutors())
	if !nferr.Is(err, nferr.KindAuth) || !strings.Contains(err.Error(), "another cluster key") || time.Since(start) > 3*time.Second {
		t.Errorf("worker with another cluster's key: %v after %v; want an auth error at once", err, time.Since(start))
	}
	o.KeyDir = ""
	_, err = StartWorker(context.Background(), o, testExecutors())
	if !nferr.Is(err, nferr.KindAuth) {
		t.Errorf("worker without a key: %v", err)
	}
	time.Sleep(500 * time.Millisecond)
	if ms := tc.coord.Members(); len(ms) != 2 {
		t.Errorf("members after intrusion attempts: %+v", ms)
	}

	// A client of another cluster: the TLS handshake fails (KindAuth).
	c, err := Dial(tc.coord.Self().ControlAddr, ClientOptions{KeyDir: other})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Members(ctx); !nferr.Is(err, nferr.KindAuth) {
		t.Errorf("client with another cluster's CA: %v (kind %v), want auth", err, nferr.KindOf(err))
	}
	// A TLS client without any certificate cannot complete a call either.
	for _, addr := range []string{tc.coord.Self().ControlAddr, tc.workers[0].Self().ControlAddr} {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
		if err == nil {
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
		}
		if err == nil {
			t.Errorf("%s accepted a TLS client without a certificate", addr)
		}
	}
}

func TestOnlyCoordinatorsRunTasks(t *testing.T) {
	tc := startCluster(t, 1)
	// A client certificate of the right cluster, dialing a worker directly.
	keys, err := LoadKeys(tc.keys, "mallory", RoleClient)
	if err != nil {
		t.Fatal(err)
	}
	fake := &Coordinator{node: &Node{keys: keys, opts: Options{MaxMessageSize: 1 << 20}}, conns: map[string]*workerConn{}}
	cc, err := fake.conn(tc.workers[0].Self())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := cc.NewStream(ctx, &runTaskDesc, "/"+controlService+"/RunTask", grpc.CallContentSubtype(codecName))
	if err == nil {
		stream.SendMsg(jsonFrame(ftTaskSpec, taskRequest{QueryID: "q", TaskID: "t", Spec: TaskSpec{Kind: kindSleep}}))
		stream.CloseSend()
		var f frame
		err = stream.RecvMsg(&f)
	}
	err = FromStatus(err, "worker w1")
	if !nferr.Is(err, nferr.KindAuth) || !strings.Contains(err.Error(), "only coordinators") {
		t.Errorf("client certificate running a task: %v", err)
	}
	if liveTasks.Load() != 0 {
		t.Errorf("a task started")
	}
	cc.Close()
}

func TestGarbageOnEveryPort(t *testing.T) {
	tc := startCluster(t, 1)
	w := tc.workers[0].Self()
	c := tc.coord.Self()
	ports := map[string]string{
		"coordinator gossip": c.GossipAddr, "coordinator control": c.ControlAddr, "coordinator admin": c.AdminAddr,
		"worker gossip": w.GossipAddr, "worker control": w.ControlAddr, "worker admin": w.AdminAddr,
	}
	garbage := make([]byte, 4096)
	rand.Read(garbage)
	var wg sync.WaitGroup
	for name, addr := range ports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			defer conn.Close()
			conn.Write(garbage)
			conn.SetReadDeadline(time.Now().Add(15 * time.Second))
			_, err = io.Copy(io.Discard, conn)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Errorf("%s (%s) kept a garbage connection open for 15 s", name, addr)
			}
		}()
		if strings.HasSuffix(name, "gossip") {
			u, err := net.Dial("udp", addr)
			if err == nil {
				u.Write(garbage[:1200])
				u.Close()
			}
		}
	}
	wg.Wait()
	// Everything still serves.
	if _, err := tc.runKind(context.Background(), CheckKind, CheckParams{Tasks: 2, Rows: 5000}.Params()); err != nil {
		t.Fatalf("cluster broken after garbage: %v", err)
	}
	if len(tc.coord.Members()) != 2 {
		t.Errorf("membership changed after garbage: %+v", tc.coord.Members())
	}
}

func TestPlainHTTP2WithoutTLSRejected(t *testing.T) {
	tc := startCluster(t, 0)
	conn, err := net.Dial("tcp", tc.coord.Self().ControlAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, conn); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Error("plaintext HTTP/2 connection kept open")
		}
	}
}

// TestRestartedNodeRejoinsUnderItsID: a worker that dies and comes back
// under the same ID on another port (a container rescheduled) is listed
// and used again within seconds, before and after its old incarnation is
// declared dead.
func TestRestartedNodeRejoinsUnderItsID(t *testing.T) {
	tc := startCluster(t, 2)
	old, _ := tc.coord.Member("w2")
	for round, wait := range []time.Duration{0, 3 * time.Second} {
		tc.workers[1].crash()
		time.Sleep(wait) // 0: back before anyone noticed; 3 s: after it was declared dead
		wo := testOptions(t, RoleWorker, "w2", tc.keys, tc.coord.Self().GossipAddr)
		w, err := StartNode(context.Background(), wo, testServices(RoleWorker))
		if err != nil {
			t.Fatalf("round %d: restarting w2: %v", round, err)
		}
		tc.workers[1] = w
		start := time.Now()
		waitFor(t, 15*time.Second, "the coordinator to list the new w2", func() bool {
			m, ok := tc.coord.Member("w2")
			return ok && m.ControlAddr == w.Self().ControlAddr && m.ControlAddr != old.ControlAddr
		})
		t.Logf("round %d: w2 back %v after its restart", round, time.Since(start).Round(time.Millisecond))
		old, _ = tc.coord.Member("w2")
		waitFor(t, 15*time.Second, "the scheduler to use the new w2", func() bool {
			for _, l := range tc.coord.Coordinator().Workers() {
				if l.Node.ID == "w2" && l.Node.ControlAddr == w.Self().ControlAddr {
					return true
				}
			}
			return false
		})
		if _, err := tc.runKind(context.Background(), CheckKind, CheckParams{Tasks: 4, Rows: 1000}.Params()); err != nil {
			t.Fatalf("round %d: check after the restart: %v", round, err)
		}
	}
}

// TestGossipCounted: a node counts the gossip it sends and receives, UDP
// (probes) and TCP (the join's push-pull), and /metrics shows it; what
// one node sends over UDP the other receives.
func TestGossipCounted(t *testing.T) {
	tc := startCluster(t, 1)
	w := tc.workers[0]
	time.Sleep(1200 * time.Millisecond) // two probe rounds
	cs, ws := tc.coord.GossipStats(), w.GossipStats()
	if cs.UDPSent == 0 || cs.UDPReceived == 0 || ws.UDPSent == 0 || ws.UDPReceived == 0 {
		t.Errorf("UDP gossip not counted: coordinator %+v, worker %+v", cs, ws)
	}
	if ws.TCPSent == 0 || cs.TCPReceived == 0 {
		t.Errorf("the worker's join (a push-pull over TCP) not counted: coordinator %+v, worker %+v", cs, ws)
	}
	// Packets in flight aside, one's UDP out is the other's in.
	if d := cs.UDPSent - ws.UDPReceived; d < -2000 || d > 2000 {
		t.Errorf("coordinator sent %d UDP bytes, the worker received %d", cs.UDPSent, ws.UDPReceived)
	}
	resp, err := http.Get("http://" + w.Self().AdminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`nicflow_gossip_sent_bytes_total{node="w1",proto="udp",role="worker"}`, `nicflow_gossip_received_bytes_total{node="w1",proto="tcp",role="worker"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("worker /metrics lacks %s", want)
		}
	}
	t.Logf("after ~1 s: coordinator %+v, worker %+v", cs, ws)
}
