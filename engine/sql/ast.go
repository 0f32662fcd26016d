package sql

// The AST: plain structs. Every node embeds a Pos (where its first token
// starts), so the binder can point at the culprit. Identifiers are
// case-folded unless quoted; keywords are not kept (the deparser prints them
// in upper case).

// Node is any AST node.
type Node interface {
	Position() Pos
}

// Statement is a top-level statement.
type Statement interface {
	Node
	stmtNode()
}

// Expr is a scalar expression.
type Expr interface {
	Node
	exprNode()
}

// QueryBody is the body of a query: *Select, *SetOp, *Values or a
// parenthesized *Query.
type QueryBody interface {
	Node
	bodyNode()
}

// TableExpr is an element of FROM: *TableName, *DerivedTable or *Join.
type TableExpr interface {
	Node
	tableNode()
}

// RawStmt is one statement of a script with its source span: Text is
// Src[Start.Offset:End] (without the terminating semicolon).
type RawStmt struct {
	Stmt  Statement
	Start Pos
	End   int
	Text  string
}

// Ident is an identifier. Name is lower-cased unless Quoted.
type Ident struct {
	Pos
	Name   string
	Quoted bool
}

// ObjName is a possibly qualified object name (table, view): "t" or "s.t".
type ObjName struct {
	Pos
	Parts []Ident
}

// Last is the unqualified name.
func (n ObjName) Last() Ident { return n.Parts[len(n.Parts)-1] }

// ---------------------------------------------------------------- queries

// Query is a full query expression: WITH, a body, ORDER BY, LIMIT, OFFSET.
// A parenthesized query used as a set-operation operand is a *Query too.
type Query struct {
	Pos
	With []*CTE
	// Recursive is WITH RECURSIVE: a CTE may then read itself (see CTE).
	Recursive bool
	Body      QueryBody
	OrderBy   []*OrderItem
	Limit     Expr // nil: none (LIMIT ALL is nil too)
	Offset    Expr // nil: none
}

// CTE is one WITH entry: name [(columns)] AS (query). Under WITH
// RECURSIVE, a CTE whose query reads its own name is recursive: its query
// is "non-recursive term UNION [ALL] recursive term", and only the
// recursive term reads the name.
type CTE struct {
	Pos
	Name    Ident
	Columns []Ident
	Query   *Query
}

// GroupingKind is ROLLUP, CUBE or GROUPING SETS in GROUP BY.
type GroupingKind uint8

const (
	GroupRollup GroupingKind = iota
	GroupCube
	GroupSets
)

// GroupingSets is a GROUP BY element ROLLUP (e, ...), CUBE (e, ...) or
// GROUPING SETS (set, ...). Sets holds ROLLUP's and CUBE's expressions as
// one-element sets, and GROUPING SETS' sets (an empty one is ()).
type GroupingSets struct {
	Pos
	Kind GroupingKind
	Sets [][]Expr
}

// Select is SELECT [DISTINCT [ON (exprs)]] items [FROM ...] [WHERE]
// [GROUP BY] [HAVING].
type Select struct {
	Pos
	Distinct bool
	// DistinctOn are PostgreSQL's DISTINCT ON (exprs): the first row of
	// each group of equal values, in ORDER BY's order (Distinct false).
	DistinctOn []Expr
	Items      []*SelectItem
	From       []TableExpr // comma-separated entries (a cross product)
	Where      Expr
	GroupBy    []Expr
	Having     Expr
	// Windows is the WINDOW clause: named windows OVER may refer to.
	Windows []*NamedWindow
}

// NamedWindow is WINDOW name AS (spec).
type NamedWindow struct {
	Pos
	Name Ident
	Spec *WindowSpec
}

// SelectItem is an output expression with an optional alias. Expr is a *Star
// for "*" and "t.*".
type SelectItem struct {
	Pos
	Expr  Expr
	Alias *Ident
}

// SetOpKind is UNION, INTERSECT or EXCEPT.
type SetOpKind uint8

const (
	Union SetOpKind = iota
	Intersect
	Except
)

func (k SetOpKind) String() string { return [...]string{"UNION", "INTERSECT", "EXCEPT"}[k] }

// SetOp is Left UNION|INTERSECT|EXCEPT [ALL] Right.
type SetOp struct {
	Pos
	Op          SetOpKind
	All         bool
	Left, Right QueryBody
}

