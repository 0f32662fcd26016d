package plan

import (
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
)

// Column is an output column of a plan node.
type Column struct {
	ID ColumnID
	// Name is the column's name (alias or table column name); Table the
	// alias or name of the relation it came from, "" for computed columns.
	// Both are for display and for the binder's name resolution.
	Name     string
	Table    string
	Type     arrow.DataType
	Nullable bool
}

// QualifiedName is "table.name", or "name" without a table.
func (c Column) QualifiedName() string {
	if c.Table == "" {
		return c.Name
	}
	return c.Table + "." + c.Name
}

// Plan is a node of a logical plan. Every node lists its output columns
// (IDs, names, types, nullability) in order; expressions refer to input
// columns by ID only, so a physical planner maps an ID to the position of
// that column in the input's Columns().
//
// Nodes and what they output:
//
//	*ScanNode      the chosen columns of a table; Filters hold pushed-down
//	               conjuncts (PruningPredicates lists those storage can
//	               use to skip row groups)
//	*FilterNode    the input's columns, rows where Cond is TRUE
//	*ProjectNode   Cols, computed by Exprs (a bare ColRef keeps its ID)
//	*AggregateNode GroupCols (computed by Groups) then AggCols (Aggs);
//	               without groups exactly one row
//	*JoinNode      see JoinKind
//	*SortNode      the input's columns, ordered by Keys
//	*LimitNode     the input's columns, Offset rows skipped, at most Limit
//	*TopNNode      Sort then Limit in one operator
//	*SetOpNode     Cols (fresh IDs), from Left and Right by position
//	*DistinctNode  the input's columns, duplicate rows removed
//	*WindowNode    the input's columns then FuncCols
//	*ValuesNode    Cols, one row per Rows entry
//	*SharedScan    Cols (fresh IDs), the rows of a SharedDef's plan by
//	               position; all scans of one SharedDef read one
//	               materialization of it (a view or CTE used twice)
//	*RecursiveNode Cols (fresh IDs): WITH RECURSIVE's fixpoint, Anchor's
//	               rows then Term's, Term run again over the rows the
//	               last run added until it adds none (inputs by position)
//	*WorkScan      Cols (fresh IDs), the rows a RecursiveNode's last run
//	               added, by position (only inside that node's Term)
//	*SeriesNode    Col: generate_series(Start, Stop, Step), one row per value
//	*UnnestNode    the input's columns, then per array its element and
//	               subscript, then the ordinality: each input row once per
//	               position of its longest array (unnest, generate_subscripts)
//	*ApplyNode     the input's columns then Col: Sub's one value for each
//	               input row, Sub run with the row's Outer values (the
//	               nested evaluation of a subquery no rule decorrelates);
//	               Table: the input's columns then Sub's, each input row
//	               once per row of Sub (a LATERAL join)
type Plan interface {
	// Columns are the node's output columns, in order.
	Columns() []Column
	// Inputs are the node's children (none for leaves).
	Inputs() []Plan
	// WithInputs returns a copy of the node with new children.
	WithInputs(in []Plan) Plan
}

// ScanNode reads a table.
type ScanNode struct {
	Table *TableDef
	// Alias is the name the query uses for the table (its name or alias).
	Alias string
	// Cols are the output columns; Fields[i] is the schema index of Cols[i].
	Cols   []Column
	Fields []int
	// Filters are conjuncts over Cols that every output row satisfies.
	Filters []Expr
}

// FilterNode keeps rows where Cond is TRUE.
type FilterNode struct {
	Input Plan
	Cond  Expr
}

// ProjectNode computes Exprs over the input; Cols[i] is the column of
// Exprs[i].
type ProjectNode struct {
	Input Plan
	Exprs []Expr
	Cols  []Column
}

