package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs the nicflow command line in-process.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	loadFlags = struct {
		dir, table, format, delimiter string
		header                        bool
		null                          string
		replace                       bool
		create                        string
	}{}
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&out)
	rootCmd.SetArgs(args)
	err := rootCmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestLoadAndCatalogCLI(t *testing.T) {
	dir := t.TempDir()
	in := t.TempDir()
	good := filepath.Join(in, "nation.tbl")
	os.WriteFile(good, []byte("0|ALGERIA|0|haggle|\n1|ARGENTINA|1|al foxes|\n"), 0o644)
	cols := "n_nationkey int32 not null, n_name utf8 not null, n_regionkey int32 not null, n_comment utf8"
	out, err := runCLI(t, "load", "--dir", dir, "--table", "nation", "--create", cols, good)
	if err != nil || out != "loaded 2 rows into main.nation (now 2 rows in 1 files)\n" {
		t.Fatalf("load: %q, %v", out, err)
	}
	bad := filepath.Join(in, "bad.tbl")
	os.WriteFile(bad, []byte("2|BRAZIL|x|ok|\n"), 0o644)
	_, err = runCLI(t, "load", "--dir", dir, "--table", "nation", bad)
	if err == nil || exitCodeFor(err) != 3 || err.Error() != bad+`:1: column n_regionkey (field 3): not an integer: "x"` {
		t.Fatalf("bad load: %v (exit %d)", err, exitCodeFor(err))
	}
	out, err = runCLI(t, "catalog", "ls", "--dir", dir, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var ls []struct {
		Table string `json:"table"`
		Rows  int64  `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &ls); err != nil || len(ls) != 1 || ls[0].Table != "main.nation" || ls[0].Rows != 2 {
		t.Fatalf("catalog ls json: %q (%v)", out, err)
	}
	out, err = runCLI(t, "catalog", "verify", "--dir", dir, "--format", "text")
	if err != nil || !strings.Contains(out, "verified 1 files: 1 ok, 0 bad") {
		t.Fatalf("verify: %q, %v", out, err)
	}
	if _, err := runCLI(t, "catalog", "ls", "--dir", filepath.Join(dir, "nope")); err == nil || !strings.Contains(err.Error(), "is not a nicflow database") {
		t.Fatalf("catalog ls on a missing database: %v", err)
	}
	if _, err := runCLI(t, "load", "--dir", dir, "--table", "nation", "--delimiter", "ab", good); err == nil || !isUsage(err) {
		t.Fatalf("bad delimiter: %v", err)
	}
}

func isUsage(err error) bool {
	_, ok := err.(*usageError)
	return ok
}

// TestLoadInfersColumns: loading into a table that does not exist creates
// it with the files' columns (CSV typed from every value, header
// detected); tbl files need --create.
func TestLoadInfersColumns(t *testing.T) {
	dir := t.TempDir()
	in := t.TempDir()
	csv := filepath.Join(in, "people.csv")
	os.WriteFile(csv, []byte("id,name,paid,at\n1,ann,10.5,2020-01-01 10:00:00\n2,\"b,ob\",,2021-06-15\n"), 0o644)
	out, err := runCLI(t, "load", "--dir", dir, "--table", "people", csv)
	if err != nil || !strings.Contains(out, "created table people (id int64, name utf8, paid float64, at timestamp)") || !strings.Contains(out, "loaded 2 rows into main.people") {
		t.Fatalf("load: %q, %v", out, err)
	}
	out, err = runCLI(t, "sql", "--dir", dir, "--format", "csv", "SELECT name, paid, at FROM people ORDER BY id")
	if err != nil || out != "name,paid,at\nann,10.5,2020-01-01 10:00:00\n\"b,ob\",,2021-06-15 00:00:00\n" {
		t.Fatalf("query: %q, %v", out, err)
	}
	tbl := filepath.Join(in, "x.tbl")
	os.WriteFile(tbl, []byte("1|a|\n"), 0o644)
	if _, err := runCLI(t, "load", "--dir", dir, "--table", "x", tbl); err == nil || !strings.Contains(err.Error(), "give them with --create") {
		t.Fatalf("tbl without --create: %v", err)
	}
}
