// Package netnstest builds network namespaces for tests that run nodes as
// separate "hosts" reached over real interfaces: veth pairs on a bridge
// with no uplink, so that no packet leaves the machine. It needs Linux,
// root and iproute2; tests skip without them. cluster and cmd/nicflow use
// it for their cross-namespace tests.
package netnstest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/internal/emutest"
)

// Hosts builds n namespaces on a fresh bridge and returns their names and
// addresses: host i is subnet.(i+1) (subnet is the first three octets, as
// "10.213.77"). The bridge takes subnet.254, so that the test process, in
// the root namespace, reaches every host. prefix, two letters, starts the
// names of the bridge, namespaces and links (a random tag follows). When
// rate is not "" and tc is installed, the link towards each host is shaped
// to it ("1gbit", tbf). Everything is removed when the test ends.
//
// Hosts skips the test where it cannot build the namespaces: not Linux or
// not root, no iproute2, NICFLOW_SKIP_NETNS set, or a kernel that refuses
// bridges or namespaces.
func Hosts(t testing.TB, prefix, subnet string, n int, rate string) (namespaces, addrs []string) {
	t.Helper()
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("network namespaces need Linux and root: run the tests as root to run nodes across namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("iproute2 (`ip`) is not installed")
	}
	if os.Getenv("NICFLOW_SKIP_NETNS") != "" {
		t.Skip("NICFLOW_SKIP_NETNS is set")
	}
	// The namespaces' nodes are processes of the test binary.
	emutest.Skip(t, "node processes in network namespaces")
	var rb [3]byte
	rand.Read(rb[:])
	tag := hex.EncodeToString(rb[:])
	bridge := prefix + "br" + tag
	var links []string
	t.Cleanup(func() {
		for _, l := range links {
			run("ip", "link", "del", l) // also removes the peer inside the namespace
		}
		for _, ns := range namespaces {
			run("ip", "netns", "del", ns)
		}
		run("ip", "link", "del", bridge)
	})
	if err := run("ip", "link", "add", bridge, "type", "bridge"); err != nil {
		t.Skipf("cannot create a bridge here (%v); skipping the namespace test", err)
	}
	must := func(args ...string) {
		t.Helper()
		if err := run(args...); err != nil {
			t.Fatal(err)
		}
	}
	// NB: the bridge's own address adds only a connected route for the
	// subnet via a bridge with no uplink.
	must("ip", "addr", "add", subnet+".254/24", "dev", bridge)
	must("ip", "link", "set", bridge, "up")
	_, tcErr := exec.LookPath("tc")
	for i := 0; i < n; i++ {
		ip := fmt.Sprintf("%s.%d", subnet, i+1)
		ns := fmt.Sprintf("%s%s-%d", prefix, tag, i)
		if err := run("ip", "netns", "add", ns); err != nil {
			t.Skipf("cannot create network namespaces here (%v)", err)
		}
		namespaces = append(namespaces, ns)
		host, peer := fmt.Sprintf("%sv%s%d", prefix, tag, i), fmt.Sprintf("%sp%s%d", prefix, tag, i)
		must("ip", "link", "add", host, "type", "veth", "peer", "name", peer)
		links = append(links, host)
		must("ip", "link", "set", peer, "netns", ns)
		must("ip", "link", "set", host, "master", bridge)
		must("ip", "link", "set", host, "up")
		must("ip", "-n", ns, "link", "set", "lo", "up")
		must("ip", "-n", ns, "addr", "add", ip+"/24", "dev", peer)
		must("ip", "-n", ns, "link", "set", peer, "up")
		if rate != "" && tcErr == nil {
			must("tc", "qdisc", "add", "dev", host, "root", "tbf", "rate", rate, "burst", "128kb", "latency", "50ms")
		}
		addrs = append(addrs, ip)
	}
	return namespaces, addrs
}

// run runs a command; its error carries the command line and output.
func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}
