package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/nicflow/nicflow/internal/nferr"
)

// The Lovelock cost and energy model (Park et al., "Lovelock: Towards Smart
// NIC-hosted Clusters", sections 4 and 5): a cluster replaces each server
// with phi headless smart NICs and runs mu times as long (mu < 1: faster).
// All costs and powers are relative to one smart NIC.

// Paper values.
const (
	// PaperCS and PaperPS: a server costs about 7 NICs and draws about 11
	// NICs' power (NVIDIA's BlueField-2 white paper, the paper's [6]); §5
	// uses 11.2 for the power.
	PaperCS, PaperPS, PaperPS5 = 7.0, 11.0, 11.2
	// PaperCF is the fabric cost per server: 10% of a server (§5.2).
	PaperCF = 0.7
	// PaperCPURatio is the median whole-system CPU performance of a Milan
	// server relative to an IPU E2000 smart NIC on TPC-H (Figure 3).
	PaperCPURatio = 4.7
	// PaperBigQueryCPUShare is the CPU share of BigQuery's processing time
	// in Figure 4's first row; the rest is remote shuffle and storage I/O
	// ("over 60%"). The text gives no exact figure: 0.39 reproduces the
	// figure's projections (mu 1.22 at phi 2, 0.81 at phi 3) to the
	// paper's rounding.
	PaperBigQueryCPUShare = 0.39
	// PaperAccelCP and PaperAccelPP: PCIe accelerators (4 GPUs) as 75% of a
	// server's cost and power: c_p = 7 x 3 = 21 and p_p = 33.2 (§4, §5.3).
	PaperAccelCP, PaperAccelPP = 21.0, 33.2
)

// CostRatio is equation (1): the capital cost of a server cluster over
// that of a Lovelock cluster with phi NICs per server, cs the cost of a
// server and cp that of its PCIe devices (both relative to a NIC).
func CostRatio(cs, cp, phi float64) float64 { return (cs + cp) / (phi + cp) }

// EnergyRatio is equation (2): the energy of a server cluster over that of
// a Lovelock cluster that runs mu times as long.
func EnergyRatio(ps, pp, mu, phi float64) float64 { return (ps + pp) / (mu * (phi + pp)) }

// FabricCostRatio is equation (1) with the network fabric (§5.2): cf is
// the fabric's cost per server, and a Lovelock cluster needs phi times the
// fabric ports.
func FabricCostRatio(cs, cf, cp, phi float64) float64 { return (cs + cf + cp) / (phi*(1+cf) + cp) }

// ProjectedMu is Figure 4's projection: a job that spends the share c of
// its time on CPU and 1-c on the network (remote shuffle and storage I/O)
// runs on phi NICs, each with 1/k of a server's CPU and a NIC as fast as
// the server's, in (k c + (1 - c)) / phi of the server's time: CPU time
// grows k-fold and shrinks phi-fold, network time shrinks phi-fold (linear
// speedup, as the paper assumes).
func ProjectedMu(c, k, phi float64) float64 { return (k*c + (1 - c)) / phi }

// ModelScenario is one point of the model. When Projected, Mu is computed
// from CPUShare and CPURatio by ProjectedMu.
type ModelScenario struct {
	Name      string  `json:"scenario"`
	Phi       float64 `json:"phi"`
	Mu        float64 `json:"mu"`
	CS        float64 `json:"cs"`
	PS        float64 `json:"ps"`
	CP        float64 `json:"cp"`
	PP        float64 `json:"pp"`
	CF        float64 `json:"cf"`
	Projected bool    `json:"projected"`
	CPUShare  float64 `json:"cpu_share,omitempty"`
	CPURatio  float64 `json:"cpu_ratio,omitempty"`
	// Paper holds the figures the paper prints for this scenario (empty
	// for a user's scenario), to set beside the computed ones.
	Paper string `json:"paper,omitempty"`
}

// ModelResult is a scenario with its ratios.
type ModelResult struct {
	ModelScenario
	Cost       float64 `json:"cost_ratio"`
	Energy     float64 `json:"energy_ratio"`
	CostFabric float64 `json:"cost_ratio_fabric"`
}

