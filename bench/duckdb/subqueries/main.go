// Command subqueries compares nicflow with DuckDB on subqueries of every
// shape over random tables full of NULLs and duplicates: for each seed it
// creates the same three small tables in both engines and checks that each
// query returns the same rows (as multisets; the queries with LIMIT order
// totally). It exits 1 on any difference.
//
//	cd bench/duckdb && CGO_ENABLED=1 go run ./subqueries --seeds 20
//
// DuckDB reads SQL as PostgreSQL does here (integer division, NULLs last
// ascending); the shapes are those docs/sql.md lists: correlated scalar,
// [NOT] EXISTS, [NOT] IN, ANY/SOME/ALL, in select lists, WHERE, HAVING,
// ON, CASE and under OR, several levels deep, correlated on non-equalities
// and from two levels out, below LIMIT, windows and set operations, LATERAL
// joins, and WITH RECURSIVE.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/nicflow/nicflow/engine"
)

// queries are the shapes compared; a, b and c are the random tables. A
// query "x|||y" runs x in nicflow and the equivalent y in DuckDB.
var queries = []string{
	// Correlated scalar subqueries: equality, non-equality, count bug.
	"select ak, (select max(bv) from b where bk = ak) from a",
	"select ak, (select count(*) from b where bk = ak) from a",
	"select ak, (select count(*) from b where bk < ak) from a",
	"select ak, (select sum(bv) from b where bk <> ak and bv > av) from a",
	"select ak, (select min(cv) from c where ck between ak - 1 and ak + 1) from a",
	"select ak from a where av > (select avg(bv) from b where bk = ak)",
	"select ak from a where av = (select min(bv) from b where bk >= ak)",
	// EXISTS / NOT EXISTS, correlated on anything.
	"select ak, av from a where exists (select * from b where bk = ak)",
	"select ak from a where not exists (select * from b where bk = ak and bv > 2)",
	"select ak from a where exists (select 1 from b where bk > ak and bv = av)",
	"select ak from a where not exists (select 1 from b where bk < ak or bv = av)",
	// IN / NOT IN with SQL's NULL rules.
	"select ak from a where ak in (select bk from b)",
	"select ak from a where ak not in (select bk from b)",
	"select ak from a where ak not in (select bk from b where bk is not null)",
	"select ak from a where ak in (select bk from b where bv = ak)",
	"select ak from a where av not in (select cv from c where ck = ak)",
	"select ak, av in (select bv from b where bk <> ak), av not in (select bv from b where bk <> ak) from a",
	// ANY / SOME / ALL.
	"select ak, av > all (select bv from b) from a",
	"select ak, av < any (select bv from b where bk = ak) from a",
	"select ak, ak = all (select bk from b where bv > av) from a",
	"select ak, ak <> some (select bk from b where bk <> ak) from a",
	"select ak from a where ak >= all (select ck from c where ck is not null)",
	// In CASE, under OR, in HAVING and in ON.
	"select ak, case when av > 2 then (select count(*) from b where bk = ak) else -1 end from a",
	"select ak from a where ak = 1 or exists (select 1 from b where bk = ak and bv < 2)",
	"select ak, count(*) from a group by ak having count(*) > (select count(*) from b where bk = ak)",
	"select ak, bk from a left join b on ak = bk and bv in (select cv from c)",
	"select ak, bk from a right join b on ak = bk and exists (select 1 from c where ck = ak)",
	"select ak, bk from a join b on ak = bk and bv > (select avg(cv) from c where ck = ak)",
	"select ak, bk from a left join b on ak = bk and bv > (select min(cv) from c where ck = ak)",
	// An outer join's ON with a subquery reading both sides. DuckDB
	// refuses it ("Cannot perform non-inner join on subquery"), so it
	// answers the same join written as a LATERAL subquery (after |||).
	"select ak, av, bk, bv from a left join b on ak = bk and exists (select 1 from c where ck = bv and cv > av)" +
		"|||select ak, av, bk, bv from a left join lateral (select * from b where ak = bk and exists (select 1 from c where ck = bv and cv > av)) l on true",
	"select ak, av, bk, bv from a right join b on ak = bk and bv > (select count(*) from c where ck < ak and cv <> bv)" +
		"|||select ak, av, bk, bv from b left join lateral (select * from a where ak = bk and bv > (select count(*) from c where ck < ak and cv <> bv)) l on true",
	"select ak, bk, bv from a left join b on bv not in (select cv from c where ck = ak and cv <> bk)" +
		"|||select ak, bk, bv from a left join lateral (select * from b where bv not in (select cv from c where ck = ak and cv <> bk)) l on true",
	// FULL JOIN without an equality between the sides (no hash key).
	"select ak, av, bk, bv from a full join b on ak < bk and bv > av",
	// Several levels; a correlation from two levels out.
	"select ak from a where exists (select 1 from b where bk = ak and exists (select 1 from c where ck = bk and cv > av))",
	"select ak from a where not exists (select 1 from b where bk = ak and not exists (select 1 from c where ck = bk and cv = av))",
	"select ak, (select count(*) from b where bk = ak and bv > (select min(cv) from c where ck = ak)) from a",
	"select ak, (select max(s) from (select (select max(cv) from c where ck = bk and cv < av) as s from b) q) from a",
	// Below LIMIT, a window, a set operation, GROUP BY: evaluated per row.
	"select ak, (select bv from b where bk >= ak order by bv nulls last, bk limit 1) from a",
	"select ak, (select sum(bv) from (select bv from b where bk = ak order by bv nulls last limit 2) x) from a",
	"select ak, (select count(*) from (select bv from b where bk = ak union select cv from c where ck = ak) u) from a",
	"select ak, (select max(rn) from (select row_number() over (order by bv) as rn from b where bk = ak) w) from a",
	"select ak from a where exists (select 1 from b where bk < ak group by bv having count(*) > 1)",
	// Subqueries in GROUP BY and aggregate arguments.
	"select (select count(*) from b where bk = ak) as n, count(*) from a group by 1",
	"select sum((select max(cv) from c where ck = ak)) from a",
	// Not subqueries, but checked on the same tables: GROUPS frames and
	// IGNORE NULLS (row order made total by the keys).
	"select ak, av, as_, sum(av) over (order by ak groups between 1 preceding and current row) from a",
	"select ak, av, as_, count(av) over (partition by as_ order by ak groups between current row and 2 following) from a",
	"select ak, av, as_, max(av) over (order by ak desc groups between 2 preceding and 1 preceding) from a",
	"select ak, av, as_, last_value(av ignore nulls) over (order by ak, av, as_ rows between unbounded preceding and 1 preceding) from a",
	"select ak, av, as_, lag(av, 2 ignore nulls) over (partition by as_ order by ak, av) from a where ak is not null and as_ is not null",
	"select ak, av, as_, lead(av ignore nulls) over (order by ak, av, as_) from a",
	"select ak, av, as_, nth_value(av, 2 ignore nulls) over (order by ak, av, as_ rows between 2 preceding and 2 following) from a",
	"select ak, av, as_, min(av) over (order by ak nulls first groups between 1 following and 3 following) from a",
	// EXCLUDE CURRENT ROW / GROUP / TIES over ROWS, RANGE and GROUPS
	// frames (results that do not depend on the order of peers).
	"select ak, av, as_, sum(av) over (order by ak, av, as_ rows between 2 preceding and 2 following exclude current row) from a",
	"select ak, av, as_, count(*) over (order by ak range between 1 preceding and 1 following exclude group), max(av) over (order by ak range between 1 preceding and 1 following exclude group) from a",
	"select ak, av, as_, sum(av) over (order by ak groups between 1 preceding and current row exclude ties), min(av) over (order by ak groups between current row and 1 following exclude ties) from a",
	"select ak, av, as_, avg(av) over (partition by as_ order by av rows between unbounded preceding and unbounded following exclude group) from a",
	"select ak, av, as_, first_value(av) over (order by ak, av, as_ rows between 1 preceding and 3 following exclude current row), last_value(av ignore nulls) over (order by ak, av, as_ rows between 3 preceding and 1 following exclude current row) from a",
	// LATERAL joins (engine/opt/lateral.go): a join on pulled-up
	// predicates, the aggregate of no row, top-N per key, the row-by-row
	// apply (DISTINCT, a set operation, a non-equality under an
	// aggregate), and functions in FROM over the row before them.
	"select ak, l.bv from a, lateral (select bv from b where bk = ak) l",
	"select ak, l.n, l.m from a, lateral (select count(*) as n, max(bv) as m from b where bk = ak) l",
	"select ak, l.n from a, lateral (select count(bv) + 1 as n from b where bk = ak and bv > av) l",
	"select ak, l.s from a left join lateral (select sum(bv) as s from b where bk = ak having count(*) > 1) l on true",
	"select ak, l.bv from a left join lateral (select bv from b where bk = ak order by bv desc nulls last limit 2) l on true",
	"select ak, av, l.bv from a left join lateral (select distinct bv from b where bk <= ak) l on l.bv > av",
	"select ak, l.x from a, lateral (select bv as x from b where bk = ak union all select cv from c where ck = ak) l",
	"select ak, l.bv, l.cv from a, lateral (select bv, cv from b join c on ck = bv where bk = ak) l",
	"select ak, av, x from a, generate_series(1, av) g(x)",
	// Row IN subqueries (engine/bind/rowin.go), three-valued. DuckDB makes
	// a row comparison NULL when any member is NULL ((7, 3) NOT IN
	// (SELECT 8, NULL) is NULL there, true in PostgreSQL: 7 <> 8 decides)
	// and refuses correlated multi-column IN, so it answers with the
	// EXISTS that spell out PostgreSQL's rule.
	"select ak, av from a where (ak, av) in (select bk, bv from b)",
	"select ak, av from a where (ak, av) not in (select bk, bv from b)" +
		"|||select ak, av from a where not exists (select 1 from b where (bk = ak or bk is null or ak is null) and (bv = av or bv is null or av is null))",
	"select ak, av, (ak, av) in (select bk, bv from b), (ak, av) not in (select ck, cv from c where ck <> ak) from a" +
		"|||select ak, av, case when exists (select 1 from b where bk = ak and bv = av) then true when exists (select 1 from b where (bk = ak or bk is null or ak is null) and (bv = av or bv is null or av is null)) then null else false end," +
		" not case when exists (select 1 from c where ck <> ak and ck = ak and cv = av) then true when exists (select 1 from c where ck <> ak and (ck = ak or ck is null or ak is null) and (cv = av or cv is null or av is null)) then null else false end from a",
	"select ak, av from a where (ak, av) = any (select bk, max(bv) from b group by bk)",
	"select ak, av from a where (av, ak) <> all (select cv, ck from c where cv is not null) and ak > 1" +
		"|||select ak, av from a where not exists (select 1 from c where cv is not null and (cv = av or av is null) and (ck = ak or ck is null or ak is null)) and ak > 1",
	// JSON set-returning functions, mode() and EXTRACT of an interval.
	"select ak, x from a, json_array_elements_text('[' || coalesce(av, 0) || ', \"s\", null]') t(x)" +
		"|||select ak, x from a, unnest(cast(['' || coalesce(av, 0), 's', null] as varchar[])) t(x)",
	"select as_, mode() within group (order by av) from a group by as_" +
		"|||select as_, (select x from (select av as x, count(*) as n from a a2 where a2.as_ is not distinct from a.as_ and av is not null group by av) order by n desc, x limit 1) from a group by as_",
	"select ak, extract(epoch from (av * interval '1 day 1 hour')), extract(hour from av * interval '90 minutes') from a",
	// WITH, and WITH RECURSIVE over the random edges of b.
	"with t as (select bk, count(*) as n from b group by bk) select ak, (select n from t where bk = ak) from a",
	"with recursive r(n) as (select bk from b where bk = 1 union select bv from r join b on bk = n where bv is not null) select n from r",
	"with recursive r(n, d) as (select 0, 0 union all select n + 1, d + n from r where n < 20) select n, d from r",
}

