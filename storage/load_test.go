package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cockroachdb/pebble/v2"
	"github.com/klauspost/compress/gzip"

	"github.com/nicflow/nicflow/internal/nferr"
)

func loadSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int32},
		{Name: "v", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCopyGoodFiles(t *testing.T) {
	db := openTestDB(t, WriteOptions{RowGroupRows: 2})
	mustCreate(t, db, "t", loadSchema())
	in := t.TempDir()
	tbl := writeFile(t, in, "a.tbl", "1|12.34|1995-03-15|abc|\n2|-0.5|1996-02-29||\n")
	csv := writeFile(t, in, "b.csv", "k,v,d,s\n3,7,1970-01-01,\"x, \"\"y\"\"\"\r\n4,.25,1998-12-01,\n5,1.50,1992-01-02,\"\"\n")
	n, err := db.Copy(context.Background(), "t", []string{tbl}, CopyOptions{})
	if err != nil || n != 2 {
		t.Fatalf("copy tbl: %d rows, %v", n, err)
	}
	n, err = db.Copy(context.Background(), "t", []string{csv}, CopyOptions{Header: true})
	if err != nil || n != 3 {
		t.Fatalf("copy csv: %d rows, %v", n, err)
	}
	got, _ := scanAll(t, db, ScanSpec{Table: "t"}.AllColumns(mustTable(t, db, "t")), ScanOptions{})
	want := []row{
		{int32(1), int64(1234), int32(9204), "abc"},
		{int32(2), int64(-50), int32(9555), nil},
		{int32(3), int64(700), int32(0), `x, "y"`},
		{int32(4), int64(25), int32(10561), nil},
		{int32(5), int64(150), int32(8036), ""},
	}
	sortRows(got)
	if !equalRows(got, want) {
		t.Fatalf("copied rows:\n got %v\nwant %v", got, want)
	}
	// Parquet in: copy the table's own file into another table.
	mustCreate(t, db, "t2", loadSchema())
	f := mustTable(t, db, "t").Files[0]
	if n, err := db.Copy(context.Background(), "t2", []string{db.Path(f)}, CopyOptions{}); err != nil || n != f.Rows {
		t.Fatalf("copy parquet: %d rows, %v", n, err)
	}
}

func TestCopyBadFiles(t *testing.T) {
	in := t.TempDir()
	cases := []struct {
		name, body string
		opts       CopyOptions
		want       string // message after "<path>:"
	}{
		{"fields.tbl", "1|1.00|1995-01-01|a|\n2|1.00|1995-01-01|\n", CopyOptions{}, "2: expected 4 fields, found 3"},
		{"trail.tbl", "1|1.00|1995-01-01|a\n", CopyOptions{}, "1: line does not end with the '|' delimiter (dbgen .tbl format)"},
		{"num.csv", "1,1.00,1995-01-01,a\nx1,2,1995-01-01,b\n", CopyOptions{}, `2: column k (field 1): not an integer: "x1"`},
		{"ovf.csv", "99999999999,1.00,1995-01-01,a\n", CopyOptions{}, `1: column k (field 1): overflows int32: "99999999999"`},
		{"dec.csv", "1,1.005,1995-01-01,a\n", CopyOptions{}, `1: column v (field 2): more than 2 digits after the decimal point: "1.005"`},
		{"decovf.csv", "1,12345678901234.5,1995-01-01,a\n", CopyOptions{}, `1: column v (field 2): overflows decimal(15,2): "12345678901234.5"`},
		{"date.csv", "1,1,1995-02-30,a\n", CopyOptions{}, `1: column d (field 3): no such date: "1995-02-30"`},
		{"null.csv", "1,,1995-01-01,a\n", CopyOptions{}, `1: column v (field 2): NULL in a NOT NULL column: ""`},
		{"quote.csv", "1,1,1995-01-01,\"abc\n", CopyOptions{}, "1: unterminated quoted field"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := openTestDB(t, WriteOptions{RowGroupRows: 1, FileRows: 1})
			mustCreate(t, db, "t", loadSchema())
			good := writeFile(t, in, "good.tbl", "7|1.00|1995-01-01|a|\n8|2.00|1995-01-02|b|\n")
			if _, err := db.Copy(context.Background(), "t", []string{good}, CopyOptions{}); err != nil {
				t.Fatal(err)
			}
			before := mustTable(t, db, "t")
			p := writeFile(t, in, c.name, c.body)
			// The good file first: its rows must not be committed either.
			_, err := db.Copy(context.Background(), "t", []string{good, p}, c.opts)
			if err == nil {
				t.Fatal("bad file loaded without error")
			}
			if !nferr.Is(err, nferr.KindData) || err.Error() != p+":"+c.want {
				t.Fatalf("error = %v (kind %v)\nwant %s:%s", err, nferr.KindOf(err), p, c.want)
			}
			after := mustTable(t, db, "t")
			if after != before || after.Rows() != 2 {
				t.Fatalf("table changed by a failed load: %d rows", after.Rows())
			}
			ents, _ := os.ReadDir(filepath.Join(db.Dir(), "t"))
			if len(ents) != len(before.Files) {
				t.Fatalf("failed load left files behind: %d files, table has %d", len(ents), len(before.Files))
			}
		})
	}
}

