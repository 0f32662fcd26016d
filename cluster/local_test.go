package cluster

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/nicflow/nicflow/internal/emutest"
	"github.com/nicflow/nicflow/internal/nferr"
)

// localTestOptions run the test binary itself as the nodes (see TestMain).
func localTestOptions(t *testing.T, dir string, workers, storage int) LocalOptions {
	emutest.Skip(t, "the cluster's node processes")
	return LocalOptions{
		Dir: dir, Workers: workers, Storage: storage,
		Exe: os.Args[0], Env: []string{"NICFLOW_TEST_NODE=1"},
		Extra:        map[Role][]string{RoleWorker: {"--cores", "2"}},
		StartTimeout: 60 * time.Second,
	}
}

func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	// A zombie (exited, not yet reaped by its parent) counts as dead.
	b, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) < 3 || f[2] != "Z"
}

func TestLocalClusterProcesses(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process groups and parent-death signals are tested on Linux")
	}
	dir := t.TempDir()
	ctx := context.Background()
	lc, err := StartLocal(ctx, localTestOptions(t, dir, 3, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Stop()
	if len(lc.Nodes) != 5 || lc.Nodes[0].Role != RoleCoordinator {
		t.Fatalf("nodes %+v", lc.Nodes)
	}
	b, err := os.ReadFile(lc.AddrFile)
	if err != nil || strings.TrimSpace(string(b)) != lc.CoordinatorAddr {
		t.Fatalf("address file: %q %v", b, err)
	}
	c, err := Dial(lc.CoordinatorAddr, ClientOptions{KeyDir: lc.KeyDir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ms, err := c.Members(ctx)
	if err != nil || countRole(ms, RoleWorker) != 3 || countRole(ms, RoleStorage) != 1 {
		t.Fatalf("members %+v %v", ms, err)
	}
	for _, m := range ms {
		if m.Role == RoleStorage && (m.FlightAddr == "" || m.ControlAddr != "") {
			t.Errorf("storage node advertises flight %q, control %q", m.FlightAddr, m.ControlAddr)
		}
	}
	run := func(params map[string]string, kind string) (map[string]int, error) {
		res, err := c.Query(ctx, "", QueryOptions{Kind: kind, Params: params})
		if err != nil {
			return nil, err
		}
		defer res.Close()
		nodes := map[string]int{}
		for {
			rec, err := res.Next()
			if err != nil {
				return nodes, err
			}
			if rec == nil {
				return nodes, nil
			}
			if kind == CheckKind {
				col := rec.Column(1).(*array.String)
				for i := 0; i < col.Len(); i++ {
					nodes[col.Value(i)]++
				}
			}
		}
	}
	nodes, err := run(CheckParams{Tasks: 6, Rows: 50_000}.Params(), CheckKind)
	if err != nil || nodes["worker-1"] != 2 || nodes["worker-2"] != 2 || nodes["worker-3"] != 2 {
		t.Fatalf("check over processes: %v %v", nodes, err)
	}

	// A hung worker (SIGSTOP: connections stay open, nothing answers) fails
	// the query through gossip probes or task heartbeats, never a hang
	// (retries off: this query would run forever on the others).
	noRetry := func(p map[string]string) map[string]string { p[ParamRetries] = "0"; return p }
	done := make(chan error, 1)
	go func() {
		_, err := run(noRetry(CheckParams{Tasks: 6, Rows: 1 << 40, Batch: 1000, Pace: 20 * time.Millisecond}.Params()), CheckKind)
		done <- err
	}()
	time.Sleep(500 * time.Millisecond)
	w3 := lc.Pids()["worker-3"]
	start := time.Now()
	syscall.Kill(w3, syscall.SIGSTOP)
	select {
	case err := <-done:
		if !nferr.Is(err, nferr.KindUnavailable) || !strings.Contains(err.Error(), "worker-3") {
			t.Errorf("query with a hung worker: %v (kind %v), want unavailable naming worker-3", err, nferr.KindOf(err))
		}
		t.Logf("query failed %v after SIGSTOP: %v", time.Since(start), err)
	case <-time.After(15 * time.Second):
		t.Fatal("query did not fail within 15 s of a worker hanging")
	}
	syscall.Kill(w3, syscall.SIGCONT)
	lc.Kill("worker-3") // keep the rest of the test deterministic

	// Kill a worker in the middle of a query.
	if _, err := c.WaitForMembers(ctx, func(ms []NodeInfo) bool { return countRole(ms, RoleWorker) == 2 }); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := run(noRetry(CheckParams{Tasks: 4, Rows: 1 << 40, Batch: 1000, Pace: 20 * time.Millisecond}.Params()), CheckKind)
		done <- err
	}()
	time.Sleep(500 * time.Millisecond)
	start = time.Now()
	if err := lc.Kill("worker-2"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !nferr.Is(err, nferr.KindUnavailable) || !strings.Contains(err.Error(), "worker-2") {
			t.Errorf("query after kill -9: %v (kind %v), want unavailable naming worker-2", err, nferr.KindOf(err))
		}
		t.Logf("query failed %v after kill -9: %v", time.Since(start), err)
	case <-time.After(10 * time.Second):
		t.Fatal("query did not fail within 10 s of kill -9")
	}
	if err := lc.Wait(ctx); err == nil || !strings.Contains(err.Error(), "worker-") {
		t.Errorf("Wait after a node died: %v", err)
	}
	if _, err := c.WaitForMembers(ctx, func(ms []NodeInfo) bool { return countRole(ms, RoleWorker) == 1 }); err != nil {
		t.Fatal(err)
	}
	nodes, err = run(CheckParams{Tasks: 3, Rows: 1000}.Params(), CheckKind)
	if err != nil || nodes["worker-1"] != 3 {
		t.Errorf("check after the kill: %v %v", nodes, err)
	}

	pids := lc.Pids()
	if err := lc.Stop(); err != nil {
		t.Fatal(err)
	}
	for id, pid := range pids {
		if alive(pid) {
			t.Errorf("%s (pid %d) survived Stop", id, pid)
		}
	}
}

// TestLocalClusterDiesWithLauncher kills the launcher with SIGKILL and
// expects every node to exit (parent-death signal), leaving no orphans.
func TestLocalClusterDiesWithLauncher(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("parent-death signals are Linux-only")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids.json")
	emutest.Skip(t, "a launcher process")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "NICFLOW_TEST_LAUNCHER="+dir, "NICFLOW_TEST_PIDS="+pidFile)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var pids map[string]int
	waitFor(t, 60*time.Second, "the launcher to start its cluster", func() bool {
		b, err := os.ReadFile(pidFile)
		return err == nil && json.Unmarshal(b, &pids) == nil
	})
	if len(pids) != 3 {
		t.Fatalf("pids %v", pids)
	}
	cmd.Process.Kill()
	cmd.Wait()
	waitFor(t, 10*time.Second, "all nodes to exit after the launcher was killed", func() bool {
		for _, pid := range pids {
			if alive(pid) {
				return false
			}
		}
		return true
	})
}

// runTestLauncher is the launcher process of TestLocalClusterDiesWithLauncher.
func runTestLauncher(dir, pidFile string) int {
	o := LocalOptions{Dir: dir, Workers: 2, Exe: os.Args[0], Env: []string{"NICFLOW_TEST_NODE=1"}}
	lc, err := StartLocal(context.Background(), o)
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	b, _ := json.Marshal(lc.Pids())
	if err := os.WriteFile(pidFile+".tmp", b, 0o644); err != nil {
		return 1
	}
	os.Rename(pidFile+".tmp", pidFile)
	select {} // until killed
}

// TestLocalClusterRestartsNodes: with Restart, a killed worker (and a
// killed storage node) comes back under its ID, rejoins, and queries use
// it again; the cluster keeps running.
func TestLocalClusterRestartsNodes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process groups are tested on Linux")
	}
	o := localTestOptions(t, t.TempDir(), 2, 1)
	o.Restart = true
	ctx := context.Background()
	lc, err := StartLocal(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Stop()
	c, err := Dial(lc.CoordinatorAddr, ClientOptions{KeyDir: lc.KeyDir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, id := range []string{"worker-2", "storage-1"} {
		before, _ := c.Members(ctx)
		var old NodeInfo
		for _, m := range before {
			if m.ID == id {
				old = m
			}
		}
		oldPid := lc.Pids()[id]
		if err := lc.Kill(id); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := c.WaitForMembers(wctx, func(ms []NodeInfo) bool {
			for _, m := range ms {
				if m.ID == id && !m.Started.Equal(old.Started) && (m.Role != RoleStorage || m.FlightAddr != "") {
					return true
				}
			}
			return false
		})
		cancel()
		if err != nil {
			t.Fatalf("%s did not come back: %v", id, err)
		}
		if p := lc.Pids()[id]; p == oldPid || !alive(p) {
			t.Errorf("%s: pid %d after restart, was %d", id, p, oldPid)
		}
	}
	select {
	case p := <-lc.exited:
		t.Fatalf("Wait would have ended the cluster: %s exited", p.id)
	default:
	}
	res, err := c.Query(ctx, "", QueryOptions{Kind: CheckKind, Params: CheckParams{Tasks: 4, Rows: 1000}.Params()})
	if err == nil {
		_, err = drain(res)
		res.Close()
	}
	if err != nil {
		t.Fatalf("check after the restarts: %v", err)
	}
}
