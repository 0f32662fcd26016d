package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func openTestDB(t testing.TB, w WriteOptions) *DB {
	t.Helper()
	db, err := Open(t.TempDir(), Options{Write: w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// reopenDB closes db and opens its directory again (closed at the end of
// the test), to check what a change leaves on disk.
func reopenDB(t testing.TB, db *DB) *DB {
	t.Helper()
	dir := db.Dir()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustCreate(t testing.TB, db *DB, name string, sch *arrow.Schema) {
	t.Helper()
	if err := db.CreateTable(name, sch, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func mustTable(t testing.TB, db *DB, name string) *Table {
	t.Helper()
	tb, err := db.Table(name)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func appendRows(t testing.TB, db *DB, name string, sch *arrow.Schema, rows []row) {
	t.Helper()
	app, err := db.NewAppender(name, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Several records, to cross row group and file boundaries mid-record.
	for off := 0; off < len(rows); off += 777 {
		rec := recordOf(memory.DefaultAllocator, sch, rows[off:min(off+777, len(rows))])
		err := app.Append(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := app.Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestDDLAndAppenders(t *testing.T) {
	db := openTestDB(t, WriteOptions{RowGroupRows: 100})
	sch := loadSchema()
	mustCreate(t, db, "t", sch)
	if err := db.CreateTable("t", sch, CreateOptions{}); err == nil || err.Error() != "table t already exists" {
		t.Fatalf("create twice: %v", err)
	}
	if err := db.CreateTable("t", sch, CreateOptions{IfNotExists: true}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTable("bad name!", sch, CreateOptions{}); err == nil {
		t.Fatal("bad name accepted")
	}
	if err := db.DropTable("nope", false); err == nil || err.Error() != "table nope does not exist" {
		t.Fatalf("drop missing: %v", err)
	}
	if err := db.DropTable("nope", true); err != nil {
		t.Fatal(err)
	}
	rows := func(n, start int) []row {
		var out []row
		for i := 0; i < n; i++ {
			out = append(out, row{int32(start + i), int64(i), int32(i), nil})
		}
		return out
	}
	// CTAS: the table appears only at commit, with its rows.
	app, err := db.NewAppender("ctas", AppendOptions{Create: true, Schema: sch})
	if err != nil {
		t.Fatal(err)
	}
	rec := recordOf(memory.DefaultAllocator, sch, rows(250, 0))
	if err := app.Append(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Table("ctas"); err == nil {
		t.Fatal("CTAS table visible before commit")
	}
	if n, err := app.Commit(); err != nil || n != 250 {
		t.Fatalf("commit: %d, %v", n, err)
	}
	if got := mustTable(t, db, "ctas"); got.Rows() != 250 || got.RowGroupCount() != 3 {
		t.Fatalf("ctas: %d rows in %d row groups", got.Rows(), got.RowGroupCount())
	}
	// INSERT appends; Replace swaps the rows and deletes the old files.
	appendRows(t, db, "ctas", sch, rows(10, 1000))
	old := mustTable(t, db, "ctas")
	app, err = db.NewAppender("ctas", AppendOptions{Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Append(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if got := mustTable(t, db, "ctas"); got.Rows() != 250 {
		t.Fatalf("after replace: %d rows", got.Rows())
	}
	for _, f := range old.Files {
		if _, err := os.Stat(db.Path(f)); !os.IsNotExist(err) {
			t.Fatalf("replaced file %s still exists", f.Path)
		}
	}
	// Type mismatch and NOT NULL violations are refused.
	app, _ = db.NewAppender("ctas", AppendOptions{})
	bad := recordOf(memory.DefaultAllocator, testSchema(), randomRows(randSource(1), 0, 3, 0))
	if err := app.Append(bad); err == nil {
		t.Fatal("append of a record of another schema accepted")
	}
	bad.Release()
	app.Abort()
	app.Abort()
	// Drop deletes the files and the directory.
	if err := db.DropTable("ctas", false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(db.Dir(), "ctas")); !os.IsNotExist(err) {
		t.Fatalf("table directory left after drop: %v", err)
	}
}

func TestSchemas(t *testing.T) {
	db := openTestDB(t, WriteOptions{})
	mustCreate(t, db, "sales.orders", loadSchema())
	mustCreate(t, db, "t", loadSchema())
	if got := fmt.Sprint(db.Schemas()); got != "[main sales]" {
		t.Fatalf("schemas = %s", got)
	}
	if tb := mustTable(t, db, "SALES.Orders"); tb.QualifiedName() != "sales.orders" {
		t.Fatalf("lookup is not case-insensitive: %s", tb.QualifiedName())
	}
	if err := db.DropTable("sales.orders", false); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(db.Schemas()); got != "[main]" {
		t.Fatalf("schemas after drop = %s", got)
	}
}

// ReplaceFiles replaces only the named files (none for an empty list),
// refuses a path that is not the table's, and a table with a unique index.
func TestReplaceFiles(t *testing.T) {
	db := openTestDB(t, WriteOptions{RowGroupRows: 2, FileRows: 2})
	sch := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	mustCreate(t, db, "t", sch)
	appendRows(t, db, "t", sch, []row{{int64(1)}, {int64(2)}, {int64(3)}, {int64(4)}, {int64(5)}, {int64(6)}})
	tb := mustTable(t, db, "t")
	if len(tb.Files) != 3 {
		t.Fatalf("%d files, want 3", len(tb.Files))
	}
	// Replace the middle file's rows (3, 4) by one row.
	mid := tb.Files[1].Path
	if err := commitRows(db, "t", AppendOptions{Replace: true, Generation: tb.Generation, ReplaceFiles: []string{mid}}, sch, []row{{int64(40)}}); err != nil {
		t.Fatal(err)
	}
	rows, _ := scanAll(t, db, ScanSpec{Table: "t", Columns: []string{"a"}}, ScanOptions{})
	sort.Slice(rows, func(i, j int) bool { return rows[i][0].(int64) < rows[j][0].(int64) })
	if got := fmt.Sprint(rows); got != "[[1] [2] [5] [6] [40]]" {
		t.Errorf("after replacing one file: %s", got)
	}
	if tb2 := mustTable(t, db, "t"); len(tb2.Files) != 3 || tb2.Files[0].Path != tb.Files[0].Path || tb2.Files[1].Path != tb.Files[2].Path {
		t.Errorf("the other files were not kept: %v", tb2.Files)
	}
	// An empty list replaces nothing: the appended rows are added.
	if err := commitRows(db, "t", AppendOptions{Replace: true, ReplaceFiles: []string{}}, sch, []row{{int64(7)}}); err != nil {
		t.Fatal(err)
	}
	if n := mustTable(t, db, "t").Rows(); n != 6 {
		t.Errorf("%d rows after replacing no file, want 6", n)
	}
	if err := commitRows(db, "t", AppendOptions{Replace: true, ReplaceFiles: []string{"t/nope.parquet"}}, sch, []row{{int64(8)}}); err == nil {
		t.Error("replacing a file that is not the table's succeeded")
	}
	cons := &Constraints{Indexes: []Index{{Name: "u_pkey", Columns: []string{"a"}, Primary: true, Constraint: true}}}
	if err := db.CreateTable("u", sch, CreateOptions{Constraints: cons}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.NewAppender("u", AppendOptions{Replace: true, ReplaceFiles: []string{}}); err == nil {
		t.Error("ReplaceFiles on a table with a unique index accepted")
	}
}
