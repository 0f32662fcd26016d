package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/nicflow/nicflow/bench/emu"
	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/shuffle"
	"github.com/nicflow/nicflow/storage"
	"github.com/nicflow/nicflow/tpch"
)

// The emulated Lovelock experiment (`nicflow bench lovelock run`): the
// same TPC-H queries on a "server" cluster and on "Lovelock" clusters of
// phi smart NICs per server, every host a network namespace with its own
// shaped NIC and a CPU cgroup (bench/emu), storage disaggregated on hosts
// of its own so that scans cross the NICs as shuffles do.

// QueryRunner runs a TPC-H query text (a script for Q15) on a cluster and
// returns its answer, every row in canonical text.
type QueryRunner func(ctx context.Context, text string) (tpch.Result, error)

// LovelockRunOptions configure the experiment.
type LovelockRunOptions struct {
	// Dir is a TPC-H database made by `nicflow tpch gen`. The clusters
	// keep their state (keys, logs, storage nodes' copies) under
	// Dir/cluster, so the tables are placed on the storage hosts once.
	// Required.
	Dir string
	// SF is the data's scale factor. Answers are checked against the
	// reference answers at SF 0.01, 0.1 and 1, at other scale factors
	// against the server's answers.
	SF float64
	// Phi lists the Lovelock clusters to run: phi NICs per server.
	// Default 1, 2, 3.
	Phi []int
	// Queries to run. Default 1-22.
	Queries []int
	// Runs of each query in a row; the fastest counts. Default 1.
	Runs int
	// NICMbit is every NIC's rate (the server's and each smart NIC's, as
	// in the paper's Table 1 a NIC port is as fast as a server's), in
	// Mbit/s both ways. Default 200.
	NICMbit float64
	// CPURatio is how many smart NICs make one server's CPU: each Lovelock
	// worker gets ServerCores/CPURatio cores. Default 4.7 (the paper's
	// median, Figure 3).
	CPURatio float64
	// ServerCores is the server's CPU quota in cores. Default: every core
	// of this machine (it then overlaps the storage hosts' quotas, which
	// matters only while both are busy: the rows' CPU figures tell).
	ServerCores float64
	// Storage is the number of storage hosts. Default 1.
	Storage int
	// StorageMbit is each storage host's NIC rate. Default 0: unshaped,
	// so storage is never the bottleneck (a disaggregated storage service
	// spread over many machines, as BigQuery's is).
	StorageMbit float64
	// StorageCPUs is each storage host's CPU quota in cores: the same in
	// every configuration, so the storage service is the same for the
	// server and for every Lovelock cluster. Default: a quarter of this
	// machine's cores, shared by the storage hosts.
	StorageCPUs float64
	// ScanCodec is the compression the workers ask the storage hosts to
	// apply to scans ("none", "lz4", "zstd"; cluster.Options.ScanCodec),
	// and ShuffleCodec the one their shuffle agents apply between workers
	// ("none", "s2", "zstd"; cluster.Options.ShuffleCodec). Default "none".
	ScanCodec, ShuffleCodec string
	// ScanMode is how the storage hosts serve the workers' scans: "auto"
	// (default), "bytes" or "rows" (cluster.Options.ScanMode).
	ScanMode string
	// CS, PS, CP, PP and CF are the cost model's inputs (relative to one
	// smart NIC) for the cost and energy ratios. Defaults: the paper's 7,
	// 11, 0, 0, 0.7.
	CS, PS, CP, PP, CF float64
	// Exe is the nicflow binary the nodes run. Default: this executable.
	Exe string
	// Prefix names the emulated hosts (bench/emu). Default "nflv".
	Prefix string
	// Progress receives a line per configuration and query. Default: none.
	Progress io.Writer
	// Connect is called with each started cluster: it places the tables on
	// the storage nodes and returns a runner for query texts and a function
	// that closes the connection. Required.
	Connect func(ctx context.Context, lc *cluster.LocalCluster) (QueryRunner, func(), error)
}

