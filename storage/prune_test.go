package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TestPruning checks how many row groups statistics skip: 1000 rows in
// row groups of 100, id = row number, s = letter of the row group + number,
// n NULL exactly in row group 3.
func TestPruning(t *testing.T) {
	db := openTestDB(t, WriteOptions{RowGroupRows: 100, FileRows: 500})
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "p", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}},
	}, nil)
	mustCreate(t, db, "t", sch)
	var rows []row
	for i := 0; i < 1000; i++ {
		var n any = int32(i)
		if i/100 == 3 {
			n = nil
		}
		rows = append(rows, row{int64(i), fmt.Sprintf("%c%03d", 'a'+i/100, i%100), n, int32(9000 + i), int64(i * 100)})
	}
	appendRows(t, db, "t", sch, rows)
	cases := []struct {
		p    *Predicate
		read int // row groups read (of 10)
	}{
		{Cmp("id", OpLt, Int(250)), 3},
		{Between("id", Int(420), Int(480)), 1},
		{In("id", Int(5), Int(950)), 2},
		{Cmp("id", OpEq, Int(1000)), 0},
		{Cmp("id", OpNe, Int(5)), 10},
		{Prefix("s", "c"), 1},
		{Prefix("s", "c05"), 1},
		{Prefix("s", "zz"), 0},
		{Cmp("s", OpGe, Str("i")), 2},
		{IsNull("n"), 1},
		{IsNotNull("n"), 9},
		{Cmp("n", OpGt, Int(0)), 9},
		{Or(Cmp("id", OpLt, Int(100)), Cmp("id", OpGe, Int(900))), 2},
		{And(Cmp("id", OpGe, Int(100)), Cmp("d", OpLt, Date(9300))), 2},
		{Cmp("d", OpGe, Date(9700)), 3},
		{Cmp("p", OpGt, Decimal(899999, 3)), 1}, // p > 899.999 <=> p >= 900.00
		{Cmp("p", OpLt, Decimal(5, 1)), 1},
	}
	for _, c := range cases {
		spec := ScanSpec{Table: "t", Columns: []string{"id"}, Filter: c.p}
		got, st := scanAll(t, db, spec, ScanOptions{})
		if int(st.RowGroupsTotal) != 10 || int(st.RowGroupsTotal-st.RowGroupsPruned) != c.read {
			t.Errorf("%s: read %d of %d row groups, want %d", c.p, st.RowGroupsTotal-st.RowGroupsPruned, st.RowGroupsTotal, c.read)
		}
		checkCount(t, c.p, sch, rows, len(got))
	}
	// A planner's share: explicit files and row groups.
	tb := mustTable(t, db, "t")
	spec := ScanSpec{Table: "t", Columns: []string{"id"}, Files: []FileRange{{Path: tb.Files[1].Path, RowGroups: []int{0, 4}}}}
	got, st := scanAll(t, db, spec, ScanOptions{})
	sortRows(got)
	if len(got) != 200 || got[0][0].(int64) != 500 || got[199][0].(int64) != 999 || st.RowGroupsTotal != 2 {
		t.Fatalf("file share: %d rows from %v to %v, stats %+v", len(got), got[0], got[len(got)-1], st)
	}
	// Table-level statistics for the planner.
	cs := tb.ColumnStats(tb.ColumnIndex("id"))
	// Row groups of 100 consecutive ids: each spans 100 of the 1000.
	if cs.Min.Int != 0 || cs.Max.Int != 999 || cs.Nulls != 0 || cs.GroupSpan != 100 {
		t.Fatalf("id stats %+v", cs)
	}
	if ns := tb.ColumnStats(tb.ColumnIndex("n")); ns.Nulls != 100 {
		t.Fatalf("n stats: %d nulls, want 100", ns.Nulls)
	}
}

