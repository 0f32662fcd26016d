package plan

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/bytea"
)

// ColumnID identifies a column of a logical plan. IDs are unique within one
// bound statement: every scan column, computed expression, aggregate,
// window function and join mark gets a fresh one, so a column reference
// never depends on positions (which rules change).
type ColumnID int32

// Expr is a bound, typed scalar expression of the logical plan:
//
//	*ColRef        a column of the input, by ID
//	*Const         a constant with its Arrow type
//	*Call          an operator or function (Fn names follow exec's Fn*
//	               constants: add, sub, mul, div, mod, neg, eq, ne, lt, le,
//	               gt, ge, and, or, not, is_null, is_not_null,
//	               is_distinct_from, is_not_distinct_from, in, like,
//	               coalesce, nullif, abs, round, substring, upper, lower,
//	               length, trim, ltrim, rtrim, concat, strpos, extract, ...)
//	*CaseExpr      searched CASE (simple CASE is rewritten to it)
//	*CastExpr      CAST to a type
//	*SubqueryExpr  a subquery, only until decorrelation removes it
//
// Every Expr knows its result type. Exprs are immutable once built: rules
// build new trees rather than editing shared ones.
type Expr interface {
	// Type is the Arrow type of the expression's values.
	Type() arrow.DataType
	// String prints the expression as SQL-like text (EXPLAIN).
	String() string
	// ExprNode marks the expression types: this package's, and the
	// binder's placeholders, which never leave the binder.
	ExprNode()
}

// ColRef is a reference to a column of the input by ID. Name is for
// display only ("n1.n_name").
type ColRef struct {
	ID   ColumnID
	Name string
	Typ  arrow.DataType
}

// Const is a constant. Val holds, by Typ:
//
//	int32 int32, int64 int64, float64 float64, bool bool, utf8 string,
//	date32 arrow.Date32, time64 arrow.Time64 (microseconds), decimal64 int64 (unscaled), decimal128
//	decimal128.Num (unscaled), month_day_nano arrow.MonthDayNanoInterval,
//	binary Bytea, and nil for NULL (of any type, including arrow.Null for an
//	untyped NULL).
type Const struct {
	Typ arrow.DataType
	Val any
	// Untyped marks a string literal whose type the binder may still change
	// to the other operand's (WHERE d < '1998-01-01').
	Untyped bool
	// Param, on an untyped NULL, is the statement parameter it stands for
	// while a statement is described (bind.BindDescribe): the first type
	// its context gives it is recorded there (ParamSlot).
	Param *ParamSlot
}

// Call is an operator or function call; see Expr for the names.
type Call struct {
	Fn   string
	Args []Expr
	Typ  arrow.DataType
	// Zone is the session time zone the call computes in (expr.LoadZone's
	// names; "" is UTC): the binder stamps every call and cast it builds.
	Zone string
}

// CaseExpr is CASE WHEN Whens[i] THEN Thens[i] ... ELSE Else END; Else is
// nil for ELSE NULL.
type CaseExpr struct {
	Whens, Thens []Expr
	Else         Expr
	Typ          arrow.DataType
}

// CastExpr converts X to Typ.
type CastExpr struct {
	X    Expr
	Typ  arrow.DataType
	Zone string // the session time zone (as Call.Zone)
}

// SubqueryKind is the form of a subquery expression.
type SubqueryKind uint8

const (
	// SubScalar is (SELECT x ...): one column, at most one row, NULL for none.
	SubScalar SubqueryKind = iota
	// SubExists is EXISTS (SELECT ...).
	SubExists
	// SubIn is X IN (SELECT x ...), three-valued.
	SubIn
)

// SubqueryExpr is a subquery inside an expression. It only lives between
// binding and decorrelation: the optimizer turns every one into a join.
// Outer lists the columns of enclosing queries the subquery refers to
// (empty when uncorrelated).
type SubqueryExpr struct {
	Kind  SubqueryKind
	X     Expr // SubIn: the left operand
	Plan  Plan
	Outer []ColumnID
	Typ   arrow.DataType
	// ID numbers the subquery within its statement (EXPLAIN).
	ID int
	// Src is the subquery's text as bound (deparsed): two subqueries of
	// equal text reading the same outer columns are the same expression
	// (ExprKey), as GROUP BY matching needs.
	Src string
}

