package storage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

// writeInt64File writes a one-column (a bigint) Parquet file of v.
func writeInt64File(t *testing.T, path string, v int64) {
	t.Helper()
	sch := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	f, err := CreateParquetFile(nil, path, sch, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.Append(v)
	col := b.NewArray()
	rec := array.NewRecordBatch(sch, []arrow.Array{col}, 1)
	if err := f.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	col.Release()
	if _, err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// A file table under a file access root opens its files through the
// root when it is scanned, not only when it is described: a file swapped
// for a link to a file outside (same size, same time) between the two is
// refused, not read.
func TestFileRootScanAfterSwap(t *testing.T) {
	db := openTestDB(t, WriteOptions{})
	dir, outside := t.TempDir(), t.TempDir()
	in, secret := filepath.Join(dir, "data.parquet"), filepath.Join(outside, "secret.parquet")
	writeInt64File(t, in, 1)
	writeInt64File(t, secret, 2)
	root, err := db.FileRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	name, err := FileTableName(in, root)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := db.Table(name)
	if err != nil {
		t.Fatal(err)
	}
	if tab.QualifiedName() != name {
		t.Fatalf("the table is named %q, its scans %q: a worker would not confine it", name, tab.QualifiedName())
	}
	st1, _ := os.Stat(in)
	st2, _ := os.Stat(secret)
	if st1.Size() != st2.Size() {
		t.Fatalf("sizes differ: %d, %d", st1.Size(), st2.Size())
	}
	os.Chtimes(secret, st1.ModTime(), st1.ModTime())
	if err := os.Remove(in); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, in); err != nil {
		t.Fatal(err)
	}
	// The table described before the swap, and the table its scan spec
	// names described again (what a worker does).
	for i, open := range []func() (*Scanner, error){
		func() (*Scanner, error) {
			return db.newScanner(tab, ScanSpec{Table: name}.AllColumns(tab), ScanOptions{})
		},
		func() (*Scanner, error) {
			return db.NewScanner(ScanSpec{Table: tab.QualifiedName()}.AllColumns(tab), ScanOptions{})
		},
	} {
		sc, err := open()
		if err == nil {
			var rec arrow.RecordBatch
			rec, err = sc.Next(context.Background())
			if rec != nil {
				t.Errorf("scan %d read %v", i, rec.Column(0))
				rec.Release()
			}
			sc.Close()
		}
		if !nferr.Is(err, nferr.KindAuth) || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("scan %d: %v", i, err)
		}
	}
}

// CreateFile under a root writes inside it only: a directory that is a
// link leading outside is refused, and a refused or aborted file leaves
// nothing behind.
func TestFileRootCreateFile(t *testing.T) {
	db := openTestDB(t, WriteOptions{})
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	root, err := db.FileRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "out", "x.csv"), filepath.Join(dir, "..", filepath.Base(outside), "x.csv")} {
		if _, err := CreateFile(root, p); !nferr.Is(err, nferr.KindAuth) {
			t.Errorf("%s: %v", p, err)
		}
	}
	nf, err := CreateFile(root, filepath.Join(dir, "ok.csv"))
	if err != nil {
		t.Fatal(err)
	}
	nf.WriteString("a\n1\n")
	nf.Close()
	if err := nf.Commit(); err != nil {
		t.Fatal(err)
	}
	nf, err = CreateFile(root, filepath.Join(dir, "aborted.csv"))
	if err != nil {
		t.Fatal(err)
	}
	nf.Abort()
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "ok.csv,out" {
		t.Errorf("root holds %v", names)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("wrote outside: %v", ents)
	}
}
