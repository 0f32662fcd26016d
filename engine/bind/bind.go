package bind

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/exec/expr"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Statement is a bound statement:
//
//	*QueryStmt                 SELECT / VALUES / set operations
//	*CreateTableStmt           CREATE TABLE (columns or AS query)
//	*CreateExternalTableStmt   CREATE EXTERNAL TABLE ... STORED AS ... LOCATION
//	*CreateViewStmt            CREATE [OR REPLACE] VIEW
//	*DropStmt                  DROP TABLE|VIEW [IF EXISTS]
//	*InsertStmt                INSERT INTO ... query
//	*CopyStmt                  COPY ... FROM 'file' WITH (...)
//	*CopyToStmt                COPY table|(query) TO 'file' WITH (...)
//	*ExplainStmt               EXPLAIN [ANALYZE] [VERBOSE] statement
//	*ShowTablesStmt, *ShowStmt, *DescribeStmt, *SetStmt
//	*AnalyzeStmt               ANALYZE [VERBOSE] [table [(columns)], ...]
//
// DDL and session statements are carried to execution as they are; query
// plans go through Optimize first.
type Statement interface{ boundStmt() }

// QueryStmt is a query: a logical plan whose output columns, in order, are
// the result; Names are the result's column names.
type QueryStmt struct {
	Plan  plan.Plan
	Names []string
	// Rules is what each optimizer rule did, when traced (EXPLAIN VERBOSE).
	Rules []plan.RuleRun
}

// CreateTableStmt is CREATE TABLE; Query is set for CREATE TABLE ... AS
// (Schema is then the query's result schema).
type CreateTableStmt struct {
	Name        string
	Schema      *arrow.Schema
	IfNotExists bool
	Query       *QueryStmt
	// Indexes, Checks and Defaults are the declared constraints (as in
	// plan.TableDef; primary key columns are NOT NULL in Schema).
	Indexes     []plan.IndexDef
	Checks      []plan.CheckDef
	Defaults    []string
	ForeignKeys []plan.ForeignKeyDef
}

// CreateIndexStmt is CREATE [UNIQUE] INDEX.
type CreateIndexStmt struct {
	Name        string
	Table       string
	Columns     []string
	Unique      bool
	IfNotExists bool
}

// CreateExternalTableStmt registers files as a table. Schema is nil when
// the statement lists no columns (the files' schema is used).
type CreateExternalTableStmt struct {
	Name        string
	Schema      *arrow.Schema
	Format      string
	Location    string
	IfNotExists bool
}

// CreateViewStmt creates a view. SQL is the canonical text of the query
// (stored and re-bound at each use); Schema is its result schema at
// creation, after Columns renamed it.
type CreateViewStmt struct {
	Name      string
	Columns   []string
	SQL       string
	OrReplace bool
	Schema    *arrow.Schema
}

// DropStmt drops tables or views.
type DropStmt struct {
	View     bool
	Index    bool
	Names    []string
	IfExists bool
}

// InsertStmt appends the rows of Query to Table. Query's columns are in
// the table's schema order and types (missing columns are NULL).
type InsertStmt struct {
	Table *plan.TableDef
	Query *QueryStmt
	// Checks are the table's CHECK constraints over Query's output
	// columns: a row that makes one FALSE fails the statement.
	Checks []BoundCheck
	// SkipConflicts: ON CONFLICT DO NOTHING (rows whose key exists are
	// not inserted).
	SkipConflicts bool
	// Returning is the RETURNING list over the rows inserted (nil: none).
	Returning *Returning
}

// BoundCheck is a CHECK constraint bound to the rows being written.
type BoundCheck struct {
	Name string
	Expr plan.Expr
}

// CopyToStmt writes a query's rows (COPY table [(columns)] TO, COPY
// (query) TO) to File as Parquet or CSV.
type CopyToStmt struct {
	Query *QueryStmt
	File  string
	// Format is "parquet" or "csv" (by default from the file name: .parquet
	// is Parquet, anything else CSV).
	Format    string
	Delimiter rune
	Header    bool
	// Null is the text of NULL in CSV ("" by default).
	Null string
	// Stdout: COPY ... TO STDOUT, to the client (File is empty; Format
	// "text", PostgreSQL's default, or "csv").
	Stdout bool
}

func (*CopyToStmt) boundStmt() {}

// CopyStmt loads a file into Table.
type CopyStmt struct {
	Table *plan.TableDef
	// Columns are the schema indexes of the file's columns, in file order.
	Columns []int
	File    string
	// Format is "csv", "tbl" (dbgen: '|' separated, a trailing '|') or
	// "parquet"; the default comes from the file name's extension.
	Format    string
	Delimiter rune
	Header    bool
	// Null is the text that stands for NULL in csv/tbl ("" by default;
	// \N in text).
	Null string
	// Stdin: COPY ... FROM STDIN, from the client (File is empty; Format
	// "text", PostgreSQL's default, or "csv").
	Stdin bool
	// Checks are the table's CHECK constraints over CheckCols (the table's
	// columns, in order).
	Checks    []BoundCheck
	CheckCols []plan.Column
}

