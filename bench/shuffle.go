package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/nicflow/nicflow/bench/emu"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/shuffle"
)

// ShuffleOptions configure `nicflow bench shuffle`. Every list is a
// dimension; the benchmark runs their cross product.
type ShuffleOptions struct {
	// Apps: histogram, transpose, repartition, sssp.
	Apps []string
	// Nodes is the number of node processes; RanksPerNode the tasks in each.
	Nodes        int
	RanksPerNode int
	// AggSizes, Buffers, Threads: shuffle.Options AggSize, Buffers, Threads.
	AggSizes []int
	Buffers  []int
	Threads  []int
	// Agents: "corun" (the agent runs inside each worker process) and/or
	// "offload" (a separate `nicflow agent` process per node).
	Agents []string
	// Codecs: none, s2, zstd.
	Codecs []string
	// Local is the worker-to-agent link in offload mode: "shm" (default)
	// or "unix".
	Local string
	// Pin: "auto" (default) pins offloaded agents to the last CPU and their
	// workers to the others, emulating a DPU's own cores; "none" leaves
	// every process to the scheduler.
	Pin string
	// Workload sizes per rank; zero takes the defaults (see
	// DefaultShuffleOptions).
	Updates, TableSize, Rows, RowDegree, Batches, BatchRows int
	// Repeat runs each configuration this many times and reports the
	// fastest run: on a shared machine, interference only ever slows a run
	// down. Default 1.
	Repeat int
	// Seed makes workloads reproducible.
	Seed uint64
	// Binary is the nicflow executable re-executed for node and agent
	// processes. Default: this process's executable.
	Binary string
	// Netns runs every node on its own emulated host (bench/emu, root
	// only): a network namespace, linked by a bridge, its NIC shaped with
	// tbf to Rate (tc syntax: 200mbit, 1gbit) in both directions.
	Netns bool
	Rate  string
	// EmulateDPU gives every node a host and a DPU (bench/emu, root only):
	// the node's worker runs in the host's CPU quota (HostCPUs cores), an
	// offloaded agent in the DPU's (DPUCPUs) on top of it, as a DPU's
	// cores come on top of its host's; a corun agent stays in the host's
	// quota with the worker. Pinning is off (the quotas replace it). The
	// nodes run in network namespaces, their NICs shaped only with Netns.
	// Defaults: half of this machine's cores for the hosts and half for
	// the DPUs, shared by the nodes (so the quotas add up to the machine).
	EmulateDPU        bool
	HostCPUs, DPUCPUs float64
	// Secure authenticates and encrypts agent connections with TLS keyed
	// by a fresh cluster key (instead of running them insecure), to
	// measure what security costs.
	Secure bool
	// Timeout bounds one run. Default 10 minutes.
	Timeout time.Duration
	// Progress, when set, gets one line per run.
	Progress io.Writer
}

// DefaultShuffleOptions returns the defaults: histogram over 4 nodes of 4
// ranks, 16 KiB buffers, corun and offload.
func DefaultShuffleOptions() ShuffleOptions {
	return ShuffleOptions{
		Apps:         []string{"histogram"},
		Nodes:        4,
		RanksPerNode: 4,
		AggSizes:     []int{16 << 10},
		Buffers:      []int{shuffle.DefaultBuffers},
		Threads:      []int{2},
		Agents:       []string{"corun", "offload"},
		Codecs:       []string{"none"},
	}
}

func (o *ShuffleOptions) setDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	// Sizes: a few seconds per run on a 2-core machine at 4 nodes x 4 ranks.
	def(&o.Updates, 1<<19)
	def(&o.TableSize, 1<<18) // 2 MiB of counters per rank
	def(&o.Rows, 1<<14)
	def(&o.RowDegree, 16)
	def(&o.Batches, 8)
	def(&o.BatchRows, 8192)
	def(&o.Repeat, 1)
	if o.Local == "" {
		o.Local = "shm"
	}
	if o.Pin == "" {
		o.Pin = "auto"
	}
	if o.Seed == 0 {
		o.Seed = 42
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.Rate == "" {
		o.Rate = "1gbit"
	}
	if o.EmulateDPU && o.Nodes > 0 {
		if o.HostCPUs == 0 {
			o.HostCPUs = float64(runtime.NumCPU()) / 2 / float64(o.Nodes)
		}
		if o.DPUCPUs == 0 {
			o.DPUCPUs = float64(runtime.NumCPU()) / 2 / float64(o.Nodes)
		}
	}
}