// AggCall is one aggregate of an AggregateNode.
type AggCall struct {
	// Fn is count_star, count, sum, avg, min or max (exec.AggFunc names).
	Fn string
	// Arg is the argument (nil for count_star).
	Arg      Expr
	Distinct bool
	Typ      arrow.DataType
	// Sep is string_agg's separator.
	Sep string
	// Quantile is quantile_cont's and percentile_disc's fraction (median:
	// 0.5); Desc: percentile_disc over a descending order.
	Quantile float64
	Desc     bool
	// Filter is FILTER (WHERE Filter) where the aggregate must not see the
	// rows it drops: array_agg, which keeps NULLs (the other aggregates
	// take FILTER as CASE WHEN c THEN x END, whose NULLs they skip). nil:
	// every row.
	Filter Expr
}

// String prints the call ("sum(l_quantity)", "count(*)").
func (a *AggCall) String() string {
	if a.Fn == AggCountStar {
		return "count(*)"
	}
	d := ""
	if a.Distinct {
		d = "DISTINCT "
	}
	if a.Fn == AggQuantileCont || a.Fn == AggPercentileDisc {
		return a.Fn + "(" + a.Arg.String() + ", " + strconv.FormatFloat(a.Quantile, 'g', -1, 64) + ")"
	}
	if a.Fn == AggStringAgg {
		return a.Fn + "(" + d + a.Arg.String() + ", " + FormatConst(&Const{Typ: TypString, Val: a.Sep}) + ")"
	}
	f := ""
	if a.Filter != nil {
		f = " FILTER (WHERE " + a.Filter.String() + ")"
	}
	return a.Fn + "(" + d + a.Arg.String() + ")" + f
}

// Aggregate function names (exec.AggFunc values).
const (
	AggCountStar = "count_star"
	AggCount     = "count"
	AggSum       = "sum"
	AggAvg       = "avg"
	AggMin       = "min"
	AggMax       = "max"
	AggStringAgg = "string_agg"
	AggArrayAgg  = "array_agg"
	// AggQuantileCont is quantile_cont (median, percentile_cont).
	AggQuantileCont = "quantile_cont"
	// AggPercentileDisc is percentile_disc: the first value at or past the
	// fraction.
	AggPercentileDisc = "percentile_disc"
	// AggMode is mode: the most frequent value (ties: the first in Desc's
	// order).
	AggMode = "mode"
)

// AggregateNode groups its input by Groups and computes Aggs per group.
type AggregateNode struct {
	Input     Plan
	Groups    []Expr
	GroupCols []Column
	Aggs      []*AggCall
	AggCols   []Column
	// Dedup marks the inner aggregate of the distinct_agg rewrite: it only
	// makes rows distinct, with about as many groups as rows, so a parallel
	// plan repartitions its input rather than pre-aggregating it.
	Dedup bool
}

// JoinKind is the kind of a logical join.
type JoinKind uint8

const (
	// JoinInner outputs left ++ right columns of matching pairs.
	JoinInner JoinKind = iota
	// JoinLeft also outputs unmatched left rows (right columns NULL).
	JoinLeft
	// JoinRight also outputs unmatched right rows.
	JoinRight
	// JoinFull outputs both kinds of unmatched rows.
	JoinFull
	// JoinSemi outputs the left rows that have a match (left columns only).
	JoinSemi
	// JoinAnti outputs the left rows without a match (left columns only).
	// With NullAware (NOT IN), Equi[0] is the IN comparison (its left side
	// may be a constant) and a NULL on either side of it counts as
	// "maybe": the left row is dropped, unless the right side is empty
	// (then every left row is kept).
	JoinAnti
	// JoinMark outputs every left row plus Mark, a boolean: TRUE when the
	// row has a match, FALSE when not, and with NullAware NULL when there
	// is no match but a NULL made the comparison unknown (IN semantics).
	JoinMark
	// JoinSingle is a left join whose right side yields at most one row
	// per left row (scalar subqueries); a second match is a KindQuery
	// error "more than one row returned by a subquery used as an
	// expression".
	JoinSingle
)

var joinKindNames = [...]string{"inner", "left", "right", "full", "semi", "anti", "mark", "single"}

func (k JoinKind) String() string { return joinKindNames[k] }

