package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nicflow/nicflow/bench/emu"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/shuffle"
)

// The end-to-end test re-executes this test binary as the benchmark's
// child processes: with NICFLOW_BENCH_CHILD set, TestMain plays
// `nicflow bench shuffle-node` or `nicflow agent --control` (the subset of
// its flags the benchmark passes) instead of running tests.
func TestMain(m *testing.M) {
	if os.Getenv("NICFLOW_BENCH_CHILD") == "1" {
		os.Exit(benchChild(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func benchChild(args []string) int {
	ctx := context.Background()
	var err error
	switch {
	case len(args) >= 2 && args[0] == "bench" && args[1] == "shuffle-node":
		err = RunShuffleNode(ctx, os.Stdin, os.Stdout)
	case len(args) >= 1 && args[0] == "agent":
		fs := flag.NewFlagSet("agent", flag.ContinueOnError)
		node := fs.Int("node", 0, "")
		nodes := fs.Int("nodes", 0, "")
		listen := fs.String("listen", "", "")
		local := fs.String("local", "", "")
		threads := fs.Int("threads", 0, "")
		agg := fs.Int("agg-size", 0, "")
		codec := fs.String("codec", "none", "")
		fs.String("device", "cpu", "")
		fs.String("cpus", "", "")
		insecure := fs.Bool("insecure", false, "")
		keyFile := fs.String("key-file", "", "")
		fs.Bool("control", false, "")
		if err = fs.Parse(args[1:]); err != nil {
			break
		}
		c, _ := shuffle.ParseCodec(*codec)
		opts := shuffle.Options{Threads: *threads, AggSize: *agg, Codec: c, Insecure: *insecure}
		if *keyFile != "" {
			b, _ := os.ReadFile(*keyFile)
			opts.ClusterKey, _ = base64.StdEncoding.DecodeString(string(b))
		}
		var a *shuffle.Agent
		a, err = shuffle.NewAgent(shuffle.AgentConfig{Node: *node, Peers: make([]string, *nodes), Listen: *listen, Local: *local, Options: opts})
		if err == nil {
			err = ServeAgentControl(ctx, a, os.Stdin, os.Stdout)
			a.Close()
		}
	default:
		err = fmt.Errorf("unexpected child arguments %q", args)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestRunShuffleEndToEnd runs every workload in both agent modes with real
// processes (tiny sizes) and checks the rows.
func TestRunShuffleEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NICFLOW_BENCH_CHILD", "1")
	var progress bytes.Buffer
	o := ShuffleOptions{
		Apps: []string{"histogram", "transpose", "repartition", "sssp"}, Nodes: 2, RanksPerNode: 2,
		AggSizes: []int{2048, 16384}, Buffers: []int{4}, Threads: []int{1}, Agents: []string{"corun", "offload"},
		Codecs: []string{"none"}, Updates: 3000, TableSize: 1000, Rows: 300, RowDegree: 4, Batches: 2, BatchRows: 500,
		Binary: exe, Timeout: time.Minute, Progress: &progress, Pin: "none",
	}
	rows, err := RunShuffle(context.Background(), o)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if len(rows) != 4*2*2 {
		t.Fatalf("%d rows, want 16", len(rows))
	}
	for _, r := range rows {
		wantMsgs := map[string]int64{"histogram": 4 * 3000, "transpose": 4 * 300 * 4}[r.App]
		if (r.App == "histogram" || r.App == "transpose") && r.Msgs != wantMsgs {
			t.Errorf("%s: %d messages, want %d", r.App, r.Msgs, wantMsgs)
		}
		if r.MsgsPerS <= 0 || r.ElapsedS <= 0 || r.RemoteFrames == 0 {
			t.Errorf("%+v: missing measurements", r)
		}
		if r.Agent == "offload" && r.AgentCPUS <= 0 {
			t.Errorf("%+v: offloaded agent CPU not measured", r)
		}
	}

	// CSV round trip and plots.
	var csvBuf bytes.Buffer
	if err := WriteShuffleCSV(&csvBuf, rows); err != nil {
		t.Fatal(err)
	}
	header := strings.SplitN(csvBuf.String(), "\n", 2)[0]
	for _, col := range []string{"app", "nodes", "ranks_per_node", "agg_size", "buffers", "threads", "agent", "codec", "msgs", "bytes", "elapsed_s", "msgs_per_s", "mb_per_s", "worker_cpu_s", "agent_cpu_s"} {
		if !strings.Contains(","+header+",", ","+col+",") {
			t.Errorf("CSV header %q lacks %s", header, col)
		}
	}
	back, err := ReadShuffleCSV(&csvBuf)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(rows) || back[3].App != rows[3].App || back[3].AggSize != rows[3].AggSize || back[3].Msgs != rows[3].Msgs {
		t.Fatalf("CSV round trip differs: %+v vs %+v", back[3], rows[3])
	}
	dir := t.TempDir()
	files, err := PlotShuffle(back, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"msgs_vs_agg_size.svg", "msgs_per_cpu_vs_agg_size.svg", "corun_vs_offload.svg", "cpu_corun_vs_offload.svg"}
	for _, w := range want {
		b, err := os.ReadFile(filepath.Join(dir, w))
		if err != nil {
			t.Fatalf("plot %s missing (wrote %v)", w, files)
		}
		if !bytes.HasPrefix(b, []byte("<svg")) || !bytes.Contains(b, []byte("polyline")) && !bytes.Contains(b, []byte("<rect x=")) {
			t.Fatalf("%s is not a chart", w)
		}
	}
	var table bytes.Buffer
	WriteShuffleTable(&table, rows)
	if !strings.Contains(table.String(), "histogram") || !strings.Contains(table.String(), "offload") {
		t.Fatalf("table:\n%s", table.String())
	}
}

// TestRunShuffleSecure runs the offloaded and corun agents with TLS keyed
// by a generated cluster key.
func TestRunShuffleSecure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	exe, _ := os.Executable()
	t.Setenv("NICFLOW_BENCH_CHILD", "1")
	rows, err := RunShuffle(context.Background(), ShuffleOptions{
		Apps: []string{"histogram"}, Nodes: 2, RanksPerNode: 2, AggSizes: []int{4096}, Buffers: []int{4}, Threads: []int{1},
		Agents: []string{"corun", "offload"}, Codecs: []string{"s2"}, Updates: 2000, TableSize: 100, Binary: exe,
		Timeout: time.Minute, Pin: "none", Secure: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Msgs != 8000 || rows[1].Msgs != 8000 {
		t.Fatalf("rows %+v", rows)
	}
}

// TestRunShuffleEmulatedDPU runs both agent modes with each node a host
// and a DPU (network namespaces and CPU quotas; root only): the offloaded
// agents run in the DPU's cgroup, the rows carry the quotas, and nothing
// of the lab is left.
func TestRunShuffleEmulatedDPU(t *testing.T) {
	if err := emu.Check(); err != nil {
		t.Skipf("no emulated hosts here: %v", err)
	}
	if testing.Short() || os.Getenv("NICFLOW_SKIP_NETNS") != "" {
		t.Skip("-short or NICFLOW_SKIP_NETNS is set")
	}
	exe, _ := os.Executable()
	t.Setenv("NICFLOW_BENCH_CHILD", "1")
	rows, err := RunShuffle(context.Background(), ShuffleOptions{
		Apps: []string{"histogram"}, Nodes: 2, RanksPerNode: 2, AggSizes: []int{4096}, Buffers: []int{4}, Threads: []int{1},
		Agents: []string{"corun", "offload"}, Codecs: []string{"none"}, Updates: 20000, TableSize: 100, Binary: exe,
		Timeout: time.Minute, EmulateDPU: true, HostCPUs: 0.3, DPUCPUs: 0.2,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Msgs != 80000 || rows[1].Msgs != 80000 {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		if r.HostCPUs != 0.3 || r.DPUCPUs != 0.2 {
			t.Errorf("%s: quotas %g/%g in the row", r.Agent, r.HostCPUs, r.DPUCPUs)
		}
	}
	if rows[1].AgentCPUS <= 0 {
		t.Errorf("offloaded agents' CPU not measured: %+v", rows[1])
	}
	if left, _ := emu.Leftovers(ShufflePrefix); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestShuffleOptionsValidate(t *testing.T) {
	for name, mut := range map[string]func(*ShuffleOptions){
		"app":   func(o *ShuffleOptions) { o.Apps = []string{"sort"} },
		"agent": func(o *ShuffleOptions) { o.Agents = []string{"dpu"} },
		"codec": func(o *ShuffleOptions) { o.Codecs = []string{"brotli"} },
		"nodes": func(o *ShuffleOptions) { o.Nodes = 0 },
		"agg":   func(o *ShuffleOptions) { o.AggSizes = []int{10} },
		"local": func(o *ShuffleOptions) { o.Local = "tcp" },
	} {
		o := DefaultShuffleOptions()
		mut(&o)
		if err := o.Validate(); !nferr.Is(err, nferr.KindQuery) {
			t.Errorf("%s: got %v, want KindQuery", name, err)
		}
	}
	o := DefaultShuffleOptions()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestReadShuffleCSVErrors(t *testing.T) {
	for _, in := range []string{"", "app,agg_size\nhistogram,1\n", "app,agg_size,buffers,threads,agent,msgs_per_s\nhistogram,x,1,1,corun,5\n"} {
		if _, err := ReadShuffleCSV(strings.NewReader(in)); !nferr.Is(err, nferr.KindData) {
			t.Errorf("%q: got %v, want KindData", in, err)
		}
	}
}

func TestCheckShuffle(t *testing.T) {
	c := shuffleConfig{app: "histogram", nodes: 2, ranksPerNode: 2, updates: 10}
	if err := checkShuffle(c, 40, 40, 40, 0); err != nil {
		t.Fatal(err)
	}
	if err := checkShuffle(c, 40, 39, 39, 0); err == nil {
		t.Fatal("a lost update passed the check")
	}
	c = shuffleConfig{app: "transpose"}
	if err := checkShuffle(c, 5, 5, 7, 8); err == nil {
		t.Fatal("a wrong transpose checksum passed")
	}
}

var rewriteShuffle = flag.Bool("rewrite-shuffle", false, "rewrite bench/testdata/shuffle_*.golden instead of comparing")

// TestShuffleOutputGolden pins the table, the CSV and one chart for fixed
// rows (rewrite with -rewrite-shuffle).
func TestShuffleOutputGolden(t *testing.T) {
	rows := []ShuffleRow{
		{App: "histogram", Nodes: 4, RanksPerNode: 4, AggSize: 1024, Buffers: 8, Threads: 2, Agent: "corun", Codec: "none",
			Msgs: 16777216, Bytes: 134217728, ElapsedS: 4.734, MsgsPerS: 3544088, MBPerS: 28.35, WorkerCPUS: 4.68, RemoteFrames: 232000, AvgFrameBytes: 907, WireMB: 210.6, Parks: 12},
		{App: "histogram", Nodes: 4, RanksPerNode: 4, AggSize: 16384, Buffers: 8, Threads: 2, Agent: "corun", Codec: "none",
			Msgs: 16777216, Bytes: 134217728, ElapsedS: 1.815, MsgsPerS: 9243645, MBPerS: 73.9, WorkerCPUS: 2.08, RemoteFrames: 18700, AvgFrameBytes: 10817, WireMB: 202.1},
		{App: "histogram", Nodes: 4, RanksPerNode: 4, AggSize: 1024, Buffers: 8, Threads: 2, Agent: "offload", Codec: "none",
			Msgs: 16777216, Bytes: 134217728, ElapsedS: 3.848, MsgsPerS: 4360000, MBPerS: 34.9, WorkerCPUS: 2.67, AgentCPUS: 4.28, RemoteFrames: 207000, AvgFrameBytes: 1014, WireMB: 209.6},
		{App: "histogram", Nodes: 4, RanksPerNode: 4, AggSize: 16384, Buffers: 8, Threads: 2, Agent: "offload", Codec: "none",
			Msgs: 16777216, Bytes: 134217728, ElapsedS: 1.749, MsgsPerS: 9590000, MBPerS: 76.7, WorkerCPUS: 1.35, AgentCPUS: 1.20, RemoteFrames: 17300, AvgFrameBytes: 11665, WireMB: 202.0},
	}
	var out bytes.Buffer
	WriteShuffleTable(&out, rows)
	out.WriteString("---\n")
	WriteShuffleCSV(&out, rows)
	dir := t.TempDir()
	if _, err := PlotShuffle(rows, dir); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "msgs_vs_agg_size.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]byte{"shuffle_output.golden": out.Bytes(), "shuffle_chart.golden": svg} {
		path := filepath.Join("testdata", name)
		if *rewriteShuffle {
			os.MkdirAll("testdata", 0o755)
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -rewrite-shuffle to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs (rerun with -rewrite-shuffle if intended):\n%s", path, got)
		}
	}
}
