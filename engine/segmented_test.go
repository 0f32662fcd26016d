package engine

import (
	"strings"
	"testing"

	"github.com/nicflow/nicflow/storage"
)

// Segmented aggregation (phys/segment.go) on tables stored in key order:
// the same answers as over the same rows stored shuffled (no disjoint row
// groups: a repartitioned aggregate), at several parallelisms and batch
// sizes, with memory tight enough to spill, and only where no key spans
// two row groups.
func TestSegmentedAggregation(t *testing.T) {
	setup := []string{
		// 1000-row groups: a's keys (4 rows each) end at group ends; b's
		// (3 rows each) straddle them; s holds a's rows shuffled.
		"CREATE TABLE a (k BIGINT, v INTEGER)",
		"INSERT INTO a SELECT g / 4, g % 7 FROM generate_series(0, 39999) s(g)",
		"CREATE TABLE b (k BIGINT, v INTEGER)",
		"INSERT INTO b SELECT g / 3, g % 5 FROM generate_series(0, 39999) s(g)",
		"CREATE TABLE s (k BIGINT, v INTEGER)",
		"INSERT INTO s SELECT (h % 40000) / 4, (h % 40000) % 7 FROM (SELECT g * 7919 AS h FROM generate_series(0, 39999) x(g)) y",
		"CREATE TABLE d (k BIGINT, w INTEGER)",
		"INSERT INTO d SELECT g, g % 3 FROM generate_series(0, 9999, 7) x(g)",
	}
	queries := []string{
		"SELECT count(*), sum(c), min(c), max(c), sum(sv) FROM (SELECT k, count(*) AS c, sum(v) AS sv FROM %s GROUP BY k) x",
		"SELECT k, count(*), sum(v) FROM %s GROUP BY k HAVING sum(v) > 20 ORDER BY k DESC LIMIT 7",
		"SELECT t.k, count(*), sum(t.v), min(d.w) FROM %s t JOIN d ON t.k = d.k WHERE t.v > 0 GROUP BY t.k ORDER BY t.k LIMIT 9",
		"SELECT count(*) FROM (SELECT k, v FROM %s WHERE v < 3 GROUP BY k, v) x",
		"SELECT k, avg(v), string_agg(CAST(v AS VARCHAR), ',' ORDER BY v) FROM %s WHERE k % 1000 = 3 GROUP BY k ORDER BY k",
	}
	type cfg struct {
		par, batch int
		mem        int64
	}
	for _, c := range []cfg{{1, 0, 0}, {3, 0, 0}, {2, 7, 0}, {2, 0, 8 << 20}} {
		s, err := Open(t.TempDir(), Options{Parallelism: c.par, BatchSize: c.batch, MemoryLimit: c.mem,
			Storage: storage.Options{Write: storage.WriteOptions{RowGroupRows: 1000, FileRows: 8000}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range setup {
			queryRows(t, s, q)
		}
		run := func(q string) string {
			t.Helper()
			return strings.Join(queryRows(t, s, q), "\n")
		}
		for _, q := range queries {
			want := run(strings.ReplaceAll(q, "%s", "s"))
			if got := run(strings.ReplaceAll(q, "%s", "a")); got != want {
				t.Errorf("%+v: %s\nsegmented:\n%s\nwant:\n%s", c, q, got, want)
			}
		}
		plan := run("EXPLAIN SELECT k, count(*) FROM a GROUP BY k")
		if !strings.Contains(plan, "HashAggregate segmented") || strings.Contains(plan, "Repartition") {
			t.Errorf("%+v: a's aggregate is not segmented:\n%s", c, plan)
		}
		for _, tb := range []string{"b", "s"} {
			if plan := run("EXPLAIN SELECT k, count(*) FROM " + tb + " GROUP BY k"); strings.Contains(plan, "segmented") {
				t.Errorf("%+v: %s is segmented although a key spans row groups:\n%s", c, tb, plan)
			}
		}
		// b's answers are still right (not segmented).
		if got := run("SELECT count(*), max(c), min(c) FROM (SELECT k, count(*) AS c FROM b GROUP BY k) x"); got != "13334|3|1" {
			t.Errorf("%+v: b's groups: %s", c, got)
		}
		s.Close()
	}
}
