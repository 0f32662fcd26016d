package storage

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// testSchema covers every stored type, with nullable and NOT NULL columns.
func testSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "price", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "big", Type: &arrow.Decimal128Type{Precision: 30, Scale: 3}, Nullable: true},
	}, nil)
}

// row is a reference row: nil means NULL.
type row []any

var testWords = []string{"", "a", "ab", "abc", "b", "ba", "PROMO X", "PROMO", "zeta", "MEDIUM POLISHED"}

// randomRows makes n rows starting at id start; nullFrac of nullable
// values are NULL.
func randomRows(rng *rand.Rand, start, n int, nullFrac float64) []row {
	rows := make([]row, n)
	for i := range rows {
		null := func() bool { return rng.Float64() < nullFrac }
		r := row{int64(start + i)}
		if null() {
			r = append(r, nil)
		} else {
			r = append(r, int32(rng.Intn(200)-100))
		}
		if null() {
			r = append(r, nil)
		} else {
			r = append(r, int64(rng.Intn(20000)-5000))
		}
		if null() {
			r = append(r, nil)
		} else {
			r = append(r, float64(rng.Intn(1000))/8)
		}
		if null() {
			r = append(r, nil)
		} else {
			r = append(r, testWords[rng.Intn(len(testWords))])
		}
		r = append(r, int32(8000+rng.Intn(3000)))
		if null() {
			r = append(r, nil)
		} else {
			r = append(r, rng.Intn(2) == 1)
		}
		if null() {
			r = append(r, nil)
		} else {
			r = append(r, decimal128.FromI64(int64(rng.Intn(100000)-50000)).Mul(decimal128.FromI64(1_000_000_007)))
		}
		rows[i] = r
	}
	return rows
}

// recordOf builds a record from reference rows.
func recordOf(alloc memory.Allocator, sch *arrow.Schema, rows []row) arrow.RecordBatch {
	b := array.NewRecordBuilder(alloc, sch)
	defer b.Release()
	for _, r := range rows {
		for i, v := range r {
			fb := b.Field(i)
			if v == nil {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int64Builder:
				fb.Append(v.(int64))
			case *array.Int32Builder:
				fb.Append(v.(int32))
			case *array.Float64Builder:
				fb.Append(v.(float64))
			case *array.StringBuilder:
				fb.Append(v.(string))
			case *array.Date32Builder:
				fb.Append(arrow.Date32(v.(int32)))
			case *array.BooleanBuilder:
				fb.Append(v.(bool))
			case *array.Decimal64Builder:
				fb.Append(decimal64Num(v.(int64)))
			case *array.Decimal128Builder:
				fb.Append(v.(decimal128.Num))
			default:
				panic(fmt.Sprintf("builder %T", fb))
			}
		}
	}
	return b.NewRecordBatch()
}

// rowsOf converts records back to reference rows.
// commitRecord appends rec to table and commits (aborts when Append
// fails); the error of any step.
func commitRecord(db *DB, table string, opts AppendOptions, rec arrow.RecordBatch) error {
	app, err := db.NewAppender(table, opts)
	if err != nil {
		return err
	}
	if err := app.Append(rec); err != nil {
		app.Abort()
		return err
	}
	_, err = app.Commit()
	return err
}

// commitRows is commitRecord for rows of schema sch.
func commitRows(db *DB, table string, opts AppendOptions, sch *arrow.Schema, rows []row) error {
	rec := recordOf(memory.DefaultAllocator, sch, rows)
	defer rec.Release()
	return commitRecord(db, table, opts, rec)
}

func rowsOf(t testing.TB, recs []arrow.RecordBatch) []row {
	t.Helper()
	var out []row
	for _, rec := range recs {
		for r := 0; r < int(rec.NumRows()); r++ {
			var rr row
			for c := 0; c < int(rec.NumCols()); c++ {
				col := rec.Column(c)
				if col.IsNull(r) {
					rr = append(rr, nil)
					continue
				}
				switch a := col.(type) {
				case *array.Int64:
					rr = append(rr, a.Value(r))
				case *array.Int32:
					rr = append(rr, a.Value(r))
				case *array.Float64:
					rr = append(rr, a.Value(r))
				case *array.String:
					rr = append(rr, a.Value(r))
				case *array.Date32:
					rr = append(rr, int32(a.Value(r)))
				case *array.Timestamp:
					rr = append(rr, int64(a.Value(r)))
				case *array.Time64:
					rr = append(rr, int64(a.Value(r)))
				case *array.Boolean:
					rr = append(rr, a.Value(r))
				case *array.Decimal64:
					rr = append(rr, int64(a.Value(r)))
				case *array.Decimal128:
					rr = append(rr, a.Value(r))
				default:
					t.Fatalf("unexpected array %T", col)
				}
			}
			out = append(out, rr)
		}
	}
	return out
}

