package plan

import (
	"sort"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Catalog is what the binder needs to know about the database: tables with
// their Arrow schemas and statistics, and views. Names are lower-case SQL
// names (the parser folds unquoted identifiers); a quoted "Mixed" name is
// looked up as written.
//
// Implementations: MemCatalog (tests, the embedded session's views) and the
// storage catalog (Pebble), adapted to this interface by the storage
// package's owner. Lookups may do I/O, hence the errors; a missing object is
// (nil, nil), not an error.
type Catalog interface {
	// LookupTable returns the table called name, or nil when there is none.
	LookupTable(name string) (*TableDef, error)
	// LookupView returns the view called name, or nil when there is none.
	LookupView(name string) (*ViewDef, error)
}

// OIDCatalog is a Catalog that also names its objects by PostgreSQL OIDs,
// for casts to regclass, regtype and regnamespace (kind "regclass",
// "regtype", "regnamespace") of a name: ok false when there is no such
// object.
type OIDCatalog interface {
	OIDOf(kind, name string) (oid int, ok bool)
}

// SQLFunctionCatalog is a Catalog that also defines functions in SQL, as
// PostgreSQL's LANGUAGE sql functions (pg_catalog's format_type,
// obj_description, ...): the body of function name called with nargs
// arguments, one SQL expression over $1 ... $nargs, which the binder
// binds in place of the call with the call's arguments substituted; ok
// false when the catalog defines no such function.
type SQLFunctionCatalog interface {
	SQLFunction(name string, nargs int) (body string, ok bool)
}

// FileCatalog is a Catalog that also reads files a query names (FROM
// 'x.parquet', read_parquet('dir/*.parquet'), read_csv('x.csv')).
type FileCatalog interface {
	// LookupFiles returns the table over the files pattern names (a file,
	// a directory or a glob); errors say which file is missing or
	// unreadable.
	LookupFiles(pattern string, o FileOptions) (*TableDef, error)
}

// FileAccessChecker is a FileCatalog that confines files to a policy:
// CheckFile refuses a path statements may not use, before anything looks
// at the file (so that a refusal does not tell whether it exists).
type FileAccessChecker interface {
	CheckFile(path string) error
}

// FileOptions say how to read files: Format "parquet" (the default) or
// "csv", and for CSV the header (nil: detected), the delimiter (0:
// detected), the text of NULL, the quote and the columns.
type FileOptions struct {
	Format    string
	Header    *bool
	Delimiter byte
	Null      string
	// Quote is the CSV quote character (0: '"'); Columns, when set, name
	// and type the columns instead of inference (names and SQL types).
	Quote   byte
	Columns []FileColumn
}

// FileColumn is a column read_csv's columns option declares.
type FileColumn struct {
	Name string
	Type arrow.DataType
}

// TableDef describes a table.
//
// Schema field types are the engine's types (docs/architecture.md): int32,
// int64, float64, bool, utf8, date32, decimal64 (p <= 18) and decimal128.
type TableDef struct {
	Name   string
	Schema *arrow.Schema
	// Stats are the table's statistics; nil when unknown (the optimizer
	// then assumes DefaultTableRows rows).
	Stats *TableStats
	// Handle is opaque to the binder and optimizer: the storage catalog puts
	// what its scans need (files, row groups) here, and the physical planner
	// reads it back.
	Handle any
	// Indexes are the table's PRIMARY KEY and UNIQUE constraints and
	// indexes; Checks its CHECK constraints; Defaults, per column, the SQL
	// text of its DEFAULT ("" none; nil when no column has one).
	Indexes  []IndexDef
	Checks   []CheckDef
	Defaults []string
	// ForeignKeys are its FOREIGN KEY constraints.
	ForeignKeys []ForeignKeyDef
	// Unreadable are columns of the table's files that it cannot read
	// (storage.Unreadable: nested Parquet columns, types nicflow has no
	// reading for); they are not in Schema. A query that names one, or
	// selects *, fails with its Err.
	Unreadable []UnreadableColumn
}

// UnreadableColumn is a column of a table's files the table does not
// read, with the error a query reading it fails with.
type UnreadableColumn struct {
	Name string
	// Kind is what it is (LIST, STRUCT, MAP, a Parquet type), for DESCRIBE.
	Kind string
	Err  error
}

// ForeignKeyDef is a FOREIGN KEY constraint: Columns reference RefColumns
// of table RefTable (RefColumns empty: its primary key, until the
// catalog resolves it).
type ForeignKeyDef struct {
	Name       string
	Columns    []string
	RefTable   string
	RefColumns []string
	MatchFull  bool
	// OnDelete and OnUpdate: "NO ACTION" or "RESTRICT".
	OnDelete, OnUpdate string
}

// IndexDef is an index of a table: a PRIMARY KEY or UNIQUE constraint
// (Constraint), or one CREATE [UNIQUE] INDEX made.
type IndexDef struct {
	Name       string
	Columns    []string
	Unique     bool
	Primary    bool
	Constraint bool
}

// CheckDef is a CHECK constraint: its name and canonical SQL text.
type CheckDef struct {
	Name string
	SQL  string
}

// TableStats are a table's statistics.
type TableStats struct {
	// Rows is the table's row count.
	Rows int64
	// Columns holds one entry per schema field (same order), or is nil.
	Columns []ColumnStats
}

// ColumnStats are one column's statistics. Min and Max use the value
// representation of Const (int32, int64, float64, bool, string, arrow.Date32,
// int64 unscaled for decimal64, decimal128.Num for decimal128); nil is
// unknown.
type ColumnStats struct {
	Min, Max any
	// Nulls is the number of NULLs.
	Nulls int64
	// Distinct is an estimate of the number of distinct non-NULL values; 0
	// means unknown.
	Distinct int64
}

// ViewDef describes a view: its query as SQL text (re-parsed and bound at
// each use) and optional column names.
type ViewDef struct {
	Name    string
	Columns []string
	SQL     string
}

// DefaultTableRows is the row count assumed for a table without
// statistics: large enough that the optimizer does not broadcast or build
// on an unknown table.
const DefaultTableRows = 1_000_000

// ColumnIndex returns the position of the named field, or -1.
func (t *TableDef) ColumnIndex(name string) int {
	for i, f := range t.Schema.Fields() {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// RowCount is the table's row count from statistics, or DefaultTableRows.
func (t *TableDef) RowCount() float64 {
	if t.Stats == nil {
		return DefaultTableRows
	}
	return float64(t.Stats.Rows)
}

// ColStats returns the statistics of field i, or nil.
func (t *TableDef) ColStats(i int) *ColumnStats {
	if t.Stats == nil || i < 0 || i >= len(t.Stats.Columns) {
		return nil
	}
	return &t.Stats.Columns[i]
}

// MemCatalog is an in-memory Catalog. It is safe for concurrent use.
type MemCatalog struct {
	Mu     sync.RWMutex
	tables map[string]*TableDef
	Views  map[string]*ViewDef
}

// NewMemCatalog returns an empty catalog.
func NewMemCatalog() *MemCatalog {
	return &MemCatalog{tables: map[string]*TableDef{}, Views: map[string]*ViewDef{}}
}

// LookupTable implements Catalog.
func (c *MemCatalog) LookupTable(name string) (*TableDef, error) {
	c.Mu.RLock()
	defer c.Mu.RUnlock()
	return c.tables[name], nil
}

// LookupView implements Catalog.
func (c *MemCatalog) LookupView(name string) (*ViewDef, error) {
	c.Mu.RLock()
	defer c.Mu.RUnlock()
	return c.Views[name], nil
}

// AddTable adds or replaces a table.
func (c *MemCatalog) AddTable(t *TableDef) {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	c.tables[t.Name] = t
}

// AddView adds a view; it fails when a table or (unless replace) a view of
// that name exists.
func (c *MemCatalog) AddView(v *ViewDef, replace bool) error {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	if _, ok := c.tables[v.Name]; ok {
		return nferr.Queryf("cannot create view %s: a table of that name exists", v.Name)
	}
	if _, ok := c.Views[v.Name]; ok && !replace {
		return nferr.Queryf("view %s already exists", v.Name)
	}
	c.Views[v.Name] = v
	return nil
}

// DropTable removes a table; it reports whether it existed.
func (c *MemCatalog) DropTable(name string) bool {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	_, ok := c.tables[name]
	delete(c.tables, name)
	return ok
}

// DropView removes a view; it reports whether it existed.
func (c *MemCatalog) DropView(name string) bool {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	_, ok := c.Views[name]
	delete(c.Views, name)
	return ok
}

// TableNames lists the tables, sorted.
func (c *MemCatalog) TableNames() []string {
	c.Mu.RLock()
	defer c.Mu.RUnlock()
	names := make([]string, 0, len(c.tables))
	for n := range c.tables {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// OverlayCatalog looks names up in Views first (the session's views, which
// a script creates and drops as it runs) and then in Base.
type OverlayCatalog struct {
	Base  Catalog
	Views *MemCatalog
}

// LookupTable implements Catalog.
func (o OverlayCatalog) LookupTable(name string) (*TableDef, error) {
	if t, _ := o.Views.LookupTable(name); t != nil {
		return t, nil
	}
	return o.Base.LookupTable(name)
}

// LookupView implements Catalog.
func (o OverlayCatalog) LookupView(name string) (*ViewDef, error) {
	if v, _ := o.Views.LookupView(name); v != nil {
		return v, nil
	}
	return o.Base.LookupView(name)
}

// LookupFiles implements FileCatalog when Base does.
func (o OverlayCatalog) LookupFiles(pattern string, fo FileOptions) (*TableDef, error) {
	fc, ok := o.Base.(FileCatalog)
	if !ok {
		return nil, nferr.Queryf("this catalog cannot read files")
	}
	return fc.LookupFiles(pattern, fo)
}

// OIDOf implements OIDCatalog when Base does.
func (o OverlayCatalog) OIDOf(kind, name string) (int, bool) {
	if oc, ok := o.Base.(OIDCatalog); ok {
		return oc.OIDOf(kind, name)
	}
	return 0, false
}

// SQLFunction implements SQLFunctionCatalog when Base does.
func (o OverlayCatalog) SQLFunction(name string, nargs int) (string, bool) {
	if fc, ok := o.Base.(SQLFunctionCatalog); ok {
		return fc.SQLFunction(name, nargs)
	}
	return "", false
}

// QualifiedLookupName joins the parts of a possibly qualified name; the
// catalog is flat, so "public.t" and "t" name the same table.
func QualifiedLookupName(parts []string) string {
	if len(parts) == 2 && parts[0] == "public" {
		return parts[1]
	}
	return strings.Join(parts, ".")
}
