package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

// writeUnreadableFile writes, with pqarrow, a file whose flat columns (id,
// a UUID, a JSON text, name) sit beside nested ones (a LIST of int32 and
// a STRUCT): row r has id r, the list [r], UUID bytes r repeated,
// {"k": r}, name "n<r>" (NULL when r%3 == 0).
func writeUnreadableFile(t *testing.T, path string, rows int) {
	t.Helper()
	alloc := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer alloc.AssertSize(t, 0)
	jsonType, err := extensions.NewJSONType(arrow.BinaryTypes.String)
	if err != nil {
		t.Fatal(err)
	}
	st := arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true})
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "arr", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "u", Type: extensions.NewUUIDType(), Nullable: true},
		{Name: "st", Type: st, Nullable: true},
		{Name: "j", Type: jsonType, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	ids := array.NewInt64Builder(alloc)
	lb := array.NewListBuilder(alloc, arrow.PrimitiveTypes.Int32)
	ub := extensions.NewUUIDBuilder(alloc)
	sb := array.NewStructBuilder(alloc, st)
	jb := array.NewStringBuilder(alloc)
	nb := array.NewStringBuilder(alloc)
	for r := 0; r < rows; r++ {
		ids.Append(int64(r))
		lb.Append(true)
		lb.ValueBuilder().(*array.Int32Builder).Append(int32(r))
		var u [16]byte
		for i := range u {
			u[i] = byte(r)
		}
		ub.AppendBytes(u)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(r))
		jb.Append(fmt.Sprintf(`{"k": %d}`, r))
		if r%3 == 0 {
			nb.AppendNull()
		} else {
			nb.Append(fmt.Sprint("n", r))
		}
	}
	jstore := jb.NewArray()
	cols := []arrow.Array{ids.NewArray(), lb.NewArray(), ub.NewArray(), sb.NewArray(), array.NewExtensionArrayWithStorage(jsonType, jstore), nb.NewArray()}
	jstore.Release()
	for _, b := range []interface{ Release() }{ids, lb, ub, sb, jb, nb} {
		b.Release()
	}
	rec := array.NewRecordBatch(sch, cols, int64(rows))
	for _, c := range cols {
		c.Release()
	}
	defer rec.Release()
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(sch, out, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(4), parquet.WithAllocator(alloc)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(alloc)))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestParquetUnreadableColumns: a file with nested columns beside flat
// ones answers queries on its flat columns (UUIDs as their text, JSON as
// text that the JSON operators read) and its list (an integer[]); a
// query naming the struct, selecting *, or reaching into the struct fails
// with a data error naming the column and the file; DESCRIBE of an
// external table lists it.
func TestParquetUnreadableColumns(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mixed.parquet")
	writeUnreadableFile(t, path, 10)
	alloc := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer alloc.AssertSize(t, 0)
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
	check("SELECT id, u, j, name FROM "+q+" WHERE id IN (1, 3, 9) ORDER BY id",
		"1|01010101-0101-0101-0101-010101010101|{\"k\": 1}|n1\n"+
			"3|03030303-0303-0303-0303-030303030303|{\"k\": 3}|NULL\n"+
			"9|09090909-0909-0909-0909-090909090909|{\"k\": 9}|NULL")
	check("SELECT count(*), count(name), sum(id) FROM "+q, "10|6|45")
	check("SELECT id FROM "+q+" WHERE u = '0a0a0a0a-0a0a-0a0a-0a0a-0a0a0a0a0a0a'", "")
	check("SELECT id FROM "+q+" WHERE u = '07070707-0707-0707-0707-070707070707'", "7")
	check("SELECT sum((j->>'k')::int) FROM "+q+" WHERE name IS NOT NULL", "27")

	fails := func(sql, col string) {
		t.Helper()
		r, err := s.Query(context.Background(), sql)
		if err == nil {
			r.Close()
			t.Errorf("%s: no error", sql)
			return
		}
		msg := err.Error()
		if !nferr.Is(err, nferr.KindData) || !strings.Contains(msg, "column "+col+" of "+path+" cannot be read") || !strings.Contains(msg, "nested") {
			t.Errorf("%s: %v (kind %v); want a data error naming column %s and the file", sql, err, nferr.KindOf(err), col)
		}
	}
	// The list is read (a list of plain values); the struct is not.
	const arrRows = "1|{1}|1\n3|{3}|1\n4|{4}|1"
	check("SELECT id, arr, cardinality(arr) FROM "+q+" WHERE id IN (1, 3, 4) ORDER BY id", arrRows)
	fails("SELECT * FROM "+q, "st")
	fails("SELECT m.* FROM "+q+" m", "st")
	fails("SELECT m.st FROM "+q+" m", "st")
	fails("SELECT id FROM "+q+" WHERE st IS NULL", "st")
	fails("SELECT st.a FROM "+q, "st")
	fails("SELECT count(*) FROM "+q+" GROUP BY st", "st")

	exec1(t, s, "CREATE EXTERNAL TABLE mixed STORED AS PARQUET LOCATION '"+dir+"'")
	check("DESCRIBE mixed", "id|bigint|NO|NULL|NULL\narr|integer[]|YES|NULL|NULL\nu|varchar|YES|NULL|NULL\nj|varchar|YES|NULL|NULL\nname|varchar|YES|NULL|NULL\n"+
		"st|unreadable STRUCT|YES|NULL|NULL")
	check("SELECT name FROM mixed WHERE id = 2", "n2")
	check("SELECT id, arr, cardinality(arr) FROM mixed WHERE id IN (1, 3, 4) ORDER BY id", arrRows)
	fails("SELECT * FROM mixed", "st")
	fails("SELECT st FROM mixed", "st")
	// A table made from its flat columns holds them.
	exec1(t, s, "CREATE TABLE flat AS SELECT id, u, name FROM mixed")
	check("SELECT u FROM flat WHERE id = 5", "05050505-0505-0505-0505-050505050505")
}
