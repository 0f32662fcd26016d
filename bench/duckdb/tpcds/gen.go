package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// gen generates TPC-DS at sf with DuckDB's dsdgen (the official generator
// built into its tpcds extension), writes each table to Parquet and loads
// it into the nicflow database in dir with `nicflow load` (so both engines
// then read nicflow's files), and writes the 99 query texts (the
// extension's, with the validation substitutions) to dir/tpcds/qNN.sql.
func gen(dir, nicflow, cache string, sf float64, threads int) error {
	if err := os.MkdirAll(filepath.Join(dir, "tpcds"), 0o755); err != nil {
		return err
	}
	db, err := openDuckDB(cache, threads)
	if err != nil {
		return err
	}
	defer db.Close()
	start := time.Now()
	fmt.Fprintf(os.Stderr, "tpcds: dsdgen sf=%g ...\n", sf)
	if _, err := db.Exec(fmt.Sprintf("CALL dsdgen(sf=%g)", sf)); err != nil {
		return fmt.Errorf("dsdgen: %w", err)
	}
	var tables []string
	rows, err := db.Query("SELECT table_name FROM duckdb_tables() ORDER BY 1")
	if err != nil {
		return err
	}
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	rows.Close()
	staging := filepath.Join(dir, "tpcds", "staging")
	if err := os.MkdirAll(staging, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(staging)
	for _, t := range tables {
		file := filepath.Join(staging, t+".parquet")
		if _, err := db.Exec(fmt.Sprintf("COPY %s TO '%s' (FORMAT parquet)", t, strings.ReplaceAll(file, "'", "''"))); err != nil {
			return fmt.Errorf("writing %s: %w", t, err)
		}
		if _, err := db.Exec("DROP TABLE " + t); err != nil {
			return err
		}
		load := exec.Command(nicflow, "load", "--dir", dir, "--table", t, "--replace", file)
		if msg, err := load.CombinedOutput(); err != nil {
			return fmt.Errorf("nicflow load %s: %v: %s", t, err, msg)
		}
		os.Remove(file)
		fmt.Fprintf(os.Stderr, "tpcds: %s loaded (%s)\n", t, time.Since(start).Round(time.Second))
	}
	rows, err = db.Query("SELECT query_nr, query FROM tpcds_queries() ORDER BY 1")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var n int
		var q string
		if err := rows.Scan(&n, &q); err != nil {
			return err
		}
		if err := os.WriteFile(queryFile(dir, n), []byte(q), 0o644); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tpcds", "sf"), []byte(strconv.FormatFloat(sf, 'g', -1, 64)+"\n"), 0o644)
}

func queryFile(dir string, n int) string {
	return filepath.Join(dir, "tpcds", fmt.Sprintf("q%02d.sql", n))
}