func (*ColRef) ExprNode()       {}
func (*Const) ExprNode()        {}
func (*Call) ExprNode()         {}
func (*CaseExpr) ExprNode()     {}
func (*CastExpr) ExprNode()     {}
func (*SubqueryExpr) ExprNode() {}

func (c *ColRef) Type() arrow.DataType       { return c.Typ }
func (c *Const) Type() arrow.DataType        { return c.Typ }
func (c *Call) Type() arrow.DataType         { return c.Typ }
func (c *CaseExpr) Type() arrow.DataType     { return c.Typ }
func (c *CastExpr) Type() arrow.DataType     { return c.Typ }
func (s *SubqueryExpr) Type() arrow.DataType { return s.Typ }

// Function names (exec's Fn* constants, plus the aggregate and window
// names used by Aggregate and Window nodes).
const (
	FnAdd      = "add"
	FnSub      = "sub"
	FnMul      = "mul"
	FnDiv      = "div"
	FnMod      = "mod"
	FnNeg      = "neg"
	FnEq       = "eq"
	FnNe       = "ne"
	FnLt       = "lt"
	FnLe       = "le"
	FnGt       = "gt"
	FnGe       = "ge"
	FnAnd      = "and"
	FnOr       = "or"
	FnNot      = "not"
	FnIsNull   = "is_null"
	FnNotNull  = "is_not_null"
	FnDistinct = "is_distinct_from"
	FnNotDist  = "is_not_distinct_from"
	FnIn       = "in"
	FnLike     = "like"
	FnCoalesce = "coalesce"
	FnConcat   = "concat"
	FnExtract  = "extract"
	FnLower    = "lower"
)

// ---------------------------------------------------------------- builders

// NewColRef is a reference to column c.
func NewColRef(c Column) *ColRef { return &ColRef{ID: c.ID, Name: c.QualifiedName(), Typ: c.Type} }

// ColRefs are references to cols, in order.
func ColRefs(cols []Column) []Expr {
	out := make([]Expr, len(cols))
	for i, c := range cols {
		out[i] = NewColRef(c)
	}
	return out
}

// BoolConst is the constant b.
func BoolConst(b bool) *Const { return &Const{Typ: TypBool, Val: b} }

// NullConst is a NULL of type t.
func NullConst(t arrow.DataType) *Const { return &Const{Typ: t} }

// IsNull reports whether c is a NULL constant.
func (c *Const) IsNull() bool { return c.Val == nil }

// NewCall is the call fn(args...) of result type t.
func NewCall(fn string, t arrow.DataType, args ...Expr) *Call {
	return &Call{Fn: fn, Args: args, Typ: t}
}

// Conjuncts splits an AND tree into its conjuncts.
func Conjuncts(e Expr) []Expr {
	if e == nil {
		return nil
	}
	if c, ok := e.(*Call); ok && c.Fn == FnAnd {
		var out []Expr
		for _, a := range c.Args {
			out = append(out, Conjuncts(a)...)
		}
		return out
	}
	return []Expr{e}
}

// Disjuncts splits an OR tree into its disjuncts.
func Disjuncts(e Expr) []Expr {
	if c, ok := e.(*Call); ok && c.Fn == FnOr {
		var out []Expr
		for _, a := range c.Args {
			out = append(out, Disjuncts(a)...)
		}
		return out
	}
	return []Expr{e}
}

// AndOf joins conjuncts (nil for none, the expression itself for one).
func AndOf(es []Expr) Expr {
	switch len(es) {
	case 0:
		return nil
	case 1:
		return es[0]
	}
	var flat []Expr
	for _, e := range es {
		flat = append(flat, Conjuncts(e)...)
	}
	return &Call{Fn: FnAnd, Args: flat, Typ: TypBool}
}

// OrOf joins disjuncts.
func OrOf(es []Expr) Expr {
	if len(es) == 1 {
		return es[0]
	}
	var flat []Expr
	for _, e := range es {
		flat = append(flat, Disjuncts(e)...)
	}
	return &Call{Fn: FnOr, Args: flat, Typ: TypBool}
}

// ---------------------------------------------------------------- traversal

// WalkExpr calls fn on e and its subexpressions (pre-order) while fn returns
// true. It does not enter subquery plans.
func WalkExpr(e Expr, fn func(Expr) bool) {
	if e == nil || !fn(e) {
		return
	}
	switch e := e.(type) {
	case *Call:
		for _, a := range e.Args {
			WalkExpr(a, fn)
		}
	case *CaseExpr:
		for i := range e.Whens {
			WalkExpr(e.Whens[i], fn)
			WalkExpr(e.Thens[i], fn)
		}
		WalkExpr(e.Else, fn)
	case *CastExpr:
		WalkExpr(e.X, fn)
	case *SubqueryExpr:
		WalkExpr(e.X, fn)
	}
}