func main() {
	seeds := flag.Int("seeds", 20, "random databases to compare on")
	rows := flag.Int("rows", 40, "rows per table")
	verbose := flag.Bool("v", false, "print every query's outcome")
	flag.Parse()
	if err := run(*seeds, *rows, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "subqueries:", err)
		os.Exit(1)
	}
}

func run(seeds, rows int, verbose bool) error {
	ctx := context.Background()
	diffs, total, nonEmpty := 0, 0, 0
	start := time.Now()
	for seed := 1; seed <= seeds; seed++ {
		script := tables(rand.New(rand.NewSource(int64(seed))), rows)
		dir, err := os.MkdirTemp("", "nicflow-subq")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		s, err := engine.Open(dir, engine.Options{Parallelism: 2})
		if err != nil {
			return err
		}
		if _, _, err := engine.ScriptText(ctx, s, script, false); err != nil {
			s.Close()
			return fmt.Errorf("nicflow: loading: %w", err)
		}
		db, err := sql.Open("duckdb", "")
		if err != nil {
			s.Close()
			return err
		}
		db.SetMaxOpenConns(1)
		for _, stmt := range append([]string{"SET integer_division = true", "SET default_null_order = 'nulls_last_on_asc_first_on_desc'"}, strings.Split(script, ";")...) {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			if _, err := db.Exec(stmt); err != nil {
				s.Close()
				db.Close()
				return fmt.Errorf("duckdb: %s: %w", stmt, err)
			}
		}
		for _, q := range queries {
			total++
			dq := q
			if i := strings.Index(q, "|||"); i >= 0 {
				q, dq = q[:i], q[i+3:]
			}
			want, werr := duckRows(db, dq)
			_, got, gerr := engine.ScriptText(ctx, s, q, true)
			var diff string
			switch {
			case werr != nil:
				diff = "duckdb failed: " + werr.Error()
			case gerr != nil:
				diff = "nicflow failed: " + gerr.Error()
			default:
				diff = compare(want, textRows(got))
			}
			if len(want) > 0 {
				nonEmpty++
			}
			if diff != "" {
				diffs++
				fmt.Printf("seed %d: DIFFERS: %s\n  %s\n", seed, q, diff)
			} else if verbose {
				fmt.Printf("seed %d: ok (%d rows): %s\n", seed, len(want), q)
			}
		}
		s.Close()
		db.Close()
	}
	fmt.Printf("%d queries x %d seeds: %d differ, %d agree (%d with rows) in %s\n", len(queries), seeds, diffs, total-diffs, nonEmpty, time.Since(start).Round(time.Millisecond))
	if diffs > 0 {
		return fmt.Errorf("%d results differ", diffs)
	}
	return nil
}