// DefaultLovelockRunOptions returns the defaults (Dir, SF and Connect
// unset).
func DefaultLovelockRunOptions() LovelockRunOptions {
	o := LovelockRunOptions{}
	o.setDefaults()
	return o
}

func (o *LovelockRunOptions) setDefaults() {
	if len(o.Phi) == 0 {
		o.Phi = []int{1, 2, 3}
	}
	if len(o.Queries) == 0 {
		for q := 1; q <= tpch.NumQueries; q++ {
			o.Queries = append(o.Queries, q)
		}
	}
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.NICMbit, 200)
	def(&o.CPURatio, PaperCPURatio)
	if o.Storage == 0 {
		o.Storage = 1
	}
	def(&o.StorageCPUs, float64(runtime.NumCPU())/4/float64(o.Storage))
	def(&o.ServerCores, float64(runtime.NumCPU()))
	def(&o.CS, PaperCS)
	def(&o.PS, PaperPS)
	def(&o.CF, PaperCF)
	if o.Runs == 0 {
		o.Runs = 1
	}
	if o.Prefix == "" {
		o.Prefix = LovelockPrefix
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.ScanCodec == "" {
		o.ScanCodec = "none"
	}
	if o.ShuffleCodec == "" {
		o.ShuffleCodec = "none"
	}
}

// Validate sets defaults and checks the options.
func (o *LovelockRunOptions) Validate() error {
	o.setDefaults()
	switch {
	case o.Dir == "":
		return nferr.Queryf("lovelock: a TPC-H database directory is required")
	case o.SF <= 0:
		return nferr.Queryf("lovelock: the scale factor must be positive")
	case o.Connect == nil:
		return nferr.Internalf("lovelock: no Connect function")
	case o.Runs < 1 || o.Runs > 100:
		return nferr.Queryf("lovelock: runs must be between 1 and 100")
	case o.Storage < 1 || o.Storage > 16:
		return nferr.Queryf("lovelock: 1 to 16 storage hosts, not %d", o.Storage)
	case o.NICMbit < 0.1 || o.NICMbit > 1e6:
		return nferr.Queryf("lovelock: NIC rate %g Mbit/s: want 0.1 to 1000000", o.NICMbit)
	case o.StorageMbit < 0 || o.StorageMbit > 1e6:
		return nferr.Queryf("lovelock: storage NIC rate %g Mbit/s: want 0 (unshaped) to 1000000", o.StorageMbit)
	case o.CPURatio < 1 || o.CPURatio > 100:
		return nferr.Queryf("lovelock: CPU ratio %g: want 1 to 100 (smart NICs per server's CPU)", o.CPURatio)
	case o.ServerCores < 0.1 || o.ServerCores > 1024:
		return nferr.Queryf("lovelock: server cores %g: want 0.1 to 1024", o.ServerCores)
	case o.StorageCPUs < 0.05 || o.StorageCPUs > 1024:
		return nferr.Queryf("lovelock: storage CPUs %g: want 0.05 to 1024", o.StorageCPUs)
	case o.ServerCores/o.CPURatio < 0.01:
		return nferr.Queryf("lovelock: a smart NIC would get %.4f cores: raise the server's cores or lower the CPU ratio", o.ServerCores/o.CPURatio)
	}
	if err := storage.CheckScanCodec(o.ScanCodec); err != nil {
		return err
	}
	if o.ScanMode == "" {
		o.ScanMode = storage.ScanModeAuto
	}
	if err := storage.CheckScanMode(o.ScanMode); err != nil {
		return err
	}
	if _, err := shuffle.ParseCodec(o.ShuffleCodec); err != nil {
		return err
	}
	for _, p := range o.Phi {
		if p < 1 || p > 32 {
			return nferr.Queryf("lovelock: phi %d: want 1 to 32", p)
		}
	}
	for _, q := range o.Queries {
		if q < 1 || q > tpch.NumQueries {
			return nferr.Queryf("lovelock: no TPC-H query %d", q)
		}
	}
	s := ModelScenario{Name: "lovelock", Phi: 1, Mu: 1, CS: o.CS, PS: o.PS, CP: o.CP, PP: o.PP, CF: o.CF}
	return s.Validate()
}