// TestExternalTable registers Parquet files written by pqarrow (decimals
// stored as FIXED_LEN_BYTE_ARRAY and as INT32, float32, a different column
// order), scans them and drops the table without deleting the files.
func TestExternalTable(t *testing.T) {
	ext := t.TempDir()
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 15, Scale: 2}, Nullable: true},
		{Name: "small", Type: &arrow.Decimal128Type{Precision: 7, Scale: 1}},
		{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "x", Type: arrow.PrimitiveTypes.Float32},
		{Name: "wide", Type: &arrow.Decimal128Type{Precision: 30, Scale: 4}},
	}, nil)
	for f := 0; f < 2; f++ {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
		for i := 0; i < 50; i++ {
			v := int64(f*50 + i)
			if i%10 == 0 {
				b.Field(0).AppendNull()
			} else {
				b.Field(0).(*array.Decimal128Builder).Append(decimal128.FromI64(-v * 101))
			}
			b.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64(v * 3))
			b.Field(2).(*array.StringBuilder).Append(fmt.Sprint("n", v))
			b.Field(3).(*array.Float32Builder).Append(float32(v) / 4)
			b.Field(4).(*array.Decimal128Builder).Append(decimal128.FromI64(v).Mul(decimal128.FromU64(1e18)))
		}
		rec := b.NewRecordBatch()
		b.Release()
		out, err := os.Create(filepath.Join(ext, fmt.Sprintf("part-%d.parquet", f)))
		if err != nil {
			t.Fatal(err)
		}
		props := parquet.NewWriterProperties(parquet.WithStoreDecimalAsInteger(f == 1))
		w, err := pqarrow.NewFileWriter(sch, out, props, pqarrow.DefaultWriterProps())
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	db := openTestDB(t, WriteOptions{})
	if err := db.RegisterExternal(context.Background(), "ext", ext, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tb := mustTable(t, db, "ext")
	if !tb.External || tb.Rows() != 100 || tb.Columns[0].Type != "decimal(15,2)" || tb.Columns[3].Type != "float64" || tb.Columns[4].Type != "decimal(30,4)" {
		t.Fatalf("external table: %+v", tb.Columns)
	}
	got, st := scanAll(t, db, ScanSpec{Table: "ext", Columns: []string{"name", "price", "small", "x", "wide"},
		Filter: Cmp("price", OpLt, Decimal(-5000, 2))}, ScanOptions{})
	want := 0
	for v := int64(0); v < 100; v++ {
		if v%10 != 0 && -v*101 < -5000 {
			want++
		}
	}
	if len(got) != want {
		t.Fatalf("filtered external scan: %d rows, want %d (stats %+v)", len(got), want, st)
	}
	for _, r := range got {
		var v int64
		fmt.Sscanf(r[0].(string), "n%d", &v)
		if r[1].(int64) != -v*101 || r[2].(int64) != v*3 || r[3].(float64) != float64(float32(v)/4) || r[4].(decimal128.Num) != decimal128.FromI64(v).Mul(decimal128.FromU64(1e18)) {
			t.Fatalf("row %v: wrong values for v=%d", r, v)
		}
	}
	if err := db.DropTable("ext", false); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(ext); len(ents) != 2 {
		t.Fatalf("dropping an external table deleted its files: %d left", len(ents))
	}
}

func TestSplitShares(t *testing.T) {
	db := openTestDB(t, WriteOptions{RowGroupRows: 100, FileRows: 300})
	mustCreate(t, db, "t", crashSchema())
	appendRows(t, db, "t", crashSchema(), crashRows(0, 1050)) // 11 row groups, the last of 50 rows
	tb := mustTable(t, db, "t")
	for _, n := range []int{1, 2, 3, 4, 20} {
		shares := tb.Split(n)
		if len(shares) != min(n, 11) {
			t.Fatalf("Split(%d): %d shares", n, len(shares))
		}
		total := 0
		var counts []int
		for _, sh := range shares {
			rows, _ := scanAll(t, db, ScanSpec{Table: "t", Files: sh, Columns: []string{"id"}}, ScanOptions{})
			total += len(rows)
			counts = append(counts, len(rows))
		}
		if total != 1050 {
			t.Fatalf("Split(%d): shares cover %d rows, want 1050 (%v)", n, total, counts)
		}
		for _, c := range counts {
			if c > 1050/len(shares)+100 {
				t.Fatalf("Split(%d): unbalanced shares %v", n, counts)
			}
		}
	}
}