// ExplainStmt explains a statement (running it when Analyze).
type ExplainStmt struct {
	Analyze, Verbose bool
	Stmt             Statement
}

// ShowTablesStmt lists tables.
type ShowTablesStmt struct{}

// ShowStmt shows a setting.
type ShowStmt struct{ Name string }

// DescribeStmt describes a table or view: Name and Schema.
type DescribeStmt struct {
	Name   string
	Schema *arrow.Schema
	View   bool
	// Table is the described table (nil for a view): its keys and
	// defaults.
	Table *plan.TableDef
}

// AnalyzeStmt is ANALYZE: the tables it names, each existing and with
// existing, distinct columns (Columns nil: all); no Tables: every table.
type AnalyzeStmt struct {
	Verbose bool
	Tables  []AnalyzeTable
}

// AnalyzeTable is one table of AnalyzeStmt by its catalog name.
type AnalyzeTable struct {
	Name    string
	Columns []string
}

// SetStmt changes a session setting; Value is its text ("4", "2GiB", "on").
type SetStmt struct{ Name, Value string }

func (*QueryStmt) boundStmt()               {}
func (*CreateTableStmt) boundStmt()         {}
func (*CreateIndexStmt) boundStmt()         {}
func (*CreateExternalTableStmt) boundStmt() {}
func (*CreateViewStmt) boundStmt()          {}
func (*DropStmt) boundStmt()                {}
func (*InsertStmt) boundStmt()              {}
func (*CopyStmt) boundStmt()                {}
func (*ExplainStmt) boundStmt()             {}
func (*ShowTablesStmt) boundStmt()          {}
func (*ShowStmt) boundStmt()                {}
func (*DescribeStmt) boundStmt()            {}
func (*SetStmt) boundStmt()                 {}
func (*AnalyzeStmt) boundStmt()             {}

// maxViewDepth bounds views defined on views (and catches cycles that a
// replaced view could create): 32 levels is far beyond sensible schemas.
const maxViewDepth = 32

// binder resolves one statement against a catalog.
type binder struct {
	// filterIns are the row IN subqueries whose NULL answer filters as
	// FALSE (rowin.go); nextRowIn numbers their derived tables.
	filterIns map[sql.Expr]bool
	nextRowIn int
	// fnArgs are the bound arguments of SQL functions (sqlFunction) by
	// the names their bodies use; nextFnArg numbers them.
	fnArgs    map[string]plan.Expr
	nextFnArg int
	cat       plan.Catalog
	// src is the text positions refer to (the script, or a view's SQL while
	// binding the view).
	src     string
	srcName string // "" or "view v" for errors inside a view's text
	nextID  plan.ColumnID
	nextSub int
	// views maps a view name to its SharedDef within this statement, so a
	// view used twice is computed once.
	views     map[string]*plan.SharedDef
	viewStack []string
	nextDef   int
	// now is the statement's time (current_timestamp, now(),
	// current_date), fixed when binding starts so that every use in a
	// statement agrees.
	now time.Time
	// zone is the session time zone (expr.LoadZone's names; "" is UTC),
	// stamped on every call and cast; local is now's wall clock there.
	zone  string
	local time.Time
	// params, while describing a statement (BindDescribe), gives its
	// parameters $1... their stand-ins; nil: a parameter is an error.
	params *paramBinding
}

// paramBinding types a described statement's parameters: those the
// client typed are NULLs of their type, the others untyped NULLs whose
// context records their type (plan.ParamSlot).
type paramBinding struct {
	given []arrow.DataType
	slots map[int]*plan.ParamSlot
	// insertValues is the VALUES list of the INSERT being bound and
	// insertTypes the types of its target columns: a parameter there takes
	// its column's type (INSERT INTO t (id) VALUES ($1)).
	insertValues *sql.Values
	insertTypes  []arrow.DataType
}

func (p *paramBinding) ref(n int) plan.Expr {
	if n <= len(p.given) && p.given[n-1] != nil {
		return plan.NullConst(p.given[n-1])
	}
	s := p.slots[n]
	if s == nil {
		s = &plan.ParamSlot{N: n}
		p.slots[n] = s
	}
	return plan.ParamConst(s)
}

// Bind resolves a parsed statement against cat. src is the text the
// statement was parsed from (its positions index into it), for errors with
// a caret. Errors are KindQuery errors naming the position of the culprit.
func Bind(cat plan.Catalog, src string, stmt sql.Statement) (st Statement, err error) {
	return BindIn(cat, src, stmt, "")
}

// BindIn is Bind in the session time zone zone ("" or UTC: UTC): the zone
// TIMESTAMPTZ values read and print in, stamped on the plan's expressions
// (plan.Call.Zone) so that every phase and every node computes in it.
func BindIn(cat plan.Catalog, src string, stmt sql.Statement, zone string) (st Statement, err error) {
	return bindIn(cat, src, stmt, zone, nil)
}