// Validate checks a scenario's inputs.
func (s ModelScenario) Validate() error {
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	for _, v := range []float64{s.Phi, s.Mu, s.CS, s.PS, s.CP, s.PP, s.CF, s.CPUShare, s.CPURatio} {
		if bad(v) {
			return nferr.Queryf("scenario %s: every value must be a finite number", s.Name)
		}
	}
	switch {
	case s.Phi <= 0:
		return nferr.Queryf("scenario %s: phi must be positive, not %g", s.Name, s.Phi)
	case !s.Projected && s.Mu <= 0:
		return nferr.Queryf("scenario %s: mu must be positive, not %g", s.Name, s.Mu)
	case s.CS <= 0 || s.PS <= 0:
		return nferr.Queryf("scenario %s: cs and ps must be positive", s.Name)
	case s.CP < 0 || s.PP < 0 || s.CF < 0:
		return nferr.Queryf("scenario %s: cp, pp and cf must be 0 or more", s.Name)
	case s.Projected && (s.CPUShare < 0 || s.CPUShare > 1):
		return nferr.Queryf("scenario %s: the CPU share must be between 0 and 1, not %g", s.Name, s.CPUShare)
	case s.Projected && s.CPURatio <= 0:
		return nferr.Queryf("scenario %s: the CPU ratio must be positive, not %g", s.Name, s.CPURatio)
	}
	return nil
}

// Evaluate computes a scenario's mu (when projected) and its ratios.
func (s ModelScenario) Evaluate() ModelResult {
	if s.Projected {
		s.Mu = ProjectedMu(s.CPUShare, s.CPURatio, s.Phi)
	}
	return ModelResult{
		ModelScenario: s,
		Cost:          CostRatio(s.CS, s.CP, s.Phi),
		Energy:        EnergyRatio(s.PS, s.PP, s.Mu, s.Phi),
		CostFabric:    FabricCostRatio(s.CS, s.CF, s.CP, s.Phi),
	}
}

// PaperScenarios are the scenarios the paper computes, with what it
// prints for each.
func PaperScenarios() []ModelScenario {
	bq := func(phi float64, paper string) ModelScenario {
		return ModelScenario{Name: fmt.Sprintf("§5.2 BigQuery breakdown, phi %g", phi), Phi: phi, CS: PaperCS, PS: PaperPS5, CF: PaperCF,
			Projected: true, CPUShare: PaperBigQueryCPUShare, CPURatio: PaperCPURatio, Paper: paper}
	}
	return []ModelScenario{
		{Name: "§4 bandwidth-bound, no PCIe devices", Phi: 3, Mu: 1.2, CS: PaperCS, PS: PaperPS, CF: PaperCF,
			Paper: "cost 2.3x, energy 3.1x"},
		bq(2, "mu 1.22, cost 3.5x, energy 4.58x, with fabric 2.26x"),
		bq(3, "mu 0.81, cost 2.33x, energy 4.58x, with fabric 1.51x"),
		{Name: "§4 accelerators (c_p 21, p_p 33.2), phi 1", Phi: 1, Mu: 1, CS: PaperCS, PS: PaperPS5, CP: PaperAccelCP, PP: PaperAccelPP, CF: PaperCF,
			Paper: "cost 1.27x, energy 1.3x"},
		{Name: "§4/§5.3 accelerators, phi 2, 10% faster", Phi: 2, Mu: 0.9, CS: PaperCS, PS: PaperPS5, CP: PaperAccelCP, PP: PaperAccelPP, CF: PaperCF,
			Paper: "cost 1.22x, energy 1.4x"},
	}
}

// ModelGrid holds comma-list values for the model's inputs; Scenarios
// returns their cross product. An empty list takes the default: phi 1,2,3,4;
// mu 1; cs 7; ps 11; cp 0; pp 0; cf 0.7; cpu ratio 4.7. With CPUShare set,
// mu is projected from it (Mu must then be empty).
type ModelGrid struct {
	Phi, Mu, CS, PS, CP, PP, CF, CPUShare, CPURatio []float64
}