// Validate checks the options (KindQuery errors name the flag's field).
func (o *ShuffleOptions) Validate() error {
	o.setDefaults()
	if len(o.Apps) == 0 || len(o.AggSizes) == 0 || len(o.Buffers) == 0 || len(o.Threads) == 0 || len(o.Agents) == 0 || len(o.Codecs) == 0 {
		return nferr.Queryf("every dimension (app, agg-size, buffers, threads, agent, codec) needs at least one value")
	}
	for _, a := range o.Apps {
		if _, err := newRankApp(a, appParams{}); err != nil {
			return err
		}
	}
	for _, a := range o.Agents {
		if a != "corun" && a != "offload" {
			return nferr.Queryf("unknown agent mode %q: want corun or offload", a)
		}
	}
	for _, c := range o.Codecs {
		if _, err := shuffle.ParseCodec(c); err != nil {
			return err
		}
	}
	if o.Nodes < 1 || o.Nodes > 64 || o.RanksPerNode < 1 || o.RanksPerNode > 256 {
		return nferr.Queryf("nodes must be 1-64 and ranks per node 1-256 (got %d and %d)", o.Nodes, o.RanksPerNode)
	}
	for _, n := range []int{o.Updates, o.TableSize, o.Rows, o.RowDegree, o.Batches, o.BatchRows, o.Repeat} {
		if n < 1 {
			return nferr.Queryf("workload sizes and repeat must be positive")
		}
	}
	for _, s := range o.AggSizes {
		opts := shuffle.Options{AggSize: s}
		opts.SetDefaults()
		if err := opts.Validate(); err != nil {
			return err
		}
	}
	if o.Local != "shm" && o.Local != "unix" {
		return nferr.Queryf("local link %q: want shm or unix", o.Local)
	}
	if o.Pin != "auto" && o.Pin != "none" {
		return nferr.Queryf("pin %q: want auto or none", o.Pin)
	}
	if o.Netns || o.EmulateDPU {
		if err := emu.Check(); err != nil {
			return err
		}
		if _, err := emu.ParseRate(o.Rate); err != nil {
			return err
		}
	}
	if o.EmulateDPU && (o.HostCPUs < 0.01 || o.DPUCPUs < 0.01) {
		return nferr.Queryf("host and DPU quotas must be at least 0.01 cores (got %g and %g)", o.HostCPUs, o.DPUCPUs)
	}
	return nil
}

// executable returns exe, or this process's executable when exe is empty:
// the nicflow binary that benchmark nodes re-execute.
func executable(exe string) (string, error) {
	if exe != "" {
		return exe, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", nferr.IOf("finding the nicflow executable: %v", err)
	}
	return exe, nil
}

// ShufflePrefix names the emulated hosts of `bench shuffle --netns` and
// `--emulate-dpu`.
const ShufflePrefix = "nfsh"

// shuffleLab makes one emulated host per node (with a DPU device when
// emulating DPUs).
func shuffleLab(ctx context.Context, o *ShuffleOptions) (*emu.Lab, error) {
	mbit := 0.0
	if o.Netns {
		var err error
		if mbit, err = emu.ParseRate(o.Rate); err != nil {
			return nil, err
		}
	}
	var hosts []emu.HostSpec
	for i := 0; i < o.Nodes; i++ {
		h := emu.HostSpec{Name: fmt.Sprintf("n%d", i), NICMbit: mbit}
		if o.EmulateDPU {
			h.CPUs = o.HostCPUs
			h.Devices = []emu.DeviceSpec{{Name: "dpu", CPUs: o.DPUCPUs}}
		}
		hosts = append(hosts, h)
	}
	return emu.New(ctx, emu.Options{Prefix: ShufflePrefix, Hosts: hosts})
}

