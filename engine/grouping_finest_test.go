package engine

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestGroupingSetsFromFinest checks grouping sets computed from the
// finest groups (bind.setsFromFinest) against each set computed on its
// own from the rows (a UNION ALL of GROUP BYs): the same rows, value for
// value, for sum, count, count(*), min, max and avg over integers,
// decimals (avg's one rounding at its scale), doubles and strings, with
// NULL keys and values, groups of NULLs only, an empty input, CUBE,
// disjoint sets and grouping(), at several parallelisms.
func TestGroupingSetsFromFinest(t *testing.T) {
	setup := []string{
		"CREATE TABLE gf (a INTEGER, b VARCHAR, c INTEGER, i INTEGER, d DECIMAL(7,2), f DOUBLE, s VARCHAR)",
		"INSERT INTO gf SELECT CASE WHEN g % 17 = 0 THEN NULL ELSE g % 5 END, CASE WHEN g % 13 = 0 THEN NULL ELSE 'b' || (g % 3) END, g % 4, " +
			"CASE WHEN g % 7 = 0 THEN NULL ELSE g * 37 % 1000 - 300 END, CASE WHEN g % 11 = 0 THEN NULL ELSE (g * 7919 % 100000) / 100.0 - 200 END, " +
			"CASE WHEN g % 9 = 0 THEN NULL ELSE (g % 1000) / 7.0 END, 's' || (g * 31 % 97) FROM generate_series(1, 20000) x(g)",
		// Groups whose values are all NULL.
		"INSERT INTO gf VALUES (99, 'z', 0, NULL, NULL, NULL, NULL), (99, 'z', 1, NULL, NULL, NULL, NULL)",
		"CREATE TABLE gempty (a INTEGER, b VARCHAR, i INTEGER, d DECIMAL(7,2))",
	}
	// NB: no double aggregates here: summing the finest groups' sums adds
	// doubles in another order (so does a parallel aggregate); they are
	// compared within 1e-12 below.
	aggs := "sum(i), count(i), count(*), min(d), max(s), avg(i), avg(d), sum(d), min(f)"
	pairs := [][2]string{
		{"SELECT a, b, " + aggs + " FROM gf GROUP BY ROLLUP (a, b)",
			"SELECT a, b, " + aggs + " FROM gf GROUP BY a, b UNION ALL SELECT a, NULL, " + aggs + " FROM gf GROUP BY a UNION ALL SELECT NULL, NULL, " + aggs + " FROM gf"},
		{"SELECT a, b, c, avg(d), count(*), grouping(a, c) FROM gf GROUP BY CUBE (a, b, c)",
			"SELECT a, b, c, avg(d), count(*), 0 FROM gf GROUP BY a, b, c UNION ALL SELECT a, b, NULL, avg(d), count(*), 1 FROM gf GROUP BY a, b UNION ALL " +
				"SELECT a, NULL, c, avg(d), count(*), 0 FROM gf GROUP BY a, c UNION ALL SELECT a, NULL, NULL, avg(d), count(*), 1 FROM gf GROUP BY a UNION ALL " +
				"SELECT NULL, b, c, avg(d), count(*), 2 FROM gf GROUP BY b, c UNION ALL SELECT NULL, b, NULL, avg(d), count(*), 3 FROM gf GROUP BY b UNION ALL " +
				"SELECT NULL, NULL, c, avg(d), count(*), 2 FROM gf GROUP BY c UNION ALL SELECT NULL, NULL, NULL, avg(d), count(*), 3 FROM gf"},
		{"SELECT a, c, avg(i), min(b) FROM gf GROUP BY GROUPING SETS ((a), (c))",
			"SELECT a, NULL, avg(i), min(b) FROM gf GROUP BY a UNION ALL SELECT NULL, c, avg(i), min(b) FROM gf GROUP BY c"},
		{"SELECT a, b, count(*), count(i), sum(i), avg(d) FROM gempty GROUP BY ROLLUP (a, b)",
			"SELECT NULL, NULL, count(*), count(i), sum(i), avg(d) FROM gempty"},
	}
	for _, par := range []int{1, 3} {
		s, err := Open(t.TempDir(), Options{Parallelism: par})
		if err != nil {
			t.Fatal(err)
		}
		run := func(q string) string {
			t.Helper()
			rows := queryRows(t, s, q)
			sort.Strings(rows)
			return strings.Join(rows, "\n")
		}
		for _, q := range setup {
			run(q)
		}
		for _, p := range pairs {
			got, want := run(p[0]), run(p[1])
			if got != want {
				t.Errorf("parallelism %d: %s\ngot:\n%.2000s\nwant:\n%.2000s", par, p[0], got, want)
			}
		}
		// Doubles: the same within 1e-12.
		got := run("SELECT a, b, avg(f), sum(f) FROM gf GROUP BY ROLLUP (a, b)")
		want := run("SELECT a, b, avg(f), sum(f) FROM gf GROUP BY a, b UNION ALL SELECT a, NULL, avg(f), sum(f) FROM gf GROUP BY a UNION ALL SELECT NULL, NULL, avg(f), sum(f) FROM gf")
		if !closeRows(got, want, 1e-12) {
			t.Errorf("parallelism %d: doubles differ:\n%s\nwant:\n%s", par, got, want)
		}
		if plan := run("EXPLAIN SELECT a, b, avg(d) FROM gf GROUP BY ROLLUP (a, b)"); !strings.Contains(plan, "SharedScan") {
			t.Errorf("no shared finest aggregate:\n%s", plan)
		}
		s.Close()
	}
}

// closeRows compares rows field by field, numbers within rel.
func closeRows(a, b string, rel float64) bool {
	ra, rb := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(ra) != len(rb) {
		return false
	}
	for i := range ra {
		fa, fb := strings.Split(ra[i], "|"), strings.Split(rb[i], "|")
		if len(fa) != len(fb) {
			return false
		}
		for k := range fa {
			if fa[k] == fb[k] {
				continue
			}
			x, err1 := strconv.ParseFloat(fa[k], 64)
			y, err2 := strconv.ParseFloat(fb[k], 64)
			if err1 != nil || err2 != nil || math.Abs(x-y) > rel*math.Max(math.Abs(x), math.Abs(y)) {
				return false
			}
		}
	}
	return true
}