// MapExpr rebuilds e bottom-up, replacing each node n by f(n) after its
// children were mapped. Unchanged subtrees are shared.
func MapExpr(e Expr, f func(Expr) Expr) Expr {
	if e == nil {
		return nil
	}
	switch x := e.(type) {
	case *Call:
		var args []Expr
		for i, a := range x.Args {
			na := MapExpr(a, f)
			if na != a && args == nil {
				args = append([]Expr(nil), x.Args...)
			}
			if args != nil {
				args[i] = na
			}
		}
		if args != nil {
			e = &Call{Fn: x.Fn, Args: args, Typ: x.Typ, Zone: x.Zone}
		}
	case *CaseExpr:
		nc := &CaseExpr{Whens: make([]Expr, len(x.Whens)), Thens: make([]Expr, len(x.Thens)), Typ: x.Typ}
		changed := false
		for i := range x.Whens {
			nc.Whens[i] = MapExpr(x.Whens[i], f)
			nc.Thens[i] = MapExpr(x.Thens[i], f)
			changed = changed || nc.Whens[i] != x.Whens[i] || nc.Thens[i] != x.Thens[i]
		}
		nc.Else = MapExpr(x.Else, f)
		if changed || nc.Else != x.Else {
			e = nc
		}
	case *CastExpr:
		if nx := MapExpr(x.X, f); nx != x.X {
			e = &CastExpr{X: nx, Typ: x.Typ, Zone: x.Zone}
		}
	case *SubqueryExpr:
		if x.X != nil {
			if nx := MapExpr(x.X, f); nx != x.X {
				c := *x
				c.X = nx
				e = &c
			}
		}
	}
	return f(e)
}

// ExprCols adds the IDs of the columns e refers to (including the outer
// references of subqueries) to set.
func ExprCols(e Expr, set ColSet) {
	WalkExpr(e, func(x Expr) bool {
		switch x := x.(type) {
		case *ColRef:
			set.Add(x.ID)
		case *SubqueryExpr:
			for _, id := range x.Outer {
				set.Add(id)
			}
		}
		return true
	})
}

// ColsOf returns the set of columns e refers to.
func ColsOf(e Expr) ColSet {
	s := ColSet{}
	ExprCols(e, s)
	return s
}

// HasSubquery reports whether e contains a subquery.
func HasSubquery(e Expr) bool {
	found := false
	WalkExpr(e, func(x Expr) bool {
		if _, ok := x.(*SubqueryExpr); ok {
			found = true
		}
		return !found
	})
	return found
}

// ColSet is a set of column IDs.
type ColSet map[ColumnID]struct{}

func (s ColSet) Add(id ColumnID)      { s[id] = struct{}{} }
func (s ColSet) Has(id ColumnID) bool { _, ok := s[id]; return ok }
func (s ColSet) AddAll(o ColSet)      { maps(o, s) }
func maps(from, to ColSet) {
	for k := range from {
		to[k] = struct{}{}
	}
}
func ColSetOf(cols []Column) ColSet {
	s := ColSet{}
	for _, c := range cols {
		s.Add(c.ID)
	}
	return s
}
func (s ColSet) SubsetOf(o ColSet) bool {
	for k := range s {
		if !o.Has(k) {
			return false
		}
	}
	return true
}
func (s ColSet) Intersects(o ColSet) bool {
	for k := range s {
		if o.Has(k) {
			return true
		}
	}
	return false
}

// Substitute replaces column references found in m.
func Substitute(e Expr, m map[ColumnID]Expr) Expr {
	if len(m) == 0 {
		return e
	}
	return MapExpr(e, func(x Expr) Expr {
		if c, ok := x.(*ColRef); ok {
			if r, ok := m[c.ID]; ok {
				return r
			}
		}
		return x
	})
}

// ExprKey is a canonical text of e with column IDs, for structural
// equality (group keys, common aggregates).
func ExprKey(e Expr) string {
	var b strings.Builder
	formatExpr(&b, e, 0, fmtKey)
	return b.String()
}

func ExprEqual(a, b Expr) bool { return ExprKey(a) == ExprKey(b) }

// ---------------------------------------------------------------- printing

