package main

import (
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nicflow/nicflow/bench"
	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/shuffle"
)

var agentFlags struct {
	node          int
	nodes         int
	peers         string
	listen        string
	local         string
	threads       int
	aggSize       string
	agentBuffers  int
	flushTimeout  time.Duration
	idleTimeout   time.Duration
	codec         string
	device        string
	nicEngines    int
	nicCPUs       string
	cpus          string
	credits       string
	keys          string
	keyFile       string
	tlsCert       string
	tlsKey        string
	tlsCA         string
	insecure      bool
	control       bool
	statsInterval time.Duration
}

var agentCmd = &cobra.Command{
	Use:   "agent --node I --peers ADDR0,ADDR1,... --local unix:/PATH",
	Short: "Run a node's shuffle routing agent as its own process (offload mode)",
	Long: `Run the shuffle routing agent of one node in a process of its own: the
"offload" placement, standing in for a routing service on a SmartNIC/DPU.
Workers of the node connect to it over --local (a unix socket; workers dial
"unix:PATH" for frames over the socket or "shm:PATH" for a shared-memory ring),
hand it their aggregated messages, and get their deliveries from it. Agents
connect node to node over TCP (--listen / --peers), so connections grow with
nodes, not with tasks.

The agent re-aggregates every message by next hop (destination node, or local
receiver), with --threads routing threads that each own their send buffers.
Frames between agents can be compressed (--codec) on a compression device:
"cpu" runs the codec on the routing threads, "nic" on an emulated NIC engine
with its own threads (--nic-engines, pinned with --nic-cpus).

--cpus pins the whole process to the given CPUs (sched_setaffinity), the way a
DPU's cores are separate from the host's. On a 2-core machine that leaves one
core to the agents and one to everything else; see docs/shuffle.md.

Security: agent-to-agent connections need --keys (the cluster's key directory:
mutual TLS with the cluster CA), --key-file (a shared secret: TLS keyed by it),
--tls-cert/--tls-key/--tls-ca, or --insecure on a trusted network. The local
socket is created mode 0600 and only accepts processes of the same user.

SIGUSR1 prints the agent's links (queued frames, windows, held bytes),
routing threads (parked frames, buffers per destination) and channels to
stderr: the first thing to look at when an exchange stalls.`,
	Example: `  # node 1 of a three-node cluster, workers on /run/nicflow/agent.sock
  nicflow agent --node 1 --peers 10.0.0.1:7500,10.0.0.2:7500,10.0.0.3:7500 \
      --local unix:/run/nicflow/agent.sock --keys /etc/nicflow/keys

  # pinned to CPUs 6-7, s2 compression on an emulated NIC engine
  nicflow agent --node 0 --peers :7500,host2:7500 --local unix:/tmp/a.sock \
      --cpus 6-7 --codec s2 --device nic --key-file /etc/nicflow/shuffle.key`,
	Args: cobra.NoArgs,
	RunE: runAgent,
}