// TestMigrateV0 writes a v0 catalog (tables stored whole under "t/") with
// Pebble directly and checks that Open upgrades it.
func TestMigrateV0(t *testing.T) {
	dir := t.TempDir()
	// Make a real file with a v1 database, then rewrite the catalog as v0.
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, db, "t", loadSchema())
	good := writeFile(t, t.TempDir(), "good.tbl", "7|1.00|1995-01-01|a|\n8|2.00|1995-01-02|b|\n")
	if _, err := db.Copy(context.Background(), "t", []string{good}, CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	tb := mustTable(t, db, "t")
	db.Close()
	if err := os.RemoveAll(filepath.Join(dir, "catalog")); err != nil {
		t.Fatal(err)
	}
	// A v0 database had no seal either (catalog_seal.go).
	os.Remove(filepath.Join(dir, sealFile))
	pdb, err := pebble.Open(filepath.Join(dir, "catalog"), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v0 := *tb
	v0.Schema, v0.Generation = "", 0 // v0 had neither
	for _, f := range v0.Files {
		f.ID = 0
	}
	b, _ := json.Marshal(&v0)
	if err := pdb.Set([]byte("t/t"), b, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	pdb.Close()

	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatalf("open v0 catalog: %v", err)
	}
	defer db.Close()
	if err := db.cat.lockWrite(); err != nil {
		t.Fatal(err)
	}
	v, _, _ := db.cat.get(keyVersion)
	db.cat.unlockWrite()
	if string(v) != "1" {
		t.Fatalf("format version after migration = %q", v)
	}
	got := mustTable(t, db, "main.t")
	if got.Rows() != 2 || len(got.Files) != 1 || got.Files[0].ID == 0 {
		t.Fatalf("migrated table: %+v", got)
	}
	rows, _ := scanAll(t, db, ScanSpec{Table: "t", Columns: []string{"k"}}, ScanOptions{})
	if len(rows) != 2 {
		t.Fatalf("scan after migration: %d rows", len(rows))
	}
	if err := db.cat.lockWrite(); err != nil {
		t.Fatal(err)
	}
	err = db.cat.scan(pfxV0Table, func(k, v []byte) error { t.Fatalf("v0 key %s left", k); return nil })
	db.cat.unlockWrite()
	if err != nil {
		t.Fatal(err)
	}
}

// TestIntegrity: missing, truncated and corrupted files give KindData
// errors naming the file, never a panic or a wrong answer.
func TestIntegrity(t *testing.T) {
	setup := func(t *testing.T, verify bool) (*DB, string) {
		dir := t.TempDir()
		db, err := Open(dir, Options{VerifyChecksums: verify})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		mustCreate(t, db, "t", testSchema())
		appendRows(t, db, "t", testSchema(), randomRows(randSource(3), 0, 3000, 0.1))
		return db, db.Path(mustTable(t, db, "t").Files[0])
	}
	scanErr := func(db *DB) error {
		sc, err := db.NewScanner(ScanSpec{Table: "t"}.AllColumns(mustTable(t, db, "t")), ScanOptions{})
		if err != nil {
			return err
		}
		defer sc.Close()
		for {
			rec, err := sc.Next(context.Background())
			if err != nil || rec == nil {
				return err
			}
			rec.Release()
		}
	}
	t.Run("missing", func(t *testing.T) {
		db, p := setup(t, false)
		os.Remove(p)
		err := scanErr(db)
		if !nferr.Is(err, nferr.KindData) || err.Error() != "data file "+p+" is missing" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		db, p := setup(t, false)
		st, _ := os.Stat(p)
		os.Truncate(p, st.Size()-100)
		err := scanErr(db)
		if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), "data file "+p+" is truncated") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("checksum", func(t *testing.T) {
		db, p := setup(t, true)
		b, _ := os.ReadFile(p)
		b[len(b)/2] ^= 0x40
		os.WriteFile(p, b, 0o644)
		err := scanErr(db)
		if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), "data file "+p+" is corrupt: checksum") {
			t.Fatalf("err = %v", err)
		}
		res, _ := db.Verify(context.Background())
		bad := 0
		for _, r := range res {
			if r.Err != nil {
				bad++
			}
		}
		if bad != 1 {
			t.Fatalf("verify found %d bad files, want 1", bad)
		}
	})
	t.Run("corrupt-pages", func(t *testing.T) {
		// Without checksum verification, flipped bytes in data pages must
		// give an error (or, if the page still decodes, rows): never a
		// panic. Try many positions.
		db, p := setup(t, false)
		orig, _ := os.ReadFile(p)
		for i := 0; i < 60; i++ {
			b := append([]byte(nil), orig...)
			pos := 4 + (i*7919)%(len(b)/2)
			b[pos] ^= 0xff
			b[pos+1] ^= 0x5a
			os.WriteFile(p, b, 0o644)
			fs := db.fs
			fs.footers.Range(func(k, v any) bool { fs.footers.Delete(k); return true })
			if err := scanErr(db); err != nil && !nferr.Is(err, nferr.KindData) {
				t.Fatalf("flip at %d: error of kind %v: %v", pos, nferr.KindOf(err), err)
			}
		}
	})
}

// A compressed CSV that is not what its name says, or is cut short, is
// bad data with the file's name, never a crash or a silent short read.
func TestDamagedCompressedCSV(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.csv.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(zw, "%d,row %d\n", i, i)
	}
	zw.Close()
	if err := os.WriteFile(good, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.csv.gz")
	if err := os.WriteFile(cut, buf.Bytes()[:buf.Len()/2], 0o644); err != nil {
		t.Fatal(err)
	}
	notgz := filepath.Join(dir, "plain.csv.gz")
	if err := os.WriteFile(notgz, []byte("1,a\n2,b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t, WriteOptions{})
	sch := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	mustCreate(t, db, "t", sch)
	ctx := context.Background()
	if n, err := db.Copy(ctx, "t", []string{good}, CopyOptions{}); err != nil || n != 20000 {
		t.Fatalf("good file: %d rows, %v", n, err)
	}
	for _, p := range []string{cut, notgz} {
		_, err := db.Copy(ctx, "t", []string{p}, CopyOptions{})
		if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want a data error naming the file", filepath.Base(p), err)
		}
	}
	if tb := mustTable(t, db, "t"); tb.Rows() != 20000 {
		t.Errorf("the failed loads left %d rows, want 20000", tb.Rows())
	}
}
