package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TestLoadParquetNested: load of a Parquet file with a LIST and a STRUCT
// column beside flat ones creates the table of the flat columns and the
// list (an array column), loads their rows and names the column it does
// not load.
func TestLoadParquetNested(t *testing.T) {
	alloc := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer alloc.AssertSize(t, 0)
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(alloc, sch)
	defer b.Release()
	for r := 0; r < 5; r++ {
		b.Field(0).(*array.Int64Builder).Append(int64(r))
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).Append("t")
		b.Field(2).(*array.StringBuilder).Append("n")
		sb := b.Field(3).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(r))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "tagged.parquet")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(sch, out, parquet.NewWriterProperties(parquet.WithAllocator(alloc)), pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(alloc)))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	got, err := runCLI(t, "load", "--dir", dir, "--table", "tagged", path)
	if err != nil {
		t.Fatalf("load: %v\n%s", err, got)
	}
	for _, want := range []string{
		"created table tagged (id int64, tags utf8[], name utf8)",
		"not loading column st (STRUCT) of " + path + ": it is a nested STRUCT column",
		"loaded 5 rows into main.tagged",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("load output %q lacks %q", got, want)
		}
	}
	got, err = runCLI(t, "sql", "--dir", dir, "select id, tags from tagged where id = 3")
	if err != nil || !strings.Contains(got, "3 | {t}") {
		t.Errorf("the loaded list: %v\n%s", err, got)
	}
}