// LovelockRow is one query (or "total") on one configuration.
type LovelockRow struct {
	// Config is "server" or "lovelock-phiN"; Phi is N (1 for the server).
	Config string `json:"config"`
	Phi    int    `json:"phi"`
	Query  string `json:"query"`
	// Ms is the query's time (the fastest run); Mu is Ms over the server's.
	Ms float64 `json:"ms"`
	Mu float64 `json:"mu"`
	// NetBytes is every byte the hosts sent (storage reads, shuffles,
	// results, control); StorageBytes what the storage hosts sent,
	// WorkerBytes what the workers sent (shuffles and results). Frames on
	// the wire, TCP/IP and TLS included.
	NetBytes     int64 `json:"net_bytes"`
	StorageBytes int64 `json:"storage_bytes"`
	WorkerBytes  int64 `json:"worker_bytes"`
	// CPUS is the workers' CPU seconds; StorageCPUS the storage hosts'.
	CPUS        float64 `json:"cpu_s"`
	StorageCPUS float64 `json:"storage_cpu_s"`
	// CPUShare is the workers' CPU seconds over their CPU capacity for the
	// query's time: the share of the time the compute was busy, the rest
	// being network (and waiting). NICBusy is the busiest worker NIC's
	// bytes (the busier direction) over what its rate allows in that time.
	CPUShare float64 `json:"cpu_share"`
	NICBusy  float64 `json:"nic_busy"`
	// ProjectedMu is the paper's projection (Figure 4) from the server's
	// measured CPU share for this query: (k c + 1 - c) / phi.
	ProjectedMu float64 `json:"projected_mu"`
	// CostRatio, EnergyRatio and CostRatioFabric are the model's ratios
	// (server cluster over Lovelock cluster) with the measured mu.
	CostRatio       float64 `json:"cost_ratio"`
	EnergyRatio     float64 `json:"energy_ratio"`
	CostRatioFabric float64 `json:"cost_ratio_fabric"`
	// Answer is "ok" or what is wrong with the answer.
	Answer string `json:"answer"`
}

// LovelockColumns are the CSV columns of the experiment's output.
var LovelockColumns = []string{"config", "phi", "query", "ms", "mu", "net_bytes", "storage_bytes", "worker_bytes",
	"cpu_s", "storage_cpu_s", "cpu_share", "nic_busy", "projected_mu", "cost_ratio", "energy_ratio", "cost_ratio_fabric", "answer"}

