package sql

import (
	"github.com/nicflow/nicflow/internal/sqlkw"
	"strconv"
	"strings"
)

// Deparse prints a node (statement, query, expression, table expression) as
// SQL text that parses back to the same tree. Keywords are upper case,
// names are quoted only when needed, and parentheses appear only where
// precedence requires them.
func Deparse(n Node) string {
	d := &deparser{}
	d.node(n)
	return d.b.String()
}

// DeparseFull is Deparse with every compound subexpression parenthesized,
// which makes the tree's shape visible in golden files.
func DeparseFull(n Node) string {
	d := &deparser{full: true}
	d.node(n)
	return d.b.String()
}

type deparser struct {
	b    strings.Builder
	full bool
}

func (d *deparser) w(s string) { d.b.WriteString(s) }

func (d *deparser) node(n Node) {
	switch n := n.(type) {
	case Statement:
		d.stmt(n)
	case Expr:
		d.expr(n, 0)
	case QueryBody:
		d.body(n)
	case TableExpr:
		d.table(n)
	case *OrderItem:
		d.orderItem(n)
	case *TypeName:
		d.typ(n)
	}
}

// Precedence levels, loosest first; see parse_expr.go.
const (
	precOr = iota + 1
	precAnd
	precNot
	precIs
	precCmp
	precRange
	precOther
	precAdd
	precMul
	precExp
	precUnary
	precPostfix
	precPrimary
)

func binaryPrec(op string) int {
	switch op {
	case "OR":
		return precOr
	case "AND":
		return precAnd
	case "=", "<>", "<", "<=", ">", ">=":
		return precCmp
	case "||":
		return precOther
	case "+", "-":
		return precAdd
	case "*", "/", "%":
		return precMul
	case "^":
		return precExp
	}
	return precOther
}

// exprPrec is the precedence of the operator at the root of e.
func exprPrec(e Expr) int {
	switch e := e.(type) {
	case *BinaryExpr:
		return binaryPrec(e.Op)
	case *UnaryExpr:
		if e.Op == "NOT" {
			return precNot
		}
		return precUnary
	case *IsExpr, *IsDistinct:
		return precIs
	case *Quantified:
		return precCmp
	case *Between, *InList, *InSubquery, *Like:
		return precRange
	case *Cast:
		if e.ColonColon {
			return precPostfix
		}
	}
	return precPrimary
}

// sub prints e as an operand that the parser reads at level min: it gets
// parentheses when its own operator binds looser.
func (d *deparser) sub(e Expr, min int) {
	p := exprPrec(e)
	if p < min || (d.full && p < precPrimary) {
		d.w("(")
		d.expr(e, 0)
		d.w(")")
		return
	}
	d.expr(e, min)
}

func (d *deparser) exprList(es []Expr) {
	for i, e := range es {
		if i > 0 {
			d.w(", ")
		}
		d.expr(e, 0)
	}
}

