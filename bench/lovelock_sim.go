package bench

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/nicflow/nicflow/internal/nferr"
)

// The Lovelock simulator: what one machine cannot host, projected from
// what it measured.
//
// `bench lovelock run` measures, per query, the server's time and what it
// used: the workers' CPU seconds, the storage hosts' CPU seconds, the bytes
// the storage hosts sent, and (from its phi-2 configuration) the bytes the
// workers shuffled. The simulator turns that profile into a time on N
// worker nodes of c cores and b bit/s each:
//
//	cpu      W (c/c_s)^gamma / (N c)      the workers' CPU work, spread;
//	                                      gamma: work a smaller node saves
//	                                      (fewer threads, less contention)
//	net      (B_st + R (N-1)/N) / (N b)   storage reads and the share of the
//	                                      repartitioned bytes R that leaves
//	                                      a node, into N NICs
//	storage  S / s                        the storage hosts' CPU (s cores)
//	machine  (W' + S + k_net bytes) / m   only when validating against an
//	                                      emulation: every emulated host and
//	                                      the kernel's network path share the
//	                                      machine's m cores
//
// and the query's time is the largest (the others overlap with it), plus
// the server's residual (its measured time beyond its own bottleneck: a
// latency no resource explains) and a fixed cost per task: each of the
// query's stages runs a task on every node, and planning, starting and
// reporting one costs TaskCost (the coordinator serializes that part). The
// result is the model's mu(phi) = T(phi NICs) / T(server), with the cost
// and energy ratios of the paper (CostRatio, EnergyRatio).
//
// gamma, TaskCost and NetCPU are calibrated on the emulated runs of
// docs/lovelock (5 runs, 18 configurations; the closing lines of Validate
// print the error of each); they are inputs, and should be measured
// again on the hardware a projection is for.

// SimParams are the simulator's inputs besides the profile.
type SimParams struct {
	// NICMbit is each worker node's link (the server's too); ServerCores
	// the server's cores; CPURatio the server's cores over a NIC's (k).
	NICMbit, ServerCores, CPURatio float64
	// StorageCPUs are the storage hosts' cores (the same in every
	// configuration, as in `bench lovelock run`).
	StorageCPUs float64
	// Gamma is how CPU work shrinks on smaller nodes (see above; 0.15).
	Gamma float64
	// TaskCost is the fixed cost of one task in seconds (0.014); Stages
	// the stages per query when the profile does not say (3.5).
	TaskCost, Stages float64
	// MachineCores > 0 caps the CPU of all hosts together (an emulation on
	// one machine); NetCPU is the CPU seconds a GB moved costs it (3).
	MachineCores, NetCPU float64
	// CS, PS, CP, PP, CF: the cost model's inputs (ModelScenario).
	CS, PS, CP, PP, CF float64
}

// DefaultSimParams are the calibrated defaults (see the file comment).
func DefaultSimParams() SimParams {
	return SimParams{NICMbit: 200, ServerCores: 2, CPURatio: 4.7, StorageCPUs: 0.5, Gamma: 0.15, TaskCost: 0.014, Stages: 3.5,
		NetCPU: 3, CS: 7, PS: 11, CP: 0, PP: 0, CF: 0.7}
}

// Validate checks the parameters.
func (p *SimParams) Validate() error {
	switch {
	case p.NICMbit <= 0 || p.ServerCores <= 0 || p.CPURatio <= 0 || p.StorageCPUs <= 0:
		return nferr.Queryf("simulate: NIC rate, server cores, CPU ratio and storage CPUs must be positive")
	case p.Gamma < 0 || p.Gamma > 1:
		return nferr.Queryf("simulate: gamma %g: want 0 to 1", p.Gamma)
	case p.TaskCost < 0 || p.Stages < 0 || p.MachineCores < 0 || p.NetCPU < 0:
		return nferr.Queryf("simulate: task cost, stages, machine cores and network CPU must not be negative")
	}
	return nil
}

// SimQuery is one query's measured profile (the server's run).
type SimQuery struct {
	Query string
	// Seconds is the server's time; WorkerCPU and StorageCPU its CPU
	// seconds; StorageBytes what storage sent; ShuffleBytes the bytes a
	// repartition of its plan moves in all (R).
	Seconds, WorkerCPU, StorageCPU float64
	StorageBytes, ShuffleBytes     float64
}

// SimProfile reads the queries' profiles from a `bench lovelock run` CSV:
// the server's rows, and the shuffled bytes of its phi-2 rows (R = 2 x
// what the workers sent: half of a repartition stays on its node).
func SimProfile(rows []LovelockRow) ([]SimQuery, error) {
	phi2 := map[string]float64{}
	for _, r := range rows {
		if r.Config == "lovelock-phi2" {
			phi2[r.Query] = 2 * float64(r.WorkerBytes)
		}
	}
	var out []SimQuery
	for _, r := range rows {
		if r.Config != "server" || r.Query == "total" {
			continue
		}
		out = append(out, SimQuery{Query: r.Query, Seconds: r.Ms / 1000, WorkerCPU: r.CPUS, StorageCPU: r.StorageCPUS,
			StorageBytes: float64(r.StorageBytes), ShuffleBytes: phi2[r.Query]})
	}
	if len(out) == 0 {
		return nil, nferr.Dataf("simulate: the CSV has no server rows to take the profile from")
	}
	return out, nil
}