// EquiCond is Left = Right, with Left over the left input's columns and
// Right over the right input's; both have the same type.
type EquiCond struct {
	Left, Right Expr
}

// BuildSide says which input a hash join builds its table on.
type BuildSide uint8

const (
	BuildRight BuildSide = iota
	BuildLeft
)

// JoinNode joins Left and Right on Equi (all must hold) and Cond (a
// residual predicate over both inputs' columns; nil is TRUE).
type JoinNode struct {
	Kind        JoinKind
	Left, Right Plan
	Equi        []EquiCond
	Cond        Expr
	// Mark is the output column of a JoinMark.
	Mark      *Column
	NullAware bool
	// Build is the side a hash join builds on, chosen by the optimizer
	// (the smaller estimated input). Semi, anti, mark and single joins
	// build on the right.
	Build BuildSide
	// Lateral marks an inner or left join whose Right reads columns of
	// Left (a LATERAL derived table, a function in FROM over the items
	// before it): Right's value depends on each left row. The binder
	// sets it; decorrelation (opt) removes every one, turning the join
	// into an ordinary one or an ApplyNode.
	Lateral bool
}

// SortKey is one key of a sort.
type SortKey struct {
	Expr       Expr
	Desc       bool
	NullsFirst bool
}

func (k SortKey) String() string {
	s := k.Expr.String()
	if k.Desc {
		s += " DESC"
	}
	// PostgreSQL's defaults: NULLS LAST ascending, NULLS FIRST descending.
	if k.NullsFirst != k.Desc {
		if k.NullsFirst {
			s += " NULLS FIRST"
		} else {
			s += " NULLS LAST"
		}
	}
	return s
}

// SortNode orders its input.
type SortNode struct {
	Input Plan
	Keys  []SortKey
}

// LimitNode skips Offset rows and returns at most Limit (-1: no limit).
type LimitNode struct {
	Input  Plan
	Limit  int64
	Offset int64
}

// TopNNode is Sort followed by Limit, computed keeping Offset+Limit rows.
type TopNNode struct {
	Input  Plan
	Keys   []SortKey
	Limit  int64
	Offset int64
}

// SetOpKind is UNION, INTERSECT or EXCEPT.
type SetOpKind uint8

const (
	SetUnion SetOpKind = iota
	SetIntersect
	SetExcept
)

func (k SetOpKind) String() string { return [...]string{"union", "intersect", "except"}[k] }

// SetOpNode combines two inputs with the same column types by position.
type SetOpNode struct {
	Kind        SetOpKind
	All         bool
	Left, Right Plan
	Cols        []Column
}

// DistinctNode removes duplicate rows.
type DistinctNode struct {
	Input Plan
}

// FrameBoundKind is a window frame bound kind.
type FrameBoundKind uint8

const (
	BoundUnboundedPreceding FrameBoundKind = iota
	BoundPreceding
	BoundCurrentRow
	BoundFollowing
	BoundUnboundedFollowing
)

// WindowFrame is a window frame: Mode is "rows", "range" or "groups";
// offsets are constants (Preceding/Following bounds).
type WindowFrame struct {
	Mode                   string
	Start, End             FrameBoundKind
	StartOffset, EndOffset Expr
	// Exclude is "" (no exclusion), "current row", "group" or "ties".
	Exclude string
}

// WindowCall is one window function of a WindowNode.
type WindowCall struct {
	// Fn is an aggregate name (count_star, count, sum, avg, min, max),
	// row_number, rank, dense_rank, percent_rank, cume_dist, ntile, or a
	// value function: lag, lead, first_value, last_value, nth_value.
	Fn   string
	Args []Expr
	// N is the constant of lag and lead (the offset; negative: the other
	// direction), nth_value (the row, from 1) and ntile (the buckets).
	N           int64
	PartitionBy []Expr
	OrderBy     []SortKey
	// Frame is nil for the default frame (RANGE UNBOUNDED PRECEDING to
	// CURRENT ROW with ORDER BY, the whole partition without).
	Frame *WindowFrame
	// IgnoreNulls: a value function skips rows whose argument is NULL.
	IgnoreNulls bool
	Typ         arrow.DataType
}

