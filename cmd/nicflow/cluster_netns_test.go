package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/internal/netnstest"
)

// TestClusterSQLAcrossNetworkNamespaces builds three "hosts" as Linux
// network namespaces on a bridge (veth pairs, 10.213.78.0/24, no uplink:
// no packet leaves the machine), runs the coordinator and a storage node on
// the first and a worker on each of the others, as processes, and runs
// TPC-H queries from the root namespace, checking the answers: shuffles and
// scans cross real interfaces. It needs root and iproute2; it skips
// otherwise.
func TestClusterSQLAcrossNetworkNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("-short is set")
	}
	namespaces, hosts := netnstest.Hosts(t, "nq", "10.213.78", 3, "")

	work := t.TempDir()
	keys := filepath.Join(work, "keys")
	if err := cluster.InitKeys(keys, false); err != nil {
		t.Fatal(err)
	}
	data := copyTPCH(t, tpchSmallGroups(t, 0.01))
	exe, _ := os.Executable()
	start := func(i int, role, id string, extra ...string) cluster.NodeInfo {
		t.Helper()
		ready := filepath.Join(work, id+".json")
		args := []string{"netns", "exec", namespaces[i], exe, role,
			"--node-id", id, "--keys", keys, "--advertise", hosts[i],
			"--gossip", hosts[i] + ":0", "--admin", "127.0.0.1:0", "--ready-file", ready}
		cmd := exec.Command("ip", append(args, extra...)...)
		cmd.Env = append(os.Environ(), testNodeEnv+"=1")
		logf, _ := os.Create(filepath.Join(work, id+".log"))
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); logf.Close() })
		var info cluster.NodeInfo
		deadline := time.Now().Add(30 * time.Second)
		for {
			b, err := os.ReadFile(ready)
			if err == nil && json.Unmarshal(b, &info) == nil {
				return info
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(filepath.Join(work, id+".log"))
				t.Fatalf("%s did not start: %s", id, log)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	coord := start(0, "coordinator", "nq-coord", "--listen", hosts[0]+":0", "--dir", data)
	start(0, "storage", "nq-store", "--listen", hosts[0]+":0", "--join", coord.GossipAddr, "--dir", filepath.Join(work, "store"))
	start(1, "worker", "nq-w1", "--listen", hosts[1]+":0", "--join", coord.GossipAddr, "--cores", "2")
	start(2, "worker", "nq-w2", "--listen", hosts[2]+":0", "--join", coord.GossipAddr, "--cores", "2")

	cs, err := dialClusterSQL(coord.ControlAddr, keys, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ms, err := cs.c.WaitForMembers(ctx, func(ms []cluster.NodeInfo) bool {
		n := 0
		for _, m := range ms {
			if (m.Role == cluster.RoleWorker && m.DataAddr != "") || (m.Role == cluster.RoleStorage && m.FlightAddr != "") {
				n++
			}
		}
		return n == 3
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		for _, a := range []string{m.GossipAddr, m.DataAddr, m.FlightAddr} {
			if a != "" && !strings.HasPrefix(a, "10.213.78.") {
				t.Errorf("member %s advertises %s", m.ID, a)
			}
		}
	}
	if err := placeWith(ctx, cs.c, 1, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, q := range []int{1, 3, 9, 18} {
		r := runTPCHQuery(ctx, cs.runQueryText, q, 0.01, 1, true)
		if r.err != nil || r.verdict != "ok" {
			t.Errorf("Q%d across namespaces: %v %s", q, r.err, r.verdict)
		} else {
			t.Logf("Q%d across namespaces: %d rows in %v, %d bytes shuffled", q, r.rows, r.times[0].Round(time.Millisecond), r.shuffled)
		}
	}
}