// BindDescribe binds stmt as BindIn does, for describing it before its
// parameters' values are known: parameter $n is a NULL of given[n-1]
// when the client typed it (non-nil), else a value of unknown type that
// takes the type its context gives it, as an untyped string literal
// does ('5' in id = '5' is an integer). params are the n parameters'
// types, n the larger of len(given) and the highest $n in the
// statement; a parameter no context types is text (PostgreSQL's unknown
// resolves to text too).
func BindDescribe(cat plan.Catalog, src string, stmt sql.Statement, zone string, given []arrow.DataType) (st Statement, params []arrow.DataType, err error) {
	pb := &paramBinding{given: given, slots: map[int]*plan.ParamSlot{}}
	if st, err = bindIn(cat, src, stmt, zone, pb); err != nil {
		return nil, nil, err
	}
	n := len(given)
	for k := range pb.slots {
		n = max(n, k)
	}
	params = make([]arrow.DataType, n)
	for i := range params {
		switch s := pb.slots[i+1]; {
		case i < len(given) && given[i] != nil:
			params[i] = given[i]
		case s != nil && s.Type != nil:
			params[i] = s.Type
		default:
			params[i] = plan.TypString
		}
	}
	return st, params, nil
}

func bindIn(cat plan.Catalog, src string, stmt sql.Statement, zone string, params *paramBinding) (st Statement, err error) {
	defer func() {
		if r := recover(); r != nil {
			// NB: a panic here is a binder bug; it must not take a server
			// down. The fuzz target treats this error as a failure.
			st, err = nil, nferr.Internalf("binder bug (please report): %v", r)
		}
	}()
	b := &binder{cat: cat, src: src, views: map[string]*plan.SharedDef{}, now: time.Now().UTC(), params: params}
	loc, err := expr.LoadZone(zone)
	if err != nil {
		return nil, err
	}
	b.local = b.now
	if loc != nil {
		b.zone = zone
		b.local = b.now.In(loc)
	}
	return b.stmt(stmt)
}

// errorf is a KindQuery error at n's position.
func (b *binder) errorf(n sql.Node, format string, args ...any) error {
	return b.errorAt(n.Position(), format, args...)
}

func (b *binder) errorAt(p sql.Pos, format string, args ...any) error {
	err := sql.Errorf(b.src, p, format, args...)
	if b.srcName != "" {
		return nferr.Wrap(nferr.KindQuery, err, "in %s", b.srcName)
	}
	return err
}

func (b *binder) newCol(name, table string, t arrow.DataType, nullable bool) plan.Column {
	b.nextID++
	return plan.Column{ID: b.nextID, Name: name, Table: table, Type: t, Nullable: nullable}
}

func (b *binder) stmt(stmt sql.Statement) (Statement, error) {
	switch s := stmt.(type) {
	case *sql.Query:
		return b.queryStmt(s)
	case *sql.CreateView:
		return b.createView(s)
	case *sql.Drop:
		d := &DropStmt{View: s.Kind == sql.ObjView, Index: s.Kind == sql.ObjIndex, IfExists: s.IfExists}
		for _, n := range s.Names {
			name, err := b.objName(n)
			if err != nil {
				return nil, err
			}
			d.Names = append(d.Names, name)
		}
		return d, nil
	case *sql.CreateTable:
		return b.createTable(s)
	case *sql.CreateIndex:
		return b.createIndex(s)
	case *sql.CreateExternalTable:
		name, err := b.objName(s.Name)
		if err != nil {
			return nil, err
		}
		if s.Format != "parquet" {
			return nil, b.errorf(s, "STORED AS %s is not supported (want PARQUET)", strings.ToUpper(s.Format))
		}
		ce := &CreateExternalTableStmt{Name: name, Format: s.Format, Location: s.Location, IfNotExists: s.IfNotExists}
		if len(s.Columns) > 0 {
			if ce.Schema, err = b.columnDefs(s.Columns); err != nil {
				return nil, err
			}
		}
		return ce, nil
	case *sql.Insert:
		return b.insert(s)
	case *sql.Delete:
		return b.deleteStmt(s)
	case *sql.Update:
		return b.updateStmt(s)
	case *sql.Copy:
		if s.To {
			return b.copyToStmt(s)
		}
		return b.copyStmt(s)
	case *sql.Explain:
		inner, err := b.stmt(s.Stmt)
		if err != nil {
			return nil, err
		}
		if _, ok := inner.(*ExplainStmt); ok {
			return nil, b.errorf(s.Stmt, "EXPLAIN of EXPLAIN is not supported")
		}
		return &ExplainStmt{Analyze: s.Analyze, Verbose: s.Verbose, Stmt: inner}, nil
	case *sql.ShowTables:
		return &ShowTablesStmt{}, nil
	case *sql.Show:
		return &ShowStmt{Name: s.Name.Name}, nil
	case *sql.Describe:
		name, err := b.objName(s.Name)
		if err != nil {
			return nil, err
		}
		t, err := b.cat.LookupTable(name)
		if err != nil {
			return nil, err
		}
		if t != nil {
			return &DescribeStmt{Name: name, Schema: t.Schema, Table: t}, nil
		}
		v, err := b.cat.LookupView(name)
		if err != nil {
			return nil, err
		}
		if v == nil {
			return nil, b.errorf(s.Name, "table or view %q does not exist", name)
		}
		q, err := b.bindViewQuery(v, s.Name)
		if err != nil {
			return nil, err
		}
		return &DescribeStmt{Name: name, Schema: queryArrowSchema(q), View: true}, nil
	case *sql.Analyze:
		return b.analyze(s)
	case *sql.Set:
		if n := strings.ToLower(s.Name.Name); n == "timezone" || n == "time zone" {
			spec, err := b.zoneSetting(s)
			if err != nil {
				return nil, err
			}
			return &SetStmt{Name: "timezone", Value: spec}, nil
		}
		return &SetStmt{Name: s.Name.Name, Value: SetValue(s)}, nil
	}
	return nil, b.errorf(stmt, "statement %T is not supported", stmt)
}