// WindowNode computes window functions over its input.
type WindowNode struct {
	Input    Plan
	Funcs    []*WindowCall
	FuncCols []Column
}

// ValuesNode is a constant relation.
type ValuesNode struct {
	Rows [][]Expr
	Cols []Column
}

// SharedDef is a subplan used several times in one statement (a view or a
// CTE referenced twice, as in TPC-H Q15); it is computed once.
type SharedDef struct {
	ID   int
	Name string
	Plan Plan
}

// SharedScan reads the rows of a SharedDef.
type SharedScan struct {
	Def  *SharedDef
	Cols []Column
}

// WorkTable names the rows of one recursive CTE that its recursive term
// reads: a RecursiveNode and the WorkScans in its Term share it.
type WorkTable struct {
	ID   int
	Name string
}

// RecursiveNode is a recursive CTE (WITH RECURSIVE t AS (Anchor UNION
// [ALL] Term)): the rows of Anchor, then of Term run with its WorkScans of
// Work reading the rows the previous run added, until a run adds none.
// With Distinct (UNION), a row equal to one already returned is not added
// (NULLs equal). Anchor and Term have Cols' types, by position.
type RecursiveNode struct {
	Work     *WorkTable
	Anchor   Plan
	Term     Plan
	Distinct bool
	Cols     []Column
}

// WorkScan reads the rows the previous run of Work's recursive term added
// (the anchor's rows in the first run).
type WorkScan struct {
	Work *WorkTable
	Cols []Column
}

// SeriesNode is generate_series(Start, Stop, Step) (and DuckDB's range):
// Start, Start+Step, ... while not past Stop.
type SeriesNode struct {
	Start, Stop, Step int64
	Col               Column
}

func (n *SeriesNode) Columns() []Column      { return []Column{n.Col} }
func (n *SeriesNode) Inputs() []Plan         { return nil }
func (n *SeriesNode) WithInputs([]Plan) Plan { c := *n; return &c }

// UnnestNode expands arrays, as PostgreSQL runs set-returning functions
// over arrays (unnest(a), generate_subscripts(a, 1)) in a select list and
// unnest(a, ...) [WITH ORDINALITY] in FROM: each input row is repeated
// once for each position k = 1..n, n the length of its longest array in
// Arrays (no row when every array is empty or NULL); for array i, Elems[i]
// is its k-th element and Subs[i] that element's subscript (NULL past its
// end), and Ord is k.
type UnnestNode struct {
	Input  Plan
	Arrays []Expr
	Elems  []Column
	Subs   []Column
	Ord    Column
}

func (n *UnnestNode) Columns() []Column {
	out := append([]Column(nil), n.Input.Columns()...)
	for i := range n.Elems {
		out = append(out, n.Elems[i], n.Subs[i])
	}
	return append(out, n.Ord)
}
func (n *UnnestNode) Inputs() []Plan { return []Plan{n.Input} }
func (n *UnnestNode) WithInputs(in []Plan) Plan {
	c := *n
	c.Input = in[0]
	return &c
}

// ApplyNode evaluates a correlated scalar subquery row by row: for each
// input row, Sub (one column, at most one row) runs with its references to
// Outer columns bound to the row's values; Col is its value (NULL when no
// row). It is the fallback of subquery decorrelation (opt/apply.go); an
// Outer column the input does not produce is a reference further out,
// bound by an enclosing ApplyNode.
//
// Table makes it a LATERAL join instead: each input row is joined with
// every row Sub returns for it (all of Sub's columns, Col unused); with
// Left, an input row for which Sub returns none is kept once, Sub's
// columns NULL.
type ApplyNode struct {
	Input Plan
	Sub   Plan
	Outer []Column
	Col   Column
	// SubID is the subquery's number (EXPLAIN).
	SubID int
	Table bool
	Left  bool
}

