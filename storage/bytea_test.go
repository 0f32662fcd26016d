package storage

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// TestExternalByteArray reads a Parquet file another writer (pqarrow)
// wrote: a BYTE_ARRAY column without an annotation is bytea (its bytes
// exactly, zero and high bytes included), one annotated STRING is text.
// nicflow writes bytea as BYTE_ARRAY without an annotation.
func TestExternalByteArray(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "raw", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "txt", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	raw := [][]byte{{0x00}, {0xff, 0x00, 0x80}, {}, nil, []byte("abc")}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	for _, v := range raw {
		if v == nil {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.BinaryBuilder).Append(v)
		}
		b.Field(1).(*array.StringBuilder).Append("s" + string(v))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	dir := t.TempDir()
	writeParquet(t, filepath.Join(dir, "part-0.parquet"), sch.Fields(), rec, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(2)), pqarrow.DefaultWriterProps())

	db := openTestDB(t, WriteOptions{})
	if err := db.RegisterExternal(context.Background(), "ext", dir, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tb := mustTable(t, db, "ext")
	if tb.Columns[0].Type != "bytea" || tb.Columns[1].Type != "utf8" {
		t.Fatalf("column types %s, %s; want bytea, utf8", tb.Columns[0].Type, tb.Columns[1].Type)
	}
	sc, err := db.NewScanner(ScanSpec{Table: "ext", Columns: []string{"raw", "txt"}}, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	r := 0
	for {
		out, err := sc.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if out == nil {
			break
		}
		bin, ok := out.Column(0).(*array.Binary)
		if !ok {
			t.Fatalf("raw read as %T, want *array.Binary", out.Column(0))
		}
		if _, ok := out.Column(1).(*array.String); !ok {
			t.Fatalf("txt read as %T, want *array.String", out.Column(1))
		}
		for i := 0; i < int(out.NumRows()); i, r = i+1, r+1 {
			switch {
			case raw[r] == nil:
				if !bin.IsNull(i) {
					t.Errorf("row %d: %x, want NULL", r, bin.Value(i))
				}
			case bin.IsNull(i) || string(bin.Value(i)) != string(raw[r]):
				t.Errorf("row %d: %x (null %v), want %x", r, bin.Value(i), bin.IsNull(i), raw[r])
			}
		}
		out.Release()
	}
	if r != len(raw) {
		t.Fatalf("%d rows, want %d", r, len(raw))
	}

	// What nicflow writes for bytea: no annotation, so that it reads back
	// as bytea (and as binary in other tools).
	n, err := parquetNode(arrow.Field{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true})
	if err != nil {
		t.Fatal(err)
	}
	pn := n.(*schema.PrimitiveNode)
	if pn.PhysicalType() != parquet.Types.ByteArray || !pn.LogicalType().IsNone() {
		t.Fatalf("bytea written as %s %s, want BYTE_ARRAY without a logical type", pn.PhysicalType(), pn.LogicalType())
	}
	if tn, err := TypeName(arrow.BinaryTypes.Binary); err != nil || tn != "bytea" {
		t.Fatalf("TypeName(binary) = %q, %v", tn, err)
	}
	if at, err := ParseType("bytea"); err != nil || at.ID() != arrow.BINARY {
		t.Fatalf("ParseType(bytea) = %v, %v", at, err)
	}
}