// Scenarios returns the grid's cross product, validated.
func (g ModelGrid) Scenarios() ([]ModelScenario, error) {
	if len(g.Mu) > 0 && len(g.CPUShare) > 0 {
		return nil, nferr.Queryf("give mu or a CPU share (which projects mu), not both")
	}
	if len(g.CPURatio) > 0 && len(g.CPUShare) == 0 {
		return nil, nferr.Queryf("a CPU ratio is used only with a CPU share (to project mu)")
	}
	or := func(v []float64, d ...float64) []float64 {
		if len(v) == 0 {
			return d
		}
		return v
	}
	phis, mus, css, pss := or(g.Phi, 1, 2, 3, 4), or(g.Mu, 1), or(g.CS, PaperCS), or(g.PS, PaperPS)
	cps, pps, cfs := or(g.CP, 0), or(g.PP, 0), or(g.CF, PaperCF)
	projected := len(g.CPUShare) > 0
	shares, ratios := or(g.CPUShare, 0), or(g.CPURatio, PaperCPURatio)
	if projected {
		mus = []float64{0}
	}
	var out []ModelScenario
	for _, phi := range phis {
		for _, mu := range mus {
			for _, share := range shares {
				for _, k := range ratios {
					for _, cs := range css {
						for _, ps := range pss {
							for _, cp := range cps {
								for _, pp := range pps {
									for _, cf := range cfs {
										s := ModelScenario{Name: "user", Phi: phi, Mu: mu, CS: cs, PS: ps, CP: cp, PP: pp, CF: cf}
										if projected {
											s.Projected, s.CPUShare, s.CPURatio = true, share, k
										}
										if err := s.Validate(); err != nil {
											return nil, err
										}
										out = append(out, s)
									}
								}
							}
						}
					}
				}
			}
		}
	}
	if len(out) > 100000 {
		return nil, nferr.Queryf("the lists make %d scenarios; at most 100000", len(out))
	}
	return out, nil
}

// ModelColumns are the CSV columns of the model's output.
var ModelColumns = []string{"scenario", "phi", "mu", "cs", "ps", "cp", "pp", "cf", "cpu_share", "cpu_ratio",
	"cost_ratio", "energy_ratio", "cost_ratio_fabric", "paper"}

func (r ModelResult) fields() []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	share, ratio := "", ""
	if r.Projected {
		share, ratio = f(r.CPUShare), f(r.CPURatio)
	}
	r3 := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	return []string{r.Name, f(r.Phi), r3(r.Mu), f(r.CS), f(r.PS), f(r.CP), f(r.PP), f(r.CF), share, ratio,
		r3(r.Cost), r3(r.Energy), r3(r.CostFabric), r.Paper}
}

// WriteModel prints model results as "table", "csv" or "json".
func WriteModel(w io.Writer, format string, rs []ModelResult) error {
	rows := make([][]string, len(rs))
	for i, r := range rs {
		rows[i] = r.fields()
	}
	return writeFormatted(w, format, rs, ModelColumns, rows, func() {
		header := []string{"scenario", "phi", "mu", "cs", "ps", "cp", "pp", "cf", "cost", "energy", "cost+fabric", "the paper says"}
		var rows [][]string
		for _, r := range rs {
			mu := fmt.Sprintf("%.2f", r.Mu)
			if r.Projected {
				mu += fmt.Sprintf(" (c %g, k %g)", r.CPUShare, r.CPURatio)
			}
			g := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
			x := func(v float64) string { return fmt.Sprintf("%.2fx", v) }
			rows = append(rows, []string{r.Name, g(r.Phi), mu, g(r.CS), g(r.PS), g(r.CP), g(r.PP), g(r.CF),
				x(r.Cost), x(r.Energy), x(r.CostFabric), r.Paper})
		}
		WriteAligned(w, header, rows, func(c int) bool { return c == 0 || c == 2 || c == len(header)-1 })
		fmt.Fprintln(w, "\ncost = (cs + cp) / (phi + cp); energy = (ps + pp) / (mu (phi + pp)); cost+fabric = (cs + cf + cp) / (phi (1 + cf) + cp);")
		fmt.Fprintln(w, "projected mu = (k c + (1 - c)) / phi for a CPU share c and a server/NIC CPU ratio k (Lovelock, eq. 1-2 and Figure 4).")
	})
}

// writeFormatted prints figures in one of the benchmark formats: v as
// indented JSON, or a CSV of header and rows, or (format "table" or "")
// whatever table prints.
func writeFormatted(w io.Writer, format string, v any, header []string, rows [][]string, table func()) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(header)
		cw.WriteAll(rows)
		return cw.Error()
	case "table", "":
		table()
		return nil
	}
	return nferr.Queryf("format %q: want table, csv or json", format)
}

// WriteAligned prints a header and rows in aligned columns (two spaces
// apart), left-aligned where left(col), right-aligned otherwise.
func WriteAligned(w io.Writer, header []string, rows [][]string, left func(int) bool) {
	all := append([][]string{header}, rows...)
	width := make([]int, len(header))
	for _, r := range all {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, r := range all {
		var b strings.Builder
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if left(i) {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}