func (n *ApplyNode) Columns() []Column {
	out := append([]Column(nil), n.Input.Columns()...)
	if !n.Table {
		return append(out, n.Col)
	}
	for _, c := range n.Sub.Columns() {
		c.Nullable = c.Nullable || n.Left
		out = append(out, c)
	}
	return out
}
func (n *ApplyNode) Inputs() []Plan { return []Plan{n.Input} }
func (n *ApplyNode) WithInputs(in []Plan) Plan {
	c := *n
	c.Input = in[0]
	return &c
}

func (n *RecursiveNode) Columns() []Column { return n.Cols }
func (n *WorkScan) Columns() []Column      { return n.Cols }
func (n *RecursiveNode) Inputs() []Plan    { return []Plan{n.Anchor, n.Term} }
func (n *WorkScan) Inputs() []Plan         { return nil }
func (n *RecursiveNode) WithInputs(in []Plan) Plan {
	c := *n
	c.Anchor, c.Term = in[0], in[1]
	return &c
}
func (n *WorkScan) WithInputs([]Plan) Plan { c := *n; return &c }

func (n *ScanNode) Columns() []Column   { return n.Cols }
func (n *FilterNode) Columns() []Column { return n.Input.Columns() }
func (n *ProjectNode) Columns() []Column {
	return n.Cols
}
func (n *AggregateNode) Columns() []Column {
	out := make([]Column, 0, len(n.GroupCols)+len(n.AggCols))
	return append(append(out, n.GroupCols...), n.AggCols...)
}
func (n *JoinNode) Columns() []Column {
	l := n.Left.Columns()
	switch n.Kind {
	case JoinSemi, JoinAnti:
		return l
	case JoinMark:
		return append(append([]Column(nil), l...), *n.Mark)
	}
	r := n.Right.Columns()
	out := make([]Column, 0, len(l)+len(r))
	for _, c := range l {
		if n.Kind == JoinRight || n.Kind == JoinFull {
			c.Nullable = true
		}
		out = append(out, c)
	}
	for _, c := range r {
		if n.Kind == JoinLeft || n.Kind == JoinFull || n.Kind == JoinSingle {
			c.Nullable = true
		}
		out = append(out, c)
	}
	return out
}
func (n *SortNode) Columns() []Column     { return n.Input.Columns() }
func (n *LimitNode) Columns() []Column    { return n.Input.Columns() }
func (n *TopNNode) Columns() []Column     { return n.Input.Columns() }
func (n *SetOpNode) Columns() []Column    { return n.Cols }
func (n *DistinctNode) Columns() []Column { return n.Input.Columns() }
func (n *WindowNode) Columns() []Column {
	return append(append([]Column(nil), n.Input.Columns()...), n.FuncCols...)
}
func (n *ValuesNode) Columns() []Column { return n.Cols }
func (n *SharedScan) Columns() []Column { return n.Cols }

func (n *ScanNode) Inputs() []Plan      { return nil }
func (n *FilterNode) Inputs() []Plan    { return []Plan{n.Input} }
func (n *ProjectNode) Inputs() []Plan   { return []Plan{n.Input} }
func (n *AggregateNode) Inputs() []Plan { return []Plan{n.Input} }
func (n *JoinNode) Inputs() []Plan      { return []Plan{n.Left, n.Right} }
func (n *SortNode) Inputs() []Plan      { return []Plan{n.Input} }
func (n *LimitNode) Inputs() []Plan     { return []Plan{n.Input} }
func (n *TopNNode) Inputs() []Plan      { return []Plan{n.Input} }
func (n *SetOpNode) Inputs() []Plan     { return []Plan{n.Left, n.Right} }
func (n *DistinctNode) Inputs() []Plan  { return []Plan{n.Input} }
func (n *WindowNode) Inputs() []Plan    { return []Plan{n.Input} }
func (n *ValuesNode) Inputs() []Plan    { return nil }
func (n *SharedScan) Inputs() []Plan    { return nil }

