package storage

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

// keyRecord is a record of (id int64, name utf8) rows; a nil name is NULL.
func keyRecord(ids []int64, names []*string) arrow.RecordBatch {
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	defer ib.Release()
	defer sb.Release()
	for i, id := range ids {
		ib.Append(id)
		if names[i] == nil {
			sb.AppendNull()
		} else {
			sb.Append(*names[i])
		}
	}
	ia, sa := ib.NewArray(), sb.NewArray()
	defer ia.Release()
	defer sa.Release()
	return array.NewRecordBatch(sch, []arrow.Array{ia, sa}, int64(len(ids)))
}

func str(s string) *string { return &s }

// appendKeys appends one record to table t and commits; the error of
// Append or Commit.
func appendKeys(db *DB, table string, ids []int64, names []*string) error {
	rec := keyRecord(ids, names)
	defer rec.Release()
	return commitRecord(db, table, AppendOptions{}, rec)
}

func TestUniqueKeys(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	cons := &Constraints{Indexes: []Index{
		{Name: "k_pkey", Columns: []string{"id"}, Primary: true, Constraint: true},
		{Name: "k_name_key", Columns: []string{"name"}, Unique: true, Constraint: true},
	}}
	if err := db.CreateTable("k", sch, CreateOptions{Constraints: cons}); err != nil {
		t.Fatal(err)
	}
	tb := mustTable(t, db, "k")
	if tb.Columns[0].Nullable {
		t.Error("a primary key column is nullable")
	}
	if err := appendKeys(db, "k", []int64{1, 2, 3}, []*string{str("a"), nil, nil}); err != nil {
		t.Fatal(err) // two NULL names: NULLs are distinct
	}
	for _, tc := range []struct {
		ids   []int64
		names []*string
		want  string
	}{
		{[]int64{4, 4}, []*string{str("x"), str("y")}, `duplicate key value violates unique constraint "k_pkey" of table k: key (id)=(4) already exists`},
		{[]int64{2}, []*string{str("z")}, `duplicate key value violates unique constraint "k_pkey" of table k: key (id)=(2) already exists`},
		{[]int64{9}, []*string{str("a")}, `duplicate key value violates unique constraint "k_name_key" of table k: key (name)=(a) already exists`},
	} {
		err := appendKeys(db, "k", tc.ids, tc.names)
		if err == nil || err.Error() != tc.want || nferr.KindOf(err) != nferr.KindData {
			t.Errorf("append %v: %v (%v), want %s", tc.ids, err, nferr.KindOf(err), tc.want)
		}
	}
	if got := mustTable(t, db, "k"); len(got.Files) != 1 {
		t.Errorf("a refused insert left %d files", len(got.Files))
	}
	// A unique index over data that repeats a value is refused; over
	// distinct values it is built from the rows and then enforced.
	ctx := context.Background()
	if err := appendKeys(db, "k", []int64{5, 6}, []*string{str("b"), str("b2")}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateIndex(ctx, "k", Index{Name: "k_dup", Columns: []string{"name"}, Unique: true}, false); err != nil {
		t.Fatal(err) // names a, b, b2 and NULLs: distinct
	}
	if err := appendKeys(db, "k", []int64{7}, []*string{str("b")}); err == nil || !strings.Contains(err.Error(), `"k_dup"`) && !strings.Contains(err.Error(), `"k_name_key"`) {
		t.Errorf("duplicate through a new unique index: %v", err)
	}
	if err := db.CreateIndex(ctx, "k", Index{Name: "k_id_ix", Columns: []string{"id"}}, false); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateIndex(ctx, "k", Index{Name: "k_id_ix", Columns: []string{"id"}}, false); err == nil {
		t.Error("an index created twice")
	}
	if err := db.CreateIndex(ctx, "k", Index{Name: "k_id_ix", Columns: []string{"id"}}, true); err != nil {
		t.Errorf("IF NOT EXISTS: %v", err)
	}
	if err := db.DropIndex("k_pkey", false); err == nil || !strings.Contains(err.Error(), "primary key constraint") {
		t.Errorf("dropping the primary key's index: %v", err)
	}
	if err := db.DropIndex("k_dup", false); err != nil {
		t.Fatal(err)
	}
	if err := db.DropIndex("k_dup", true); err != nil {
		t.Fatal(err)
	}
	// The keys survive a reopen.
	db = reopenDB(t, db)
	if err := appendKeys(db, "k", []int64{1}, []*string{str("new")}); err == nil || !strings.Contains(err.Error(), "(id)=(1)") {
		t.Errorf("after reopen: %v", err)
	}
	if got := mustTable(t, db, "k"); len(got.Indexes) != 3 {
		t.Errorf("indexes after reopen: %+v", got.Indexes)
	}
	// A dropped and recreated table starts without keys.
	if err := db.DropTable("k", false); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTable("k", sch, CreateOptions{Constraints: cons}); err != nil {
		t.Fatal(err)
	}
	if err := appendKeys(db, "k", []int64{1, 2}, []*string{str("a"), nil}); err != nil {
		t.Errorf("recreated table: %v", err)
	}
	// A unique index on existing duplicates is refused.
	if err := appendKeys(db, "k", []int64{3}, []*string{nil}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, db, "d", sch)
	if err := appendKeys(db, "d", []int64{1, 1}, []*string{nil, nil}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateIndex(ctx, "d", Index{Name: "d_u", Columns: []string{"id"}, Unique: true}, false); err == nil || !strings.Contains(err.Error(), "could not create unique index") {
		t.Errorf("unique index over duplicates: %v", err)
	}
	if got := mustTable(t, db, "d"); len(got.Indexes) != 0 {
		t.Errorf("a refused index was kept: %+v", got.Indexes)
	}
	for _, bad := range []Index{
		{Name: "x", Columns: []string{"nope"}},
		{Name: "x", Columns: []string{"id", "id"}},
		{Name: "x"},
	} {
		if err := db.CreateIndex(ctx, "d", bad, false); err == nil {
			t.Errorf("index %+v accepted", bad)
		}
	}
	if err := db.CreateTable("two", sch, CreateOptions{Constraints: &Constraints{Indexes: []Index{{Name: "a", Columns: []string{"id"}, Primary: true}, {Name: "b", Columns: []string{"name"}, Primary: true}}}}); err == nil {
		t.Error("two primary keys accepted")
	}
}

// TestDecodeKeyText checks the text of an encoded key in error messages,
// for every column type a key may have.
func TestDecodeKeyText(t *testing.T) {
	d128 := &arrow.Decimal128Type{Precision: 30, Scale: 3}
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "d", Type: &arrow.Decimal64Type{Precision: 10, Scale: 2}}, {Name: "w", Type: d128},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32}, {Name: "b", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(-7)
	b.Field(1).(*array.StringBuilder).Append("a,b")
	b.Field(2).(*array.Decimal64Builder).Append(decimal.Decimal64(-1250))
	b.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(-123456))
	b.Field(4).(*array.Date32Builder).Append(arrow.Date32(19000))
	b.Field(5).(*array.BooleanBuilder).Append(true)
	rec := b.NewRecordBatch()
	defer rec.Release()
	key, null := encodeKey(nil, rec, []int{0, 1, 2, 3, 4, 5}, 0)
	if null {
		t.Fatal("no NULL here")
	}
	if got, want := decodeKeyText(key), "-7, a,b, -12.50, -123.456, 2022-01-08, true"; got != want {
		t.Errorf("key text %q, want %q", got, want)
	}
	if got, want := keyText(rec, []int{0, 1, 2, 3, 4, 5}, 0), "-7, a,b, -12.50, -123.456, 2022-01-08, true"; got != want {
		t.Errorf("row text %q, want %q", got, want)
	}
}
