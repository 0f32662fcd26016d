package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/engine/phys"
	"github.com/nicflow/nicflow/internal/nferr"
)

// TestPhysicalRules: EXPLAIN VERBOSE lists every physical rule with what
// it did; SET disabled_rules takes physical rule names beside the
// optimizer's and the plan then goes without the choice (a semi join
// builds on its right, repeated expressions are computed twice, no join
// key filter), answering the same; an unknown name lists both kinds.
func TestPhysicalRules(t *testing.T) {
	alloc := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer alloc.AssertSize(t, 0)
	s := newTestDB(t, Options{Parallelism: 2, Alloc: alloc})
	exec1(t, s, "CREATE TABLE small (k BIGINT, v BIGINT)")
	exec1(t, s, "CREATE TABLE big (k BIGINT, w BIGINT)")
	exec1(t, s, "INSERT INTO small SELECT x, x * 10 FROM generate_series(1, 20) AS g(x)")
	exec1(t, s, "INSERT INTO big SELECT x % 1000, x FROM generate_series(1, 200000) AS g(x)")
	const semi = "SELECT k, (v + 1) * 2 AS a, (v + 1) * 2 + 1 AS b FROM small WHERE v > 5 AND k IN (SELECT k FROM big WHERE w > 10) ORDER BY k"
	explain := func(q string) string {
		t.Helper()
		var b strings.Builder
		for _, r := range exec1(t, s, "EXPLAIN VERBOSE "+q) {
			b.WriteString(strings.Join(r, " ") + "\n")
		}
		return b.String()
	}
	want := exec1(t, s, semi)
	on := explain(semi)
	for _, line := range []string{"Physical rules:", "semi_build_left  applied once", "cse              applied once", "join_key_filters applied once", "segmented_agg    no change"} {
		if !strings.Contains(on, line) {
			t.Errorf("EXPLAIN VERBOSE lacks %q:\n%s", line, on)
		}
	}
	exec1(t, s, "SET disabled_rules = 'semi_build_left, cse, join_key_filters, fold'")
	off := explain(semi)
	for _, line := range []string{"semi_build_left  disabled", "cse              disabled", "join_key_filters disabled", "fold           disabled"} {
		if !strings.Contains(off, line) {
			t.Errorf("EXPLAIN VERBOSE with the rules disabled lacks %q:\n%s", line, off)
		}
	}
	if strings.Contains(off, "join filters=") || !strings.Contains(on, "join filters=") {
		t.Errorf("join key filters: with the rule\n%s\nwithout\n%s", on, off)
	}
	if got := exec1(t, s, semi); strings.Join(rowsKey(got), "\n") != strings.Join(rowsKey(want), "\n") {
		t.Errorf("answer without the physical rules:\n%v\nwant\n%v", got, want)
	}
	_, err := s.Query(context.Background(), "SET disabled_rules = 'no_such_rule'")
	if err == nil || !nferr.Is(err, nferr.KindQuery) || !strings.Contains(err.Error(), "physical rules: "+strings.Join(phys.RuleNames(), ", ")) {
		t.Errorf("unknown rule: %v", err)
	}
}

func rowsKey(rows [][]string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = strings.Join(r, "|")
	}
	return out
}