// analyze binds ANALYZE: every table it names must be a table (a view,
// or a name nothing has, is an error at the name, as PostgreSQL's
// "relation ... does not exist"), every column one of the table's, once.
func (b *binder) analyze(s *sql.Analyze) (Statement, error) {
	a := &AnalyzeStmt{Verbose: s.Verbose}
	for _, at := range s.Tables {
		name, err := b.objName(at.Name)
		if err != nil {
			return nil, err
		}
		t, err := b.cat.LookupTable(name)
		if err != nil {
			return nil, err
		}
		if t == nil {
			v, err := b.cat.LookupView(name)
			if err != nil {
				return nil, err
			}
			if v != nil {
				return nil, b.errorf(at.Name, "cannot analyze %q: it is a view (only tables have statistics)", name)
			}
			return nil, b.errorf(at.Name, "relation %q does not exist", name)
		}
		bt := AnalyzeTable{Name: name}
		seen := map[int]bool{}
		for _, c := range at.Columns {
			i := t.ColumnIndex(c.Name)
			if i < 0 {
				return nil, b.errorf(c, "column %q of relation %q does not exist", c.Name, name)
			}
			if seen[i] {
				return nil, b.errorf(c, "column %q of relation %q appears more than once", c.Name, name)
			}
			seen[i] = true
			bt.Columns = append(bt.Columns, t.Schema.Field(i).Name)
		}
		a.Tables = append(a.Tables, bt)
	}
	return a, nil
}

// SetValue is the text of a SET statement's value.
func SetValue(s *sql.Set) string {
	switch x := s.Value.(type) {
	case *sql.Literal:
		return x.Text
	case *sql.UnaryExpr:
		return x.Op + x.X.(*sql.Literal).Text
	case *sql.ColumnRef:
		return x.Parts[0].Name
	}
	return ""
}

// objName returns the catalog name of a possibly qualified name.
func (b *binder) objName(n sql.ObjName) (string, error) {
	parts := make([]string, len(n.Parts))
	for i, p := range n.Parts {
		parts[i] = p.Name
	}
	if len(parts) > 2 || (len(parts) == 2 && parts[0] != "public" && parts[0] != "information_schema" && parts[0] != "pg_catalog") {
		return "", b.errorf(n, "schema-qualified name %s is not supported (nicflow has one schema, public, and the read-only information_schema and pg_catalog)", strings.Join(parts, "."))
	}
	return plan.QualifiedLookupName(parts), nil
}

func (b *binder) queryStmt(q *sql.Query) (*QueryStmt, error) {
	plan, names, err := b.query(q, nil)
	if err != nil {
		return nil, err
	}
	return &QueryStmt{Plan: plan, Names: names}, nil
}

// queryArrowSchema is the result schema of a query.
func queryArrowSchema(q *QueryStmt) *arrow.Schema {
	cols := q.Plan.Columns()
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		t := c.Type
		if plan.IsNullType(t) {
			t = plan.TypString // an untyped NULL column is stored as text
		}
		fields[i] = arrow.Field{Name: q.Names[i], Type: t, Nullable: c.Nullable}
	}
	return arrow.NewSchema(fields, nil)
}

func (b *binder) createView(s *sql.CreateView) (Statement, error) {
	name, err := b.objName(s.Name)
	if err != nil {
		return nil, err
	}
	if t, err := b.cat.LookupTable(name); err != nil {
		return nil, err
	} else if t != nil {
		return nil, b.errorf(s.Name, "cannot create view %s: a table of that name exists", name)
	}
	q, err := b.queryStmt(s.Query)
	if err != nil {
		return nil, err
	}
	v := &CreateViewStmt{Name: name, SQL: sql.Deparse(s.Query), OrReplace: s.OrReplace}
	if len(s.Columns) > len(q.Names) {
		return nil, b.errorf(s.Columns[len(q.Names)], "view %s has %d columns but %d column names were given", name, len(q.Names), len(s.Columns))
	}
	for i, c := range s.Columns {
		v.Columns = append(v.Columns, c.Name)
		q.Names[i] = c.Name
	}
	if err := checkDuplicateNames(q.Names); err != nil {
		return nil, b.errorf(s, "view %s: %v", name, err)
	}
	v.Schema = queryArrowSchema(q)
	return v, nil
}

func checkDuplicateNames(names []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return fmt.Errorf("column name %q specified more than once", n)
		}
		seen[n] = true
	}
	return nil
}

