package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

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
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("network namespaces need Linux and root: run `go test ./cluster/` as root to form a cluster across namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("iproute2 (`ip`) is not installed")
	}
	if os.Getenv("NICFLOW_SKIP_NETNS") != "" {
		t.Skip("NICFLOW_SKIP_NETNS is set")
	}
	var rb [3]byte
	rand.Read(rb[:])
	tag := hex.EncodeToString(rb[:])
	bridge := "nfbr" + tag
	sh := func(args ...string) error {
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	var namespaces, links []string
	t.Cleanup(func() {
		for _, l := range links {
			sh("ip", "link", "del", l) // also removes the peer inside the namespace
		}
		for _, ns := range namespaces {
			sh("ip", "netns", "del", ns)
		}
		sh("ip", "link", "del", bridge)
	})
	if err := sh("ip", "link", "add", bridge, "type", "bridge"); err != nil {
		t.Skipf("cannot create a bridge here (%v); skipping the namespace test", err)
	}
	must := func(args ...string) {
		t.Helper()
		if err := sh(args...); err != nil {
			t.Fatal(err)
		}
	}
	// NB: the bridge's own address lets this test process (in the root
	// namespace) act as the client; it adds only a connected route for
	// 10.213.77.0/24 via a bridge with no uplink.
	must("ip", "addr", "add", "10.213.77.254/24", "dev", bridge)
	must("ip", "link", "set", bridge, "up")
	hosts := []string{"10.213.77.1", "10.213.77.2", "10.213.77.3"}
	for i, ip := range hosts {
		ns := fmt.Sprintf("nf%s-%d", tag, i)
		if err := sh("ip", "netns", "add", ns); err != nil {
			t.Skipf("cannot create network namespaces here (%v)", err)
		}
		namespaces = append(namespaces, ns)
		host, peer := fmt.Sprintf("nfv%s%d", tag, i), fmt.Sprintf("nfp%s%d", tag, i)
		must("ip", "link", "add", host, "type", "veth", "peer", "name", peer)
		links = append(links, host)
		must("ip", "link", "set", peer, "netns", ns)
		must("ip", "link", "set", host, "master", bridge)
		must("ip", "link", "set", host, "up")
		must("ip", "-n", ns, "link", "set", "lo", "up")
		must("ip", "-n", ns, "addr", "add", ip+"/24", "dev", peer)
		must("ip", "-n", ns, "link", "set", peer, "up")
		if _, err := exec.LookPath("tc"); err == nil {
			// 1 Gbit/s towards each host: small-NIC-like links.
			must("tc", "qdisc", "add", "dev", host, "root", "tbf", "rate", "1gbit", "burst", "128kb", "latency", "50ms")
		}
	}

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
	for {
		rec, err := res.Next()
		if err != nil {
			t.Fatal(err)
		}
		if rec == nil {
			break
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			nodes[rec.Column(1).(*array.String).Value(i)]++
			bytes += rec.Column(3).(*array.Int64).Value(i)
		}
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