// ShuffleRow is one measured configuration (one CSV line).
type ShuffleRow struct {
	App          string
	Nodes        int
	RanksPerNode int
	AggSize      int
	Buffers      int
	Threads      int
	Agent        string
	Codec        string
	Msgs         int64
	Bytes        int64
	ElapsedS     float64
	MsgsPerS     float64
	MBPerS       float64
	WorkerCPUS   float64
	AgentCPUS    float64
	// RemoteFrames and AvgFrameBytes: frames between agents and their mean
	// size (Buddy's "transfer size"); WireMB: bytes on the wire after the
	// codec; Parks: input frames put on a blocklist.
	RemoteFrames  int64
	AvgFrameBytes float64
	WireMB        float64
	Parks         int64
	// HostCPUs and DPUCPUs are the emulated host's and DPU's CPU quotas
	// per node (EmulateDPU), 0 otherwise.
	HostCPUs, DPUCPUs float64
}

// MsgsPerCPUS is messages per CPU second of all the run's processes
// (workers and offloaded agents): the rate the machine would sustain if it
// were busy with nothing else, and much steadier than the wall-clock rate
// on a shared machine.
func (r ShuffleRow) MsgsPerCPUS() float64 {
	if c := r.WorkerCPUS + r.AgentCPUS; c > 0 {
		return float64(r.Msgs) / c
	}
	return 0
}

var shuffleColumns = []string{"app", "nodes", "ranks_per_node", "agg_size", "buffers", "threads", "agent", "codec",
	"msgs", "bytes", "elapsed_s", "msgs_per_s", "mb_per_s", "worker_cpu_s", "agent_cpu_s",
	"remote_frames", "avg_frame_bytes", "wire_mb", "parks", "msgs_per_cpu_s", "host_cpus", "dpu_cpus"}

func (r ShuffleRow) fields() []string {
	f := func(v float64, p int) string { return strconv.FormatFloat(v, 'f', p, 64) }
	return []string{r.App, strconv.Itoa(r.Nodes), strconv.Itoa(r.RanksPerNode), strconv.Itoa(r.AggSize),
		strconv.Itoa(r.Buffers), strconv.Itoa(r.Threads), r.Agent, r.Codec,
		strconv.FormatInt(r.Msgs, 10), strconv.FormatInt(r.Bytes, 10), f(r.ElapsedS, 4), f(r.MsgsPerS, 0),
		f(r.MBPerS, 2), f(r.WorkerCPUS, 3), f(r.AgentCPUS, 3),
		strconv.FormatInt(r.RemoteFrames, 10), f(r.AvgFrameBytes, 0), f(r.WireMB, 2), strconv.FormatInt(r.Parks, 10), f(r.MsgsPerCPUS(), 0),
		f(r.HostCPUs, 3), f(r.DPUCPUs, 3)}
}

// WriteShuffleCSV writes rows with a header.
func WriteShuffleCSV(w io.Writer, rows []ShuffleRow) error {
	cw := csv.NewWriter(w)
	cw.Write(shuffleColumns)
	for _, r := range rows {
		cw.Write(r.fields())
	}
	cw.Flush()
	return cw.Error()
}

// WriteShuffleTable prints rows as an aligned text table.
func WriteShuffleTable(w io.Writer, rows []ShuffleRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "app\tnodes\tranks\tagg\tbufs\tthreads\tagent\tcodec\tmsgs\tMB\tsecs\tmsgs/s\tMB/s\tworker cpu s\tagent cpu s\tmsgs/cpu s\tframe B\twire MB\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t%s\t%s\t%d\t%.1f\t%.3f\t%s\t%.1f\t%.2f\t%.2f\t%s\t%.0f\t%.1f\t\n",
			r.App, r.Nodes, r.RanksPerNode, sizeLabel(r.AggSize), r.Buffers, r.Threads, r.Agent, r.Codec,
			r.Msgs, float64(r.Bytes)/1e6, r.ElapsedS, siRate(r.MsgsPerS), r.MBPerS, r.WorkerCPUS, r.AgentCPUS, siRate(r.MsgsPerCPUS()), r.AvgFrameBytes, r.WireMB)
	}
	return tw.Flush()
}