func (b *binder) createTable(s *sql.CreateTable) (Statement, error) {
	name, err := b.objName(s.Name)
	if err != nil {
		return nil, err
	}
	ct := &CreateTableStmt{Name: name, IfNotExists: s.IfNotExists}
	if s.AsQuery == nil {
		if ct.Schema, err = b.columnDefs(s.Columns); err != nil {
			return nil, err
		}
		if err := b.constraints(ct, s); err != nil {
			return nil, err
		}
		return ct, nil
	}
	q, err := b.queryStmt(s.AsQuery)
	if err != nil {
		return nil, err
	}
	if len(s.ColumnNames) > len(q.Names) {
		return nil, b.errorf(s.ColumnNames[len(q.Names)], "the query has %d columns but %d column names were given", len(q.Names), len(s.ColumnNames))
	}
	for i, c := range s.ColumnNames {
		q.Names[i] = c.Name
	}
	if err := checkDuplicateNames(q.Names); err != nil {
		return nil, b.errorf(s, "CREATE TABLE %s: %v", name, err)
	}
	// Columns of an untyped NULL are stored as text: cast them so the
	// plan's output matches the table's schema.
	cols := q.Plan.Columns()
	needCast := false
	for _, c := range cols {
		needCast = needCast || plan.IsNullType(c.Type)
	}
	if needCast {
		exprs := make([]plan.Expr, len(cols))
		for i, c := range cols {
			exprs[i] = plan.NewColRef(c)
			if plan.IsNullType(c.Type) {
				exprs[i] = plan.NullConst(plan.TypString)
			}
		}
		q.Plan = b.castProject(q.Plan, exprs)
	}
	ct.Query = q
	ct.Schema = queryArrowSchema(q)
	return ct, nil
}

func (b *binder) columnDefs(defs []*sql.ColumnDef) (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(defs))
	seen := map[string]bool{}
	for i, d := range defs {
		if seen[d.Name.Name] {
			return nil, b.errorf(d, "column %q specified more than once", d.Name.Name)
		}
		seen[d.Name.Name] = true
		t, err := b.typeOf(d.Type)
		if err != nil {
			return nil, err
		}
		fields[i] = arrow.Field{Name: d.Name.Name, Type: t, Nullable: !d.NotNull}
	}
	return arrow.NewSchema(fields, nil), nil
}

// typeOf maps a SQL type name to the engine's Arrow type.
func (b *binder) typeOf(t *sql.TypeName) (arrow.DataType, error) {
	if t.Array {
		elem := *t
		elem.Array = false
		et, err := b.typeOf(&elem)
		if err != nil {
			return nil, err
		}
		return plan.ArrayOf(et), nil
	}
	args := func(n int) error {
		if len(t.Args) > n {
			return b.errorf(t, "type %s takes at most %d modifiers", t.Name, n)
		}
		return nil
	}
	switch t.Name {
	case "regclass", "regtype", "regnamespace":
		return arrow.PrimitiveTypes.Int32, nil
	case "int2vector":
		return plan.TypInt2Vector, args(0)
	case "json", "jsonb":
		// JSON is text (nicflow has no json type): the operators ->, ->>,
		// #> and #>> read it.
		return plan.TypString, args(0)
	case "integer", "smallint":
		// NB: smallint is stored as int32: the engine has no int16.
		return plan.TypInt32, args(0)
	case "bigint":
		return plan.TypInt64, args(0)
	case "real", "double precision":
		return plan.TypFloat64, args(0)
	case "decimal":
		if err := args(2); err != nil {
			return nil, err
		}
		// DuckDB's default for a bare DECIMAL: decimal(18,3).
		p, s := int32(18), int32(3)
		if len(t.Args) >= 1 {
			p, s = int32(t.Args[0]), 0
		}
		if len(t.Args) == 2 {
			s = int32(t.Args[1])
		}
		if p < 1 || p > plan.MaxDecimalPrecision {
			return nil, b.errorf(t, "decimal precision %d must be between 1 and %d", p, plan.MaxDecimalPrecision)
		}
		if s < 0 || s > p {
			return nil, b.errorf(t, "decimal scale %d must be between 0 and the precision %d", s, p)
		}
		return plan.DecimalType(p, s), nil
	case "varchar", "char", "text":
		return plan.TypString, args(1)
	case "date":
		return plan.TypDate, args(0)
	case "boolean":
		return plan.TypBool, args(0)
	case "timestamp", "timestamptz":
		// NB: a precision, TIMESTAMP(p), is accepted and ignored:
		// timestamps keep microseconds.
		if len(t.Args) == 1 && t.Args[0] > 6 {
			return nil, b.errorf(t, "TIMESTAMP(%d) precision must be between 0 and 6", t.Args[0])
		}
		if t.Name == "timestamptz" {
			return plan.TypTimestampTZ, args(1)
		}
		return plan.TypTimestamp, args(1)
	case "interval":
		return plan.TypInterval, args(0)
	case "bytea":
		// NB: the length of BINARY(n) and VARBINARY(n) is accepted, not
		// enforced (as VARCHAR(n)'s).
		return plan.TypBinary, args(1)
	case "time":
		// NB: TIME(p) is accepted as TIMESTAMP(p) is: values keep
		// microseconds.
		if len(t.Args) == 1 && t.Args[0] > 6 {
			return nil, b.errorf(t, "TIME(%d) precision must be between 0 and 6", t.Args[0])
		}
		return plan.TypTime, args(1)
	case "timetz":
		return nil, b.errorf(t, "type TIME WITH TIME ZONE is not supported (PostgreSQL discourages it; use TIME or TIMESTAMPTZ)")
	}
	return nil, b.errorf(t, "type %q does not exist", t.Name)
}