func (d *deparser) expr(e Expr, _ int) {
	switch e := e.(type) {
	case *Quantified:
		d.sub(e.X, precCmp)
		d.w(" " + e.Op + " ")
		if e.All {
			d.w("ALL (")
		} else {
			d.w("ANY (")
		}
		if e.ArrayExpr != nil {
			d.expr(e.ArrayExpr, 0)
		} else if e.Query != nil {
			d.query(e.Query)
		} else if e.Param != nil {
			d.expr(e.Param, 0)
		} else {
			d.w("ARRAY[")
			d.exprList(e.Array)
			d.w("]")
		}
		d.w(")")
	case *GroupingSets:
		d.w([...]string{"ROLLUP", "CUBE", "GROUPING SETS"}[e.Kind] + " (")
		for i, set := range e.Sets {
			if i > 0 {
				d.w(", ")
			}
			if e.Kind != GroupSets {
				d.expr(set[0], 0)
				continue
			}
			d.w("(")
			d.exprList(set)
			d.w(")")
		}
		d.w(")")
	case *ColumnRef:
		d.w(deparseColumnRef(e))
	case *Star:
		if e.Table != nil {
			d.objName(*e.Table)
			d.w(".")
		}
		d.w("*")
	case *StructLit:
		d.w("{")
		for i, n := range e.Names {
			if i > 0 {
				d.w(", ")
			}
			d.w(QuoteString(n) + ": ")
			d.expr(e.Values[i], 0)
		}
		d.w("}")
	case *Param:
		d.w("$" + strconv.Itoa(e.N))
	case *Literal:
		switch e.Kind {
		case LitString:
			d.w(QuoteString(e.Text))
		case LitNull:
			d.w("NULL")
		case LitBool:
			d.w(strings.ToUpper(e.Text))
		case LitBlob:
			d.w("x'" + e.Text + "'")
		default:
			d.w(e.Text)
		}
	case *TypedLiteral:
		d.typ(e.Type)
		d.w(" ")
		d.w(QuoteString(e.Value))
	case *IntervalLit:
		d.w("INTERVAL ")
		d.w(QuoteString(e.Value))
		if e.Unit != "" {
			d.w(" " + strings.ToUpper(e.Unit))
			if e.Precision >= 0 {
				d.w(" (" + strconv.Itoa(e.Precision) + ")")
			}
			if e.ToUnit != "" {
				d.w(" TO " + strings.ToUpper(e.ToUnit))
			}
		}
	case *UnaryExpr:
		if e.Op == "NOT" {
			d.w("NOT ")
			d.sub(e.X, precNot)
			return
		}
		d.w(e.Op)
		if u, ok := e.X.(*UnaryExpr); ok && u.Op != "NOT" && !d.full {
			// NB: "--1" would start a comment.
			d.w(" ")
		}
		d.sub(e.X, precUnary)
	case *BinaryExpr:
		p := binaryPrec(e.Op)
		d.sub(e.L, p)
		d.w(" " + e.Op + " ")
		d.sub(e.R, p+1)
	case *IsExpr:
		d.sub(e.X, precIs)
		d.w(" IS ")
		if e.Not {
			d.w("NOT ")
		}
		d.w([...]string{"NULL", "TRUE", "FALSE", "UNKNOWN"}[e.What])
	case *IsDistinct:
		d.sub(e.L, precIs)
		d.w(" IS ")
		if e.Not {
			d.w("NOT ")
		}
		d.w("DISTINCT FROM ")
		d.sub(e.R, precIs+1)
	case *Between:
		d.sub(e.X, precRange)
		d.w(not(e.Not) + " BETWEEN ")
		d.sub(e.Lo, precRange+1)
		d.w(" AND ")
		d.sub(e.Hi, precRange+1)
	case *RowExpr:
		if e.Explicit {
			d.w("ROW")
		}
		d.w("(")
		d.exprList(e.Elems)
		d.w(")")
	case *InList:
		d.sub(e.X, precRange)
		d.w(not(e.Not) + " IN (")
		d.exprList(e.List)
		d.w(")")
	case *InSubquery:
		d.sub(e.X, precRange)
		d.w(not(e.Not) + " IN (")
		d.query(e.Query)
		d.w(")")
	case *Like:
		d.sub(e.X, precRange)
		d.w(not(e.Not))
		if e.ILike {
			d.w(" ILIKE ")
		} else {
			d.w(" LIKE ")
		}
		d.sub(e.Pattern, precRange+1)
		if e.Escape != nil {
			d.w(" ESCAPE ")
			d.sub(e.Escape, precRange+1)
		}
	case *Exists:
		d.w("EXISTS (")
		d.query(e.Query)
		d.w(")")
	case *Subquery:
		d.w("(")
		d.query(e.Query)
		d.w(")")
	case *ArraySubquery:
		d.w("ARRAY(")
		d.query(e.Query)
		d.w(")")
	case *FieldSelect:
		d.w("(")
		d.sub(e.X, 0)
		d.w(")." + QuoteIdent(e.Field.Name))
	case *Case:
		d.w("CASE")
		if e.Operand != nil {
			d.w(" ")
			d.expr(e.Operand, 0)
		}
		for _, wh := range e.Whens {
			d.w(" WHEN ")
			d.expr(wh.Cond, 0)
			d.w(" THEN ")
			d.expr(wh.Result, 0)
		}
		if e.Else != nil {
			d.w(" ELSE ")
			d.expr(e.Else, 0)
		}
		d.w(" END")
	case *ArrayExpr:
		d.w("ARRAY[")
		d.exprList(e.Elems)
		d.w("]")
	case *Subscript:
		d.sub(e.X, precPrimary)
		d.w("[")
		d.expr(e.Index, 0)
		d.w("]")
	case *Cast:
		if e.ColonColon {
			d.sub(e.X, precPostfix)
			d.w("::")
			d.typ(e.Type)
			return
		}
		d.w("CAST(")
		d.expr(e.X, 0)
		d.w(" AS ")
		d.typ(e.Type)
		d.w(")")
	case *FuncCall:
		if e.Name.Name == "position" && !e.Name.Quoted && len(e.Args) == 2 && !e.Star && !e.Distinct && e.Filter == nil && e.Over == nil {
			d.w("POSITION(")
			d.sub(e.Args[0], precRange+1)
			d.w(" IN ")
			d.sub(e.Args[1], precRange+1)
			d.w(")")
			return
		}
		if bareFuncs[e.Name.Name] && !e.Name.Quoted && len(e.Args) == 0 && !e.Star && e.Filter == nil && e.Over == nil {
			// CURRENT_DATE, as PostgreSQL prints a default.
			d.w(strings.ToUpper(e.Name.Name))
			return
		}
		if e.Name.Name == "_pg_expandarray" && !e.Name.Quoted {
			d.w("information_schema.")
		}
		if specialSyntaxFuncs[e.Name.Name] && (e.Name.Quoted || e.Name.Name != "substring") {
			// NB: bare, these names would read as their special syntax.
			d.w(`"` + e.Name.Name + `"`)
		} else {
			d.w(QuoteIdent(e.Name.Name))
		}
		d.w("(")
		if e.Star {
			d.w("*")
		} else {
			if e.Distinct {
				d.w("DISTINCT ")
			}
			d.exprList(e.Args)
			if len(e.OrderBy) > 0 {
				d.w(" ORDER BY ")
				d.orderList(e.OrderBy)
			}
		}
		d.w(")")
		if e.IgnoreNulls {
			d.w(" IGNORE NULLS")
		}
		if len(e.WithinGroup) > 0 {
			d.w(" WITHIN GROUP (ORDER BY ")
			d.orderList(e.WithinGroup)
			d.w(")")
		}
		if e.Filter != nil {
			d.w(" FILTER (WHERE ")
			d.expr(e.Filter, 0)
			d.w(")")
		}
		if e.Over != nil {
			d.w(" OVER ")
			d.window(e.Over)
		}
	case *Extract:
		if QuoteIdent(e.Field) == e.Field {
			d.w("EXTRACT(" + strings.ToUpper(e.Field) + " FROM ")
		} else {
			d.w("EXTRACT(" + QuoteString(e.Field) + " FROM ")
		}
		d.expr(e.X, 0)
		d.w(")")
	default:
		d.w("<?>")
	}
}

