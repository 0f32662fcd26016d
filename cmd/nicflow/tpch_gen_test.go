package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/internal/nferr"
)

func dirNames(t *testing.T, dir string) []string {
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

func TestTpchGenFlagErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		f    tpchGenFlags
		want string
	}{
		{"no sf", tpchGenFlags{dir: dir, format: "parquet"}, "--sf is required"},
		{"no dir", tpchGenFlags{sf: "1", format: "parquet"}, "--dir is required"},
		{"sf not a number", tpchGenFlags{sf: "ten", dir: dir, format: "parquet"}, `--sf "ten" is not a number`},
		{"sf zero", tpchGenFlags{sf: "0", dir: dir, format: "parquet"}, "positive"},
		{"sf negative", tpchGenFlags{sf: "-0.5", dir: dir, format: "parquet"}, "positive"},
		{"sf nan", tpchGenFlags{sf: "NaN", dir: dir, format: "parquet"}, "positive"},
		{"unknown table", tpchGenFlags{sf: "1", dir: dir, format: "parquet", tables: "lineitem,parts"}, `unknown TPC-H table "parts"`},
		{"unknown format", tpchGenFlags{sf: "1", dir: dir, format: "csv"}, `unknown format "csv"`},
		{"force and if-missing", tpchGenFlags{sf: "1", dir: dir, format: "tbl", force: true, ifMissing: true}, "contradict"},
	} {
		_, err := tc.f.options()
		var ue *usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want a usage error containing %q", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error is not one line: %q", tc.name, err)
		}
	}
	if got := dirNames(t, dir); len(got) != 0 {
		t.Errorf("bad flags wrote %v", got)
	}
}

func TestTpchGenRun(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	f := tpchGenFlags{sf: "0.01", dir: dir, format: "parquet", tables: "region,nation,supplier"}
	opts, err := f.options()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runTpchGen(ctx, opts, &out, os.Stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "3 tables, 130 rows") {
		t.Errorf("summary: %q", out.String())
	}
	for _, p := range []string{"region/region-0000.parquet", "nation/nation-0000.parquet", "supplier/supplier-0000.parquet", "tpch-gen.json"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("missing %s", p)
		}
	}
	before := dirNames(t, dir)

	// Existing data without --force: one-line error, nothing changed.
	err = runTpchGen(ctx, opts, &out, os.Stderr)
	if err == nil || !strings.Contains(err.Error(), "already exists (use --force") || exitCodeFor(err) != 2 {
		t.Errorf("second run: %v (exit %d)", err, exitCodeFor(err))
	}
	if got := dirNames(t, dir); strings.Join(got, " ") != strings.Join(before, " ") {
		t.Errorf("failed run changed %v into %v", before, got)
	}

	// --if-missing: nothing to do.
	f.ifMissing = true
	opts, _ = f.options()
	out.Reset()
	if err := runTpchGen(ctx, opts, &out, os.Stderr); err != nil || !strings.Contains(out.String(), "nothing to do") {
		t.Errorf("if-missing: %v %q", err, out.String())
	}

	// An unwritable directory (its parent is a file): i/o error, exit 1.
	file := filepath.Join(dir, "afile")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := tpchGenFlags{sf: "0.01", dir: filepath.Join(file, "x"), format: "tbl", tables: "region"}
	opts, err = bad.options()
	if err != nil {
		t.Fatal(err)
	}
	err = runTpchGen(ctx, opts, &out, os.Stderr)
	if !nferr.Is(err, nferr.KindIO) || exitCodeFor(err) != 1 {
		t.Errorf("unwritable dir: %v", err)
	}
}

func TestTpchGenHelpTeaches(t *testing.T) {
	if !strings.Contains(tpchGenCmd.Example, "--if-missing") || !strings.Contains(tpchGenCmd.Long, "byte-identical") {
		t.Errorf("tpch gen --help lacks examples or the format description")
	}
	if benchGenCmd.Example == "" {
		t.Errorf("bench gen --help has no examples")
	}
}