func sizeLabel(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return strconv.Itoa(n)
}

func siRate(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// ReadShuffleCSV reads a CSV written by WriteShuffleCSV (columns may come
// in any order; unknown ones are ignored).
func ReadShuffleCSV(r io.Reader) ([]ShuffleRow, error) {
	t, err := readCSVTable(r, "shuffle", "app", "agg_size", "buffers", "threads", "agent", "msgs_per_s")
	if err != nil {
		return nil, err
	}
	var rows []ShuffleRow
	err = t.each(func(c *csvRow) {
		rows = append(rows, ShuffleRow{App: c.str("app"), Nodes: c.int("nodes"), RanksPerNode: c.int("ranks_per_node"), AggSize: c.int("agg_size"),
			Buffers: c.int("buffers"), Threads: c.int("threads"), Agent: c.str("agent"), Codec: c.str("codec"),
			Msgs: int64(c.float("msgs")), Bytes: int64(c.float("bytes")), ElapsedS: c.float("elapsed_s"), MsgsPerS: c.float("msgs_per_s"),
			MBPerS: c.float("mb_per_s"), WorkerCPUS: c.float("worker_cpu_s"), AgentCPUS: c.float("agent_cpu_s"),
			RemoteFrames: int64(c.float("remote_frames")), AvgFrameBytes: c.float("avg_frame_bytes"), WireMB: c.float("wire_mb"), Parks: int64(c.float("parks")),
			HostCPUs: c.float("host_cpus"), DPUCPUs: c.float("dpu_cpus")})
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// shuffleConfig is one point of the cross product.
type shuffleConfig struct {
	app                      string
	agg, buffers, threads    int
	agent, codec             string
	nodes, ranksPerNode      int
	updates, table, rows     int
	degree, batches, batchRw int
}

// RunShuffle runs the cross product of o's dimensions and returns one row
// per configuration.
func RunShuffle(ctx context.Context, o ShuffleOptions) ([]ShuffleRow, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var err error
	if o.Binary, err = executable(o.Binary); err != nil {
		return nil, err
	}
	var net *emu.Lab
	if o.Netns || o.EmulateDPU {
		if net, err = shuffleLab(ctx, &o); err != nil {
			return nil, err
		}
		defer net.Close()
	}
	var rows []ShuffleRow
	for _, app := range o.Apps {
		for _, agent := range o.Agents {
			for _, codec := range o.Codecs {
				for _, threads := range o.Threads {
					for _, buffers := range o.Buffers {
						for _, agg := range o.AggSizes {
							c := shuffleConfig{app: app, agg: agg, buffers: buffers, threads: threads, agent: agent, codec: codec,
								nodes: o.Nodes, ranksPerNode: o.RanksPerNode, updates: o.Updates, table: o.TableSize,
								rows: o.Rows, degree: o.RowDegree, batches: o.Batches, batchRw: o.BatchRows}
							var runs []ShuffleRow
							for rep := 0; rep < o.Repeat; rep++ {
								r, err := runShuffleOnce(ctx, &o, c, net)
								if err != nil {
									return rows, nferr.Wrap(nferr.KindInternal, err, "%s agg=%s buffers=%d threads=%d agent=%s codec=%s", app, sizeLabel(agg), buffers, threads, agent, codec)
								}
								runs = append(runs, r)
							}
							sort.Slice(runs, func(i, j int) bool { return runs[i].MsgsPerS > runs[j].MsgsPerS })
							r := runs[0]
							if o.Progress != nil {
								fmt.Fprintf(o.Progress, "%-11s agent=%-7s codec=%-4s threads=%d buffers=%d agg=%-6s %9s msgs/s %8.1f MB/s  worker cpu %.2fs agent cpu %.2fs\n",
									app, agent, codec, threads, buffers, sizeLabel(agg), siRate(r.MsgsPerS), r.MBPerS, r.WorkerCPUS, r.AgentCPUS)
							}
							rows = append(rows, r)
						}
					}
				}
			}
		}
	}
	return rows, nil
}

// child is one spawned process speaking the control protocol.
type child struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lio    *lineIO
	stderr bytes.Buffer
	msgs   chan controlMsg
	errc   chan error
}

func startChild(ctx context.Context, name string, argv []string) (*child, error) {
	c := &child{name: name, msgs: make(chan controlMsg, 4), errc: make(chan error, 1)}
	c.cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.cmd.Stderr = &c.stderr
	// NICFLOW_SHUFFLE_STDERR=DIR keeps each child's stderr in DIR/<name>.err
	// (goroutine dumps after a SIGQUIT, when debugging a stuck run).
	if d := os.Getenv("NICFLOW_SHUFFLE_STDERR"); d != "" {
		if fh, err := os.Create(filepath.Join(d, strings.ReplaceAll(name, " ", "")+".err")); err == nil {
			c.cmd.Stderr = io.MultiWriter(&c.stderr, fh)
		}
	}
	// The children must not inherit a memory limit meant for the parent's
	// queries, nor compete for GOMAXPROCS beyond the machine.
	c.cmd.Env = os.Environ()
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, nferr.IOf("%s: %v", name, err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, nferr.IOf("%s: %v", name, err)
	}
	if err := c.cmd.Start(); err != nil {
		return nil, nferr.IOf("starting %s (%s): %v", name, argv[0], err)
	}
	c.lio = newLineIO(out, c.stdin)
	go func() {
		for {
			m, err := c.lio.recv()
			if err != nil {
				c.errc <- err
				close(c.msgs)
				return
			}
			c.msgs <- m
		}
	}()
	return c, nil
}

func (c *child) send(m controlMsg) error {
	if err := c.lio.send(m); err != nil {
		return nferr.Unavailablef("%s: %v%s", c.name, err, c.tail())
	}
	return nil
}

// wait returns the next message, which must be event.
func (c *child) wait(ctx context.Context, event string) (controlMsg, error) {
	select {
	case m, ok := <-c.msgs:
		if !ok {
			err := <-c.errc
			return m, nferr.Unavailablef("%s exited while we waited for %q: %v%s", c.name, event, err, c.tail())
		}
		if m.Event == "error" {
			return m, nferr.Decode(nferr.Kind(m.Kind), m.Error, c.name)
		}
		if m.Event != event {
			return m, nferr.Internalf("%s: got %q, want %q", c.name, m.Event, event)
		}
		return m, nil
	case <-ctx.Done():
		return controlMsg{}, nferr.Wrap(nferr.KindCanceled, ctx.Err(), "waiting for %s (%s)%s", c.name, event, c.tail())
	}
}

func (c *child) tail() string {
	s := strings.TrimSpace(c.stderr.String())
	if s == "" {
		return ""
	}
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return "\n" + s
}

// stop closes stdin and waits for the process, killing it after 10s.
func (c *child) stop() {
	c.stdin.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}

// cpuSplit picks CPUs for offloaded agents and workers ("auto" pinning):
// agents on the last CPU, workers on the others; nothing on one CPU.
func cpuSplit(pin string) (agents, workers []int) {
	n := runtime.NumCPU()
	if pin != "auto" || n < 2 {
		return nil, nil
	}
	for i := 0; i < n-1; i++ {
		workers = append(workers, i)
	}
	return []int{n - 1}, workers
}

func cpuList(c []int) string {
	s := make([]string, len(c))
	for i, v := range c {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func runShuffleOnce(ctx context.Context, o *ShuffleOptions, c shuffleConfig, net *emu.Lab) (ShuffleRow, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	row := ShuffleRow{App: c.app, Nodes: c.nodes, RanksPerNode: c.ranksPerNode, AggSize: c.agg, Buffers: c.buffers, Threads: c.threads, Agent: c.agent, Codec: c.codec}
	if o.EmulateDPU {
		row.HostCPUs, row.DPUCPUs = o.HostCPUs, o.DPUCPUs
	}
	dir, err := os.MkdirTemp("", "nicflow-shuffle-bench-")
	if err != nil {
		return row, nferr.IOf("temporary directory: %v", err)
	}
	defer os.RemoveAll(dir)
	var children []*child
	defer func() {
		for i := len(children) - 1; i >= 0; i-- {
			children[i].stop()
		}
	}()
	// Workers run on their node's host; offloaded agents on its DPU when
	// emulating DPUs.
	prefix := func(node int, agent bool) []string {
		switch {
		case net == nil:
			return nil
		case agent && o.EmulateDPU:
			return net.Hosts()[node].WrapDevice("dpu")
		}
		return net.Hosts()[node].Wrap()
	}
	listen := func(node int) string {
		if net != nil {
			return net.Hosts()[node].Addr() + ":0"
		}
		return "127.0.0.1:0"
	}
	var key string
	security := []string{"--insecure"}
	if o.Secure {
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return row, nferr.Internalf("cluster key: %v", err)
		}
		key = base64.StdEncoding.EncodeToString(raw)
		keyFile := filepath.Join(dir, "cluster.key")
		if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
			return row, nferr.IOf("writing %s: %v", keyFile, err)
		}
		security = []string{"--key-file", keyFile}
	}
	agentCPUs, workerCPUs := cpuSplit(o.Pin)
	if c.agent == "corun" || o.EmulateDPU {
		agentCPUs, workerCPUs = nil, nil
	}
	// Offloaded agents first.
	var agents []*child
	var agentAddrs []string
	if c.agent == "offload" {
		for i := 0; i < c.nodes; i++ {
			argv := append(prefix(i, true), o.Binary, "agent", "--node", strconv.Itoa(i), "--nodes", strconv.Itoa(c.nodes),
				"--listen", listen(i), "--local", "unix:"+filepath.Join(dir, fmt.Sprintf("agent%d.sock", i)),
				"--threads", strconv.Itoa(c.threads), "--agg-size", strconv.Itoa(c.agg), "--codec", c.codec, "--device", "nic",
				"--control")
			argv = append(argv, security...)
			if len(agentCPUs) > 0 {
				argv = append(argv, "--cpus", cpuList(agentCPUs))
			}
			ch, err := startChild(ctx, fmt.Sprintf("agent %d", i), argv)
			if err != nil {
				return row, err
			}
			children = append(children, ch)
			agents = append(agents, ch)
		}
		for _, a := range agents {
			m, err := a.wait(ctx, "ready")
			if err != nil {
				return row, err
			}
			agentAddrs = append(agentAddrs, m.Addr)
		}
		for _, a := range agents {
			if err := a.send(controlMsg{Cmd: "peers", Peers: agentAddrs}); err != nil {
				return row, err
			}
			if _, err := a.wait(ctx, "ok"); err != nil {
				return row, err
			}
		}
	}
	var nodes []*child
	for i := 0; i < c.nodes; i++ {
		argv := append(prefix(i, false), o.Binary, "bench", "shuffle-node")
		ch, err := startChild(ctx, fmt.Sprintf("node %d", i), argv)
		if err != nil {
			return row, err
		}
		children = append(children, ch)
		nodes = append(nodes, ch)
		cfg := &nodeConfig{Node: i, Nodes: c.nodes, RanksPerNode: c.ranksPerNode, App: c.app, Seed: o.Seed, Agent: c.agent,
			Listen: listen(i), CPUs: workerCPUs,
			Params:  appParams{TableSize: c.table, Updates: c.updates, Rows: c.rows, RowDegree: c.degree, Batches: c.batches, BatchRows: c.batchRw},
			Options: shuffleSettings{AggSize: c.agg, Buffers: c.buffers, Threads: c.threads, Codec: c.codec, Key: key}}
		if c.agent == "offload" {
			cfg.AgentAddr = o.Local + ":" + filepath.Join(dir, fmt.Sprintf("agent%d.sock", i))
		}
		if err := ch.send(controlMsg{Cmd: "init", Node: cfg}); err != nil {
			return row, err
		}
	}
	var addrs []string
	for _, n := range nodes {
		m, err := n.wait(ctx, "ready")
		if err != nil {
			return row, err
		}
		addrs = append(addrs, m.Addr)
	}
	if c.agent == "corun" {
		for _, n := range nodes {
			if err := n.send(controlMsg{Cmd: "peers", Peers: addrs}); err != nil {
				return row, err
			}
		}
	}
	for _, n := range nodes {
		if _, err := n.wait(ctx, "armed"); err != nil {
			return row, err
		}
	}
	agentStats := func() ([]controlMsg, error) {
		var out []controlMsg
		for _, a := range agents {
			if err := a.send(controlMsg{Cmd: "stats"}); err != nil {
				return nil, err
			}
			m, err := a.wait(ctx, "stats")
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		}
		return out, nil
	}
	before, err := agentStats()
	if err != nil {
		return row, err
	}
	for _, n := range nodes {
		if err := n.send(controlMsg{Cmd: "go"}); err != nil {
			return row, err
		}
	}
	results := make([]nodeResult, len(nodes))
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	for i, n := range nodes {
		wg.Add(1)
		go func(i int, n *child) {
			defer wg.Done()
			m, err := n.wait(ctx, "done")
			if err == nil && m.Result == nil {
				err = nferr.Internalf("%s: done without a result", n.name)
			}
			if err == nil {
				results[i] = *m.Result
			}
			errs[i] = err
		}(i, n)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			cancel()
			return row, err
		}
	}
	after, err := agentStats()
	if err != nil {
		return row, err
	}
	var sumA, sumB uint64
	var recv int64
	for _, r := range results {
		row.Msgs += r.Msgs
		row.Bytes += r.Bytes
		row.ElapsedS = max(row.ElapsedS, r.ElapsedS)
		row.WorkerCPUS += r.WorkerCPU
		sumA += r.CheckA
		sumB += r.CheckB
		recv += r.RecvMsgs
		if r.Agent != nil {
			row.RemoteFrames += r.Agent.RemoteFramesOut
			row.AvgFrameBytes += float64(r.Agent.RemoteBytesOut)
			row.WireMB += float64(r.Agent.RemoteWireBytesOut)
			row.Parks += r.Agent.Parks
		}
	}
	for i := range after {
		row.AgentCPUS += after[i].CPUS - before[i].CPUS
		a, b := after[i].Stats, before[i].Stats
		row.RemoteFrames += a.RemoteFramesOut - b.RemoteFramesOut
		row.AvgFrameBytes += float64(a.RemoteBytesOut - b.RemoteBytesOut)
		row.WireMB += float64(a.RemoteWireBytesOut - b.RemoteWireBytesOut)
		row.Parks += a.Parks - b.Parks
	}
	if row.RemoteFrames > 0 {
		row.AvgFrameBytes /= float64(row.RemoteFrames)
	}
	row.WireMB /= 1e6
	if err := checkShuffle(c, row.Msgs, recv, sumA, sumB); err != nil {
		return row, err
	}
	if row.ElapsedS > 0 {
		row.MsgsPerS = float64(row.Msgs) / row.ElapsedS
		row.MBPerS = float64(row.Bytes) / 1e6 / row.ElapsedS
	}
	return row, nil
}

// checkShuffle verifies a run's answer: nothing lost, nothing duplicated.
func checkShuffle(c shuffleConfig, sent, recv int64, a, b uint64) error {
	switch c.app {
	case "histogram":
		want := uint64(c.nodes * c.ranksPerNode * c.updates)
		if a != want || recv != sent {
			return nferr.Internalf("histogram check failed: table sum %d, %d updates sent, %d received, want %d", a, sent, recv, want)
		}
	case "transpose":
		if a != b || recv != sent {
			return nferr.Internalf("transpose check failed: checksum %d sent, %d received; %d nonzeros sent, %d received", a, b, sent, recv)
		}
	case "sssp":
		if a != b || recv != sent {
			return nferr.Internalf("sssp check failed: distance sum %d, Dijkstra's %d; %d messages sent, %d received", a, b, sent, recv)
		}
	case "repartition":
		rows := int64(c.nodes * c.ranksPerNode * c.batches * c.batchRw)
		if a != b || recv != rows {
			return nferr.Internalf("repartition check failed: key sum %d sent, %d received; %d rows received, want %d", a, b, recv, rows)
		}
	}
	return nil
}