// specialSyntaxFuncs are the names the parser reads with special syntax
// when they are followed by '('.
// bareFuncs are the SQL keywords that call a function without
// parentheses.
var bareFuncs = map[string]bool{"current_date": true, "current_timestamp": true, "current_time": true, "localtimestamp": true, "localtime": true}

var specialSyntaxFuncs = map[string]bool{"extract": true, "substring": true, "position": true, "trim": true}

func not(b bool) string {
	if b {
		return " NOT"
	}
	return ""
}

func (d *deparser) window(w *WindowSpec) {
	if w.Ref != "" && len(w.PartitionBy) == 0 && len(w.OrderBy) == 0 && w.Frame == nil {
		d.w(QuoteIdent(w.Ref))
		return
	}
	d.windowBody(w)
}

// windowBody writes a window in parentheses (a WINDOW clause's definition
// needs them even when it only names another window).
func (d *deparser) windowBody(w *WindowSpec) {
	d.w("(")
	sep := ""
	if w.Ref != "" {
		d.w(QuoteIdent(w.Ref))
		sep = " "
	}
	if len(w.PartitionBy) > 0 {
		d.w(sep + "PARTITION BY ")
		d.exprList(w.PartitionBy)
		sep = " "
	}
	if len(w.OrderBy) > 0 {
		d.w(sep + "ORDER BY ")
		d.orderList(w.OrderBy)
		sep = " "
	}
	if f := w.Frame; f != nil {
		d.w(sep + f.Mode.String() + " ")
		if f.End != nil {
			d.w("BETWEEN ")
			d.bound(f.Start)
			d.w(" AND ")
			d.bound(f.End)
		} else {
			d.bound(f.Start)
		}
		if f.Exclude != "" {
			d.w(" EXCLUDE " + strings.ToUpper(f.Exclude))
		}
	}
	d.w(")")
}

