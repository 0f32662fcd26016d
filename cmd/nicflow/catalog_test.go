package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

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