func (c *ColRef) String() string       { return c.Name }
func (c *Const) String() string        { return FormatConst(c) }
func (c *Call) String() string         { return exprString(c) }
func (c *CaseExpr) String() string     { return exprString(c) }
func (c *CastExpr) String() string     { return exprString(c) }
func (s *SubqueryExpr) String() string { return exprString(s) }

func exprString(e Expr) string {
	var b strings.Builder
	formatExpr(&b, e, 0, fmtNames)
	return b.String()
}

// ExprVerbose prints e with column IDs after the names ("l_orderkey#18").
func ExprVerbose(e Expr) string {
	var b strings.Builder
	formatExpr(&b, e, 0, fmtVerbose)
	return b.String()
}

// How formatExpr prints column references and constants.
type fmtMode uint8

const (
	fmtNames   fmtMode = iota // names (EXPLAIN)
	fmtKey                    // IDs and typed constants (structural equality)
	fmtVerbose                // names with IDs (EXPLAIN VERBOSE)
)

var infixOps = map[string]struct {
	sym  string
	prec int
}{
	FnOr: {"OR", 1}, FnAnd: {"AND", 2},
	FnEq: {"=", 4}, FnNe: {"<>", 4}, FnLt: {"<", 4}, FnLe: {"<=", 4}, FnGt: {">", 4}, FnGe: {">=", 4},
	FnDistinct: {"IS DISTINCT FROM", 4}, FnNotDist: {"IS NOT DISTINCT FROM", 4},
	FnConcat: {"||", 6}, FnAdd: {"+", 7}, FnSub: {"-", 7}, FnMul: {"*", 8}, FnDiv: {"/", 8}, FnMod: {"%", 8},
}

// formatExpr prints e; prec is the binding strength of the context (0:
// none).
func formatExpr(b *strings.Builder, e Expr, prec int, mode fmtMode) {
	paren := func(p int, f func()) {
		if p < prec {
			b.WriteByte('(')
			f()
			b.WriteByte(')')
		} else {
			f()
		}
	}
	switch e := e.(type) {
	case nil:
		b.WriteString("<nil>")
	case *ColRef:
		switch mode {
		case fmtKey:
			fmt.Fprintf(b, "#%d", e.ID)
		case fmtVerbose:
			fmt.Fprintf(b, "%s#%d", e.Name, e.ID)
		default:
			b.WriteString(e.Name)
		}
	case *Const:
		if mode == fmtKey {
			b.WriteString(TypeString(e.Typ))
			b.WriteByte(':')
		}
		b.WriteString(FormatConst(e))
	case *CastExpr:
		b.WriteString("CAST(")
		formatExpr(b, e.X, 0, mode)
		b.WriteString(" AS " + TypeString(e.Typ) + ")")
	case *CaseExpr:
		b.WriteString("CASE")
		for i := range e.Whens {
			b.WriteString(" WHEN ")
			formatExpr(b, e.Whens[i], 0, mode)
			b.WriteString(" THEN ")
			formatExpr(b, e.Thens[i], 0, mode)
		}
		if e.Else != nil {
			b.WriteString(" ELSE ")
			formatExpr(b, e.Else, 0, mode)
		}
		b.WriteString(" END")
	case *SubqueryExpr:
		if mode == fmtKey && e.Src != "" {
			fmt.Fprintf(b, "subquery%d(", e.Kind)
			if e.X != nil {
				formatExpr(b, e.X, 0, mode)
			}
			fmt.Fprintf(b, "; %v; %s)", e.Outer, e.Src)
			return
		}
		switch e.Kind {
		case SubExists:
			fmt.Fprintf(b, "EXISTS(subquery %d)", e.ID)
		case SubIn:
			paren(5, func() {
				formatExpr(b, e.X, 6, mode)
				fmt.Fprintf(b, " IN (subquery %d)", e.ID)
			})
		default:
			fmt.Fprintf(b, "(subquery %d)", e.ID)
		}
	case *Call:
		if op, ok := infixOps[e.Fn]; ok && len(e.Args) >= 2 {
			paren(op.prec, func() {
				for i, a := range e.Args {
					if i > 0 {
						b.WriteString(" " + op.sym + " ")
					}
					p := op.prec
					if i > 0 {
						p++ // left-associative: a right operand of equal strength needs parentheses
					}
					formatExpr(b, a, p, mode)
				}
			})
			return
		}
		switch e.Fn {
		case FnNot:
			paren(3, func() {
				b.WriteString("NOT ")
				formatExpr(b, e.Args[0], 3, mode)
			})
		case FnNeg:
			paren(9, func() {
				b.WriteString("-")
				formatExpr(b, e.Args[0], 10, mode)
			})
		case FnIsNull, FnNotNull:
			paren(4, func() {
				formatExpr(b, e.Args[0], 5, mode)
				if e.Fn == FnIsNull {
					b.WriteString(" IS NULL")
				} else {
					b.WriteString(" IS NOT NULL")
				}
			})
		case FnIn:
			paren(5, func() {
				formatExpr(b, e.Args[0], 6, mode)
				b.WriteString(" IN (")
				for i, a := range e.Args[1:] {
					if i > 0 {
						b.WriteString(", ")
					}
					formatExpr(b, a, 0, mode)
				}
				b.WriteString(")")
			})
		case FnLike:
			paren(5, func() {
				formatExpr(b, e.Args[0], 6, mode)
				b.WriteString(" LIKE ")
				formatExpr(b, e.Args[1], 6, mode)
				if len(e.Args) > 2 {
					b.WriteString(" ESCAPE ")
					formatExpr(b, e.Args[2], 6, mode)
				}
			})
		case FnExtract:
			b.WriteString("extract(")
			if c, ok := e.Args[0].(*Const); ok {
				if s, ok := c.Val.(string); ok {
					b.WriteString(s)
				}
			}
			b.WriteString(" FROM ")
			formatExpr(b, e.Args[1], 0, mode)
			b.WriteString(")")
		default:
			b.WriteString(e.Fn)
			b.WriteByte('(')
			for i, a := range e.Args {
				if i > 0 {
					b.WriteString(", ")
				}
				formatExpr(b, a, 0, mode)
			}
			b.WriteByte(')')
		}
	default:
		fmt.Fprintf(b, "%T", e)
	}
}