func (d *deparser) bound(b *FrameBound) {
	switch b.Kind {
	case UnboundedPreceding:
		d.w("UNBOUNDED PRECEDING")
	case UnboundedFollowing:
		d.w("UNBOUNDED FOLLOWING")
	case CurrentRow:
		d.w("CURRENT ROW")
	case Preceding:
		d.sub(b.Offset, precRange+1)
		d.w(" PRECEDING")
	case Following:
		d.sub(b.Offset, precRange+1)
		d.w(" FOLLOWING")
	}
}

func (d *deparser) typ(t *TypeName) {
	switch t.Name {
	case "timestamptz":
		// NB: not "TIMESTAMP WITH TIME ZONE": a typed literal must have its
		// string right after the type name to parse back.
		d.w("TIMESTAMPTZ")
	case "integer", "bigint", "smallint", "real", "double precision", "decimal", "varchar",
		"char", "text", "date", "boolean", "timestamp", "time", "interval", "bytea", "int2vector":
		d.w(strings.ToUpper(t.Name))
	default:
		// NB: always quoted: bare, a name like "double" or "character"
		// would read as the start of a multi-word type.
		d.w(`"` + strings.ReplaceAll(t.Name, `"`, `""`) + `"`)
	}
	d.typeArgs(t.Args)
	if t.Array {
		d.w("[]")
	}
}

func (d *deparser) typeArgs(args []int) {
	if len(args) == 0 {
		return
	}
	d.w("(")
	for i, a := range args {
		if i > 0 {
			d.w(", ")
		}
		d.w(strconv.Itoa(a))
	}
	d.w(")")
}

func (d *deparser) orderItem(o *OrderItem) {
	d.expr(o.Expr, 0)
	if o.Desc {
		d.w(" DESC")
	}
	if o.NullsFirst != nil {
		if *o.NullsFirst {
			d.w(" NULLS FIRST")
		} else {
			d.w(" NULLS LAST")
		}
	}
}

func (d *deparser) orderList(items []*OrderItem) {
	for i, o := range items {
		if i > 0 {
			d.w(", ")
		}
		d.orderItem(o)
	}
}

func (d *deparser) objName(n ObjName) {
	for i, p := range n.Parts {
		if i > 0 {
			d.w(".")
		}
		d.w(QuoteIdent(p.Name))
	}
}

func (d *deparser) identList(ids []Ident) {
	d.w("(")
	for i, id := range ids {
		if i > 0 {
			d.w(", ")
		}
		d.w(QuoteIdent(id.Name))
	}
	d.w(")")
}

