package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

// An endless recursion read once streams: a LIMIT above stops it, with
// every batch released (checked allocator).
func TestRecursiveLimit(t *testing.T) {
	alloc := memory.NewCheckedAllocator(memory.DefaultAllocator)
	s := newTestDB(t, Options{Parallelism: 2, Alloc: alloc})
	got := exec1(t, s, "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT n FROM t LIMIT 3")
	if len(got) != 3 || got[0][0] != "1" || got[2][0] != "3" {
		t.Fatalf("got %v", got)
	}
	alloc.AssertSize(t, 0)
}

// An endless recursion that must be computed whole (read twice) ends with
// the memory budget's error, and one that keeps no rows ends when the
// query is canceled.
func TestRecursiveEndless(t *testing.T) {
	s := newTestDB(t, Options{Parallelism: 2, MemoryLimit: 32 << 20})
	numbers(t, s, "nums", 10000)
	err := runAll(context.Background(), s, "WITH RECURSIVE t(n) AS (SELECT n FROM nums UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t a, t b WHERE a.n = b.n")
	if err == nil {
		t.Fatal("an endless recursion read twice succeeded")
	}
	if k := nferr.KindOf(err); k != nferr.KindResource {
		t.Fatalf("error kind %v, want resource: %v", k, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = runAll(ctx, s, "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT 1 FROM t) SELECT count(*) FROM t")
	if err == nil || nferr.KindOf(err) != nferr.KindCanceled {
		t.Fatalf("want a canceled query, got %v", err)
	}
}

// EXPLAIN ANALYZE counts the rows of every run of the term.
func TestRecursiveAnalyze(t *testing.T) {
	s := newTestDB(t, Options{Parallelism: 2})
	rows := exec1(t, s, "EXPLAIN ANALYZE WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 10) SELECT n FROM t")
	var text []string
	for _, r := range rows {
		text = append(text, r[0])
	}
	plan := strings.Join(text, "\n")
	for _, want := range []string{"RecursiveUnionAll", "actual 10 in", "WorkScan"} {
		if !strings.Contains(plan, want) {
			t.Errorf("EXPLAIN ANALYZE lacks %q:\n%s", want, plan)
		}
	}
}

// runAll runs a query to its end and returns its error.
func runAll(ctx context.Context, s *Session, sql string) error {
	r, err := s.Query(ctx, sql)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if rec == nil || err != nil {
			return err
		}
	}
}
