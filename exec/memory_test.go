package exec

import (
	"strings"
	"testing"

	"github.com/nicflow/nicflow/internal/nferr"
)

// TestNodeBudget: queries' budgets under a node's draw from both; the
// error names the budget that ran out and what to raise; spilling
// operators size themselves by the query's budget, not the node's.
func TestNodeBudget(t *testing.T) {
	node := NewNodeBudget(1000, "the worker's --memory")
	q1 := NewBudgetUnder(node, 600)
	q2 := NewBudgetUnder(node, 0) // as much as the node has
	if q2.Limit() != 1000 || NewBudgetUnder(node, 5000).Limit() != 1000 {
		t.Fatalf("limits under a 1000-byte node: %d, %d", q2.Limit(), NewBudgetUnder(node, 5000).Limit())
	}
	a1, a2 := q1.NewAccount("sort"), q2.NewAccount("hash join build")
	if err := a1.Grow(500); err != nil {
		t.Fatal(err)
	}
	// q1's own limit stops it first.
	err := a1.Grow(200)
	if !nferr.Is(err, nferr.KindResource) || !strings.Contains(err.Error(), "(raise --memory-limit)") {
		t.Fatalf("query limit: %v", err)
	}
	// q2 has room of its own, but the node holds 500 of 1000.
	if err := a2.Grow(400); err != nil {
		t.Fatal(err)
	}
	err = a2.Grow(200)
	if !nferr.Is(err, nferr.KindResource) || !strings.Contains(err.Error(), "900 B of 1000 B in use (raise the worker's --memory)") {
		t.Fatalf("node memory: %v", err)
	}
	if node.Used() != 900 || q1.Used() != 500 || q2.Used() != 400 {
		t.Fatalf("used: node %d, q1 %d, q2 %d", node.Used(), q1.Used(), q2.Used())
	}
	// EXPLAIN ANALYZE's children sit between an operator and its query.
	if r := q1.Child().root(); r != q1 {
		t.Fatalf("root of a child of q1 is %p, want q1 %p", r, q1)
	}
	a1.Close()
	a2.Close()
	if node.Used() != 0 {
		t.Fatalf("node holds %d after every account closed", node.Used())
	}
	// A spillable account stops at 3/4 of the node too.
	sp := (&Env{Budget: NewBudgetUnder(node, 0), Spill: NewSpill(t.TempDir(), "q", 0)}).NewSpillableAccount("sort")
	if err := sp.Grow(760); err == nil {
		t.Fatal("a spillable account took more than 3/4 of the node")
	}
}