// existingTable looks up the table a statement writes or reads by name:
// a missing one is a query error at n.
func (b *binder) existingTable(n sql.ObjName) (*plan.TableDef, string, error) {
	name, err := b.objName(n)
	if err != nil {
		return nil, "", err
	}
	t, err := b.cat.LookupTable(name)
	if err != nil {
		return nil, "", err
	}
	if t == nil {
		return nil, "", b.errorf(n, "table %q does not exist", name)
	}
	return t, name, nil
}

func (b *binder) insert(s *sql.Insert) (Statement, error) {
	t, name, err := b.existingTable(s.Table)
	if err != nil {
		return nil, err
	}
	// target[i] is the schema index filled by the query's column i.
	var target []int
	if len(s.Columns) == 0 {
		for i := range t.Schema.Fields() {
			target = append(target, i)
		}
	} else {
		seen := map[int]bool{}
		for _, c := range s.Columns {
			i := t.ColumnIndex(c.Name)
			if i < 0 {
				return nil, b.errorf(c, "column %q of table %s does not exist", c.Name, name)
			}
			if seen[i] {
				return nil, b.errorf(c, "column %q specified more than once", c.Name)
			}
			seen[i] = true
			target = append(target, i)
		}
	}
	if v, ok := s.Query.Body.(*sql.Values); ok && b.params != nil && len(s.Query.With) == 0 {
		b.params.insertValues, b.params.insertTypes = v, nil
		for _, i := range target {
			b.params.insertTypes = append(b.params.insertTypes, t.Schema.Field(i).Type)
		}
	}
	q, err := b.queryStmt(s.Query)
	if err != nil {
		return nil, err
	}
	qcols := q.Plan.Columns()
	if len(qcols) != len(target) {
		return nil, b.errorf(s.Query, "INSERT has %d target columns but the query returns %d", len(target), len(qcols))
	}
	// Build a projection in table order with assignment casts.
	fields := t.Schema.Fields()
	exprs := make([]plan.Expr, len(fields))
	cols := make([]plan.Column, len(fields))
	named := make([]bool, len(fields))
	for _, ti := range target {
		named[ti] = true
	}
	for i, f := range fields {
		cols[i] = b.newCol(f.Name, "", f.Type, true)
		if !named[i] {
			if exprs[i], err = b.insertDefault(t, i); err != nil {
				return nil, err
			}
		}
	}
	for qi, ti := range target {
		f := fields[ti]
		e, err := b.assignCast(plan.NewColRef(qcols[qi]), f.Type)
		if err != nil {
			return nil, b.errorf(s.Query, "column %s is of type %s but the query gives %s", f.Name, plan.TypeString(f.Type), plan.TypeString(qcols[qi].Type))
		}
		exprs[ti] = e
	}
	for i, f := range fields {
		if c, ok := exprs[i].(*plan.Const); ok && c.IsNull() && !f.Nullable {
			return nil, b.errorf(s.Query, "column %s of table %s is NOT NULL and gets no value", f.Name, name)
		}
	}
	names := fieldNames(t)
	if s.OrReplace {
		oc, err := b.orReplace(s, t)
		if err != nil {
			return nil, err
		}
		c := *s
		c.OnConflict, c.OrReplace = oc, false
		s = &c
	}
	if s.OnConflict != nil && len(s.OnConflict.Set) > 0 {
		return b.upsert(s, t, &QueryStmt{Plan: &plan.ProjectNode{Input: q.Plan, Exprs: exprs, Cols: cols}, Names: names})
	}
	checks, err := b.insertChecks(t, t.Name, cols)
	if err != nil {
		return nil, err
	}
	skip, err := b.onConflict(s.OnConflict, t)
	if err != nil {
		return nil, err
	}
	ret, err := b.returning(s.Returning, t, t.Name)
	if err != nil {
		return nil, err
	}
	return &InsertStmt{Table: t, Query: &QueryStmt{Plan: &plan.ProjectNode{Input: q.Plan, Exprs: exprs, Cols: cols}, Names: names}, Checks: checks, SkipConflicts: skip, Returning: ret}, nil
}

