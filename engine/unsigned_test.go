package engine

import (
	"math"
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

// Parquet files written by another writer with unsigned integers: UINT_8,
// UINT_16 and UINT_32 read as bigint, UINT_64 as decimal(20,0), every value
// exactly (the top of each range too), and filters on them right although
// their statistics are not used (unsigned order).
func TestUnsignedParquet(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
		{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
		{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	rows := []struct {
		u8  uint8
		u16 uint16
		u32 uint32
		u64 uint64
	}{{0, 0, 0, 0}, {1, 2, 3, 4}, {200, 60000, 4000000000, 10000000000000000000}, {math.MaxUint8, math.MaxUint16, math.MaxUint32, math.MaxUint64}}
	for _, r := range rows {
		b.Field(0).(*array.Uint8Builder).Append(r.u8)
		b.Field(1).(*array.Uint16Builder).Append(r.u16)
		b.Field(2).(*array.Uint32Builder).Append(r.u32)
		b.Field(3).(*array.Uint64Builder).Append(r.u64)
	}
	for i := 0; i < 4; i++ {
		b.Field(i).AppendNull()
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "u.parquet")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// One row per row group: statistics, were they used, would decide.
	w, err := pqarrow.NewFileWriter(sch, out, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(1)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	alloc := memory.NewCheckedAllocator(memory.DefaultAllocator)
	s := newTestDB(t, Options{Parallelism: 2, Alloc: alloc})
	q := "'" + path + "'"
	check := func(sql, want string) {
		t.Helper()
		var lines []string
		for _, r := range exec1(t, s, sql) {
			lines = append(lines, strings.Join(r, "|"))
		}
		if got := strings.Join(lines, "\n"); got != want {
			t.Errorf("%s:\n got %s\nwant %s", sql, got, want)
		}
	}
	exec1(t, s, "CREATE TABLE u AS SELECT * FROM "+q)
	check("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'u' ORDER BY ordinal_position",
		"u8|bigint\nu16|bigint\nu32|bigint\nu64|decimal(20,0)")
	check("SELECT * FROM "+q+" ORDER BY u64 NULLS FIRST",
		"NULL|NULL|NULL|NULL\n0|0|0|0\n1|2|3|4\n200|60000|4000000000|10000000000000000000\n255|65535|4294967295|18446744073709551615")
	check("SELECT count(*) FROM "+q+" WHERE u64 > 9223372036854775807 AND u32 > 2147483647", "2")
	check("SELECT u8 FROM "+q+" WHERE u64 = 18446744073709551615", "255")
	check("SELECT sum(u64), max(u32) FROM "+q, "28446744073709551619|4294967295")
	alloc.AssertSize(t, 0)
}
