package tpch

import (
	"strings"
	"testing"
)

// TestDefaultParamsReproduceValidationTexts: the templates with the
// validation parameters give back the stored texts exactly (SF 1).
func TestDefaultParamsReproduceValidationTexts(t *testing.T) {
	for q := 1; q <= NumQueries; q++ {
		text, err := Query(q, DefaultParams(q, 1))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ValidationText(q)
		if text != want {
			t.Errorf("Q%d: template with validation parameters differs from the validation text", q)
		}
		if ap, ok := AnswerParams(q, 0.01); !ok || len(ap) != len(DefaultParams(q, 1)) {
			t.Errorf("Q%d: AnswerParams(0.01) = %v %v", q, ap, ok)
		}
	}
	if got := DefaultParams(11, 0.01)["FRACTION"]; got != "0.0100000000" {
		t.Errorf("Q11 FRACTION at SF 0.01 = %s", got)
	}
	if got := DefaultParams(11, 100)["FRACTION"]; got != "0.0000010000" {
		t.Errorf("Q11 FRACTION at SF 100 = %s", got)
	}
	if ap, _ := AnswerParams(11, 0.1); ap["FRACTION"] != "0.0001000000" {
		t.Errorf("answers at SF 0.1 were computed with FRACTION 0.0001, AnswerParams says %s", ap["FRACTION"])
	}
}

func TestRandomParams(t *testing.T) {
	for q := 1; q <= NumQueries; q++ {
		for seed := uint64(0); seed < 50; seed++ {
			p := RandomParams(q, 10, seed)
			text, err := Query(q, p)
			if err != nil {
				t.Fatalf("Q%d seed %d: %v", q, seed, err)
			}
			if strings.Contains(text, "{") {
				t.Fatalf("Q%d: unsubstituted parameter in %s", q, text)
			}
			p2 := RandomParams(q, 10, seed)
			for k, v := range p {
				if p2[k] != v {
					t.Fatalf("Q%d: seed %d not deterministic", q, seed)
				}
			}
		}
	}
	// Rules spot checks.
	for seed := uint64(0); seed < 200; seed++ {
		p7 := RandomParams(7, 1, seed)
		if p7["NATION1"] == p7["NATION2"] {
			t.Errorf("Q7 nations equal: %v", p7)
		}
		p8 := RandomParams(8, 1, seed)
		n := -1
		for i, m := range dists.nations.members {
			if m == p8["NATION"] {
				n = i
			}
		}
		if dists.regions.members[dists.nations.cum[n]] != p8["REGION"] {
			t.Errorf("Q8 region %s is not the region of %s", p8["REGION"], p8["NATION"])
		}
		p22 := RandomParams(22, 1, seed)
		seen := map[string]bool{}
		for k, v := range p22 {
			if seen[v] || v < "10" || v > "34" {
				t.Errorf("Q22 %s=%s repeated or out of range: %v", k, v, p22)
			}
			seen[v] = true
		}
		d := RandomParams(4, 1, seed)["DATE"]
		if d < "1993-01-01" || d > "1997-10-01" || !strings.HasSuffix(d, "-01") {
			t.Errorf("Q4 DATE %s", d)
		}
	}
}

func TestQueryErrors(t *testing.T) {
	if _, err := Query(23, nil); err == nil {
		t.Error("Q23 accepted")
	}
	if _, err := Query(1, Params{}); err == nil || !strings.Contains(err.Error(), "DELTA") {
		t.Errorf("missing parameter: %v", err)
	}
	if _, err := Query(1, Params{"DELTA": "90", "DELTAX": "1"}); err == nil || !strings.Contains(err.Error(), "DELTAX") {
		t.Errorf("unknown parameter: %v", err)
	}
	if _, err := Query(3, Params{"SEGMENT": "x' or '1'='1", "DATE": "1995-03-15"}); err == nil {
		t.Error("quote in a parameter accepted")
	}
	if got := strings.Join(ParamNames(16), ","); got != "BRAND,SIZE1,SIZE2,SIZE3,SIZE4,SIZE5,SIZE6,SIZE7,SIZE8,TYPE" {
		t.Errorf("ParamNames(16) = %s", got)
	}
}