func (n *ScanNode) WithInputs([]Plan) Plan { c := *n; return &c }
func (n *FilterNode) WithInputs(in []Plan) Plan {
	c := *n
	c.Input = in[0]
	return &c
}
func (n *ProjectNode) WithInputs(in []Plan) Plan {
	c := *n
	c.Input = in[0]
	return &c
}
func (n *AggregateNode) WithInputs(in []Plan) Plan {
	c := *n
	c.Input = in[0]
	return &c
}
func (n *JoinNode) WithInputs(in []Plan) Plan {
	c := *n
	c.Left, c.Right = in[0], in[1]
	return &c
}
func (n *SortNode) WithInputs(in []Plan) Plan {
	c := *n
	c.Input = in[0]
	return &c
}
func (n *LimitNode) WithInputs(in []Plan) Plan {
	c := *n
	c.Input = in[0]
	return &c
}
func (n *TopNNode) WithInputs(in []Plan) Plan {
	c := *n
	c.Input = in[0]
	return &c
}
func (n *SetOpNode) WithInputs(in []Plan) Plan {
	c := *n
	c.Left, c.Right = in[0], in[1]
	return &c
}
func (n *DistinctNode) WithInputs(in []Plan) Plan {
	c := *n
	c.Input = in[0]
	return &c
}
func (n *WindowNode) WithInputs(in []Plan) Plan {
	c := *n
	c.Input = in[0]
	return &c
}
func (n *ValuesNode) WithInputs([]Plan) Plan { c := *n; return &c }
func (n *SharedScan) WithInputs([]Plan) Plan { c := *n; return &c }

// MapPlan rebuilds p bottom-up: children first, then f on the node with
// its new children.
func MapPlan(p Plan, f func(Plan) Plan) Plan {
	in := p.Inputs()
	if len(in) > 0 {
		changed := false
		nin := make([]Plan, len(in))
		for i, c := range in {
			nin[i] = MapPlan(c, f)
			changed = changed || nin[i] != c
		}
		if changed {
			p = p.WithInputs(nin)
		}
	}
	return f(p)
}

// WalkPlanDeep calls fn on every node of p, of the plans of its subqueries
// (ApplyNodes' too) and of the SharedDefs its scans read (each def entered once; fn sees
// every SharedScan).
func WalkPlanDeep(p Plan, fn func(Plan)) {
	seen := map[*SharedDef]bool{}
	var visit func(Plan)
	visit = func(q Plan) {
		WalkPlan(q, func(n Plan) bool {
			fn(n)
			if s, ok := n.(*SharedScan); ok && !seen[s.Def] {
				seen[s.Def] = true
				visit(s.Def.Plan)
			}
			if a, ok := n.(*ApplyNode); ok {
				visit(a.Sub)
			}
			for _, e := range NodeExprs(n) {
				WalkExpr(e, func(x Expr) bool {
					if s, ok := x.(*SubqueryExpr); ok {
						visit(s.Plan)
					}
					return true
				})
			}
			return true
		})
	}
	visit(p)
}

// WalkPlan calls fn on p and its descendants (pre-order) while fn returns
// true. It does not enter SharedDefs or subquery plans.
func WalkPlan(p Plan, fn func(Plan) bool) {
	if !fn(p) {
		return
	}
	for _, c := range p.Inputs() {
		WalkPlan(c, fn)
	}
}

