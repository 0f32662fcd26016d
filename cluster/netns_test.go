package cluster

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nicflow/nicflow/internal/netnstest"
	"github.com/nicflow/nicflow/internal/nferr"
)

// TestClusterAcrossNetworkNamespaces builds three "hosts" as Linux network
// namespaces joined by a bridge (veth pairs, distinct addresses in
// 10.213.77.0/24, each link rate-limited to 1 Gbit/s with tbf), runs a
// coordinator and two workers in them as separate processes, and checks
// that the cluster forms over real interfaces, runs a query, and fails a
// query naming a worker killed mid-way. It needs root and iproute2; it
// skips otherwise. No packet leaves the machine: the bridge has no uplink.
func TestClusterAcrossNetworkNamespaces(t *testing.T) {
	// 1 Gbit/s towards each host: small-NIC-like links.
	namespaces, hosts := netnstest.Hosts(t, "nf", "10.213.77", 3, "1gbit")

	keys := testKeyDir(t)
	dir := t.TempDir()
	type proc struct {
		cmd   *exec.Cmd
		ready string
	}
	start := func(i int, role Role, id string, extra ...string) *proc {
		ready := filepath.Join(dir, id+".json")
		args := []string{"netns", "exec", namespaces[i], os.Args[0], role.String(),
			"--node-id", id, "--keys", keys, "--advertise", hosts[i],
			"--gossip", hosts[i] + ":7946", "--listen", hosts[i] + ":7400", "--admin", "127.0.0.1:7480",
			"--ready-file", ready}
		cmd := exec.Command("ip", append(args, extra...)...)
		cmd.Env = append(os.Environ(), "NICFLOW_TEST_NODE=1")
		logf, _ := os.Create(filepath.Join(dir, id+".log"))
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); logf.Close() })
		return &proc{cmd: cmd, ready: ready}
	}
	readyInfo := func(p *proc) NodeInfo {
		var info NodeInfo
		waitFor(t, 30*time.Second, "node ready file "+p.ready, func() bool {
			b, err := os.ReadFile(p.ready)
			return err == nil && json.Unmarshal(b, &info) == nil
		})
		return info
	}
	coord := readyInfo(start(0, RoleCoordinator, "ns-coord"))
	if coord.GossipAddr != "10.213.77.1:7946" || coord.ControlAddr != "10.213.77.1:7400" {
		t.Fatalf("coordinator advertises %s / %s", coord.GossipAddr, coord.ControlAddr)
	}
	readyInfo(start(1, RoleWorker, "ns-w1", "--join", coord.GossipAddr))
	w2 := start(2, RoleWorker, "ns-w2", "--join", coord.GossipAddr)
	readyInfo(w2)

	c, err := Dial(coord.ControlAddr, ClientOptions{KeyDir: keys})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ms, err := c.WaitForMembers(ctx, func(ms []NodeInfo) bool { return countRole(ms, RoleWorker) == 2 })
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if !strings.HasPrefix(m.GossipAddr, "10.213.77.") {
			t.Errorf("member %s gossips on %s", m.ID, m.GossipAddr)
		}
	}
	began := time.Now()
	res, err := c.Query(ctx, "", QueryOptions{Kind: CheckKind, Params: CheckParams{Tasks: 4, Rows: 500_000}.Params()})
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]int{}
	var bytes int64
	for _, cr := range checkRows(t, res) {
		nodes[cr.node]++
		bytes += cr.bytes
	}
	res.Close()
	el := time.Since(began)
	if nodes["ns-w1"] != 2 || nodes["ns-w2"] != 2 {
		t.Errorf("placement across hosts: %v", nodes)
	}
	t.Logf("check across namespaces: %d MiB in %v (%.0f Mbit/s through 1 Gbit/s links)", bytes>>20, el.Round(time.Millisecond), float64(bytes)*8/el.Seconds()/1e6)

	// Kill the worker in the third namespace during a query (retries off:
	// the query would run forever on the others).
	done := make(chan error, 1)
	go func() {
		params := CheckParams{Tasks: 4, Rows: 1 << 40, Batch: 1000, Pace: 20 * time.Millisecond}.Params()
		params[ParamRetries] = "0"
		res, err := c.Query(ctx, "", QueryOptions{Kind: CheckKind, Params: params})
		if err == nil {
			_, err = drain(res)
			res.Close()
		}
		done <- err
	}()
	time.Sleep(time.Second)
	killed := time.Now()
	w2.cmd.Process.Kill()
	select {
	case err := <-done:
		if !nferr.Is(err, nferr.KindUnavailable) || !strings.Contains(err.Error(), "ns-w2") {
			t.Errorf("query after kill: %v", err)
		}
		t.Logf("query failed %v after the kill: %v", time.Since(killed).Round(time.Millisecond), err)
	case <-time.After(15 * time.Second):
		t.Fatal("query did not fail within 15 s")
	}
}
