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
)

// TestExternalTimeUnits reads Parquet files that another writer (pqarrow)
// wrote with TIME(MILLIS) on INT32 and TIME(MICROS), TIME(NANOS) on INT64:
// every column reads as TIME (microseconds since midnight), values
// arrive exactly (nanoseconds round down), and statistics kept in each
// file's own unit prune row groups correctly.
func TestExternalTimeUnits(t *testing.T) {
	// Microseconds since midnight: midnight, 12:34:56.5, 12:34:56.789123,
	// 23:59:59.999999 and a NULL.
	us := []int64{0, 45296_500_000, 45296_789_123, 86399_999_999, -1}
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "ms", Type: arrow.FixedWidthTypes.Time32ms, Nullable: true},
		{Name: "us", Type: arrow.FixedWidthTypes.Time64us, Nullable: true},
		{Name: "ns", Type: arrow.FixedWidthTypes.Time64ns, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	keep := []func(int64) int64{
		func(x int64) int64 { return x / 1000 * 1000 },
		func(x int64) int64 { return x },
		func(x int64) int64 { return x },
	}
	for _, x := range us {
		if x < 0 {
			for i := range keep {
				b.Field(i).AppendNull()
			}
			continue
		}
		b.Field(0).(*array.Time32Builder).Append(arrow.Time32(x / 1000))
		b.Field(1).(*array.Time64Builder).Append(arrow.Time64(x))
		b.Field(2).(*array.Time64Builder).Append(arrow.Time64(x*1000 + 999)) // rounds down
	}
	rec := b.NewRecordBatch()
	defer rec.Release()

	ext := t.TempDir()
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(1))
	writeParquet(t, filepath.Join(ext, "part-0.parquet"), sch.Fields(), rec, props, pqarrow.DefaultWriterProps())
	// The same without dictionaries (the PLAIN path of the decoders).
	plain := t.TempDir()
	writeParquet(t, filepath.Join(plain, "part-0.parquet"), sch.Fields(), rec,
		parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(1), parquet.WithDictionaryDefault(false)), pqarrow.DefaultWriterProps())

	db := openTestDB(t, WriteOptions{})
	ctx := context.Background()
	names := []string{"ms", "us", "ns"}
	for _, tab := range []struct{ name, dir string }{{"ext", ext}, {"plain", plain}} {
		if err := db.RegisterExternal(ctx, tab.name, tab.dir, CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tb := mustTable(t, db, tab.name)
		for i, c := range tb.Columns {
			if c.Type != "time" {
				t.Errorf("%s column %s: type %s, want time", tab.name, names[i], c.Type)
			}
		}
		rows, _ := scanAll(t, db, ScanSpec{Table: tab.name, Columns: names}, ScanOptions{})
		if len(rows) != len(us) {
			t.Fatalf("%s: %d rows, want %d", tab.name, len(rows), len(us))
		}
		for r, x := range us {
			for i := range names {
				var want any
				if x >= 0 {
					want = keep[i](x)
				}
				if rows[r][i] != want {
					t.Errorf("%s row %d %s: %v, want %v", tab.name, r, names[i], rows[r][i], want)
				}
			}
		}
		// Pruning: exactly the rows at or after 12:34:56.5 pass, and the
		// row groups before it (and the NULL) are skipped.
		for _, u := range names {
			got, st := scanAll(t, db, ScanSpec{Table: tab.name, Columns: []string{u}, Filter: Cmp(u, OpGe, Time(45296_500_000))}, ScanOptions{})
			if len(got) != 3 {
				t.Errorf("%s %s >= 12:34:56.5: %d rows, want 3 (%v)", tab.name, u, len(got), got)
			}
			if st.RowGroupsPruned < 2 {
				t.Errorf("%s %s: %d row groups skipped, want at least 2", tab.name, u, st.RowGroupsPruned)
			}
			got, _ = scanAll(t, db, ScanSpec{Table: tab.name, Columns: []string{u}, Filter: Cmp(u, OpEq, Time(45296_789_000))}, ScanOptions{})
			want := 0
			if u == "ms" {
				want = 1
			}
			if len(got) != want {
				t.Errorf("%s %s = 12:34:56.789: %d rows, want %d (%v)", tab.name, u, len(got), want, got)
			}
		}
	}
}

// TestTimeColumnRoundTrip writes a TIME column the way nicflow stores it
// (INT64 TIME(MICROS)) and reads it back, pruned by its statistics.
func TestTimeColumnRoundTrip(t *testing.T) {
	if got, err := TypeName(arrow.FixedWidthTypes.Time64us); err != nil || got != "time" {
		t.Fatalf("TypeName(time64[us]) = %q, %v", got, err)
	}
	if got, err := ParseType("time"); err != nil || !arrow.TypeEqual(got, arrow.FixedWidthTypes.Time64us) {
		t.Fatalf("ParseType(time) = %v, %v", got, err)
	}
	if _, err := TypeName(arrow.FixedWidthTypes.Time64ns); err == nil {
		t.Fatalf("TypeName(time64[ns]) stored")
	}
	n, err := parquetNode(arrow.Field{Name: "t", Type: arrow.FixedWidthTypes.Time64us, Nullable: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.LogicalType().String(); got != "Time(isAdjustedToUTC=false, timeUnit=microseconds)" {
		t.Errorf("logical type %s", got)
	}
}