// simTime is a query's time on n nodes of cores each (without the fixed
// costs), of a cluster of total nodes (the share of a repartition that
// leaves a node: (total-1)/total), and the resource that bounds it.
func (p SimParams) simTime(q SimQuery, n, total, cores float64) (float64, string) {
	work := q.WorkerCPU * math.Pow(cores/p.ServerCores, p.Gamma)
	shuffled := q.ShuffleBytes * (total - 1) / total
	parts := []struct {
		name string
		t    float64
	}{
		{"cpu", work / (n * cores)},
		{"net", (q.StorageBytes + shuffled) * 8 / (n * p.NICMbit * 1e6)},
		{"storage", q.StorageCPU / p.StorageCPUs},
	}
	if p.MachineCores > 0 {
		parts = append(parts, struct {
			name string
			t    float64
		}{"machine", (work + q.StorageCPU + p.NetCPU*(q.StorageBytes+2*shuffled)/1e9) / p.MachineCores})
	}
	best, name := 0.0, ""
	for _, x := range parts {
		if x.t > best {
			best, name = x.t, x.name
		}
	}
	return best, name
}

// SimResult is a configuration's projection.
type SimResult struct {
	Config string
	// Nodes are the worker nodes (phi per server); Phi the NICs per server.
	Nodes int
	Phi   float64
	// Seconds is the projected total; Mu it over the server's projected
	// total; Bound the resource that bounds most of the time.
	Seconds, Mu float64
	Bound       string
	// Measured is the measured total where the CSV has it (0: none).
	Measured                           float64
	CostRatio, EnergyRatio, FabricCost float64
}

// Simulate projects the profile on the server and on phi NICs for each of
// phis (servers: how many servers the cluster replaces, each with phi
// NICs; data grows with the servers, so per node the work is the same and
// the fixed costs grow with the nodes).
func Simulate(p SimParams, qs []SimQuery, phis []float64, servers int) []SimResult {
	run := func(n, cores float64) (float64, string) {
		total := 0.0
		byBound := map[string]float64{}
		for _, q := range qs {
			t, b := p.simTime(q, n/float64(servers), n, cores)
			// The server's residual: what its own bottleneck leaves
			// unexplained (latency, a serial tail).
			base, _ := p.simTime(q, 1, 1, p.ServerCores)
			t += max(q.Seconds-base, 0)
			t += p.TaskCost * p.Stages * (n - 1)
			total += t
			byBound[b] += t
		}
		bound, most := "", 0.0
		for b, t := range byBound {
			if t > most {
				bound, most = b, t
			}
		}
		return total, bound
	}
	srv, sb := run(float64(servers), p.ServerCores)
	out := []SimResult{{Config: "server", Nodes: servers, Phi: 1, Seconds: srv, Mu: 1, Bound: sb, CostRatio: 1, EnergyRatio: 1, FabricCost: 1}}
	for _, phi := range phis {
		n := phi * float64(servers)
		t, b := run(n, p.ServerCores/p.CPURatio)
		mu := t / srv
		out = append(out, SimResult{Config: fmt.Sprintf("lovelock-phi%g", phi), Nodes: int(n), Phi: phi, Seconds: t, Mu: mu, Bound: b,
			CostRatio: CostRatio(p.CS, p.CP, phi), EnergyRatio: EnergyRatio(p.PS, p.PP, mu, phi), FabricCost: FabricCostRatio(p.CS, p.CF, p.CP, phi)})
	}
	return out
}

// AttachMeasured fills Measured from a run's totals (config -> seconds).
func AttachMeasured(rs []SimResult, rows []LovelockRow) {
	m := map[string]float64{}
	for _, r := range rows {
		if r.Query == "total" {
			m[r.Config] = r.Ms / 1000
		}
	}
	for i := range rs {
		rs[i].Measured = m[rs[i].Config]
	}
}

// WriteSimulation prints projections (with the measured totals and the
// error where there are some).
func WriteSimulation(w io.Writer, format string, rs []SimResult) error {
	header := []string{"config", "nodes", "phi", "seconds", "mu", "bound", "measured_s", "error", "cost_ratio", "energy_ratio", "cost_ratio_fabric"}
	var rows [][]string
	for _, r := range rs {
		meas, errs := "", ""
		if r.Measured > 0 {
			meas = fmt.Sprintf("%.1f", r.Measured)
			errs = fmt.Sprintf("%+.0f%%", 100*(r.Seconds/r.Measured-1))
		}
		rows = append(rows, []string{r.Config, strconv.Itoa(r.Nodes), strconv.FormatFloat(r.Phi, 'g', -1, 64), fmt.Sprintf("%.1f", r.Seconds),
			fmt.Sprintf("%.2f", r.Mu), r.Bound, meas, errs, fmt.Sprintf("%.2fx", r.CostRatio), fmt.Sprintf("%.2fx", r.EnergyRatio), fmt.Sprintf("%.2fx", r.FabricCost)})
	}
	return writeFormatted(w, format, rs, header, rows, func() {
		WriteAligned(w, header, rows, func(col int) bool { return col == 0 || col == 5 })
	})
}

// ParseFloats reads a comma-separated list of numbers ("1,2,3").
func ParseFloats(what, s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v <= 0 {
			return nil, nferr.Queryf("%s: %q is not a positive number", what, f)
		}
		out = append(out, v)
	}
	return out, nil
}