// assignCast converts e to a column's type for INSERT: any numeric type to
// any numeric type (with range and rounding checks at run time), and
// strings to anything (parsed at run time), as PostgreSQL's assignment
// casts.
func (b *binder) assignCast(e plan.Expr, t arrow.DataType) (plan.Expr, error) {
	if arrow.TypeEqual(e.Type(), t) {
		return e, nil
	}
	src := e.Type()
	ok := plan.IsNullType(src) || (plan.IsNumeric(src) && plan.IsNumeric(t)) || plan.IsString(src) || plan.IsString(t)
	if plan.IsArray(src) && plan.IsArray(t) {
		// An array assigns element by element (ARRAY[1, 2] into bigint[]).
		_, err := b.assignCast(plan.NullConst(plan.ArrayElemType(src)), plan.ArrayElemType(t))
		ok = err == nil
	}
	if !ok {
		return nil, fmt.Errorf("no assignment cast")
	}
	return &plan.CastExpr{Zone: b.zone, X: e, Typ: t}, nil
}

// copyToStmt binds COPY ... TO: the query (for a table, SELECT of its
// columns in table order or the listed ones) and the file's options.
func (b *binder) copyToStmt(s *sql.Copy) (Statement, error) {
	q := s.Query
	if q == nil {
		sel := &sql.Select{Pos: s.Pos, From: []sql.TableExpr{&sql.TableName{Pos: s.Pos, Name: s.Table}}}
		if len(s.Columns) == 0 {
			sel.Items = []*sql.SelectItem{{Pos: s.Pos, Expr: &sql.Star{Pos: s.Pos}}}
		}
		for _, c := range s.Columns {
			sel.Items = append(sel.Items, &sql.SelectItem{Pos: c.Pos, Expr: &sql.ColumnRef{Pos: c.Pos, Parts: []sql.Ident{c}}})
		}
		q = &sql.Query{Pos: s.Pos, Body: sel}
	} else if len(s.Columns) > 0 {
		return nil, b.errorf(s.Columns[0], "COPY (query) TO takes no column list")
	}
	qs, err := b.queryStmt(q)
	if err != nil {
		return nil, err
	}
	formats := []string{"csv", "parquet", "text"}
	if s.Stdio {
		formats = []string{"text", "csv"}
	}
	o, err := b.copyOptions(s, "COPY TO", formats...)
	if err != nil {
		return nil, err
	}
	c := &CopyToStmt{Query: qs, File: s.File, Format: o.format, Delimiter: ',', Header: o.header, Null: o.null, Stdout: s.Stdio}
	if c.Format == "text" {
		c.Delimiter = '\t'
		if !o.nullSet {
			c.Null = `\N`
		}
	}
	if o.delimSet {
		if o.delim > 127 || o.delim == '"' || o.delim == '\n' || o.delim == '\r' {
			return nil, b.errorf(s, "COPY delimiter must be an ASCII character other than a quote or a line break, got %q", o.delim)
		}
		c.Delimiter = o.delim
	}
	csvOnly := o.delimSet || o.header || o.nullSet
	if c.Format == "parquet" && csvOnly {
		return nil, b.errorf(s, "COPY options DELIMITER, HEADER and NULL apply to csv files, not parquet")
	}
	return c, nil
}

// copyOpts are COPY's options as written: FORMAT (default from the file
// name: .parquet, .tbl, else csv), DELIMITER, HEADER and NULL.
type copyOpts struct {
	format           string
	delim            rune
	delimSet, header bool
	null             string
	nullSet          bool
}

// copyOptions reads COPY's options; formats are the ones the statement
// writes or reads (the first is the default).
func (b *binder) copyOptions(s *sql.Copy, what string, formats ...string) (copyOpts, error) {
	o := copyOpts{format: formats[0]}
	lower := strings.ToLower(s.File)
	for _, z := range []string{".gz", ".zst", ".zstd"} {
		lower = strings.TrimSuffix(lower, z) // a compressed text file
	}
	for _, f := range formats {
		if strings.HasSuffix(lower, "."+f) {
			o.format = f
		}
	}
	for _, opt := range s.Options {
		val := ""
		switch v := opt.Value.(type) {
		case *sql.Literal:
			val = v.Text
		case *sql.ColumnRef:
			val = v.Parts[0].Name
		}
		switch opt.Name {
		case "format":
			if strings.EqualFold(val, "binary") {
				return o, b.errorf(opt, "%s format binary is not supported (want text or csv)", what)
			}
			if !slices.Contains(formats, strings.ToLower(val)) {
				want := strings.Join(formats[:len(formats)-1], ", ") + " or " + formats[len(formats)-1]
				return o, b.errorf(opt, "%s format %q is not supported (want %s)", what, val, want)
			}
			o.format = strings.ToLower(val)
		case "delimiter":
			r := []rune(val)
			if len(r) != 1 {
				return o, b.errorf(opt, "COPY delimiter must be a single character, got %q", val)
			}
			o.delim, o.delimSet = r[0], true
		case "header":
			switch strings.ToLower(val) {
			case "", "true", "on", "1":
				o.header = true
			case "false", "off", "0":
				o.header = false
			default:
				return o, b.errorf(opt, "COPY HEADER takes a boolean, got %q", val)
			}
		case "null":
			if _, ok := opt.Value.(*sql.Literal); !ok {
				return o, b.errorf(opt, "COPY NULL takes a string")
			}
			o.null, o.nullSet = val, true
		case "quote", "escape":
			// NB: nicflow quotes and escapes csv with '"' only.
			if val != `"` {
				return o, b.errorf(opt, "COPY %s %q is not supported (nicflow's csv uses '\"')", strings.ToUpper(opt.Name), val)
			}
		default:
			return o, b.errorf(opt, "unknown COPY option %s (want FORMAT, DELIMITER, HEADER, NULL, QUOTE or ESCAPE)", strings.ToUpper(opt.Name))
		}
	}
	return o, nil
}

func (b *binder) copyStmt(s *sql.Copy) (Statement, error) {
	t, name, err := b.existingTable(s.Table)
	if err != nil {
		return nil, err
	}
	c := &CopyStmt{Table: t, File: s.File, Delimiter: ','}
	if len(t.Checks) > 0 {
		c.CheckCols = b.tableCols(t.Name, t.Schema.Fields())
		if c.Checks, err = b.insertChecks(t, t.Name, c.CheckCols); err != nil {
			return nil, err
		}
	}
	if len(s.Columns) == 0 {
		for i := range t.Schema.Fields() {
			c.Columns = append(c.Columns, i)
		}
	} else {
		for _, id := range s.Columns {
			i := t.ColumnIndex(id.Name)
			if i < 0 {
				return nil, b.errorf(id, "column %q of table %s does not exist", id.Name, name)
			}
			c.Columns = append(c.Columns, i)
		}
	}
	formats := []string{"csv", "tbl", "parquet", "text"}
	if s.Stdio {
		formats = []string{"text", "csv"}
	}
	o, err := b.copyOptions(s, "COPY", formats...)
	if err != nil {
		return nil, err
	}
	c.Format, c.Header, c.Null, c.Stdin = o.format, o.header, o.null, s.Stdio
	delimSet := o.delimSet
	if delimSet {
		c.Delimiter = o.delim
	}
	switch {
	case c.Format == "tbl" && !delimSet:
		c.Delimiter = '|'
	case c.Format == "text":
		if !delimSet {
			c.Delimiter = '\t'
		}
		if !o.nullSet {
			c.Null = `\N`
		}
	}
	if c.Format == "parquet" && (delimSet || c.Header || c.Null != "") {
		return nil, b.errorf(s, "COPY options DELIMITER, HEADER and NULL apply to csv and tbl files, not parquet")
	}
	return c, nil
}

// newCall is fn(args...) of type t computing in the session time zone.
func (b *binder) newCall(fn string, t arrow.DataType, args ...plan.Expr) *plan.Call {
	c := plan.NewCall(fn, t, args...)
	c.Zone = b.zone
	return c
}

// coerce is plan.Coerce in the session time zone.
func (b *binder) coerce(e plan.Expr, t arrow.DataType) (plan.Expr, error) {
	return plan.CoerceIn(e, t, b.zone)
}

// castConst is plan.CastConst in the session time zone.
func (b *binder) castConst(c *plan.Const, t arrow.DataType) (*plan.Const, error) {
	return plan.CastConstIn(c, t, b.zone)
}

// zoneSetting reads SET TIME ZONE's value as PostgreSQL does and returns
// the zone's name for expr.LoadZone: a string names a zone ('Europe/Paris',
// 'UTC', POSIX '+02' or 'UTC+5', whose sign counts hours WEST); a number is
// hours EAST of UTC (-7, 5.5) as is an interval (INTERVAL '+05:30' HOUR TO
// MINUTE); LOCAL and DEFAULT are nicflow's default, UTC.
func (b *binder) zoneSetting(s *sql.Set) (string, error) {
	east := func(sec int64) (string, error) {
		if sec < -15*3600 || sec > 15*3600 {
			return "", b.errorf(s.Value, "time zone offset %d seconds is out of range (at most 15 hours)", sec)
		}
		return expr.ZoneSpecFromOffset(sec), nil
	}
	switch x := s.Value.(type) {
	case *sql.ColumnRef:
		n := x.Parts[0].Name
		if strings.EqualFold(n, "local") || strings.EqualFold(n, "default") {
			return "UTC", nil
		}
		if _, err := expr.LoadZone(n); err != nil {
			return "", b.errorf(s.Value, "%s", err.Error())
		}
		return n, nil
	case *sql.Literal:
		if x.Kind == sql.LitString {
			if _, err := expr.LoadZone(x.Text); err != nil {
				return "", b.errorf(s.Value, "%s", err.Error())
			}
			return x.Text, nil
		}
	}
	e, err := b.expr(s.Value, &scope{}, &exprCtx{clause: "SET TIME ZONE"})
	if err != nil {
		return "", err
	}
	c, ok := e.(*plan.Const)
	if !ok || c.IsNull() {
		return "", b.errorf(s.Value, "invalid value for SET TIME ZONE")
	}
	if iv, ok := c.Val.(arrow.MonthDayNanoInterval); ok {
		if iv.Months != 0 || iv.Days != 0 {
			return "", b.errorf(s.Value, "invalid interval value for time zone: day not allowed")
		}
		return east(iv.Nanoseconds / 1e9)
	}
	if plan.IsNumeric(c.Typ) {
		return east(int64(math.Round(plan.ConstFloat(c) * 3600)))
	}
	return "", b.errorf(s.Value, "invalid value for SET TIME ZONE")
}
