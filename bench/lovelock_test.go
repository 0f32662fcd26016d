package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// round formats v as the paper prints it: d decimals.
func round(v float64, d int) string { return fmt.Sprintf("%.*f", d, v) }

// TestLovelockPaperNumbers pins every number of the paper's model (§4, §5.2,
// §5.3) to the paper's own rounding.
func TestLovelockPaperNumbers(t *testing.T) {
	check := func(what string, got float64, d int, want string) {
		t.Helper()
		if g := round(got, d); g != want {
			t.Errorf("%s = %s (%v), the paper says %s", what, g, got, want)
		}
	}
	// §4: phi 3, mu 1.2, c_s 7, p_s 11, no PCIe devices: 2.3x cheaper,
	// 3.1x less energy.
	check("§4 cost", CostRatio(7, 0, 3), 1, "2.3")
	check("§4 energy", EnergyRatio(11, 0, 1.2, 3), 1, "3.1")

	// §5.2: the BigQuery breakdown projected to phi 2 and 3.
	mu2 := ProjectedMu(PaperBigQueryCPUShare, PaperCPURatio, 2)
	mu3 := ProjectedMu(PaperBigQueryCPUShare, PaperCPURatio, 3)
	check("§5.2 mu(2)", mu2, 2, "1.22")
	check("§5.2 mu(3)", mu3, 2, "0.81")
	check("§5.2 cost(2)", CostRatio(7, 0, 2), 1, "3.5")
	check("§5.2 cost(3)", CostRatio(7, 0, 3), 2, "2.33")
	check("§5.2 energy(2)", EnergyRatio(11.2, 0, mu2, 2), 2, "4.58")
	check("§5.2 energy(3)", EnergyRatio(11.2, 0, mu3, 3), 2, "4.58")
	check("§5.2 fabric cost(2)", FabricCostRatio(7, 0.7, 0, 2), 2, "2.26")
	check("§5.2 fabric cost(3)", FabricCostRatio(7, 0.7, 0, 3), 2, "1.51")
	// §5.2: the fabric may be 19% slower at phi 2, must be 23% faster at 3.
	check("§5.2 fabric slack(2)", 1-1/mu2, 2, "0.18") // the paper rounds 1 - 100/122 to 19%
	check("§5.2 fabric need(3)", 1/mu3-1, 2, "0.23")

	// §4 and §5.3: accelerators as 75% of a server (c_p 21, p_p 33.2).
	check("accelerators phi 1 cost", CostRatio(7, 21, 1), 2, "1.27")
	check("accelerators phi 1 energy", EnergyRatio(11.2, 33.2, 1, 1), 2, "1.30")
	check("accelerators phi 2 cost", CostRatio(7, 21, 2), 2, "1.22")
	check("accelerators phi 2 energy", EnergyRatio(11.2, 33.2, 0.9, 2), 1, "1.4")

	// The scenarios `bench lovelock model` prints carry the same numbers.
	want := [][]string{
		{"2.3", "3.1"},
		{"3.50", "4.58", "2.26", "1.22"},
		{"2.33", "4.58", "1.51", "0.81"},
		{"1.27", "1.30"},
		{"1.22", "1.4"},
	}
	for i, s := range PaperScenarios() {
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		r := s.Evaluate()
		w := want[i]
		d := len(w[0]) - 2
		check(s.Name+" cost", r.Cost, d, w[0])
		check(s.Name+" energy", r.Energy, len(w[1])-2, w[1])
		if len(w) > 2 {
			check(s.Name+" fabric", r.CostFabric, 2, w[2])
			check(s.Name+" mu", r.Mu, 2, w[3])
		}
	}
}