func runAgent(cmd *cobra.Command, _ []string) error {
	f := &agentFlags
	if f.cpus != "" {
		cpus, err := parseCPUList(f.cpus)
		if err != nil {
			return usagef("--cpus: %v", err)
		}
		if err := shuffle.PinProcess(cpus); err != nil {
			slog.Warn("agent runs unpinned", "err", err)
		} else {
			// The runtime sized GOMAXPROCS before the pinning.
			runtime.GOMAXPROCS(len(cpus))
		}
	}
	var peers []string
	if f.peers != "" {
		peers = strings.Split(f.peers, ",")
		for i := range peers {
			peers[i] = strings.TrimSpace(peers[i])
		}
	} else {
		if f.nodes < 1 {
			return usagef("--peers is required (every node's agent address, in node order)")
		}
		peers = make([]string, f.nodes)
	}
	if f.node < 0 || f.node >= len(peers) {
		return usagef("--node %d is not an index into the %d peers", f.node, len(peers))
	}
	opts := shuffle.Options{Threads: f.threads, AgentBuffers: f.agentBuffers, FlushTimeout: f.flushTimeout, IdleTimeout: f.idleTimeout, Insecure: f.insecure}
	var err error
	if f.aggSize != "" {
		n, err := exec.ParseBytes(f.aggSize)
		if err != nil {
			return usagef("--agg-size: %v", err)
		}
		opts.AggSize = int(n)
	}
	if f.credits != "" {
		n, err := exec.ParseBytes(f.credits)
		if err != nil {
			return usagef("--credits: %v", err)
		}
		opts.Credits = int(n)
	}
	if opts.Codec, err = shuffle.ParseCodec(f.codec); err != nil {
		return usagef("--codec: %v", err)
	}
	switch f.device {
	case "cpu", "":
	case "nic":
		dev, err := startNICDevice(f.nicEngines, f.nicCPUs, "--nic-cpus")
		if err != nil {
			return err
		}
		defer dev.Close()
		opts.Device = dev
	default:
		return usagef("--device %q: want cpu or nic", f.device)
	}
	if err := agentSecurity(&opts); err != nil {
		return err
	}
	cfg := shuffle.AgentConfig{Node: f.node, Peers: peers, Listen: f.listen, Local: f.local, Options: opts}
	a, err := shuffle.NewAgent(cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	ctx := cmd.Context()
	// SIGUSR1 prints the agent's queues, windows and parked frames.
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	if f.control {
		go func() {
			for range usr1 {
				fmt.Fprint(cmd.ErrOrStderr(), a.DebugState())
			}
		}()
		return bench.ServeAgentControl(ctx, a, cmd.InOrStdin(), cmd.OutOrStdout())
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "nicflow agent: node %d of %d, agents on %s, workers on %s\n", f.node, len(peers), a.Addr(), orNone(a.LocalAddr()))
	var tick <-chan time.Time
	if f.statsInterval > 0 {
		t := time.NewTicker(f.statsInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-usr1:
			fmt.Fprint(cmd.ErrOrStderr(), a.DebugState())
		case <-tick:
			s := a.Stats()
			fmt.Fprintf(cmd.ErrOrStderr(), "nicflow agent: %d messages, %d frames out (%s), %d in, %d parked, %d channels\n",
				s.Messages, s.RemoteFramesOut, exec.FormatBytes(s.RemoteWireBytesOut), s.RemoteFramesIn, s.Parks, s.Channels)
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// agentSecurity fills the TLS or key options from the flags.
func agentSecurity(opts *shuffle.Options) error {
	f := &agentFlags
	n := 0
	for _, set := range []bool{f.keys != "", f.keyFile != "", f.tlsCert != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		return usagef("use one of --keys, --key-file and --tls-cert")
	}
	switch {
	case f.keys != "":
		k, err := cluster.LoadKeys(f.keys, fmt.Sprintf("agent-%d", f.node), cluster.RoleWorker)
		if err != nil {
			return err
		}
		opts.TLS, opts.TLSClient = k.ServerTLS(), k.ClientTLS()
	case f.keyFile != "":
		b, err := os.ReadFile(f.keyFile)
		if err != nil {
			return nferr.IOf("reading --key-file: %v", err)
		}
		s := strings.TrimSpace(string(b))
		key, derr := base64.StdEncoding.DecodeString(s)
		if derr != nil {
			key = []byte(s)
		}
		opts.ClusterKey = key
	case f.tlsCert != "":
		if f.tlsKey == "" || f.tlsCA == "" {
			return usagef("--tls-cert needs --tls-key and --tls-ca")
		}
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return nferr.Authf("loading %s: %v", f.tlsCert, err)
		}
		pool, err := loadCertPool(f.tlsCA)
		if err != nil {
			return err
		}
		opts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ClientCAs: pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13}
	}
	return nil
}

// parseCPUList reads "3", "0,2" or "4-7".
func parseCPUList(s string) ([]int, error) {
	var out []int
	for _, part := range splitList(s) {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("%q is not a CPU number", lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("%q is not a CPU range", part)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty CPU list")
	}
	return out, nil
}

func init() {
	f := agentCmd.Flags()
	a := &agentFlags
	f.IntVar(&a.node, "node", -1, "this node's index in --peers")
	f.StringVar(&a.peers, "peers", "", "every node's agent address (host:port), comma-separated, in node order")
	f.IntVar(&a.nodes, "nodes", 0, "number of nodes when --peers is not given (peers set later over --control)")
	f.StringVar(&a.listen, "listen", "", "address to accept agent connections on (default: this node's entry in --peers)")
	f.StringVar(&a.local, "local", "", "where workers connect: unix:/path (or mem:name in tests)")
	f.IntVar(&a.threads, "threads", 0, "routing threads (default 2)")
	f.StringVar(&a.aggSize, "agg-size", "", "aggregation buffer size between agents (default 32KiB)")
	f.IntVar(&a.agentBuffers, "agent-buffers", 0, "buffers per routing thread and destination (default 4)")
	f.DurationVar(&a.flushTimeout, "flush-timeout", 0, "flush a partly filled buffer after this long (default 1ms)")
	f.DurationVar(&a.idleTimeout, "idle-timeout", 0, "flush everything when idle this long (default 100µs)")
	f.StringVar(&a.codec, "codec", "none", "frame compression between agents: none, s2 or zstd")
	f.StringVar(&a.device, "device", "cpu", "where compression runs: cpu or nic (emulated NIC engine)")
	f.IntVar(&a.nicEngines, "nic-engines", 1, "threads of the emulated NIC engine")
	f.StringVar(&a.nicCPUs, "nic-cpus", "", "CPUs for the NIC engine threads (e.g. 7 or 6-7)")
	f.StringVar(&a.cpus, "cpus", "", "pin the agent process to these CPUs (e.g. 1 or 2-3)")
	f.StringVar(&a.credits, "credits", "", "flow-control window per link and channel (default 2MiB)")
	f.StringVar(&a.keys, "keys", "", "cluster key directory (mutual TLS with the cluster CA)")
	f.StringVar(&a.keyFile, "key-file", "", "file holding a shared secret (base64 or raw, at least 16 bytes)")
	f.StringVar(&a.tlsCert, "tls-cert", "", "PEM certificate for mutual TLS")
	f.StringVar(&a.tlsKey, "tls-key", "", "PEM key of --tls-cert")
	f.StringVar(&a.tlsCA, "tls-ca", "", "PEM CA that signs every agent's certificate")
	f.BoolVar(&a.insecure, "insecure", false, "allow unauthenticated, unencrypted agent connections (trusted networks only)")
	f.BoolVar(&a.control, "control", false, "speak the benchmark's control protocol on stdin/stdout")
	f.DurationVar(&a.statsInterval, "stats-interval", 0, "print counters to stderr this often (0: never)")
	f.MarkHidden("control")
	f.MarkHidden("nodes")
	rootCmd.AddCommand(agentCmd)
}
