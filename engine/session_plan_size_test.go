package engine

import (
	"context"
	"runtime"
	"strconv"
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

// TestBigInListMemory: a constant IN list of 100,000 values costs its
// statement memory in proportion (streamed tokens, presized lists, no
// big.Int per value, no column set per constant; issue 28) and runs on a
// sorted set (storage binary search, not a scan of the list per row);
// under a budget too small for its plan it is a resource error.
func TestBigInListMemory(t *testing.T) {
	s := newTestDB(t, Options{Parallelism: 2})
	numbers(t, s, "t", 5000)
	const n = 100000
	var b strings.Builder
	b.WriteString("select count(*) from t where n in (")
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i * 2))
	}
	b.WriteString(")")
	q := b.String()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	rows := exec1(t, s, q)
	runtime.ReadMemStats(&m1)
	if len(rows) != 1 || rows[0][0] != "2500" {
		t.Fatalf("count: %v", rows)
	}
	// NB: 248 MB before (2.5 KB a value: all tokens at once, slices grown
	// by a quarter, big.Int casts, a column set per constant), 38 MB now.
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 80<<20 {
		t.Errorf("%d values allocated %d MB (more than 80 MB)", n, alloc>>20)
	}
	exec1(t, s, "set memory_limit = '64MiB'")
	if _, err := s.Query(context.Background(), q); !nferr.Is(err, nferr.KindResource) {
		t.Errorf("under 64 MiB: %v", err)
	}
}
