// Command roundtrip checks that files nicflow writes read back the same in
// DuckDB: for each seed it fills a table of every storable type nicflow
// shares with DuckDB (integer, bigint, double, decimal(12,2),
// decimal(30,4), text with delimiters, quotes, line breaks and non-ASCII
// letters, boolean, date, timestamp, timestamptz, time, bytea; about one
// NULL in six), writes it with COPY ... TO as Parquet and as CSV, and
// compares every row as nicflow holds it with the rows DuckDB reads from
// each file. It exits 1 on any difference.
//
//	cd bench/duckdb && CGO_ENABLED=1 go run ./roundtrip --seeds 10
//
// Each engine turns its values into one canonical text in SQL (the
// queries below): doubles are multiples of 1/1024 compared as integers of
// 1024ths, timestamps through strftime with microseconds, times as
// microseconds since midnight, bytea as lower-case hex.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/nicflow/nicflow/engine"
)

// The canonical text of each column, per engine (NULL as "NULL").
var nicflowCols = []string{"i", "b", "CAST(f * 1024 AS BIGINT)", "m", "w", "s",
	"CASE WHEN t THEN 'T' WHEN NOT t THEN 'F' END", "d",
	"strftime(ts, '%Y-%m-%d %H:%M:%S.%f')", "strftime(CAST(tz AS TIMESTAMP), '%Y-%m-%d %H:%M:%S.%f')",
	"extract(hour FROM tm) * 3600000000 + extract(minute FROM tm) * 60000000 + extract(microseconds FROM tm)",
	"encode(bt, 'hex')"}

var duckCols = []string{"i", "b", "CAST(f * 1024 AS BIGINT)", "m", "w", "s",
	"CASE WHEN t THEN 'T' WHEN NOT t THEN 'F' END", "d",
	"strftime(ts, '%Y-%m-%d %H:%M:%S.%f')", "strftime(CAST(tz AS TIMESTAMP), '%Y-%m-%d %H:%M:%S.%f')",
	"extract(hour FROM tm) * 3600000000 + extract(minute FROM tm) * 60000000 + extract(microseconds FROM tm)",
	"lower(hex(bt))"}

// projection is SELECT of cols as text (NULL as 'NULL') FROM rel.
func projection(cols []string, text, rel string) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = "coalesce(CAST(" + c + " AS " + text + "), 'NULL')"
	}
	return "SELECT " + strings.Join(out, ", ") + " FROM " + rel
}

func main() {
	seeds := flag.Int("seeds", 10, "random tables to compare on")
	rows := flag.Int("rows", 500, "rows per table")
	flag.Parse()
	if err := run(*seeds, *rows); err != nil {
		fmt.Fprintln(os.Stderr, "roundtrip:", err)
		os.Exit(1)
	}
}

func run(seeds, rows int) error {
	ctx := context.Background()
	diffs := 0
	for seed := 1; seed <= seeds; seed++ {
		dir, err := os.MkdirTemp("", "nicflow-roundtrip")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		s, err := engine.Open(filepath.Join(dir, "db"), engine.Options{Parallelism: 2})
		if err != nil {
			return err
		}
		pq, csv := filepath.Join(dir, "rt.parquet"), filepath.Join(dir, "rt.csv")
		script := table(rand.New(rand.NewSource(int64(seed))), rows) +
			fmt.Sprintf(";\nCOPY rt TO '%s';\nCOPY rt TO '%s' (HEADER)", pq, csv)
		if _, _, err := engine.ScriptText(ctx, s, script, false); err != nil {
			s.Close()
			return fmt.Errorf("nicflow: %w", err)
		}
		_, got, err := engine.ScriptText(ctx, s, projection(nicflowCols, "TEXT", "rt"), true)
		s.Close()
		if err != nil {
			return fmt.Errorf("nicflow: %w", err)
		}
		want := canon(got)
		db, err := sql.Open("duckdb", "")
		if err != nil {
			return err
		}
		cols := `{'i': 'INTEGER', 'b': 'BIGINT', 'f': 'DOUBLE', 'm': 'DECIMAL(12,2)', 'w': 'DECIMAL(30,4)', 's': 'VARCHAR', 't': 'BOOLEAN',
			'd': 'DATE', 'ts': 'TIMESTAMP', 'tz': 'TIMESTAMPTZ', 'tm': 'TIME', 'bt': 'VARCHAR'}`
		for _, src := range []struct{ name, rel string }{
			{"parquet", fmt.Sprintf("read_parquet('%s')", pq)},
			// NB: bytea is PostgreSQL's hex text in CSV; DuckDB reads it
			// as text and unhexes it. A quoted empty field is the empty
			// string (PostgreSQL's CSV), not NULL.
			{"csv", fmt.Sprintf("(SELECT * REPLACE (unhex(substr(bt, 3)) AS bt) FROM read_csv('%s', header = true, allow_quoted_nulls = false, columns = %s))", csv, cols)},
		} {
			dr, err := duckRows(db, projection(duckCols, "VARCHAR", src.rel))
			if err != nil {
				db.Close()
				return fmt.Errorf("seed %d: DuckDB reading %s: %w", seed, src.name, err)
			}
			if d := compare(want, dr); d != "" {
				diffs++
				fmt.Printf("seed %d %s: DIFFERS: %s\n", seed, src.name, d)
			}
		}
		db.Close()
	}
	fmt.Printf("%d seeds x %d rows x (parquet, csv): %d differ\n", seeds, rows, diffs)
	if diffs > 0 {
		return fmt.Errorf("%d files read differently", diffs)
	}
	return nil
}