// NodeExprs returns the expressions a node evaluates over its input(s).
func NodeExprs(p Plan) []Expr {
	switch n := p.(type) {
	case *ScanNode:
		return n.Filters
	case *FilterNode:
		return []Expr{n.Cond}
	case *ProjectNode:
		return n.Exprs
	case *ApplyNode:
		// The references Sub makes to the input and further out.
		out := make([]Expr, len(n.Outer))
		for i, c := range n.Outer {
			out[i] = NewColRef(c)
		}
		return out
	case *AggregateNode:
		out := append([]Expr(nil), n.Groups...)
		for _, a := range n.Aggs {
			if a.Arg != nil {
				out = append(out, a.Arg)
			}
			if a.Filter != nil {
				out = append(out, a.Filter)
			}
		}
		return out
	case *JoinNode:
		var out []Expr
		for _, e := range n.Equi {
			out = append(out, e.Left, e.Right)
		}
		if n.Cond != nil {
			out = append(out, n.Cond)
		}
		return out
	case *SortNode:
		return SortKeyExprs(n.Keys)
	case *TopNNode:
		return SortKeyExprs(n.Keys)
	case *WindowNode:
		var out []Expr
		for _, w := range n.Funcs {
			out = append(out, w.Args...)
			out = append(out, w.PartitionBy...)
			out = append(out, SortKeyExprs(w.OrderBy)...)
		}
		return out
	case *ValuesNode:
		var out []Expr
		for _, r := range n.Rows {
			out = append(out, r...)
		}
		return out
	case *UnnestNode:
		return n.Arrays
	}
	return nil
}

func SortKeyExprs(ks []SortKey) []Expr {
	out := make([]Expr, len(ks))
	for i, k := range ks {
		out[i] = k.Expr
	}
	return out
}

// producedCols is the set of column IDs produced anywhere inside p
// (including SharedScan outputs), used to find a subquery's free columns.
func producedCols(p Plan) ColSet {
	s := ColSet{}
	WalkPlan(p, func(n Plan) bool {
		for _, c := range n.Columns() {
			s.Add(c.ID)
		}
		return true
	})
	return s
}

// FreeCols returns the columns p refers to but does not produce: the outer
// references of a correlated subquery plan.
func FreeCols(p Plan) ColSet {
	prod := producedCols(p)
	free := ColSet{}
	WalkPlan(p, func(n Plan) bool {
		for _, e := range NodeExprs(n) {
			for id := range ColsOf(e) {
				if !prod.Has(id) {
					free.Add(id)
				}
			}
		}
		return true
	})
	return free
}

// PruningPredicates returns the scan filters storage can use to skip row
// groups by their min/max statistics: column op constant (=, <>, <, <=,
// >, >=, with the constant on either side), IN lists of constants, IS
// [NOT] NULL, and LIKE 'prefix%'. BETWEEN arrives as two range conjuncts.
// Every filter, pushable or not, must still be applied to the rows.
func (n *ScanNode) PruningPredicates() []Expr {
	var out []Expr
	for _, f := range n.Filters {
		if isPruningPredicate(f) {
			out = append(out, f)
		}
	}
	return out
}

func isPruningPredicate(e Expr) bool {
	c, ok := e.(*Call)
	if !ok {
		return false
	}
	isCol := func(x Expr) bool { _, ok := x.(*ColRef); return ok }
	isConst := func(x Expr) bool { _, ok := x.(*Const); return ok }
	switch c.Fn {
	case FnEq, FnNe, FnLt, FnLe, FnGt, FnGe:
		return (isCol(c.Args[0]) && isConst(c.Args[1])) || (isConst(c.Args[0]) && isCol(c.Args[1]))
	case FnIn:
		if !isCol(c.Args[0]) {
			return false
		}
		for _, a := range c.Args[1:] {
			if !isConst(a) {
				return false
			}
		}
		return true
	case FnIsNull, FnNotNull:
		return isCol(c.Args[0])
	case FnLike:
		if len(c.Args) != 2 || !isCol(c.Args[0]) || !isConst(c.Args[1]) {
			return false
		}
		s, ok := c.Args[1].(*Const).Val.(string)
		if !ok {
			return false
		}
		i := IndexAnyWildcard(s)
		return i > 0 && i == len(s)-1 && s[i] == '%'
	}
	return false
}

func IndexAnyWildcard(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '%' || s[i] == '_' || s[i] == '\\' {
			return i
		}
	}
	return -1
}

// FindCol returns the column of cols with ID id (the zero Column when
// none has it).
func FindCol(cols []Column, id ColumnID) Column {
	for _, c := range cols {
		if c.ID == id {
			return c
		}
	}
	return Column{ID: id}
}