// FormatConst prints a constant as a SQL literal.
func FormatConst(c *Const) string {
	if c.Val == nil {
		return "NULL"
	}
	switch v := c.Val.(type) {
	case bool:
		if v {
			return "true"
		}
		return "false"
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case int64:
		if _, s, ok := DecimalPS(c.Typ); ok && IsDecimal(c.Typ) {
			return FormatUnscaled(big.NewInt(v), s)
		}
		return strconv.FormatInt(v, 10)
	case decimal128.Num:
		_, s, _ := DecimalPS(c.Typ)
		return FormatUnscaled(v.BigInt(), s)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case Bytea:
		return "'" + bytea.Format([]byte(v)) + "'::bytea"
	case arrow.Date32:
		return "date '" + v.FormattedString() + "'"
	case arrow.Timestamp:
		if expr.HasZone(c.Typ) {
			return "timestamptz '" + expr.FormatTimestamp(int64(v), true) + "'"
		}
		return "timestamp '" + expr.FormatTimestamp(int64(v), false) + "'"
	case arrow.Time64:
		return "time '" + expr.FormatTime(int64(v)) + "'"
	case arrow.MonthDayNanoInterval:
		return formatInterval(v)
	}
	return fmt.Sprint(c.Val)
}

// FormatUnscaled prints an unscaled decimal with s fractional digits.
func FormatUnscaled(u *big.Int, s int32) string {
	neg := u.Sign() < 0
	digits := new(big.Int).Abs(u).String()
	if s > 0 {
		for int32(len(digits)) <= s {
			digits = "0" + digits
		}
		digits = digits[:len(digits)-int(s)] + "." + digits[len(digits)-int(s):]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

func formatInterval(v arrow.MonthDayNanoInterval) string {
	var parts []string
	if v.Months != 0 {
		parts = append(parts, fmt.Sprintf("%d months", v.Months))
	}
	if v.Days != 0 {
		parts = append(parts, fmt.Sprintf("%d days", v.Days))
	}
	if v.Nanoseconds != 0 {
		parts = append(parts, fmt.Sprintf("%d nanoseconds", v.Nanoseconds))
	}
	if len(parts) == 0 {
		parts = []string{"0 days"}
	}
	return "interval '" + strings.Join(parts, " ") + "'"
}

// SortIDs sorts column IDs ascending.
func SortIDs(ids []ColumnID) { slices.Sort(ids) }

// sortedIDs returns the members of s, ascending.
func (s ColSet) sorted() []ColumnID {
	out := make([]ColumnID, 0, len(s))
	for id := range s {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}
