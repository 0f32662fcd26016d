package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/nicflow/nicflow/internal/nferr"
)

// netnsSetup emulates a NIC per node: each node runs in its own network
// namespace, connected to a bridge in the root namespace by a veth pair
// whose namespace end is shaped with a tbf qdisc to the given rate (the
// node's egress bandwidth). Built with the ip and tc commands; root only.
type netnsSetup struct {
	tag    string
	nodes  int
	subnet string
}

func runIP(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return nferr.IOf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func setupNetns(ctx context.Context, nodes int, rate string) (*netnsSetup, error) {
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, nferr.IOf("network namespaces need the %s command: %v", tool, err)
		}
	}
	pid := os.Getpid() % 10000
	// NB: interface names are limited to 15 bytes: "nf" + 4-digit pid +
	// node number + suffix stays within.
	n := &netnsSetup{tag: fmt.Sprintf("nf%d", pid), nodes: nodes, subnet: fmt.Sprintf("10.213.%d", pid%250)}
	steps := [][]string{{"ip", "link", "add", n.bridge(), "type", "bridge"}, {"ip", "link", "set", n.bridge(), "up"}}
	for i := 0; i < nodes; i++ {
		ns, host, peer := n.ns(i), fmt.Sprintf("%s-%dh", n.tag, i), fmt.Sprintf("%s-%dn", n.tag, i)
		steps = append(steps,
			[]string{"ip", "netns", "add", ns},
			[]string{"ip", "link", "add", host, "type", "veth", "peer", "name", peer},
			[]string{"ip", "link", "set", peer, "netns", ns},
			[]string{"ip", "link", "set", host, "master", n.bridge()},
			[]string{"ip", "link", "set", host, "up"},
			[]string{"ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"},
			[]string{"ip", "netns", "exec", ns, "ip", "addr", "add", n.addr(i) + "/24", "dev", peer},
			[]string{"ip", "netns", "exec", ns, "ip", "link", "set", peer, "up"},
			// burst: 64 KiB covers a few frames at the default 16-32 KiB;
			// latency bounds the queue the shaper keeps.
			[]string{"ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", peer, "root", "tbf", "rate", rate, "burst", "64kb", "latency", "50ms"},
		)
	}
	for _, s := range steps {
		if err := runIP(ctx, s...); err != nil {
			n.teardown()
			return nil, err
		}
	}
	return n, nil
}

func (n *netnsSetup) bridge() string    { return n.tag + "br" }
func (n *netnsSetup) ns(i int) string   { return fmt.Sprintf("%s-%d", n.tag, i) }
func (n *netnsSetup) addr(i int) string { return fmt.Sprintf("%s.%d", n.subnet, i+1) }

// exec is the command prefix that runs a program in node i's namespace.
func (n *netnsSetup) exec(i int) []string { return []string{"ip", "netns", "exec", n.ns(i)} }

// teardown removes everything setupNetns made (best effort).
func (n *netnsSetup) teardown() {
	ctx := context.Background()
	for i := 0; i < n.nodes; i++ {
		_ = runIP(ctx, "ip", "netns", "del", n.ns(i))
		_ = runIP(ctx, "ip", "link", "del", fmt.Sprintf("%s-%dh", n.tag, i))
	}
	_ = runIP(ctx, "ip", "link", "del", n.bridge())
}
