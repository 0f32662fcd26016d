package storage

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// TestWriterChoosesDelta: nicflow's writer stores integer columns of many
// distinct values (keys, prices) DELTA_BINARY_PACKED and those of few
// (codes, dates) with a dictionary, decided on the first rows of each
// file (D73); a table too small to judge keeps dictionaries; every value
// reads back.
func TestWriterChoosesDelta(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "key", Type: arrow.PrimitiveTypes.Int64},
		{Name: "price", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}, Nullable: true},
		{Name: "code", Type: arrow.PrimitiveTypes.Int32},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32},
		{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	rng := randSource(5)
	for _, n := range []int{5000, 300} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			db := openTestDB(t, WriteOptions{RowGroupRows: 2000})
			mustCreate(t, db, "t", sch)
			var rows []row
			for i := range n {
				var price, qty any
				if i%9 != 4 {
					price = int64(rng.Intn(10_000_000)) - 5_000_000
				}
				if i%11 != 2 {
					qty = int32(rng.Intn(1 << 30))
				}
				rows = append(rows, row{int64(i*3 + rng.Intn(3)), price, int32(i % 5), int32(9000 + i%30), qty})
			}
			appendRows(t, db, "t", sch, rows)
			tb := mustTable(t, db, "t")
			if len(tb.Files) == 0 {
				t.Fatal("no files")
			}
			pf, err := file.OpenParquetFile(filepath.Join(db.Dir(), tb.Files[0].Path), false)
			if err != nil {
				t.Fatal(err)
			}
			md := pf.MetaData()
			for c, wantDelta := range []bool{true, true, false, false, true} {
				if n < deltaMinSample {
					wantDelta = false
				}
				for g := 0; g < md.NumRowGroups(); g++ {
					cc, _ := md.RowGroup(g).ColumnChunk(c)
					if got := slices.Contains(cc.Encodings(), parquet.Encodings.DeltaBinaryPacked); got != wantDelta {
						t.Errorf("%d rows: column %s row group %d: encodings %v, want delta %v", n, sch.Field(c).Name, g, cc.Encodings(), wantDelta)
					}
				}
			}
			pf.Close()
			got, _ := scanAll(t, db, ScanSpec{Table: "t", Columns: []string{"key", "price", "code", "day", "qty"}}, ScanOptions{})
			sortRows(got)
			sortRows(rows)
			if !equalRows(got, rows) {
				t.Errorf("%d rows: read back differently", n)
			}
		})
	}
}