// ---------------------------------------------------------------- queries

// items writes a select list.
func (d *deparser) items(items []*SelectItem) {
	for i, it := range items {
		if i > 0 {
			d.w(", ")
		}
		d.expr(it.Expr, 0)
		if it.Alias != nil {
			d.w(" AS " + QuoteIdent(it.Alias.Name))
		}
	}
}

// returning writes a RETURNING list (nothing when empty).
func (d *deparser) returning(items []*SelectItem) {
	if len(items) > 0 {
		d.w(" RETURNING ")
		d.items(items)
	}
}

// fromList writes kw and the entries of a FROM list (nothing when empty).
func (d *deparser) fromList(kw string, ts []TableExpr) {
	if len(ts) == 0 {
		return
	}
	d.w(kw)
	for i, t := range ts {
		if i > 0 {
			d.w(", ")
		}
		d.table(t)
	}
}

func (d *deparser) query(q *Query) {
	if len(q.With) > 0 {
		d.w("WITH ")
		if q.Recursive {
			d.w("RECURSIVE ")
		}
		for i, c := range q.With {
			if i > 0 {
				d.w(", ")
			}
			d.w(QuoteIdent(c.Name.Name))
			if len(c.Columns) > 0 {
				d.w(" ")
				d.identList(c.Columns)
			}
			d.w(" AS (")
			d.query(c.Query)
			d.w(")")
		}
		d.w(" ")
	}
	d.body(q.Body)
	if len(q.OrderBy) > 0 {
		d.w(" ORDER BY ")
		d.orderList(q.OrderBy)
	}
	if q.Limit != nil {
		d.w(" LIMIT ")
		d.expr(q.Limit, 0)
	}
	if q.Offset != nil {
		d.w(" OFFSET ")
		d.expr(q.Offset, 0)
	}
}

func (d *deparser) body(b QueryBody) {
	switch b := b.(type) {
	case *Query:
		d.w("(")
		d.query(b)
		d.w(")")
	case *Select:
		d.sel(b)
	case *Values:
		d.w("VALUES ")
		for i, row := range b.Rows {
			if i > 0 {
				d.w(", ")
			}
			d.w("(")
			d.exprList(row)
			d.w(")")
		}
	case *SetOp:
		d.setOperand(b.Left, b.Op, false)
		d.w(" " + b.Op.String())
		if b.All {
			d.w(" ALL")
		}
		d.w(" ")
		d.setOperand(b.Right, b.Op, true)
	}
}

// setOperand prints an operand of a set operation, parenthesizing a nested
// set operation the parser would otherwise group differently.
func (d *deparser) setOperand(b QueryBody, parent SetOpKind, right bool) {
	if s, ok := b.(*SetOp); ok {
		// INTERSECT binds tighter than UNION/EXCEPT; all are left-associative.
		var needs bool
		if right {
			needs = !(s.Op == Intersect && parent != Intersect)
		} else {
			needs = s.Op != Intersect && parent == Intersect
		}
		if needs {
			// A parenthesized set operation is a *Query in the parser's tree,
			// which prints its own parentheses; wrapping here keeps a
			// hand-built tree printable, and round trips keep the Query node.
			d.w("(")
			d.body(s)
			d.w(")")
			return
		}
	}
	d.body(b)
}

func (d *deparser) sel(s *Select) {
	d.w("SELECT ")
	if s.Distinct {
		d.w("DISTINCT ")
	}
	if len(s.DistinctOn) > 0 {
		d.w("DISTINCT ON (")
		d.exprList(s.DistinctOn)
		d.w(") ")
	}
	d.items(s.Items)
	d.fromList(" FROM ", s.From)
	if s.Where != nil {
		d.w(" WHERE ")
		d.expr(s.Where, 0)
	}
	if len(s.GroupBy) > 0 {
		d.w(" GROUP BY ")
		d.exprList(s.GroupBy)
	}
	if s.Having != nil {
		d.w(" HAVING ")
		d.expr(s.Having, 0)
	}
	for i, w := range s.Windows {
		if i == 0 {
			d.w(" WINDOW ")
		} else {
			d.w(", ")
		}
		d.w(QuoteIdent(w.Name.Name) + " AS ")
		d.windowBody(w.Spec)
	}
}