func (r LovelockRow) fields() []string {
	f := func(v float64, p int) string { return strconv.FormatFloat(v, 'f', p, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []string{r.Config, strconv.Itoa(r.Phi), r.Query, f(r.Ms, 1), f(r.Mu, 3), i(r.NetBytes), i(r.StorageBytes), i(r.WorkerBytes),
		f(r.CPUS, 3), f(r.StorageCPUS, 3), f(r.CPUShare, 3), f(r.NICBusy, 3), f(r.ProjectedMu, 3),
		f(r.CostRatio, 3), f(r.EnergyRatio, 3), f(r.CostRatioFabric, 3), r.Answer}
}

// lovelockConfig is one cluster of the experiment.
type lovelockConfig struct {
	name    string
	phi     int
	workers int
	cpus    float64 // per worker
}

func (o *LovelockRunOptions) configs() []lovelockConfig {
	cs := []lovelockConfig{{name: "server", phi: 1, workers: 1, cpus: o.ServerCores}}
	for _, p := range o.Phi {
		cs = append(cs, lovelockConfig{name: fmt.Sprintf("lovelock-phi%d", p), phi: p, workers: p, cpus: o.ServerCores / o.CPURatio})
	}
	return cs
}

// measured is one query's best run on one configuration.
type measured struct {
	ms             float64
	d              emu.Sample
	answer         tpch.Result
	verdict        string
	hosts          []emu.HostSpec
	storage, nodes int
}

// RunLovelock runs the experiment: the server cluster, then each Lovelock
// cluster, every query on each, and returns one row per configuration and
// query plus a "total" row per configuration. Wrong answers are reported
// in the rows' Answer (the caller fails the run); a failed query fails it
// at once. Everything the run made is removed on return, on error and on
// cancel.
func RunLovelock(ctx context.Context, o LovelockRunOptions) ([]LovelockRow, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := emu.Check(); err != nil {
		return nil, err
	}
	var err error
	if o.Exe, err = executable(o.Exe); err != nil {
		return nil, err
	}
	maxPhi := 0
	for _, p := range o.Phi {
		maxPhi = max(maxPhi, p)
	}
	storageCPUs := o.StorageCPUs * float64(o.Storage)
	if q := float64(maxPhi)*o.ServerCores/o.CPURatio + storageCPUs; q > float64(runtime.NumCPU())+1e-9 {
		fmt.Fprintf(o.Progress, "warning: at phi %d the workers and storage ask for %.2f cores, more than this machine's %d: hosts will compete for CPU instead of getting their quotas\n",
			maxPhi, q, runtime.NumCPU())
	}
	configs := o.configs()
	results := make([]map[int]measured, len(configs))
	var reference map[int]tpch.Result // the server's answers, where no reference answer exists
	if !tpch.HasAnswers(o.SF) {
		reference = map[int]tpch.Result{}
		fmt.Fprintf(o.Progress, "note: no reference answers at SF %g: the Lovelock clusters' answers are checked against the server's\n", o.SF)
	}
	for i, c := range configs {
		res, err := runLovelockConfig(ctx, &o, c, reference)
		if err != nil {
			return nil, err
		}
		results[i] = res
	}
	return lovelockRows(&o, configs, results), nil
}

func runLovelockConfig(ctx context.Context, o *LovelockRunOptions, c lovelockConfig, reference map[int]tpch.Result) (map[int]measured, error) {
	hosts := []emu.HostSpec{{Name: "coord", NICMbit: o.NICMbit}}
	for i := 1; i <= o.Storage; i++ {
		hosts = append(hosts, emu.HostSpec{Name: fmt.Sprintf("store%d", i), NICMbit: o.StorageMbit, CPUs: o.StorageCPUs})
	}
	for i := 1; i <= c.workers; i++ {
		hosts = append(hosts, emu.HostSpec{Name: fmt.Sprintf("w%d", i), NICMbit: o.NICMbit, CPUs: c.cpus})
	}
	fmt.Fprintf(o.Progress, "%s: %d worker host(s) with %.2f cores and a %g Mbit/s NIC each, %d storage host(s) with %.2f cores\n", c.name, c.workers, c.cpus, o.NICMbit, o.Storage, o.StorageCPUs)
	lab, err := emu.New(ctx, emu.Options{Prefix: o.Prefix, Hosts: hosts})
	if err != nil {
		return nil, err
	}
	defer lab.Close()
	place := func(_ cluster.Role, id string) (string, []string) {
		name := "coord"
		if n, ok := strings.CutPrefix(id, "worker-"); ok {
			name = "w" + n
		} else if n, ok := strings.CutPrefix(id, "storage-"); ok {
			name = "store" + n
		}
		h := lab.Host(name)
		return h.Addr(), h.Wrap()
	}
	cores := strconv.Itoa(max(1, int(math.Ceil(c.cpus-1e-9))))
	lc, err := cluster.StartLocal(ctx, cluster.LocalOptions{
		Dir: o.Dir, Workers: c.workers, Storage: o.Storage, Exe: o.Exe, Place: place, StartTimeout: 2 * time.Minute,
		Extra: map[cluster.Role][]string{
			// Scans must cross the NICs: no short-circuit reads of the
			// storage hosts' files (which share this machine's disk).
			cluster.RoleWorker:  {"--cores", cores, "--no-local-reads", "--scan-codec", o.ScanCodec, "--scan-mode", o.ScanMode, "--shuffle-codec", o.ShuffleCodec},
			cluster.RoleStorage: {"--no-local-reads"},
		},
	})
	if err != nil {
		return nil, err
	}
	defer lc.Stop()
	run, closeConn, err := o.Connect(ctx, lc)
	if err != nil {
		return nil, err
	}
	defer closeConn()
	out := map[int]measured{}
	for _, q := range o.Queries {
		params := tpch.DefaultParams(q, o.SF)
		if p, ok := tpch.AnswerParams(q, o.SF); ok {
			params = p
		}
		text, err := tpch.Query(q, params)
		if err != nil {
			return nil, err
		}
		best := measured{ms: math.Inf(1), hosts: hosts, storage: o.Storage, nodes: c.workers}
		for r := 0; r < o.Runs; r++ {
			if err := ctx.Err(); err != nil {
				return nil, nferr.With(nferr.KindCanceled, err)
			}
			before, err := lab.Sample()
			if err != nil {
				return nil, err
			}
			got, err := run(ctx, text)
			if err != nil {
				return nil, nferr.Wrap(nferr.KindOf(err), err, "%s Q%d", c.name, q)
			}
			after, err := lab.Sample()
			if err != nil {
				return nil, err
			}
			d := after.Sub(before)
			ms := float64(d.At.Sub(before.At)) / 1e6
			verdict := "ok"
			switch {
			case reference == nil:
				if err := tpch.CheckAnswer(q, o.SF, got); err != nil {
					verdict = err.Error()
				}
			case c.name == "server":
				reference[q] = got
			default:
				if err := tpch.CompareAnswers(q, o.SF, reference[q], got); err != nil {
					verdict = err.Error()
				}
			}
			if ms < best.ms {
				best.ms, best.d = ms, d
			}
			if best.verdict == "" || best.verdict == "ok" {
				best.verdict = verdict
			}
		}
		out[q] = best
		wcpu, _, _, _ := best.split()
		fmt.Fprintf(o.Progress, "%s Q%d: %.0f ms, %s sent over the network, workers' CPU %.2f s, answer %s\n",
			c.name, q, best.ms, formatMB(sum(best.d.Sent)), wcpu, shortVerdict(best.verdict))
	}
	return out, nil
}

// split sums a measurement's counters by kind of host: workers' CPU,
// storage CPU, storage bytes sent, workers' bytes sent.
func (m measured) split() (workerCPU, storageCPU float64, storageSent, workerSent int64) {
	for i, h := range m.hosts {
		switch {
		case strings.HasPrefix(h.Name, "w"):
			workerCPU += m.d.CPU[i].Seconds()
			workerSent += m.d.Sent[i]
		case strings.HasPrefix(h.Name, "store"):
			storageCPU += m.d.CPU[i].Seconds()
			storageSent += m.d.Sent[i]
		}
	}
	return
}

// busiestNIC is the largest byte count in one direction of one worker NIC.
func (m measured) busiestNIC() int64 {
	var b int64
	for i, h := range m.hosts {
		if strings.HasPrefix(h.Name, "w") {
			b = max(b, m.d.Sent[i], m.d.Received[i])
		}
	}
	return b
}

func sum(v []int64) int64 {
	var s int64
	for _, x := range v {
		s += x
	}
	return s
}

func formatMB(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }

func shortVerdict(v string) string {
	if v == "ok" {
		return "ok"
	}
	return "WRONG: " + v
}

// lovelockRows turns the measurements into rows, mu and projections
// included, with a total row per configuration.
func lovelockRows(o *LovelockRunOptions, configs []lovelockConfig, results []map[int]measured) []LovelockRow {
	nicBytesPerMs := o.NICMbit * 1e6 / 8 / 1000
	type acc struct {
		ms, cpu, scpu  float64
		net, st, wk    int64
		busyMs         float64
		wrong          int
		firstWrong     string
		capacityCoreMs float64
	}
	var rows []LovelockRow
	serverShare := map[string]float64{} // query -> the server's CPU share
	serverMs := map[string]float64{}
	for ci, c := range configs {
		capacity := float64(c.workers) * c.cpus
		var a acc
		model := func(r *LovelockRow) {
			if c.name == "server" {
				r.Mu, r.ProjectedMu, r.CostRatio, r.EnergyRatio, r.CostRatioFabric = 1, 1, 1, 1, 1
				return
			}
			r.Mu = r.Ms / serverMs[r.Query]
			r.ProjectedMu = ProjectedMu(serverShare[r.Query], o.CPURatio, float64(c.phi))
			res := ModelScenario{Phi: float64(c.phi), Mu: r.Mu, CS: o.CS, PS: o.PS, CP: o.CP, PP: o.PP, CF: o.CF}.Evaluate()
			r.CostRatio, r.EnergyRatio, r.CostRatioFabric = res.Cost, res.Energy, res.CostFabric
		}
		for _, q := range o.Queries {
			m := results[ci][q]
			wcpu, scpu, st, wk := m.split()
			r := LovelockRow{Config: c.name, Phi: c.phi, Query: fmt.Sprintf("Q%d", q), Ms: m.ms,
				NetBytes: sum(m.d.Sent), StorageBytes: st, WorkerBytes: wk, CPUS: wcpu, StorageCPUS: scpu,
				CPUShare: math.Min(1, wcpu*1000/(m.ms*capacity)), NICBusy: float64(m.busiestNIC()) / (nicBytesPerMs * m.ms), Answer: m.verdict}
			if c.name == "server" {
				serverShare[r.Query], serverMs[r.Query] = r.CPUShare, r.Ms
			}
			model(&r)
			rows = append(rows, r)
			a.ms += m.ms
			a.cpu += wcpu
			a.scpu += scpu
			a.net += r.NetBytes
			a.st += st
			a.wk += wk
			a.busyMs += r.NICBusy * m.ms
			if m.verdict != "ok" {
				a.wrong++
				if a.firstWrong == "" {
					a.firstWrong = fmt.Sprintf("Q%d: %s", q, m.verdict)
				}
			}
		}
		t := LovelockRow{Config: c.name, Phi: c.phi, Query: "total", Ms: a.ms, NetBytes: a.net, StorageBytes: a.st, WorkerBytes: a.wk,
			CPUS: a.cpu, StorageCPUS: a.scpu, CPUShare: math.Min(1, a.cpu*1000/(a.ms*capacity)), NICBusy: a.busyMs / a.ms, Answer: "ok"}
		if a.wrong > 0 {
			t.Answer = fmt.Sprintf("%d wrong (%s)", a.wrong, a.firstWrong)
		}
		if c.name == "server" {
			serverShare["total"], serverMs["total"] = t.CPUShare, t.Ms
		}
		model(&t)
		rows = append(rows, t)
	}
	return rows
}

// WriteLovelockRun prints the rows as "table", "csv" or "json"; the table
// ends with the summary.
func WriteLovelockRun(w io.Writer, format string, rows []LovelockRow, title string) error {
	fields := make([][]string, len(rows))
	for i, r := range rows {
		fields[i] = r.fields()
	}
	return writeFormatted(w, format, rows, LovelockColumns, fields, func() {
		if title != "" {
			fmt.Fprintln(w, title)
		}
		header := []string{"config", "query", "ms", "mu", "projected", "net MB", "storage MB", "worker MB", "cpu s", "storage cpu s", "cpu share", "NIC busy", "answer"}
		var out [][]string
		for _, r := range rows {
			ans := r.Answer
			if ans != "ok" {
				ans = "WRONG"
			}
			out = append(out, []string{r.Config, r.Query, fmt.Sprintf("%.0f", r.Ms), fmt.Sprintf("%.2f", r.Mu), fmt.Sprintf("%.2f", r.ProjectedMu),
				mb(r.NetBytes), mb(r.StorageBytes), mb(r.WorkerBytes), fmt.Sprintf("%.2f", r.CPUS), fmt.Sprintf("%.2f", r.StorageCPUS),
				pct(r.CPUShare), pct(r.NICBusy), ans})
		}
		WriteAligned(w, header, out, func(c int) bool { return c <= 1 || c == len(header)-1 })
		fmt.Fprintln(w)
		for _, line := range LovelockSummary(rows) {
			fmt.Fprintln(w, line)
		}
	})
}

func mb(b int64) string      { return fmt.Sprintf("%.1f", float64(b)/1e6) }
func pct(v float64) string   { return fmt.Sprintf("%.0f%%", v*100) }
func ratio(v float64) string { return fmt.Sprintf("%.2fx", v) }

// LovelockSummary says, per Lovelock configuration, the measured and the
// projected mu of the total and the ratios that follow.
func LovelockSummary(rows []LovelockRow) []string {
	var out []string
	var server *LovelockRow
	for i := range rows {
		r := &rows[i]
		if r.Query != "total" {
			continue
		}
		if r.Config == "server" {
			server = r
			out = append(out, fmt.Sprintf("server: %.1f s for the queries, workers' CPU busy %s of the time, its NIC %s busy",
				r.Ms/1000, pct(r.CPUShare), pct(r.NICBusy)))
			continue
		}
		verdict := "slower than the server"
		if r.Mu < 1 {
			verdict = "faster than the server"
		}
		line := fmt.Sprintf("%s: mu %.2f (%s; the paper's projection from the server's %s CPU share: %.2f); cost %s, energy %s, cost with fabric %s lower than the server",
			r.Config, r.Mu, verdict, pct(serverShareOf(server)), r.ProjectedMu, ratio(r.CostRatio), ratio(r.EnergyRatio), ratio(r.CostRatioFabric))
		out = append(out, line)
	}
	return out
}

func serverShareOf(r *LovelockRow) float64 {
	if r == nil {
		return 0
	}
	return r.CPUShare
}

// ReadLovelockCSV reads rows written by WriteLovelockRun's CSV.
func ReadLovelockCSV(r io.Reader) ([]LovelockRow, error) {
	t, err := readCSVTable(r, "lovelock", "config", "phi", "query", "ms", "mu", "cpu_share", "projected_mu")
	if err != nil {
		return nil, err
	}
	var rows []LovelockRow
	err = t.each(func(c *csvRow) {
		rows = append(rows, LovelockRow{Config: c.str("config"), Phi: c.int("phi"), Query: c.str("query"), Ms: c.float("ms"), Mu: c.float("mu"),
			NetBytes: int64(c.float("net_bytes")), StorageBytes: int64(c.float("storage_bytes")), WorkerBytes: int64(c.float("worker_bytes")),
			CPUS: c.float("cpu_s"), StorageCPUS: c.float("storage_cpu_s"), CPUShare: c.float("cpu_share"), NICBusy: c.float("nic_busy"),
			ProjectedMu: c.float("projected_mu"), CostRatio: c.float("cost_ratio"), EnergyRatio: c.float("energy_ratio"),
			CostRatioFabric: c.float("cost_ratio_fabric"), Answer: c.str("answer")})
	})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nferr.Dataf("lovelock CSV has no rows")
	}
	return rows, nil
}
