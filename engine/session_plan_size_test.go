package engine

import (
	"strings"
	"testing"

	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/internal/nferr"
)

// TestCheckPlanSize: a statement whose plan state alone would take more
// than half the budget is refused before planning, as a resource error
// naming the planning; an everyday statement passes under a small budget.
func TestCheckPlanSize(t *testing.T) {
	items := make([]string, 40000)
	for i := range items {
		items[i] = "n_nationkey + 1"
	}
	wide, err := sql.ParseOne("select " + strings.Join(items, ", ") + " from nation")
	if err != nil {
		t.Fatal(err)
	}
	err = checkPlanSize(wide, 64<<20)
	if !nferr.Is(err, nferr.KindResource) || !strings.Contains(err.Error(), "memory limit exceeded in planning") {
		t.Fatalf("40,000-column SELECT under 64 MiB: %v", err)
	}
	if err := checkPlanSize(wide, 0); err != nil {
		t.Fatalf("without a limit: %v", err)
	}
	q9, err := sql.ParseOne(tpchQuery(t, 9))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkPlanSize(q9, 4<<20); err != nil {
		t.Fatalf("Q9 under 4 MiB: %v", err)
	}
}