func (d *deparser) alias(a *TableAlias) {
	if a == nil {
		return
	}
	d.w(" AS " + QuoteIdent(a.Name.Name))
	if len(a.Columns) > 0 {
		d.w(" ")
		d.identList(a.Columns)
	}
}

func (d *deparser) table(t TableExpr) {
	switch t := t.(type) {
	case *TableName:
		d.objName(t.Name)
		d.alias(t.Alias)
	case *DerivedTable:
		if t.Lateral {
			d.w("LATERAL ")
		}
		d.w("(")
		d.query(t.Query)
		d.w(")")
		d.alias(t.Alias)
	case *TableFunc:
		if t.Name.Name == FileTableFunc {
			d.exprList(t.Args) // FROM 'x.parquet'
		} else {
			d.w(QuoteIdent(t.Name.Name) + "(")
			d.exprList(t.Args)
			d.w(")")
			if t.Ordinality {
				d.w(" WITH ORDINALITY")
			}
		}
		d.alias(t.Alias)
	case *Join:
		d.table(t.Left)
		if t.Natural {
			d.w(" NATURAL")
		}
		d.w(" " + t.Kind.String() + " ")
		if _, ok := t.Right.(*Join); ok {
			d.w("(")
			d.table(t.Right)
			d.w(")")
		} else {
			d.table(t.Right)
		}
		if t.On != nil {
			d.w(" ON ")
			d.expr(t.On, 0)
		}
		if t.Using != nil {
			d.w(" USING ")
			d.identList(t.Using)
		}
	}
}

// ---------------------------------------------------------------- statements

func (d *deparser) columnDefs(cols []*ColumnDef, cons []*TableConstraint) {
	d.w("(")
	for i, c := range cols {
		if i > 0 {
			d.w(", ")
		}
		d.w(QuoteIdent(c.Name.Name) + " ")
		d.typ(c.Type)
		if c.NotNull {
			d.w(" NOT NULL")
		}
		if c.Default != nil {
			d.w(" DEFAULT ")
			d.expr(c.Default, precOther)
		}
	}
	d.constraints(cons)
	d.w(")")
}

// targetTable writes UPDATE's or DELETE's "name [AS alias]".
func (d *deparser) targetTable(t *TableName) {
	d.objName(t.Name)
	if t.Alias != nil {
		d.w(" AS " + QuoteIdent(t.Alias.Name.Name))
	}
}

// constraints writes a CREATE TABLE's table constraints, each after ", ".
func (d *deparser) constraints(cs []*TableConstraint) {
	for _, c := range cs {
		d.w(", ")
		if c.Name.Name != "" {
			d.w("CONSTRAINT " + QuoteIdent(c.Name.Name) + " ")
		}
		switch c.Kind {
		case ConPrimaryKey:
			d.w("PRIMARY KEY ")
			d.identList(c.Columns)
		case ConUnique:
			d.w("UNIQUE ")
			d.identList(c.Columns)
		case ConCheck:
			d.w("CHECK (")
			d.expr(c.Check, 0)
			d.w(")")
		case ConForeignKey:
			d.w("FOREIGN KEY ")
			d.identList(c.Columns)
			d.w(" REFERENCES ")
			d.objName(c.RefTable)
			if len(c.RefColumns) > 0 {
				d.w(" ")
				d.identList(c.RefColumns)
			}
			if c.MatchFull {
				d.w(" MATCH FULL")
			}
			if c.OnDelete != "" && c.OnDelete != "NO ACTION" {
				d.w(" ON DELETE " + c.OnDelete)
			}
			if c.OnUpdate != "" && c.OnUpdate != "NO ACTION" {
				d.w(" ON UPDATE " + c.OnUpdate)
			}
		}
	}
}

