package engine

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestFormatScaled(t *testing.T) {
	for _, tc := range []struct {
		u    int64
		s    int32
		want string
	}{
		{0, 0, "0"}, {0, 2, "0.00"}, {5, 2, "0.05"}, {-5, 2, "-0.05"}, {1230, 2, "12.30"},
		{-123456, 4, "-12.3456"}, {7, 0, "7"}, {1, 18, "0.000000000000000001"},
		{math.MaxInt64, 2, "92233720368547758.07"}, {math.MinInt64, 2, "-92233720368547758.08"},
	} {
		if got := formatScaled64(tc.u, tc.s); got != tc.want {
			t.Errorf("formatScaled64(%d, %d) = %q, want %q", tc.u, tc.s, got, tc.want)
		}
	}
}

func TestValueFormatter(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	check := func(a arrow.Array, want []string) {
		t.Helper()
		defer a.Release()
		f, err := NewValueFormatter(a.DataType())
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range want {
			s, null := f.Format(a, i)
			if null {
				s = "NULL"
			}
			if s != w {
				t.Errorf("%s row %d: %q, want %q", a.DataType(), i, s, w)
			}
		}
	}
	d128 := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 38, Scale: 4})
	big, _ := decimal128.FromString("-12345678901234567890123.4567", 38, 4)
	d128.AppendValues([]decimal128.Num{decimal128.FromI64(-5), big}, nil)
	d128.AppendNull()
	check(d128.NewArray(), []string{"-0.0005", "-12345678901234567890123.4567", "NULL"})
	d128.Release()
	f64 := array.NewFloat64Builder(mem)
	f64.AppendValues([]float64{0.1, 3, 1e21, math.NaN(), math.Inf(-1), 1577934245.5, 1e-5, 0.0001, 1e15, 123456789012345}, nil)
	check(f64.NewArray(), []string{"0.1", "3", "1e+21", "NaN", "-Infinity", "1577934245.5", "1e-05", "0.0001", "1e+15", "123456789012345"})
	f64.Release()
	ts := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond})
	ts.AppendValues([]arrow.Timestamp{0, -1, 1577934245500000}, nil)
	check(ts.NewArray(), []string{"1970-01-01 00:00:00", "1969-12-31 23:59:59.999999", "2020-01-02 03:04:05.5"})
	ts.Release()
	tz := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"})
	tz.AppendValues([]arrow.Timestamp{86400_000_000}, nil)
	check(tz.NewArray(), []string{"1970-01-02 00:00:00+00"})
	tz.Release()
	dt := array.NewDate32Builder(mem)
	dt.AppendValues([]arrow.Date32{0, -1, 10957}, nil)
	check(dt.NewArray(), []string{"1970-01-01", "1969-12-31", "2000-01-01"})
	dt.Release()
	nb := array.NewNull(2)
	check(nb, []string{"NULL", "NULL"})
	bin := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	bin.AppendValues([][]byte{[]byte("Hello"), {}, {0, 0xff}}, nil)
	bin.AppendNull()
	check(bin.NewArray(), []string{`\x48656c6c6f`, `\x`, `\x00ff`, "NULL"})
	bin.Release()
	if _, err := NewValueFormatter(arrow.BinaryTypes.LargeBinary); err == nil {
		t.Error("large binary: no error")
	}
}

// TestExternalTable registers a table's own Parquet files as an external
// table, with and without declared columns.
func TestExternalTable(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	exec1(t, s, "CREATE TABLE src AS SELECT 1 AS a, 'x' AS b UNION ALL SELECT 2, 'y'")
	loc := filepath.Join(dir, "src")
	exec1(t, s, "CREATE EXTERNAL TABLE ext STORED AS PARQUET LOCATION '"+loc+"'")
	if got := exec1(t, s, "SELECT sum(a), min(b) FROM ext"); got[0][0] != "3" || got[0][1] != "x" {
		t.Errorf("external table: %v", got)
	}
	if got := exec1(t, s, "SHOW TABLES"); len(got) != 2 || got[0][0] != "ext" || got[0][1] != "external table" {
		t.Errorf("SHOW TABLES: %v", got)
	}
	_, err = s.Query(context.Background(), "CREATE EXTERNAL TABLE ext2 (a INTEGER, c VARCHAR) STORED AS PARQUET LOCATION '"+loc+"'")
	if err == nil {
		t.Error("wrong declared columns: no error")
	}
	if got := exec1(t, s, "SHOW TABLES"); len(got) != 2 {
		t.Errorf("a failed CREATE EXTERNAL TABLE left a table: %v", got)
	}
	exec1(t, s, "CREATE EXTERNAL TABLE ext3 (a INTEGER, b VARCHAR) STORED AS PARQUET LOCATION '"+loc+"'")
	exec1(t, s, "DROP TABLE ext")
	if got := exec1(t, s, "SELECT count(*) FROM src"); got[0][0] != "2" {
		t.Errorf("dropping the external table touched the files: %v", got)
	}
}
