package bench

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/nicflow/nicflow/bench/emu"
	"github.com/nicflow/nicflow/internal/nferr"
)

// LovelockPrefix names the emulated hosts of `bench lovelock run`.
const LovelockPrefix = "nflv"

// CheckLovelock says in one line why this machine cannot run the
// emulated experiment (not root, no iproute2, no CPU cgroup), or nil.
func CheckLovelock() error { return emu.Check() }

// CleanLovelock removes what a killed `bench lovelock run` left behind.
func CleanLovelock() error { return emu.Cleanup(LovelockPrefix) }

// cpuBoundShare splits the queries into classes by the server's measured
// CPU share: at or above it a query is CPU-bound on the server.
const cpuBoundShare = 0.5

// PlotLovelock writes SVG charts of an experiment's rows into dir:
//   - lovelock_mu.svg: mu against phi, for the total (measured and the
//     paper's projection) and the median of the network-bound and the
//     CPU-bound queries (by the server's CPU share), with mu = 1;
//   - lovelock_breakdown.svg: each configuration's total time split into
//     CPU-busy time and the rest (network and waiting);
//   - lovelock_queries.svg: mu per query and Lovelock configuration.
//
// It returns the files written.
func PlotLovelock(rows []LovelockRow, dir string) ([]string, error) {
	var configs []string
	phiOf := map[string]int{}
	total := map[string]LovelockRow{}
	serverShare := map[string]float64{}
	var queries []string
	for _, r := range rows {
		if _, ok := phiOf[r.Config]; !ok {
			configs = append(configs, r.Config)
			phiOf[r.Config] = r.Phi
		}
		switch {
		case r.Query == "total":
			total[r.Config] = r
		case r.Config == "server":
			serverShare[r.Query] = r.CPUShare
			queries = append(queries, r.Query)
		}
	}
	if len(total) == 0 || total["server"].Config == "" {
		return nil, nferr.Queryf("nothing to plot: the rows hold no server total")
	}
	var lovelock []string
	for _, c := range configs {
		if c != "server" {
			lovelock = append(lovelock, c)
		}
	}
	sort.SliceStable(lovelock, func(i, j int) bool { return phiOf[lovelock[i]] < phiOf[lovelock[j]] })
	pf, err := newPlotFiles(dir)
	if err != nil {
		return nil, err
	}

	// mu against phi.
	var netQ, cpuQ int
	for _, q := range queries {
		if serverShare[q] >= cpuBoundShare {
			cpuQ++
		} else {
			netQ++
		}
	}
	measured := series{name: "total, measured"}
	projected := series{name: "total, projected (Fig. 4)"}
	netS := series{name: fmt.Sprintf("network-bound, median (%d)", netQ)}
	cpuS := series{name: fmt.Sprintf("CPU-bound, median (%d)", cpuQ)}
	even := series{name: "mu = 1 (server's time)"}
	for _, c := range lovelock {
		x := float64(phiOf[c])
		t := total[c]
		measured.xs, measured.ys = append(measured.xs, x), append(measured.ys, t.Mu)
		projected.xs, projected.ys = append(projected.xs, x), append(projected.ys, t.ProjectedMu)
		even.xs, even.ys = append(even.xs, x), append(even.ys, 1)
		var nets, cpus []float64
		for _, r := range rows {
			if r.Config != c || r.Query == "total" {
				continue
			}
			if serverShare[r.Query] >= cpuBoundShare {
				cpus = append(cpus, r.Mu)
			} else {
				nets = append(nets, r.Mu)
			}
		}
		if len(nets) > 0 {
			netS.xs, netS.ys = append(netS.xs, x), append(netS.ys, medianOf(nets))
		}
		if len(cpus) > 0 {
			cpuS.xs, cpuS.ys = append(cpuS.xs, x), append(cpuS.ys, medianOf(cpus))
		}
	}
	ss := []series{measured, projected}
	for _, s := range []series{netS, cpuS} {
		if len(s.xs) > 0 {
			ss = append(ss, s)
		}
	}
	ss = append(ss, even)
	phiLabel := func(x float64) string { return "phi " + strconv.Itoa(int(x)) }
	if len(lovelock) > 0 {
		if err := pf.write("lovelock_mu.svg", lineChart("Lovelock: slowdown mu against NICs per server",
			"smart NICs per replaced server (phi)", "mu = Lovelock time / server time", ss, phiLabel)); err != nil {
			return pf.files, err
		}
	}

	// Time breakdown per configuration.
	var groups []string
	var values [][]float64
	for _, c := range append([]string{"server"}, lovelock...) {
		t := total[c]
		s := t.Ms / 1000
		groups = append(groups, c)
		values = append(values, []float64{s * t.CPUShare, s * (1 - t.CPUShare)})
	}
	if err := pf.write("lovelock_breakdown.svg", barChart("Time per configuration: workers' CPU busy, and the rest",
		"seconds (all queries)", groups, []string{"CPU busy", "network and waiting"}, values, true)); err != nil {
		return pf.files, err
	}

	// mu per query.
	if len(lovelock) > 0 {
		mu := map[string]map[string]float64{}
		for _, r := range rows {
			if mu[r.Query] == nil {
				mu[r.Query] = map[string]float64{}
			}
			mu[r.Query][r.Config] = r.Mu
		}
		var qvals [][]float64
		for _, q := range queries {
			var v []float64
			for _, c := range lovelock {
				v = append(v, mu[q][c])
			}
			qvals = append(qvals, v)
		}
		if err := pf.write("lovelock_queries.svg", barChart("mu per query (below 1: faster than the server)",
			"mu", trimQ(queries), lovelock, qvals, false)); err != nil {
			return pf.files, err
		}
	}
	return pf.files, nil
}

func trimQ(qs []string) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q[1:]
	}
	return out
}

func medianOf(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
