package engine

import (
	"math"
	"math/big"
	"strings"
	"sync"

	"github.com/nicflow/nicflow/engine/plan"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
)

// StorageCatalog adapts a storage database (the Pebble catalog of a
// database directory) to the binder's Catalog: tables with their Arrow
// schemas and statistics. TableDef.Handle is the *storage.Table snapshot
// the definition was made from, which the physical planner splits into
// row-group tasks. Views are the catalog's too (SQL text, bound again at
// each use).
//
// Definitions are cached per table generation, so a table changed by
// INSERT, COPY or DDL is re-read at its next lookup. Safe for concurrent
// use.
type StorageCatalog struct {
	db *storage.DB
	// fileAccess is Options.FileAccess (file tables check it).
	fileAccess string

	mu    sync.Mutex
	cache map[string]*cachedDef
}

type cachedDef struct {
	t   *storage.Table
	def *plan.TableDef
}

// NewStorageCatalog returns the Catalog view of db.
func NewStorageCatalog(db *storage.DB) *StorageCatalog {
	return &StorageCatalog{db: db, cache: map[string]*cachedDef{}}
}

// LookupTable implements Catalog. A name storage rejects or does not know
// is "no such table" (nil, nil): the binder then reports it at its
// position in the query.
func (c *StorageCatalog) LookupTable(name string) (*plan.TableDef, error) {
	if strings.HasPrefix(name, storage.FileTableSchema+".") {
		// NB: a file table is named by LookupFiles only, after the file
		// access check: a quoted "$files./path" is no table.
		return nil, nil
	}
	t, err := c.db.Table(name)
	if err != nil {
		if nferr.Is(err, nferr.KindQuery) {
			return nil, nil
		}
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.cache[name]; ok && e.t == t {
		return e.def, nil
	}
	def, err := tableDefOf(name, t)
	if err != nil {
		return nil, err
	}
	c.cache[name] = &cachedDef{t: t, def: def}
	return def, nil
}

// LookupFiles implements plan.FileCatalog: the Parquet files of pattern
// as a storage file table (storage/files.go), whose scans run like any
// table's; CSV files through their cached Parquet form
// (storage/files_csv.go).
// CheckFile implements plan.FileAccessChecker: the session's file access
// policy (Options.FileAccess).
func (c *StorageCatalog) CheckFile(path string) error {
	_, err := fileAccess(c.db, c.fileAccess, path)
	return err
}

func (c *StorageCatalog) LookupFiles(pattern string, o plan.FileOptions) (*plan.TableDef, error) {
	root, err := fileAccess(c.db, c.fileAccess, pattern)
	if err != nil {
		return nil, err
	}
	var name string
	if o.Format == "csv" {
		co := storage.CSVOptions{Header: o.Header, Delimiter: o.Delimiter, Null: o.Null, Quote: o.Quote}
		for _, fc := range o.Columns {
			typ, terr := storage.TypeName(fc.Type)
			if terr != nil {
				return nil, terr
			}
			co.Columns = append(co.Columns, storage.Column{Name: fc.Name, Type: typ, Nullable: true})
		}
		name, err = storage.CSVTableName(pattern, root, co)
	} else {
		name, err = storage.FileTableName(pattern, root)
	}
	if err != nil {
		return nil, err
	}
	t, err := c.db.Table(name)
	if err != nil {
		return nil, err
	}
	return tableDefOf(name, t)
}

// LookupView implements Catalog.
func (c *StorageCatalog) LookupView(name string) (*plan.ViewDef, error) {
	if text := c.systemView(name); text != "" {
		return &plan.ViewDef{Name: name, SQL: text}, nil
	}
	v := c.db.View(name)
	if v == nil {
		return nil, nil
	}
	return &plan.ViewDef{Name: name, Columns: v.Columns, SQL: v.SQL}, nil
}

// tableDefOf converts a storage table snapshot into a TableDef with
// statistics.
func tableDefOf(name string, t *storage.Table) (*plan.TableDef, error) {
	sch, err := storage.ArrowSchema(t.Columns)
	if err != nil {
		return nil, err
	}
	rows := t.Rows()
	st := &plan.TableStats{Rows: rows, Columns: make([]plan.ColumnStats, len(t.Columns))}
	groups := int64(t.RowGroupCount())
	for i := range t.Columns {
		cs := t.ColumnStats(i)
		typ := sch.Field(i).Type
		out := plan.ColumnStats{Nulls: max(cs.Nulls, 0)}
		if cs.Min != nil && cs.Max != nil {
			lo, ok1 := constOfValue(*cs.Min, typ)
			hi, ok2 := constOfValue(*cs.Max, typ)
			if ok1 && ok2 {
				out.Min, out.Max = lo, hi
			}
		}
		out.Distinct = distinctEstimate(cs, typ, rows, groups, out.Min, out.Max)
		st.Columns[i] = out
	}
	def := &plan.TableDef{Name: name, Schema: sch, Stats: st, Handle: t, Defaults: t.Defaults}
	for _, u := range t.Unreadable {
		def.Unreadable = append(def.Unreadable, plan.UnreadableColumn{Name: u.Name, Kind: u.Kind, Err: u.Err()})
	}
	for _, ix := range t.Indexes {
		def.Indexes = append(def.Indexes, plan.IndexDef{Name: ix.Name, Columns: ix.Columns, Unique: ix.Unique, Primary: ix.Primary, Constraint: ix.Constraint})
	}
	for _, c := range t.Checks {
		def.Checks = append(def.Checks, plan.CheckDef{Name: c.Name, SQL: c.SQL})
	}
	for _, fk := range t.ForeignKeys {
		def.ForeignKeys = append(def.ForeignKeys, plan.ForeignKeyDef{Name: fk.Name, Columns: fk.Columns, RefTable: fk.RefTable,
			RefColumns: fk.RefColumns, MatchFull: fk.MatchFull, OnDelete: fk.OnDelete, OnUpdate: fk.OnUpdate})
	}
	return def, nil
}

// distinctEstimate turns storage's per-row-group distinct counts into a
// table-wide estimate. Storage reports the largest count of any row group
// (from dictionary pages), a lower bound of the table's: exact for one row
// group, and a good estimate when it is far below a row group's size (the
// column's domain is small and every row group sees all of it). Otherwise
// an integer or date column's distinct count is bounded by its range.
// 0 means unknown (the optimizer then assumes all values distinct).
func distinctEstimate(cs storage.ColumnStats, typ arrow.DataType, rows, groups int64, lo, hi any) int64 {
	nonNull := rows - max(cs.Nulls, 0)
	full := rangeSpan(typ, lo, hi, nonNull)
	if cs.Distinct > 0 && groups > 1 && cs.GroupSpan > 0 && full > 0 {
		// Row groups that each cover a slice of the range (data written
		// in date or key order: TPC-DS's sales by sold date) hold
		// different values: the table holds about a row group's count
		// per slice.
		if ratio := float64(full) / cs.GroupSpan; ratio > 1.5 {
			return min(int64(float64(cs.Distinct)*ratio), full)
		}
	}
	if cs.Distinct > 0 {
		perGroup := rows / max(groups, 1)
		// NB: 1/16 of a row group: a domain that small is seen whole by
		// every row group of TPC-H-like data (flags, modes, dates).
		if groups <= 1 || cs.Distinct*16 <= perGroup {
			return cs.Distinct
		}
	}
	if full > 0 {
		return full
	}
	if cs.Distinct > 0 {
		return cs.Distinct
	}
	return 0
}

// rangeSpan bounds the distinct count of an integer, date or time column
// by its range (max - min + 1) and its non-null rows (0: no range).
func rangeSpan(typ arrow.DataType, lo, hi any, nonNull int64) int64 {
	span := func(a, b float64) int64 {
		if b < a || math.IsNaN(b-a) {
			return 0
		}
		return int64(math.Min(b-a+1, float64(max(nonNull, 0))))
	}
	switch typ.ID() {
	case arrow.INT32:
		if a, ok := lo.(int32); ok {
			return span(float64(a), float64(hi.(int32)))
		}
	case arrow.INT64:
		if a, ok := lo.(int64); ok {
			return span(float64(a), float64(hi.(int64)))
		}
	case arrow.DATE32:
		if a, ok := lo.(arrow.Date32); ok {
			return span(float64(a), float64(hi.(arrow.Date32)))
		}
	case arrow.TIMESTAMP:
		if a, ok := lo.(arrow.Timestamp); ok {
			return span(float64(a), float64(hi.(arrow.Timestamp)))
		}
	case arrow.TIME64:
		if a, ok := lo.(arrow.Time64); ok {
			return span(float64(a), float64(hi.(arrow.Time64)))
		}
	}
	return 0
}

// constOfValue converts a storage statistics value to the representation
// of Const values for a column of type typ (see ColumnStats).
func constOfValue(v storage.Value, typ arrow.DataType) (any, bool) {
	switch t := typ.(type) {
	case *arrow.Int32Type:
		if v.Kind == storage.KindInt && v.Int == int64(int32(v.Int)) {
			return int32(v.Int), true
		}
	case *arrow.Int64Type:
		if v.Kind == storage.KindInt {
			return v.Int, true
		}
	case *arrow.Float64Type:
		switch v.Kind {
		case storage.KindFloat:
			return v.Float, true
		case storage.KindInt:
			return float64(v.Int), true
		}
	case *arrow.BooleanType:
		if v.Kind == storage.KindBool {
			return v.Bool, true
		}
	case *arrow.StringType:
		if v.Kind == storage.KindString {
			return v.Str, true
		}
	case *arrow.Date32Type:
		if v.Kind == storage.KindDate {
			return arrow.Date32(v.Int), true
		}
	case *arrow.TimestampType:
		if v.Kind == storage.KindTimestamp {
			return arrow.Timestamp(v.Int), true
		}
	case *arrow.Time64Type:
		if v.Kind == storage.KindTime {
			return arrow.Time64(v.Int), true
		}
	case *arrow.Decimal64Type:
		if u, ok := unscaledAt(v, t.Scale); ok && u.IsInt64() {
			return u.Int64(), true
		}
	case *arrow.Decimal128Type:
		if u, ok := unscaledAt(v, t.Scale); ok && u.BitLen() < 127 {
			return decimal128.FromBigInt(u), true
		}
	}
	return nil, false
}

// unscaledAt returns an integer or decimal value as an unscaled integer at
// scale s (false when it has more digits than s holds).
func unscaledAt(v storage.Value, s int32) (*big.Int, bool) {
	var u *big.Int
	var vs int32
	switch v.Kind {
	case storage.KindInt:
		u = big.NewInt(v.Int)
	case storage.KindDecimal:
		u, vs = big.NewInt(v.Int), v.Scale
	case storage.KindDecimal128:
		var ok bool
		if u, ok = new(big.Int).SetString(v.Str, 10); !ok {
			return nil, false
		}
		vs = v.Scale
	default:
		return nil, false
	}
	if vs > s {
		return nil, false
	}
	return u.Mul(u, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s-vs)), nil)), true
}

// sqlSchema is the schema name SQL sees: public for storage's default.
func sqlSchema(s string) string {
	if s == storage.DefaultSchema {
		return "public"
	}
	return s
}