// Values is VALUES (row), (row), ...
type Values struct {
	Pos
	Rows [][]Expr
}

// OrderItem is an ORDER BY entry. NullsFirst is nil unless NULLS FIRST/LAST
// was written.
type OrderItem struct {
	Pos
	Expr       Expr
	Desc       bool
	NullsFirst *bool
}

// TableName is a named table, view or CTE in FROM, with an optional alias.
type TableName struct {
	Pos
	Name  ObjName
	Alias *TableAlias
}

// FileTableFunc is the TableFunc name of a string in FROM (FROM
// 'x.parquet'): its one argument is the string.
const FileTableFunc = "$file"

// TableFunc is a function in FROM (generate_series(1, 10) AS t(n));
// Ordinality is WITH ORDINALITY (a last column numbering the rows).
type TableFunc struct {
	Pos
	Name       Ident
	Args       []Expr
	Ordinality bool
	Alias      *TableAlias
}

// DerivedTable is [LATERAL] (query) [AS] alias [(columns)] in FROM.
// A LATERAL derived table sees the FROM items before it (and, in a
// JOIN, the join's left side).
type DerivedTable struct {
	Pos
	Query   *Query
	Alias   *TableAlias
	Lateral bool
}

// TableAlias is AS name [(column, ...)].
type TableAlias struct {
	Pos
	Name    Ident
	Columns []Ident
}

// JoinKind is the kind of an explicit JOIN.
type JoinKind uint8

const (
	InnerJoin JoinKind = iota
	LeftJoin
	RightJoin
	FullJoin
	CrossJoin
)