func sortRows(rows []row) {
	byID := true
	for _, r := range rows {
		if len(r) == 0 {
			byID = false
			break
		}
		if _, ok := r[0].(int64); !ok {
			byID = false
			break
		}
	}
	if byID {
		sort.Slice(rows, func(i, j int) bool { return rows[i][0].(int64) < rows[j][0].(int64) })
		return
	}
	keys := make(map[*any]string, len(rows))
	key := func(r row) string {
		if len(r) == 0 {
			return ""
		}
		if k, ok := keys[&r[0]]; ok {
			return k
		}
		k := fmt.Sprint(r)
		keys[&r[0]] = k
		return k
	}
	sort.SliceStable(rows, func(i, j int) bool { return key(rows[i]) < key(rows[j]) })
}

func equalRows(a, b []row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

// scanAll runs a scan to the end and returns its rows.
func scanAll(t testing.TB, db *DB, spec ScanSpec, opts ScanOptions) ([]row, ScanStats) {
	t.Helper()
	sc, err := db.NewScanner(spec, opts)
	if err != nil {
		t.Fatalf("NewScanner(%+v): %v", spec, err)
	}
	defer sc.Close()
	var recs []arrow.RecordBatch
	for {
		rec, err := sc.Next(context.Background())
		if err != nil {
			t.Fatalf("scan %s: %v", spec.Filter, err)
		}
		if rec == nil {
			break
		}
		if rec.NumRows() == 0 || rec.NumRows() > int64(max(spec.BatchSize, 8192)) {
			t.Fatalf("record of %d rows (batch size %d)", rec.NumRows(), spec.BatchSize)
		}
		recs = append(recs, rec)
	}
	rows := rowsOf(t, recs)
	if len(spec.Columns) == 0 {
		n := 0
		for _, r := range recs {
			n += int(r.NumRows())
		}
		rows = make([]row, n)
	}
	for _, r := range recs {
		r.Release()
	}
	return rows, sc.Stats()
}

// refEval evaluates a predicate on one reference row, SQL style.
func refEval(p *Predicate, sch *arrow.Schema, r row) bool {
	switch p.Op {
	case OpAnd:
		for _, a := range p.Args {
			if !refEval(a, sch, r) {
				return false
			}
		}
		return true
	case OpOr:
		for _, a := range p.Args {
			if refEval(a, sch, r) {
				return true
			}
		}
		return false
	}
	ci := fieldIndex(sch, p.Column)
	v := r[ci]
	switch p.Op {
	case OpIsNull:
		return v == nil
	case OpIsNotNull:
		return v != nil
	}
	if v == nil {
		return false
	}
	typ := sch.Field(ci).Type
	cmp := func(c Value) int { return refCompare(typ, v, c) }
	switch p.Op {
	case OpEq:
		return cmp(p.Values[0]) == 0
	case OpNe:
		return cmp(p.Values[0]) != 0
	case OpLt:
		return cmp(p.Values[0]) < 0
	case OpLe:
		return cmp(p.Values[0]) <= 0
	case OpGt:
		return cmp(p.Values[0]) > 0
	case OpGe:
		return cmp(p.Values[0]) >= 0
	case OpBetween:
		return cmp(p.Values[0]) >= 0 && cmp(p.Values[1]) <= 0
	case OpIn:
		for _, c := range p.Values {
			if cmp(c) == 0 {
				return true
			}
		}
		return false
	case OpPrefix:
		return strings.HasPrefix(v.(string), p.Values[0].Str)
	}
	panic("op " + p.Op)
}

// refCompare compares a column value with a constant exactly, using
// big rationals for numbers.
func refCompare(typ arrow.DataType, v any, c Value) int {
	switch x := v.(type) {
	case string:
		return strings.Compare(x, c.Str)
	case bool:
		return b2i(x) - b2i(c.Bool)
	}
	return ratOf(typ, v).Cmp(constRat(c))
}

func randSource(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }
