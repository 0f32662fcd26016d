package storage

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TestExternalTimestampUnits reads Parquet files that another writer
// (pqarrow) wrote with timestamps of every unit, with and without a zone,
// and as legacy INT96: every value arrives exactly, as microseconds, and
// statistics in a file's own unit prune row groups correctly.
func TestExternalTimestampUnits(t *testing.T) {
	// Microsecond values, including negative ones (before 1970) and
	// values with sub-millisecond parts where the unit keeps them.
	us := []int64{-14182940_000_000, 0, 1577934245_500_000, 1577934245_500_123, 253402300799_999_999}
	units := []struct {
		name string
		unit arrow.TimeUnit
		tz   string
		// keep is the value a unit can hold of x (microseconds).
		keep func(x int64) int64
	}{
		{"s", arrow.Second, "", func(x int64) int64 { return floorTo(x, 1_000_000) }},
		{"ms", arrow.Millisecond, "", func(x int64) int64 { return floorTo(x, 1000) }},
		{"us", arrow.Microsecond, "", func(x int64) int64 { return x }},
		{"ns", arrow.Nanosecond, "UTC", func(x int64) int64 { return x }},
		{"ms_tz", arrow.Millisecond, "America/New_York", func(x int64) int64 { return floorTo(x, 1000) }},
	}
	var fields []arrow.Field
	for _, u := range units {
		fields = append(fields, arrow.Field{Name: u.name, Type: &arrow.TimestampType{Unit: u.unit, TimeZone: u.tz}, Nullable: true})
	}
	fields = append(fields, arrow.Field{Name: "legacy", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true})
	sch := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	for _, x := range us {
		for i, u := range units {
			v := u.keep(x)
			switch u.unit {
			case arrow.Second:
				v /= 1_000_000
			case arrow.Millisecond:
				v /= 1000
			case arrow.Nanosecond:
				if x > 9_000_000_000_000_000 {
					b.Field(i).AppendNull() // beyond int64 nanoseconds
					continue
				}
				v *= 1000
			}
			b.Field(i).(*array.TimestampBuilder).Append(arrow.Timestamp(v))
		}
		if x > 9_000_000_000_000_000 {
			b.Field(len(units)).AppendNull()
		} else {
			b.Field(len(units)).(*array.TimestampBuilder).Append(arrow.Timestamp(x * 1000))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()

	ext := t.TempDir()
	// One row per row group, so statistics decide per value.
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(1))
	// The units as they are in one file, the legacy column as INT96 in
	// another.
	writeParquet(t, filepath.Join(ext, "part-0.parquet"), sch.Fields()[:len(units)], rec, props, pqarrow.DefaultWriterProps())
	legacyDir := t.TempDir()
	writeParquet(t, filepath.Join(legacyDir, "part-0.parquet"), sch.Fields()[len(units):], rec, props,
		pqarrow.NewArrowWriterProperties(pqarrow.WithDeprecatedInt96Timestamps(true)))

	db := openTestDB(t, WriteOptions{})
	ctx := context.Background()
	if err := db.RegisterExternal(ctx, "ext", ext, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := db.RegisterExternal(ctx, "legacy", legacyDir, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tb := mustTable(t, db, "ext")
	for i, u := range units {
		want := "timestamp"
		if u.tz != "" {
			want = "timestamptz"
		}
		if tb.Columns[i].Type != want {
			t.Errorf("column %s: type %s, want %s", u.name, tb.Columns[i].Type, want)
		}
	}
	names := make([]string, len(units))
	for i, u := range units {
		names[i] = u.name
	}
	rows, _ := scanAll(t, db, ScanSpec{Table: "ext", Columns: names}, ScanOptions{})
	if len(rows) != len(us) {
		t.Fatalf("%d rows, want %d", len(rows), len(us))
	}
	for r, x := range us {
		for i, u := range units {
			got := rows[r][i]
			if u.unit == arrow.Nanosecond && x > 9_000_000_000_000_000 {
				if got != nil {
					t.Errorf("row %d %s: %v, want NULL", r, u.name, got)
				}
				continue
			}
			if got != u.keep(x) {
				t.Errorf("row %d %s: %v, want %d", r, u.name, got, u.keep(x))
			}
		}
	}
	legacy, _ := scanAll(t, db, ScanSpec{Table: "legacy", Columns: []string{"legacy"}}, ScanOptions{})
	for r, x := range us {
		var want any = x
		if x > 9_000_000_000_000_000 {
			want = nil
		}
		if legacy[r][0] != want {
			t.Errorf("INT96 row %d: %v, want %v", r, legacy[r][0], want)
		}
	}
	// Pruning by statistics kept in each file's unit: exactly the rows at
	// or after 2020-01-02 03:04:05.5 pass, and the row groups before it
	// are skipped.
	for _, u := range []string{"ms", "ns", "us"} {
		got, st := scanAll(t, db, ScanSpec{Table: "ext", Columns: []string{u}, Filter: Cmp(u, OpGe, Timestamp(1577934245_500_000))}, ScanOptions{})
		want := 3
		if u == "ns" {
			want = 2 // 9999-12-31 is NULL: beyond int64 nanoseconds
		}
		if len(got) != want {
			t.Errorf("%s >= 2020-01-02 03:04:05.5: %d rows, want %d (%v)", u, len(got), want, got)
		}
		if st.RowGroupsPruned < 2 {
			t.Errorf("%s: %d row groups skipped, want at least 2", u, st.RowGroupsPruned)
		}
	}
}

// floorTo rounds x down to a multiple of m.
func floorTo(x, m int64) int64 {
	q := x / m
	if x%m < 0 {
		q--
	}
	return q * m
}

// writeParquet writes the columns fields of rec to path.
func writeParquet(t *testing.T, path string, fields []arrow.Field, rec arrow.RecordBatch, props *parquet.WriterProperties, aprops pqarrow.ArrowWriterProperties) {
	t.Helper()
	sch := arrow.NewSchema(fields, nil)
	cols := make([]arrow.Array, len(fields))
	for i, f := range fields {
		idx := rec.Schema().FieldIndices(f.Name)[0]
		cols[i] = rec.Column(idx)
	}
	sub := array.NewRecordBatch(sch, cols, rec.NumRows())
	defer sub.Release()
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(sch, out, props, aprops)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(sub); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