func (k JoinKind) String() string {
	return [...]string{"JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "CROSS JOIN"}[k]
}

// Join is Left [kind] JOIN Right [ON cond | USING (cols)].
type Join struct {
	Pos
	Kind        JoinKind
	Left, Right TableExpr
	On          Expr    // nil for CROSS, USING and NATURAL joins
	Using       []Ident // non-nil for USING
	// Natural is NATURAL JOIN: USING the columns both sides name.
	Natural bool
}

// ---------------------------------------------------------------- expressions

// ColumnRef is a column name, possibly qualified: a, t.a, s.t.a.
type ColumnRef struct {
	Pos
	Parts []Ident
}

// Star is * or t.* (Table nil for a bare *).
type Star struct {
	Pos
	Table *ObjName
}

// LitKind is the kind of a literal.
type LitKind uint8

const (
	LitNumber LitKind = iota // Text is the source spelling: 42, 0.06, .06, 1e3
	LitString                // Text is the unescaped value
	LitBool                  // Text is "true" or "false"
	LitNull
	LitBlob // x'48656c': Text is the hex digits (an even number of them)
)

// Literal is a constant.
type Literal struct {
	Pos
	Kind LitKind
	Text string
}

// Param is a statement parameter $N (the extended query protocol binds
// its value; nicflow substitutes it before binding: SubstituteParams).
type Param struct {
	Pos
	N int
}

// StructLit is DuckDB's {'name': value, ...}: nicflow reads it only as
// the columns option of read_csv ({'a': 'INTEGER', ...}).
type StructLit struct {
	Pos
	Names  []string
	Values []Expr
}

// TypedLiteral is type 'string', such as DATE '1998-12-01' or
// TIMESTAMP '2020-01-01 10:00:00'.
type TypedLiteral struct {
	Pos
	Type  *TypeName
	Value string
}

// IntervalLit is INTERVAL 'value' [unit [TO unit]] [(precision)]: the
// ANSI form INTERVAL '90' DAY (3) and the PostgreSQL form
// INTERVAL '3 months'. Unit is "" when absent; Precision is -1 when absent.
type IntervalLit struct {
	Pos
	Value     string
	Unit      string
	ToUnit    string
	Precision int
}

// UnaryExpr is -X, +X or NOT X.
type UnaryExpr struct {
	Pos
	Op string // "-", "+", "NOT"
	X  Expr
}

// BinaryExpr is L op R for arithmetic (+ - * / % ^), || and comparisons
// (= <> < <= > >=) and AND / OR.
type BinaryExpr struct {
	Pos
	Op   string
	L, R Expr
}

// IsKind is what an IS test checks.
type IsKind uint8

const (
	IsNull IsKind = iota
	IsTrue
	IsFalse
	IsUnknown
)

// IsExpr is X IS [NOT] NULL|TRUE|FALSE|UNKNOWN.
type IsExpr struct {
	Pos
	X    Expr
	What IsKind
	Not  bool
}

// RowExpr is a row constructor: (a, b, ...) or ROW(a, ...). nicflow
// compares rows (=, <>, <, <=, >, >=, IS [NOT] DISTINCT FROM, IN lists)
// element by element; it has no row values otherwise.
type RowExpr struct {
	Pos
	Elems []Expr
	// Explicit: written ROW(...).
	Explicit bool
}

// IsDistinct is L IS [NOT] DISTINCT FROM R.
type IsDistinct struct {
	Pos
	L, R Expr
	Not  bool
}

// Between is X [NOT] BETWEEN Lo AND Hi.
type Between struct {
	Pos
	X, Lo, Hi Expr
	Not       bool
}

// InList is X [NOT] IN (e, ...).
type InList struct {
	Pos
	X    Expr
	List []Expr
	Not  bool
}

// InSubquery is X [NOT] IN (query).
type InSubquery struct {
	Pos
	X     Expr
	Query *Query
	Not   bool
}

// Quantified is X op ANY|SOME|ALL (query), op a comparison.
type Quantified struct {
	Pos
	Op    string
	X     Expr
	All   bool
	Query *Query
	// Array, when Query is nil, are the elements of a constant array:
	// X op ANY (ARRAY[e1, e2]) or X op ANY ('{e1,e2}'[::type[]]), the
	// literal's elements read as string literals (cast to the type).
	Array []Expr
	// ArrayExpr, when Query, Array and Param are nil, is an array value:
	// X op ANY (column), X op ANY (f(...)).
	ArrayExpr Expr
	// Param is X op ANY ($n): a parameter whose value, an array literal,
	// is substituted before the statement runs (sql.BindParams); until
	// then (Describe) it is typed as X op $n types it.
	Param *Param
}

// Exists is EXISTS (query); NOT EXISTS is a UnaryExpr NOT around it.
type Exists struct {
	Pos
	Query *Query
}

// Subquery is a scalar subquery (query) used as a value.
type Subquery struct {
	Pos
	Query *Query
}

// Like is X [NOT] LIKE|ILIKE Pattern [ESCAPE Escape].
type Like struct {
	Pos
	X, Pattern Expr
	Escape     Expr // nil: none
	Not        bool
	ILike      bool
}

// Case is CASE [Operand] WHEN ... THEN ... [ELSE ...] END. Operand is nil
// for a searched CASE.
type Case struct {
	Pos
	Operand Expr
	Whens   []*When
	Else    Expr
}

// When is one WHEN cond THEN result arm.
type When struct {
	Pos
	Cond, Result Expr
}

// Cast is CAST(X AS Type) or X::Type (ColonColon records the spelling).
type Cast struct {
	Pos
	X          Expr
	Type       *TypeName
	ColonColon bool
}

// FuncCall is name([DISTINCT] args) [FILTER (WHERE f)] [OVER (window)], or
// name(*). SUBSTRING(x FROM a FOR b) and POSITION(a IN b) are parsed into
// plain calls substring(x, a, b) and position(a, b); Name is lower-cased.
type FuncCall struct {
	Pos
	Name     Ident
	Args     []Expr
	Star     bool // count(*)
	Distinct bool
	// OrderBy is an aggregate's ORDER BY (string_agg(x, ',' ORDER BY y)).
	OrderBy []*OrderItem
	// WithinGroup is WITHIN GROUP (ORDER BY x) of an ordered-set
	// aggregate (percentile_cont(0.5) WITHIN GROUP (ORDER BY x)).
	WithinGroup []*OrderItem
	Filter      Expr
	Over        *WindowSpec
	// IgnoreNulls is IGNORE NULLS after the arguments (first_value(x)
	// IGNORE NULLS OVER ..., or DuckDB's first_value(x IGNORE NULLS)).
	IgnoreNulls bool
}

// Extract is EXTRACT(Field FROM X); Field is lower-cased (year, month, ...).
type Extract struct {
	Pos
	Field string
	X     Expr
}

// WindowSpec is the window of OVER (PARTITION BY ... ORDER BY ... frame),
// or of OVER name / OVER (name ORDER BY ... frame): Ref names a window of
// the SELECT's WINDOW clause, which this one copies and may extend.
type WindowSpec struct {
	Pos
	Ref         string
	PartitionBy []Expr
	OrderBy     []*OrderItem
	Frame       *Frame // nil: default frame
}

// FrameMode is ROWS, RANGE or GROUPS.
type FrameMode uint8

const (
	FrameRows FrameMode = iota
	FrameRange
	FrameGroups
)

func (m FrameMode) String() string { return [...]string{"ROWS", "RANGE", "GROUPS"}[m] }

// Frame is mode BETWEEN Start AND End (End is nil for the short form
// "ROWS start").
type Frame struct {
	Pos
	Mode       FrameMode
	Start, End *FrameBound
	// Exclude is the frame exclusion: "" (NO OTHERS), "current row",
	// "group" or "ties".
	Exclude string
}

// BoundKind is a window frame bound kind.
type BoundKind uint8

const (
	UnboundedPreceding BoundKind = iota
	Preceding
	CurrentRow
	Following
	UnboundedFollowing
)

// FrameBound is one end of a frame; Offset is set for Preceding/Following.
type FrameBound struct {
	Pos
	Kind   BoundKind
	Offset Expr
}

// TypeName is a SQL type. Name is canonical: "integer", "bigint",
// "smallint", "real", "double precision", "decimal", "varchar", "char",
// "text", "date", "boolean", "timestamp", "timestamptz", "interval", or any
// other (lower-cased) name the binder may reject. Args are the modifiers:
// (p, s) for decimal, (n) for varchar/char.
type TypeName struct {
	Pos
	Name string
	Args []int
	// Array marks T[] (T ARRAY): a one-dimensional array of the type
	// Name, Args (T[][] reads as T[], as PostgreSQL's arrays have no fixed
	// dimensions).
	Array bool
}

// ArrayExpr is ARRAY[e1, e2, ...].
type ArrayExpr struct {
	Pos
	Elems []Expr
}

// FieldSelect is (X).Field, a field of a record (information_schema.
// _pg_expandarray's x and n).
type FieldSelect struct {
	Pos
	X     Expr
	Field Ident
}

// ArraySubquery is ARRAY(query): the query's one column as an array, its
// rows in the query's order.
type ArraySubquery struct {
	Pos
	Query *Query
}

// Subscript is X[Index], a 1-based array element.
type Subscript struct {
	Pos
	X     Expr
	Index Expr
}

// ---------------------------------------------------------------- statements

// CreateView is CREATE [OR REPLACE] VIEW name [(columns)] AS query.
type CreateView struct {
	Pos
	OrReplace bool
	Name      ObjName
	Columns   []Ident
	Query     *Query
}

// ObjectKind is TABLE or VIEW in DROP.
type ObjectKind uint8

const (
	ObjTable ObjectKind = iota
	ObjView
	ObjIndex
)

func (k ObjectKind) String() string { return [...]string{"TABLE", "VIEW", "INDEX"}[k] }

// Drop is DROP TABLE|VIEW [IF EXISTS] name, ...
type Drop struct {
	Pos
	Kind     ObjectKind
	IfExists bool
	Names    []ObjName
}

// ColumnDef is a column of CREATE TABLE.
type ColumnDef struct {
	Pos
	Name    Ident
	Type    *TypeName
	NotNull bool
	// Default is the column's DEFAULT expression (nil: none).
	Default Expr
}

// ConstraintKind is the kind of a table constraint.
type ConstraintKind uint8

const (
	ConPrimaryKey ConstraintKind = iota
	ConUnique
	ConCheck
	ConForeignKey
)

// TableConstraint is [CONSTRAINT name] PRIMARY KEY (columns), UNIQUE
// (columns), CHECK (expr) or FOREIGN KEY (columns) REFERENCES table
// [(columns)] [ON DELETE action] [ON UPDATE action]. The parser turns a
// column's own PRIMARY KEY, UNIQUE, CHECK and REFERENCES into table
// constraints on that column.
type TableConstraint struct {
	Pos
	Name    Ident // empty: named by the table and columns
	Kind    ConstraintKind
	Columns []Ident
	Check   Expr
	// RefTable and RefColumns (empty: the referenced table's primary key)
	// are what a FOREIGN KEY references; OnDelete and OnUpdate its
	// referential actions in upper case ("NO ACTION" when not given), and
	// MatchFull its MATCH FULL.
	RefTable           ObjName
	RefColumns         []Ident
	OnDelete, OnUpdate string
	MatchFull          bool
}

// CreateIndex is CREATE [UNIQUE] INDEX [IF NOT EXISTS] [name] ON table
// (columns). ASC/DESC on a column is accepted and not kept.
type CreateIndex struct {
	Pos
	Unique      bool
	IfNotExists bool
	Name        Ident // empty: named by the table and columns
	Table       ObjName
	Columns     []Ident
}

// CreateTable is CREATE TABLE [IF NOT EXISTS] name (column definitions), or
// CREATE TABLE [IF NOT EXISTS] name [(column names)] AS query, where AsQuery
// is set, Columns is empty and ColumnNames optionally renames the columns.
type CreateTable struct {
	Pos
	IfNotExists bool
	Name        ObjName
	Columns     []*ColumnDef
	Constraints []*TableConstraint
	ColumnNames []Ident // CREATE TABLE t (a, b) AS query
	AsQuery     *Query
}

// CreateExternalTable is CREATE EXTERNAL TABLE [IF NOT EXISTS] name
// [(columns)] STORED AS format LOCATION 'path'. Format is lower-cased
// ("parquet").
type CreateExternalTable struct {
	Pos
	IfNotExists bool
	Name        ObjName
	Columns     []*ColumnDef
	Format      string
	Location    string
}

// Insert is INSERT INTO name [(columns)] query (VALUES is a query).
type Insert struct {
	Pos
	Table      ObjName
	Columns    []Ident
	Query      *Query
	OnConflict *OnConflict // nil: none
	// OrReplace is SQLite's INSERT OR REPLACE (and MySQL's REPLACE INTO):
	// a new row replaces the row its unique key conflicts with. (INSERT OR
	// IGNORE parses as ON CONFLICT DO NOTHING, OR ABORT / FAIL / ROLLBACK
	// as a plain INSERT.)
	OrReplace bool
	// Returning is RETURNING's select list (nil: none), over the rows
	// written.
	Returning []*SelectItem
}

// OnConflict is INSERT's ON CONFLICT [(columns) | ON CONSTRAINT name] DO
// NOTHING, or DO UPDATE SET ... [WHERE ...] when Set is not empty.
type OnConflict struct {
	Pos
	Columns    []Ident
	Constraint Ident
	Set        []*Assignment
	Where      Expr
}

// Delete is DELETE FROM table [[AS] alias] [WHERE expr].
type Delete struct {
	Pos
	Table *TableName
	// Using is DELETE ... USING's relations (PostgreSQL): a row is
	// deleted when some row of their product makes Where TRUE.
	Using []TableExpr
	Where Expr
	// Returning is RETURNING's select list over the rows deleted.
	Returning []*SelectItem
}

// Update is UPDATE table [[AS] alias] SET column = expr, ... [FROM ...]
// [WHERE expr].
type Update struct {
	Pos
	Table *TableName
	Set   []*Assignment
	// From is UPDATE ... FROM's relations (PostgreSQL): a row is updated
	// when some row of their product makes Where TRUE, with that row's
	// values.
	From  []TableExpr
	Where Expr
	// Returning is RETURNING's select list over the rows updated (their
	// new values).
	Returning []*SelectItem
}

// Assignment is column = expr in UPDATE ... SET.
type Assignment struct {
	Pos
	Column Ident
	Value  Expr
}

// Copy is COPY name [(columns)] FROM 'file' [WITH] [(option, ...)].
type Copy struct {
	Pos
	Table   ObjName
	Columns []Ident
	File    string
	Options []*Option
	// To is COPY ... TO 'file': the table's rows (or Query's) are
	// written to the file. Query is COPY (query) TO (Table is then empty).
	To    bool
	Query *Query
	// Stdio is FROM STDIN / TO STDOUT (File is empty): the rows come from
	// or go to the client (the protocol's copy stream, the CLI's
	// standard input or output).
	Stdio bool
}

// Transaction is BEGIN / START TRANSACTION (Op "begin", with its modes),
// COMMIT / END (Op "commit") or ROLLBACK / ABORT (Op "rollback").
type Transaction struct {
	Pos
	Op string
	// Isolation is the ISOLATION LEVEL asked for, lower case ("read
	// committed"; "" when not given); ReadOnly: READ ONLY.
	Isolation string
	ReadOnly  bool
}

// Option is a name with an optional value (COPY and EXPLAIN options). Name
// is lower-cased; Value is nil when absent (HEADER means HEADER true).
type Option struct {
	Pos
	Name  string
	Value Expr // a *Literal, or a *ColumnRef for a bare word such as csv
}

// Explain is EXPLAIN [ANALYZE] [VERBOSE] stmt, or EXPLAIN (options) stmt.
type Explain struct {
	Pos
	Analyze bool
	Verbose bool
	Stmt    Statement
}

// ShowTables is SHOW TABLES.
type ShowTables struct {
	Pos
}

// Show is SHOW name (a setting).
type Show struct {
	Pos
	Name Ident
}

// Describe is DESCRIBE name.
type Describe struct {
	Pos
	Name ObjName
}

// Analyze is ANALYZE [VERBOSE] [table [(column, ...)] [, ...]], also
// spelled ANALYSE, or ANALYZE (options) [table ...] with the options
// VERBOSE and SKIP_LOCKED. No tables: every table.
type Analyze struct {
	Pos
	Verbose    bool
	SkipLocked bool
	Tables     []*AnalyzeTable
}

// AnalyzeTable is one table of ANALYZE with the columns it names (none:
// all).
type AnalyzeTable struct {
	Pos
	Name    ObjName
	Columns []Ident
}

// Set is SET name = value (or TO value). Value is a *Literal, a signed
// number (*UnaryExpr) or a *ColumnRef for a bare word such as on or DEFAULT.
type Set struct {
	Pos
	Name  Ident
	Value Expr
}

func (*Query) stmtNode()               {}
func (*CreateView) stmtNode()          {}
func (*Drop) stmtNode()                {}
func (*CreateTable) stmtNode()         {}
func (*CreateIndex) stmtNode()         {}
func (*Delete) stmtNode()              {}
func (*Update) stmtNode()              {}
func (*CreateExternalTable) stmtNode() {}
func (*Insert) stmtNode()              {}
func (*Copy) stmtNode()                {}
func (*Explain) stmtNode()             {}
func (*ShowTables) stmtNode()          {}
func (*Show) stmtNode()                {}
func (*Describe) stmtNode()            {}
func (*Analyze) stmtNode()             {}
func (*Set) stmtNode()                 {}
func (*Transaction) stmtNode()         {}

func (*Query) bodyNode()  {}
func (*Select) bodyNode() {}
func (*SetOp) bodyNode()  {}
func (*Values) bodyNode() {}

func (*TableName) tableNode()    {}
func (*DerivedTable) tableNode() {}
func (*TableFunc) tableNode()    {}
func (*Join) tableNode()         {}

func (*ColumnRef) exprNode()     {}
func (*GroupingSets) exprNode()  {}
func (*Quantified) exprNode()    {}
func (*Star) exprNode()          {}
func (*Literal) exprNode()       {}
func (*StructLit) exprNode()     {}
func (*ArrayExpr) exprNode()     {}
func (*Subscript) exprNode()     {}
func (*Param) exprNode()         {}
func (*TypedLiteral) exprNode()  {}
func (*IntervalLit) exprNode()   {}
func (*UnaryExpr) exprNode()     {}
func (*BinaryExpr) exprNode()    {}
func (*IsExpr) exprNode()        {}
func (*IsDistinct) exprNode()    {}
func (*RowExpr) exprNode()       {}
func (*Between) exprNode()       {}
func (*InList) exprNode()        {}
func (*InSubquery) exprNode()    {}
func (*Exists) exprNode()        {}
func (*Subquery) exprNode()      {}
func (*ArraySubquery) exprNode() {}
func (*FieldSelect) exprNode()   {}
func (*Like) exprNode()          {}
func (*Case) exprNode()          {}
func (*Cast) exprNode()          {}
func (*FuncCall) exprNode()      {}
func (*Extract) exprNode()       {}
