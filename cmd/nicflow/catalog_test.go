package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cockroachdb/pebble/v2"

	"github.com/nicflow/nicflow/storage"
)

var rewriteCatalog = flag.Bool("rewrite-catalog", false, "rewrite cmd/nicflow/testdata/catalog_*.golden instead of comparing")

// TestCatalogOutputGolden pins the text output of `catalog ls` and
// `catalog show` (rewrite with -rewrite-catalog).
func TestCatalogOutputGolden(t *testing.T) {
	dir := t.TempDir()
	db, err := storage.Open(dir, storage.Options{Write: storage.WriteOptions{RowGroupRows: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sch, err := parseColumnList("n_nationkey int32 not null, n_name utf8 not null, n_balance decimal(15,2), n_since date32")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTable("nation", sch, storage.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "nation.tbl")
	os.WriteFile(in, []byte("0|ALGERIA|12.50|1995-01-01|\n1|ARGENTINA||1996-02-29|\n2|BRAZIL|-3.05||\n"), 0o644)
	if _, err := db.Copy(context.Background(), "nation", []string{in}, storage.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	tb, _ := db.Table("nation")
	var out bytes.Buffer
	if err := printTables(&out, db.Tables(), "text"); err != nil {
		t.Fatal(err)
	}
	out.WriteString("---\n")
	if err := printTable(&out, tb, "text", -1); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "catalog_show.golden")
	if *rewriteCatalog {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -rewrite-catalog to create it)", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("catalog output differs from %s (rerun with -rewrite-catalog if intended):\n%s", golden, out.String())
	}
	_ = arrow.PrimitiveTypes.Int32
}

// oldCatalog rewrites the file records of the catalog in dir as nicflow
// wrote them before it recorded footer and chunk checksums (whole-file
// checksums only), through Pebble, as that nicflow left them on disk.
func oldCatalog(t *testing.T, dir string) {
	t.Helper()
	pdb, err := pebble.Open(filepath.Join(dir, "catalog"), &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	it, err := pdb.NewIter(&pebble.IterOptions{LowerBound: []byte("file/"), UpperBound: []byte("file0")})
	if err != nil {
		t.Fatal(err)
	}
	b := pdb.NewBatch()
	for it.First(); it.Valid(); it.Next() {
		var f map[string]any
		if err := json.Unmarshal(it.Value(), &f); err != nil {
			t.Fatal(err)
		}
		delete(f, "footer_sum")
		for _, rg := range f["rowgroups"].([]any) {
			delete(rg.(map[string]any), "sums")
		}
		v, _ := json.Marshal(f)
		b.Set(slices.Clone(it.Key()), v, nil)
	}
	it.Close()
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
}

type quietPebble struct{}

func (quietPebble) Infof(string, ...any)  {}
func (quietPebble) Errorf(string, ...any) {}
func (quietPebble) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

// filesWithSums lists the files of dir's tables by whether the catalog
// recorded their chunk checksums, as `catalog show --format json` says.
func filesWithSums(t *testing.T, exe, dir string, tables ...string) (with, without []string) {
	t.Helper()
	for _, tb := range tables {
		code, out := runExe(t, exe, "catalog", "show", "--dir", dir, "--format", "json", tb)
		if code != 0 {
			t.Fatalf("catalog show %s: exit %d\n%s", tb, code, out)
		}
		var st struct {
			Files []struct {
				Path      string `json:"path"`
				RowGroups []struct {
					Sums []uint64 `json:"sums"`
				} `json:"rowgroups"`
			} `json:"files"`
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatal(err)
		}
		for _, f := range st.Files {
			if len(f.RowGroups) > 0 && len(f.RowGroups[0].Sums) > 0 {
				with = append(with, f.Path)
			} else {
				without = append(without, f.Path)
			}
		}
	}
	return with, without
}

// TestCatalogUpgradeSums: a database written before chunk checksums is
// upgraded by the first process that verifies its files (a query, or
// `catalog verify`); a damaged file is not, and stays an error naming it.
func TestCatalogUpgradeSums(t *testing.T) {
	exe := mustExe(t)
	data := copyTPCH(t, tpchDir(t, 0.01))
	oldCatalog(t, data)
	tables := []string{"customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"}
	if with, without := filesWithSums(t, exe, data, tables...); len(with) != 0 || len(without) < len(tables) {
		t.Fatalf("old catalog: %d files with sums, %d without", len(with), len(without))
	}
	_, nation := filesWithSums(t, exe, data, "nation")
	bad := filepath.Join(data, nation[0])
	b, err := os.ReadFile(bad)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x08
	os.WriteFile(bad, b, 0o644)

	// A query upgrades the files it read.
	if code, out := runExe(t, exe, "sql", "--dir", data, "select count(*), sum(l_quantity) from lineitem"); code != 0 || !strings.Contains(out, "60175") {
		t.Fatalf("query: exit %d\n%s", code, out)
	}
	if with, without := filesWithSums(t, exe, data, "lineitem"); len(with) == 0 || len(without) != 0 {
		t.Fatalf("lineitem after a query: %d files with sums, %v without", len(with), without)
	}
	// verify upgrades the rest, but the damaged file.
	code, out := runExe(t, exe, "catalog", "verify", "--dir", data)
	with, without := filesWithSums(t, exe, data, tables...)
	upgraded := len(with) - len(filesWithSumsMust(t, exe, data, "lineitem"))
	if code != 3 || !strings.Contains(out, "BAD  data file "+bad+" is corrupt: checksum") ||
		!strings.Contains(out, fmt.Sprintf("recorded footer and chunk checksums of %d files", upgraded)) {
		t.Fatalf("verify: exit %d\n%s", code, out)
	}
	if len(without) != 1 || without[0] != nation[0] {
		t.Fatalf("after verify, files without sums: %v (want %s)", without, nation[0])
	}
	if code, out := runExe(t, exe, "sql", "--dir", data, "select max(n_name) from nation"); code != 3 || !strings.Contains(out, bad) {
		t.Fatalf("query of the damaged table: exit %d\n%s", code, out)
	}
	code, out = runExe(t, exe, "catalog", "verify", "--dir", data)
	if code != 3 || strings.Contains(out, "recorded footer") || !strings.Contains(out, "1 bad") {
		t.Fatalf("verify again: exit %d\n%s", code, out)
	}
}

func filesWithSumsMust(t *testing.T, exe, dir, table string) []string {
	with, _ := filesWithSums(t, exe, dir, table)
	return with
}