// table is the script that creates and fills rt with random rows.
func table(r *rand.Rand, rows int) string {
	null := func() bool { return r.Intn(6) == 0 }
	v := func(f func() string) string {
		if null() {
			return "NULL"
		}
		return f()
	}
	texts := []string{"plain", "a,b", `say "hi"`, "two\nlines", "naïve café", "", " padded ", "semi;colon", `back\slash`, "tab\there"}
	var b strings.Builder
	b.WriteString("CREATE TABLE rt (i INTEGER, b BIGINT, f DOUBLE, m DECIMAL(12,2), w DECIMAL(30,4), s TEXT, t BOOLEAN, d DATE, ts TIMESTAMP, tz TIMESTAMPTZ, tm TIME, bt BYTEA);\nINSERT INTO rt VALUES ")
	for i := 0; i < rows; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
			v(func() string { return fmt.Sprint(r.Int31n(2000000) - 1000000) }),
			v(func() string { return fmt.Sprint(r.Int63n(1<<62) - 1<<61) }),
			v(func() string { return fmt.Sprintf("%d / 1024.0", r.Int63n(1<<30)-1<<29) }),
			v(func() string { return fmt.Sprintf("%d.%02d", r.Int63n(2e9)-1e9, r.Intn(100)) }),
			v(func() string { return fmt.Sprintf("%d%09d.%04d", r.Int63n(1e9), r.Int63n(1e9), r.Intn(10000)) }),
			v(func() string { return "'" + strings.ReplaceAll(texts[r.Intn(len(texts))], "'", "''") + "'" }),
			v(func() string { return []string{"true", "false"}[r.Intn(2)] }),
			v(func() string {
				return fmt.Sprintf("DATE '%04d-%02d-%02d'", 1900+r.Intn(200), 1+r.Intn(12), 1+r.Intn(28))
			}),
			v(func() string { return fmt.Sprintf("TIMESTAMP '%s'", stamp(r)) }),
			v(func() string { return fmt.Sprintf("TIMESTAMPTZ '%s+00'", stamp(r)) }),
			v(func() string {
				return fmt.Sprintf("TIME '%02d:%02d:%02d.%06d'", r.Intn(24), r.Intn(60), r.Intn(60), r.Intn(1e6))
			}),
			v(func() string {
				n := r.Intn(8)
				var h strings.Builder
				for k := 0; k < n; k++ {
					fmt.Fprintf(&h, "%02x", r.Intn(256))
				}
				return `'\x` + h.String() + `'::bytea`
			}),
		)
	}
	return b.String()
}

func stamp(r *rand.Rand) string {
	return fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d.%06d", 1900+r.Intn(200), 1+r.Intn(12), 1+r.Intn(28), r.Intn(24), r.Intn(60), r.Intn(60), r.Intn(1e6))
}

// canon joins nicflow's rows (canonical text, "NULL" for NULL) with '|'
// and sorts them.
func canon(rows [][]string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = strings.Join(r, "|")
	}
	slices.Sort(out)
	return out
}

// duckRows runs q in DuckDB: each row's cells as text joined by '|',
// sorted.
func duckRows(db *sql.DB, q string) ([]string, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		cells := make([]string, len(cols))
		for i, v := range vals {
			cells[i] = "NULL"
			if v.Valid {
				cells[i] = v.String
			}
		}
		out = append(out, strings.Join(cells, "|"))
	}
	slices.Sort(out)
	return out, rows.Err()
}

// compare describes the first difference of two sorted row lists, or "".
func compare(want, got []string) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d rows, DuckDB read %d", len(want), len(got))
	}
	for i := range want {
		if want[i] != got[i] {
			return fmt.Sprintf("row %q, DuckDB %q", want[i], got[i])
		}
	}
	return ""
}