// tables is the script that creates a, b and c with random rows: small
// value ranges (so keys repeat and match) and about one NULL in six.
func tables(r *rand.Rand, rows int) string {
	v := func(n int) string {
		if r.Intn(6) == 0 {
			return "NULL"
		}
		return strconv.Itoa(r.Intn(n))
	}
	var b strings.Builder
	b.WriteString("CREATE TABLE a (ak INTEGER, av INTEGER, as_ VARCHAR);\n")
	b.WriteString("CREATE TABLE b (bk INTEGER, bv INTEGER);\n")
	b.WriteString("CREATE TABLE c (ck INTEGER, cv INTEGER);\n")
	for _, t := range []string{"a", "b", "c"} {
		fmt.Fprintf(&b, "INSERT INTO %s VALUES ", t)
		for i := 0; i < rows; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			if t == "a" {
				s := "NULL"
				if r.Intn(6) != 0 {
					s = "'" + string(rune('p'+r.Intn(4))) + "'"
				}
				fmt.Fprintf(&b, "(%s, %s, %s)", v(8), v(6), s)
			} else {
				fmt.Fprintf(&b, "(%s, %s)", v(8), v(6))
			}
		}
		b.WriteString(";\n")
	}
	return b.String()
}

// duckRows runs q in DuckDB; each row is its cells' text joined by '|'.
func duckRows(db *sql.DB, q string) ([]string, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []string
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		cells := make([]string, len(vals))
		for i, v := range vals {
			cells[i] = cell(v)
		}
		out = append(out, strings.Join(cells, "|"))
	}
	return out, rows.Err()
}

// cell is a DuckDB value as nicflow's canonical text prints it (NULL
// empty).
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

func textRows(rows [][]string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = strings.Join(r, "|")
	}
	return out
}

// compare returns "" when want and got hold the same rows (in any order),
// else the first difference.
func compare(want, got []string) string {
	w, g := slices.Clone(want), slices.Clone(got)
	slices.Sort(w)
	slices.Sort(g)
	if len(w) != len(g) {
		return fmt.Sprintf("%d rows, DuckDB %d (first rows: nicflow %q, DuckDB %q)", len(g), len(w), head(g), head(w))
	}
	for i := range w {
		if w[i] != g[i] {
			return fmt.Sprintf("row %q, DuckDB %q", g[i], w[i])
		}
	}
	return ""
}

func head(rows []string) []string { return rows[:min(len(rows), 3)] }