func (d *deparser) options(opts []*Option) {
	d.w("(")
	for i, o := range opts {
		if i > 0 {
			d.w(", ")
		}
		d.w(strings.ToUpper(o.Name))
		if o.Value != nil {
			d.w(" ")
			d.expr(o.Value, 0)
		}
	}
	d.w(")")
}

func (d *deparser) stmt(s Statement) {
	switch s := s.(type) {
	case *Query:
		d.query(s)
	case *CreateView:
		d.w("CREATE ")
		if s.OrReplace {
			d.w("OR REPLACE ")
		}
		d.w("VIEW ")
		d.objName(s.Name)
		if len(s.Columns) > 0 {
			d.w(" ")
			d.identList(s.Columns)
		}
		d.w(" AS ")
		d.query(s.Query)
	case *Drop:
		d.w("DROP " + s.Kind.String() + " ")
		if s.IfExists {
			d.w("IF EXISTS ")
		}
		for i, n := range s.Names {
			if i > 0 {
				d.w(", ")
			}
			d.objName(n)
		}
	case *CreateTable:
		d.w("CREATE TABLE ")
		if s.IfNotExists {
			d.w("IF NOT EXISTS ")
		}
		d.objName(s.Name)
		if s.AsQuery != nil {
			if len(s.ColumnNames) > 0 {
				d.w(" ")
				d.identList(s.ColumnNames)
			}
			d.w(" AS ")
			d.query(s.AsQuery)
			return
		}
		d.w(" ")
		d.columnDefs(s.Columns, s.Constraints)
	case *CreateIndex:
		d.w("CREATE ")
		if s.Unique {
			d.w("UNIQUE ")
		}
		d.w("INDEX ")
		if s.IfNotExists {
			d.w("IF NOT EXISTS ")
		}
		if s.Name.Name != "" {
			d.w(QuoteIdent(s.Name.Name) + " ")
		}
		d.w("ON ")
		d.objName(s.Table)
		d.w(" ")
		d.identList(s.Columns)
	case *CreateExternalTable:
		d.w("CREATE EXTERNAL TABLE ")
		if s.IfNotExists {
			d.w("IF NOT EXISTS ")
		}
		d.objName(s.Name)
		if len(s.Columns) > 0 {
			d.w(" ")
			d.columnDefs(s.Columns, nil)
		}
		d.w(" STORED AS " + strings.ToUpper(s.Format) + " LOCATION " + QuoteString(s.Location))
	case *Insert:
		d.w("INSERT ")
		if s.OrReplace {
			d.w("OR REPLACE ")
		}
		d.w("INTO ")
		d.objName(s.Table)
		if len(s.Columns) > 0 {
			d.w(" ")
			d.identList(s.Columns)
		}
		d.w(" ")
		d.query(s.Query)
		if oc := s.OnConflict; oc != nil {
			d.w(" ON CONFLICT ")
			if len(oc.Columns) > 0 {
				d.identList(oc.Columns)
				d.w(" ")
			} else if oc.Constraint.Name != "" {
				d.w("ON CONSTRAINT " + QuoteIdent(oc.Constraint.Name) + " ")
			}
			if len(oc.Set) == 0 {
				d.w("DO NOTHING")
			} else {
				d.w("DO UPDATE SET ")
				d.assignments(oc.Set)
				if oc.Where != nil {
					d.w(" WHERE ")
					d.expr(oc.Where, 0)
				}
			}
		}
		d.returning(s.Returning)
	case *Delete:
		d.w("DELETE FROM ")
		d.targetTable(s.Table)
		d.fromList(" USING ", s.Using)
		if s.Where != nil {
			d.w(" WHERE ")
			d.expr(s.Where, 0)
		}
		d.returning(s.Returning)
	case *Update:
		d.w("UPDATE ")
		d.targetTable(s.Table)
		d.w(" SET ")
		d.assignments(s.Set)
		d.fromList(" FROM ", s.From)
		if s.Where != nil {
			d.w(" WHERE ")
			d.expr(s.Where, 0)
		}
		d.returning(s.Returning)
	case *Transaction:
		d.w(strings.ToUpper(s.Op))
		if s.Isolation != "" {
			d.w(" ISOLATION LEVEL " + strings.ToUpper(s.Isolation))
		}
		if s.ReadOnly {
			d.w(" READ ONLY")
		}
	case *Copy:
		d.w("COPY ")
		if s.Query != nil {
			d.w("(")
			d.query(s.Query)
			d.w(")")
		} else {
			d.objName(s.Table)
		}
		if len(s.Columns) > 0 {
			d.w(" ")
			d.identList(s.Columns)
		}
		switch {
		case s.Stdio && s.To:
			d.w(" TO STDOUT")
		case s.Stdio:
			d.w(" FROM STDIN")
		case s.To:
			d.w(" TO " + QuoteString(s.File))
		default:
			d.w(" FROM " + QuoteString(s.File))
		}
		if len(s.Options) > 0 {
			d.w(" WITH ")
			d.options(s.Options)
		}
	case *Explain:
		d.w("EXPLAIN ")
		if s.Analyze {
			d.w("ANALYZE ")
		}
		if s.Verbose {
			d.w("VERBOSE ")
		}
		d.stmt(s.Stmt)
	case *ShowTables:
		d.w("SHOW TABLES")
	case *Show:
		if s.Name.Name == "tables" {
			d.w(`SHOW "tables"`) // NB: bare, it would read as SHOW TABLES
			return
		}
		d.w("SHOW " + QuoteIdent(s.Name.Name))
	case *Describe:
		d.w("DESCRIBE ")
		d.objName(s.Name)
	case *Analyze:
		d.w("ANALYZE")
		switch {
		case s.SkipLocked && s.Verbose:
			d.w(" (VERBOSE, SKIP_LOCKED)")
		case s.SkipLocked:
			d.w(" (SKIP_LOCKED)")
		case s.Verbose:
			d.w(" VERBOSE")
		}
		for i, t := range s.Tables {
			if i > 0 {
				d.w(",")
			}
			d.w(" ")
			if i == 0 && !s.Verbose && !s.SkipLocked && len(t.Name.Parts) > 0 && t.Name.Parts[0].Name == "verbose" {
				// NB: bare, it would read as the VERBOSE option.
				d.w(`"verbose"`)
				for _, p := range t.Name.Parts[1:] {
					d.w("." + QuoteIdent(p.Name))
				}
			} else {
				d.objName(t.Name)
			}
			if len(t.Columns) > 0 {
				d.w(" ")
				d.identList(t.Columns)
			}
		}
	case *Set:
		d.w("SET " + QuoteIdent(s.Name.Name) + " = ")
		d.expr(s.Value, 0)
	}
}

// deparseColumnRef prints a.b.c with quoting.
func deparseColumnRef(c *ColumnRef) string {
	var b strings.Builder
	for i, p := range c.Parts {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(QuoteIdent(p.Name))
	}
	return b.String()
}

// QuoteString quotes s as a SQL string literal (” for ').
func QuoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// assignments prints "col = expr, ...".
func (d *deparser) assignments(set []*Assignment) {
	for i, a := range set {
		if i > 0 {
			d.w(", ")
		}
		d.w(QuoteIdent(a.Column.Name) + " = ")
		d.expr(a.Value, 0)
	}
}

// QuoteIdent returns name as it must be written in SQL (sqlkw.QuoteIdent).
func QuoteIdent(name string) string { return sqlkw.QuoteIdent(name) }