// TestMustMatch checks mustMatch, by which a scan leaves out the filter
// conjuncts a row group's statistics imply: never true for a row group
// holding a row the predicate rejects (checked against every row), and
// true where the bounds lie inside the predicate's range.
func TestMustMatch(t *testing.T) {
	db := openTestDB(t, WriteOptions{RowGroupRows: 100, FileRows: 500})
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64},
		{Name: "s", Type: arrow.BinaryTypes.String},
	}, nil)
	mustCreate(t, db, "t", sch)
	var rows []row
	for i := 0; i < 1000; i++ {
		var n any = int32(i)
		if i/100 == 3 {
			n = nil
		}
		rows = append(rows, row{int64(i), n, int32(9000 + i), float64(i) / 4, fmt.Sprintf("%04d", i)})
	}
	appendRows(t, db, "t", sch, rows)
	tb := mustTable(t, db, "t")
	cases := []struct {
		p    *Predicate
		must int // row groups wholly passing (of 10)
	}{
		{Cmp("id", OpLt, Int(250)), 2},
		{Cmp("id", OpGe, Int(250)), 7},
		{Between("id", Int(100), Int(399)), 3},
		{And(Cmp("id", OpGe, Int(200)), Cmp("id", OpLt, Int(500))), 3},
		{Or(Cmp("id", OpLt, Int(100)), Cmp("d", OpGe, Date(9900))), 2},
		{Cmp("n", OpGe, Int(0)), 9},      // row group 3 is all NULL
		{IsNotNull("n"), 9},              // likewise
		{Cmp("d", OpLe, Date(9549)), 5},  // d = 9000 + id
		{Cmp("f", OpLt, Float(50)), 2},   // f = id / 4
		{Cmp("id", OpNe, Int(5000)), 0},  // <> is not implied (errs on false)
		{Cmp("s", OpGe, Str("0000")), 0}, // strings are not implied
		{Cmp("id", OpEq, Int(7)), 0},
	}
	for _, c := range cases {
		f, err := tb.compileFilter(c.p)
		if err != nil {
			t.Fatalf("%s: %v", c.p, err)
		}
		must, r := 0, 0
		for _, file := range tb.Files {
			for g := range file.RowGroups {
				rg := &file.RowGroups[g]
				implied := f.mustMatch(rg.stats, rg.Rows)
				all := true
				for range rg.Rows {
					all = all && refEval(c.p, sch, rows[r])
					r++
				}
				if implied && !all {
					t.Errorf("%s: row group %d of %s implied, but a row fails", c.p, g, file.Path)
				}
				if implied {
					must++
				}
			}
		}
		if must != c.must {
			t.Errorf("%s: %d row groups implied, want %d", c.p, must, c.must)
		}
		// The scan answers the same with the implied conjuncts left out.
		got, _ := scanAll(t, db, ScanSpec{Table: "t", Columns: []string{"id"}, Filter: c.p}, ScanOptions{})
		checkCount(t, c.p, sch, rows, len(got))
	}
}

// checkCount checks that a scan filtered by p returned as many rows as
// pass p among rows (refEval).
func checkCount(t *testing.T, p *Predicate, sch *arrow.Schema, rows []row, got int) {
	t.Helper()
	want := 0
	for _, r := range rows {
		if refEval(p, sch, r) {
			want++
		}
	}
	if got != want {
		t.Errorf("%s: %d rows, want %d", p, got, want)
	}
}