func TestModelGrid(t *testing.T) {
	ss, err := ModelGrid{Phi: []float64{1, 2}, Mu: []float64{1, 1.2}, CS: []float64{7}}.Scenarios()
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 4 || ss[3].Phi != 2 || ss[3].Mu != 1.2 || ss[0].PS != PaperPS || ss[0].CF != PaperCF {
		t.Fatalf("cross product: %+v", ss)
	}
	ss, err = ModelGrid{Phi: []float64{3}, CPUShare: []float64{0.39}}.Scenarios()
	if err != nil {
		t.Fatal(err)
	}
	if r := ss[0].Evaluate(); round(r.Mu, 2) != "0.81" || r.CPURatio != PaperCPURatio {
		t.Fatalf("projected: %+v", r)
	}
	for _, g := range []ModelGrid{
		{Mu: []float64{1}, CPUShare: []float64{0.5}},
		{CPURatio: []float64{4}},
		{Phi: []float64{0}},
		{Mu: []float64{-1}},
		{CPUShare: []float64{1.5}},
		{CS: []float64{0}},
		{CP: []float64{-1}},
	} {
		if _, err := g.Scenarios(); err == nil {
			t.Errorf("%+v: accepted", g)
		}
	}
}

func TestWriteModel(t *testing.T) {
	var rs []ModelResult
	for _, s := range PaperScenarios() {
		rs = append(rs, s.Evaluate())
	}
	var b bytes.Buffer
	if err := WriteModel(&b, "csv", rs); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+len(rs) || strings.Join(recs[0][:13], ",") != "scenario,phi,mu,cs,ps,cp,pp,cf,cpu_share,cpu_ratio,cost_ratio,energy_ratio,cost_ratio_fabric" {
		t.Fatalf("csv: %v", recs)
	}
	if recs[3][2] != "0.814" || recs[3][10] != "2.333" {
		t.Errorf("csv row: %v", recs[3])
	}
	b.Reset()
	if err := WriteModel(&b, "json", rs); err != nil {
		t.Fatal(err)
	}
	var back []ModelResult
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back) != len(rs) || back[0].Cost != rs[0].Cost {
		t.Fatalf("json: %v %+v", err, back)
	}
	b.Reset()
	if err := WriteModel(&b, "table", rs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "2.33x") || !strings.Contains(b.String(), "cost 2.3x, energy 3.1x") {
		t.Errorf("table:\n%s", b.String())
	}
	if err := WriteModel(&b, "xml", rs); err == nil {
		t.Error("xml accepted")
	}
}

// TestSimulateValidates projects the emulated runs of docs/lovelock from
// their server rows and checks the 22-query totals against what the runs
// measured: within 15% for SF 1 at 200 Mbit/s (phi 1-3) and at 1100 Mbit/s
// (phi 1-3; phi 4 there is bound by the emulating machine itself).
func TestSimulateValidates(t *testing.T) {
	for _, c := range []struct {
		file              string
		nic, cores, store float64
		phis              []float64
	}{
		{"sf1-200mbit.csv", 200, 2, 0.5, []float64{1, 2, 3}},
		{"sf1-1100mbit-c3.csv", 1100, 1, 1, []float64{1, 2, 3}},
	} {
		fh, err := os.Open(filepath.Join("..", "docs", "lovelock", c.file))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := ReadLovelockCSV(fh)
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		qs, err := SimProfile(rows)
		if err != nil {
			t.Fatal(err)
		}
		p := DefaultSimParams()
		p.NICMbit, p.ServerCores, p.StorageCPUs, p.MachineCores = c.nic, c.cores, c.store, 2
		rs := Simulate(p, qs, c.phis, 1)
		AttachMeasured(rs, rows)
		for _, r := range rs {
			if r.Measured == 0 {
				t.Fatalf("%s: %s has no measured total", c.file, r.Config)
			}
			if e := r.Seconds/r.Measured - 1; e > 0.15 || e < -0.15 {
				t.Errorf("%s %s: projected %.1f s, measured %.1f s (%+.0f%%)", c.file, r.Config, r.Seconds, r.Measured, 100*e)
			}
		}
		// More NICs per server never cost more in the model's terms.
		for i := 2; i < len(rs); i++ {
			if rs[i].CostRatio > rs[i-1].CostRatio {
				t.Errorf("%s: cost ratio grows with phi: %v", c.file, rs)
			}
		}
	}
}
