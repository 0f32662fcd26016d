package storage

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/nicflow/nicflow/internal/civil"
	"github.com/nicflow/nicflow/internal/nferr"
)

// ValueKind names the type of a predicate constant or a statistic.
type ValueKind string

// The kinds of Value.
const (
	KindInt    ValueKind = "int"    // Int
	KindFloat  ValueKind = "float"  // Float
	KindString ValueKind = "string" // Str
	KindBool   ValueKind = "bool"   // Bool
	KindDate   ValueKind = "date"   // Int = days since 1970-01-01
	// KindTimestamp is a TIMESTAMP or TIMESTAMPTZ: Int = microseconds
	// since 1970-01-01 00:00:00 (UTC).
	KindTimestamp ValueKind = "timestamp"
	// KindTime is a TIME: Int = microseconds since midnight.
	KindTime    ValueKind = "time"
	KindDecimal ValueKind = "decimal" // Int = unscaled value, Scale digits after the point
	// KindDecimal128 holds a decimal wider than 64 bits: Str is its unscaled
	// value in decimal digits (statistics of decimal(P>18) columns only).
	KindDecimal128 ValueKind = "decimal128"
)

// Value is a typed constant in a Predicate or a column statistic. It is a
// plain struct so that it serializes to JSON without surprises.
type Value struct {
	Kind  ValueKind `json:"k"`
	Int   int64     `json:"i,omitempty"`
	Scale int32     `json:"s,omitempty"`
	Float float64   `json:"f,omitempty"`
	Str   string    `json:"str,omitempty"`
	Bool  bool      `json:"b,omitempty"`
}

// Int, Float, Str, Bool, Date and Decimal build constants.
func Int(v int64) Value     { return Value{Kind: KindInt, Int: v} }
func Float(v float64) Value { return Value{Kind: KindFloat, Float: v} }
func Str(v string) Value    { return Value{Kind: KindString, Str: v} }
func Bool(v bool) Value     { return Value{Kind: KindBool, Bool: v} }
func Date(days int32) Value { return Value{Kind: KindDate, Int: int64(days)} }

// Timestamp is a timestamp constant of microseconds since 1970-01-01.
func Timestamp(us int64) Value { return Value{Kind: KindTimestamp, Int: us} }

// Time is a time-of-day constant of microseconds since midnight.
func Time(us int64) Value { return Value{Kind: KindTime, Int: us} }
func Decimal(unscaled int64, scale int32) Value {
	return Value{Kind: KindDecimal, Int: unscaled, Scale: scale}
}

// DateOf is the date constant for a calendar day.
func DateOf(y int, m time.Month, d int) Value {
	return Date(int32(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400))
}

// ParseDecimalValue parses "12.34" exactly into Decimal(1234, 2).
func ParseDecimalValue(s string) (Value, error) {
	scale := int32(0)
	if i := strings.IndexByte(s, '.'); i >= 0 {
		scale = int32(len(s) - i - 1)
	}
	v, ok := parseDecimal([]byte(s), scale)
	if !ok {
		return Value{}, nferr.Queryf("invalid decimal constant %q", s)
	}
	return Decimal(v, scale), nil
}

// String prints the value as SQL would write it.
func (v Value) String() string {
	switch v.Kind {
	case KindInt:
		return strconv.FormatInt(v.Int, 10)
	case KindFloat:
		return strconv.FormatFloat(v.Float, 'g', -1, 64)
	case KindString:
		return "'" + strings.ReplaceAll(v.Str, "'", "''") + "'"
	case KindBool:
		return strconv.FormatBool(v.Bool)
	case KindDate:
		return "DATE '" + time.Unix(v.Int*86400, 0).UTC().Format("2006-01-02") + "'"
	case KindTimestamp:
		return "TIMESTAMP '" + string(civil.AppendTimestamp(nil, v.Int, false)) + "'"
	case KindTime:
		return "TIME '" + string(civil.AppendTimeOfDay(nil, v.Int)) + "'"
	case KindDecimal:
		return formatDecimal(v.Int, v.Scale)
	case KindDecimal128:
		return v.Str + "e-" + strconv.Itoa(int(v.Scale))
	}
	return "?"
}

func formatDecimal(u int64, scale int32) string {
	if scale <= 0 {
		return strconv.FormatInt(u, 10)
	}
	neg := u < 0
	var digits string
	if neg {
		digits = new(big.Int).Neg(big.NewInt(u)).String()
	} else {
		digits = strconv.FormatInt(u, 10)
	}
	for len(digits) <= int(scale) {
		digits = "0" + digits
	}
	s := digits[:len(digits)-int(scale)] + "." + digits[len(digits)-int(scale):]
	if neg {
		s = "-" + s
	}
	return s
}

// Op is a predicate operator.
type Op string

// Predicate operators.
const (
	OpAnd       Op = "and"         // Args all true
	OpOr        Op = "or"          // any of Args true
	OpEq        Op = "="           // Column = Values[0]
	OpNe        Op = "<>"          // Column <> Values[0]
	OpLt        Op = "<"           // Column < Values[0]
	OpLe        Op = "<="          // Column <= Values[0]
	OpGt        Op = ">"           // Column > Values[0]
	OpGe        Op = ">="          // Column >= Values[0]
	OpBetween   Op = "between"     // Values[0] <= Column <= Values[1]
	OpIn        Op = "in"          // Column = any of Values
	OpIsNull    Op = "is null"     // Column IS NULL
	OpIsNotNull Op = "is not null" // Column IS NOT NULL
	OpPrefix    Op = "prefix"      // Column LIKE 'Values[0]%' (utf8 only)
)

// Predicate is the small filter language a scan evaluates at the data:
// AND/OR trees of column-vs-constant tests. It has SQL WHERE semantics: a
// row passes only when the predicate is TRUE (a NULL column fails every
// test but IS NULL).
//
// Constants must have the column's type family: int columns take KindInt or
// KindDecimal, decimal columns KindInt or KindDecimal (any scale: a constant
// with more digits than the column is compared exactly), float columns
// KindInt, KindDecimal or KindFloat, date32 KindDate, timestamps
// KindTimestamp, time64 KindTime, utf8 KindString, bool KindBool.
type Predicate struct {
	Op     Op           `json:"op"`
	Column string       `json:"col,omitempty"`
	Values []Value      `json:"vals,omitempty"`
	Args   []*Predicate `json:"args,omitempty"`
}

// And, Or, Cmp, Between, In, IsNull, IsNotNull and Prefix build predicates.
func And(args ...*Predicate) *Predicate { return &Predicate{Op: OpAnd, Args: args} }
func Or(args ...*Predicate) *Predicate  { return &Predicate{Op: OpOr, Args: args} }
func Cmp(col string, op Op, v Value) *Predicate {
	return &Predicate{Op: op, Column: col, Values: []Value{v}}
}
func Between(col string, lo, hi Value) *Predicate {
	return &Predicate{Op: OpBetween, Column: col, Values: []Value{lo, hi}}
}
func In(col string, vs ...Value) *Predicate {
	return &Predicate{Op: OpIn, Column: col, Values: vs}
}
func IsNull(col string) *Predicate    { return &Predicate{Op: OpIsNull, Column: col} }
func IsNotNull(col string) *Predicate { return &Predicate{Op: OpIsNotNull, Column: col} }
func Prefix(col, p string) *Predicate {
	return &Predicate{Op: OpPrefix, Column: col, Values: []Value{Str(p)}}
}

// String prints the predicate in SQL syntax.
func (p *Predicate) String() string {
	if p == nil {
		return "true"
	}
	switch p.Op {
	case OpAnd, OpOr:
		parts := make([]string, len(p.Args))
		for i, a := range p.Args {
			parts[i] = a.String()
			if a != nil && (a.Op == OpAnd || a.Op == OpOr) && a.Op != p.Op {
				parts[i] = "(" + parts[i] + ")"
			}
		}
		return strings.Join(parts, " "+strings.ToUpper(string(p.Op))+" ")
	case OpBetween:
		if len(p.Values) == 2 {
			return fmt.Sprintf("%s BETWEEN %s AND %s", p.Column, p.Values[0], p.Values[1])
		}
	case OpIn:
		vs := make([]string, len(p.Values))
		for i, v := range p.Values {
			vs[i] = v.String()
		}
		return fmt.Sprintf("%s IN (%s)", p.Column, strings.Join(vs, ", "))
	case OpIsNull, OpIsNotNull:
		return p.Column + " " + strings.ToUpper(string(p.Op))
	case OpPrefix:
		if len(p.Values) == 1 {
			return fmt.Sprintf("%s LIKE %s", p.Column, Str(p.Values[0].Str+"%"))
		}
	default:
		if len(p.Values) == 1 {
			return fmt.Sprintf("%s %s %s", p.Column, p.Op, p.Values[0])
		}
	}
	return fmt.Sprintf("<malformed %s>", p.Op)
}

// Columns lists the columns the predicate reads, in first-use order.
func (p *Predicate) Columns() []string {
	var out []string
	seen := map[string]bool{}
	var walk func(*Predicate)
	walk = func(q *Predicate) {
		if q == nil {
			return
		}
		if q.Op == OpAnd || q.Op == OpOr {
			for _, a := range q.Args {
				walk(a)
			}
			return
		}
		k := strings.ToLower(q.Column)
		if !seen[k] {
			seen[k] = true
			out = append(out, q.Column)
		}
	}
	walk(p)
	return out
}

// maxPredicateDepth bounds recursion on untrusted (network) predicates.
const maxPredicateDepth = 64

// ---------------------------------------------------------------------------
// Compiled predicates.

// cnode is a predicate compiled against a table schema: constants are in the
// column's physical representation, and comparisons are normalized.
type cnode struct {
	op   Op
	col  int // index into the scan's vectors (set by the scanner)
	tcol int // index of the column in the table schema (for statistics)
	name string
	typ  arrow.DataType
	kind physKind

	// constFalse / constTrue: the test was decided at compile time (e.g.
	// x = 0.005 on a decimal(15,2) column can never hold).
	constFalse, constTrue bool

	// Ordered kinds: an inclusive range [lo, hi] (for =, <, <=, >, >=,
	// BETWEEN), or a value for <>, or a list for IN.
	i64lo, i64hi int64
	f64lo, f64hi float64
	strlo, strhi string
	strLoStrict  bool // strings keep strictness instead of a successor
	strHiStrict  bool
	hasLo, hasHi bool
	boolv        bool
	d128lo       decimal128.Num
	d128hi       decimal128.Num
	i64set       []int64
	f64set       []float64
	strset       []string
	boolset      []bool
	d128set      []decimal128.Num

	args []*cnode
}

// compilePredicate type-checks p against the schema and resolves columns
// with colIndex (which returns the scanner's vector index of a column).
func compilePredicate(p *Predicate, sch *arrow.Schema, colIndex func(string) (int, bool), depth int) (*cnode, error) {
	if p == nil {
		return nil, nferr.Queryf("predicate: nil node")
	}
	if depth > maxPredicateDepth {
		return nil, nferr.Queryf("predicate nests deeper than %d levels", maxPredicateDepth)
	}
	switch p.Op {
	case OpAnd, OpOr:
		if len(p.Args) == 0 {
			return nil, nferr.Queryf("predicate: %s with no arguments", p.Op)
		}
		n := &cnode{op: p.Op}
		for _, a := range p.Args {
			c, err := compilePredicate(a, sch, colIndex, depth+1)
			if err != nil {
				return nil, err
			}
			n.args = append(n.args, c)
		}
		if n.op == OpAnd {
			n.args = mergeRanges(n.args)
			if len(n.args) == 1 {
				return n.args[0], nil
			}
		}
		return n, nil
	}
	fi := fieldIndex(sch, p.Column)
	if fi < 0 {
		return nil, nferr.Queryf("predicate %s: unknown column %q", p, p.Column)
	}
	f := sch.Field(fi)
	if f.Type.ID() == arrow.LIST {
		return nil, nferr.Queryf("predicate %s: array column %s cannot be filtered in storage (filter above the scan)", p, f.Name)
	}
	vi, ok := colIndex(f.Name)
	if !ok {
		return nil, nferr.Internalf("predicate column %s has no scan vector", f.Name)
	}
	n := &cnode{op: p.Op, col: vi, tcol: fi, name: f.Name, typ: f.Type, kind: kindOf(f.Type)}
	wantVals := map[Op]int{OpEq: 1, OpNe: 1, OpLt: 1, OpLe: 1, OpGt: 1, OpGe: 1, OpBetween: 2, OpPrefix: 1, OpIsNull: 0, OpIsNotNull: 0}
	if want, ok := wantVals[p.Op]; ok {
		if len(p.Values) != want {
			return nil, nferr.Queryf("predicate %s: %s takes %d constant(s), got %d", p.Column, p.Op, want, len(p.Values))
		}
	} else if p.Op == OpIn {
		if len(p.Values) == 0 {
			return nil, nferr.Queryf("predicate %s: IN with an empty list", p.Column)
		}
	} else {
		return nil, nferr.Queryf("predicate: unknown operator %q", p.Op)
	}
	if err := n.setConstants(p); err != nil {
		return nil, err
	}
	return n, nil
}

func fieldIndex(sch *arrow.Schema, name string) int {
	for i, f := range sch.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// bound is one side of a normalized comparison.
type bound struct {
	op Op // OpLe, OpLt, OpGe, OpGt, OpEq
	v  Value
}

func (n *cnode) setConstants(p *Predicate) error {
	switch p.Op {
	case OpIsNull, OpIsNotNull:
		return nil
	case OpPrefix:
		if n.kind != kString {
			return nferr.Queryf("predicate %s: LIKE prefix needs a utf8 column, %s is %s", p, n.name, n.typ)
		}
		if p.Values[0].Kind != KindString {
			return nferr.Queryf("predicate %s: LIKE needs a string pattern", p)
		}
		n.strlo = p.Values[0].Str
		return nil
	case OpIn:
		switch n.kind {
		case kInt32, kInt64:
			n.i64set = slices.Grow(n.i64set, len(p.Values))
		case kFloat64:
			n.f64set = slices.Grow(n.f64set, len(p.Values))
		case kString:
			n.strset = slices.Grow(n.strset, len(p.Values))
		}
		for _, v := range p.Values {
			if err := n.addSetValue(p, v); err != nil {
				return err
			}
		}
		n.sortSets()
		if n.kind != kString && n.kind != kBool && len(n.i64set)+len(n.f64set)+len(n.d128set) == 0 {
			n.constFalse = true // no constant of the list can equal a column value
		}
		return nil
	case OpBetween:
		if err := n.setBound(p, bound{OpGe, p.Values[0]}); err != nil {
			return err
		}
		return n.setBound(p, bound{OpLe, p.Values[1]})
	case OpEq:
		if err := n.setBound(p, bound{OpGe, p.Values[0]}); err != nil {
			return err
		}
		return n.setBound(p, bound{OpLe, p.Values[0]})
	case OpNe:
		// x <> c is kept as a one-element "not in" set.
		if err := n.addSetValue(p, p.Values[0]); err != nil {
			return err
		}
		if n.kind != kString && n.kind != kBool && len(n.i64set)+len(n.f64set)+len(n.d128set) == 0 {
			n.constTrue = true // c is not representable: every non-null x differs
		}
		return nil
	default:
		return n.setBound(p, bound{p.Op, p.Values[0]})
	}
}

// smallSet is the most values of an IN list a test compares one by one; a
// longer list is sorted (and deduplicated) once, at compile time, and
// binary-searched (setHas): a 200,000-value list otherwise cost 100,000
// comparisons a row on average.
const smallSet = 16

// sortSets sorts and deduplicates the IN sets longer than smallSet. NaN
// is dropped from a float set: it equals nothing.
func (n *cnode) sortSets() {
	if len(n.i64set) > smallSet {
		slices.Sort(n.i64set)
		n.i64set = slices.Compact(n.i64set)
	}
	if len(n.f64set) > smallSet {
		n.f64set = slices.DeleteFunc(n.f64set, func(f float64) bool { return f != f })
		slices.Sort(n.f64set)
		n.f64set = slices.Compact(n.f64set)
	}
	if len(n.strset) > smallSet {
		slices.Sort(n.strset)
		n.strset = slices.Compact(n.strset)
	}
	if len(n.d128set) > smallSet {
		slices.SortFunc(n.d128set, func(a, b decimal128.Num) int { return a.Cmp(b) })
		n.d128set = slices.Compact(n.d128set)
	}
}

// setHas reports whether set (an IN set, sorted when longer than
// smallSet) holds v.
func setHas[S int64 | float64](set []S, v S) bool {
	if len(set) > smallSet {
		_, ok := slices.BinarySearch(set, v)
		return ok
	}
	for _, s := range set {
		if s == v {
			return true
		}
	}
	return false
}

func (n *cnode) typeErr(p *Predicate, v Value) error {
	return nferr.Queryf("predicate %s: constant %s (%s) does not match column %s of type %s", p, v, v.Kind, n.name, n.typ)
}

// narrowRange narrows n's range, *lo to *hi (the fields of c's type), by
// the inclusive bound c: an upper bound when op is OpLe, else a lower one
// (setBound has made strict bounds inclusive already).
func narrowRange[T any](n *cnode, op Op, c T, lo, hi *T, less func(a, b T) bool) {
	if op == OpLe {
		if !n.hasHi || less(c, *hi) {
			*hi = c
		}
		n.hasHi = true
	} else {
		if !n.hasLo || less(*lo, c) {
			*lo = c
		}
		n.hasLo = true
	}
}

// lessThan is the < of an ordered type (cmp.Less orders NaN first instead).
func lessThan[T int64 | float64](a, b T) bool { return a < b }

// scaledConst converts an int or decimal constant to the unscaled integer at
// column scale s. exact is false when the constant has digits the column
// cannot hold; then floor is the largest representable value below it.
func scaledConst(v Value, s int32) (floor int64, exact bool, ok bool) {
	var u int64
	var vs int32
	switch v.Kind {
	case KindInt:
		u, vs = v.Int, 0
	case KindDecimal:
		u, vs = v.Int, v.Scale
	default:
		return 0, false, false
	}
	if vs == s {
		return u, true, true // NB: no big.Int for the common case (IN lists)
	}
	if vs <= s {
		b := new(big.Int).Mul(big.NewInt(u), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s-vs)), nil))
		if !b.IsInt64() {
			return 0, false, false
		}
		return b.Int64(), true, true
	}
	div := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(vs-s)), nil)
	q, m := new(big.Int).DivMod(big.NewInt(u), div, new(big.Int)) // Euclidean: floor for positive div
	return q.Int64(), m.Sign() == 0, true
}

// temporalKind is the Value kind of a date, timestamp or time column's
// constants.
func temporalKind(t arrow.DataType) ValueKind {
	switch t.ID() {
	case arrow.TIMESTAMP:
		return KindTimestamp
	case arrow.TIME64:
		return KindTime
	}
	return KindDate
}

// isTemporalCol reports a date, timestamp or time column: its constants
// are of its own kind (temporalKind), compared as integers.
func isTemporalCol(t arrow.DataType) bool {
	return t.ID() == arrow.DATE32 || t.ID() == arrow.TIMESTAMP || t.ID() == arrow.TIME64
}

func (n *cnode) setBound(p *Predicate, b bound) error {
	v := b.v
	switch n.kind {
	case kInt32, kInt64:
		var c int64
		switch {
		case isTemporalCol(n.typ):
			if v.Kind != temporalKind(n.typ) {
				return n.typeErr(p, v)
			}
			c = v.Int
			if b.op == OpLt {
				b.op, c = OpLe, c-1
			} else if b.op == OpGt {
				b.op, c = OpGe, c+1
			}
		default:
			floor, exact, ok := scaledConst(v, decimalScale(n.typ))
			if !ok {
				if v.Kind == KindInt || v.Kind == KindDecimal {
					return nferr.Queryf("predicate %s: constant %s overflows column %s of type %s", p, v, n.name, n.typ)
				}
				return n.typeErr(p, v)
			}
			// Normalize to inclusive bounds on the column's integer grid.
			switch b.op {
			case OpLe:
				c = floor // x <= v  <=>  x <= floor(v)
			case OpLt:
				if exact {
					c = floor - 1
				} else {
					c = floor
				}
				b.op = OpLe
			case OpGe:
				if exact {
					c = floor
				} else {
					c = floor + 1 // x >= v  <=>  x >= ceil(v)
				}
			case OpGt:
				c = floor + 1
				b.op = OpGe
			}
		}
		if n.kind == kInt32 {
			if c < math.MinInt32 {
				c = math.MinInt32 - 1
			} else if c > math.MaxInt32 {
				c = math.MaxInt32 + 1
			}
		}
		narrowRange(n, b.op, c, &n.i64lo, &n.i64hi, lessThan[int64])
	case kFloat64:
		var c float64
		switch v.Kind {
		case KindFloat:
			c = v.Float
		case KindInt:
			c = float64(v.Int)
		case KindDecimal:
			c, _ = strconv.ParseFloat(formatDecimal(v.Int, v.Scale), 64)
		default:
			return n.typeErr(p, v)
		}
		switch b.op {
		case OpLt:
			c, b.op = math.Nextafter(c, math.Inf(-1)), OpLe
		case OpGt:
			c, b.op = math.Nextafter(c, math.Inf(1)), OpGe
		}
		narrowRange(n, b.op, c, &n.f64lo, &n.f64hi, lessThan[float64])
	case kString:
		if v.Kind != KindString {
			return n.typeErr(p, v)
		}
		switch b.op {
		case OpLe, OpLt:
			if !n.hasHi || v.Str < n.strhi || (v.Str == n.strhi && b.op == OpLt) {
				n.strhi, n.strHiStrict = v.Str, b.op == OpLt
			}
			n.hasHi = true
		default:
			if !n.hasLo || v.Str > n.strlo || (v.Str == n.strlo && b.op == OpGt) {
				n.strlo, n.strLoStrict = v.Str, b.op == OpGt
			}
			n.hasLo = true
		}
	case kBool:
		if v.Kind != KindBool {
			return n.typeErr(p, v)
		}
		// false < true: map to 0/1 and reuse the integer range.
		c := int64(0)
		if v.Bool {
			c = 1
		}
		switch b.op {
		case OpLt:
			b.op, c = OpLe, c-1
		case OpGt:
			b.op, c = OpGe, c+1
		}
		narrowRange(n, b.op, c, &n.i64lo, &n.i64hi, lessThan[int64])
	case kDec128:
		if v.Kind != KindInt && v.Kind != KindDecimal {
			return n.typeErr(p, v)
		}
		s := decimalScale(n.typ)
		u, vs := v.Int, int32(0)
		if v.Kind == KindDecimal {
			vs = v.Scale
		}
		num := decimal128.FromI64(u)
		var exact = true
		if vs <= s {
			num = num.IncreaseScaleBy(s - vs)
		} else {
			q, r := num.Div(decimal128.FromI64(1).IncreaseScaleBy(vs - s))
			if r.Sign() != 0 {
				exact = false
				if num.Sign() < 0 {
					q = q.Sub(decimal128.FromI64(1)) // floor
				}
			}
			num = q
		}
		one := decimal128.FromI64(1)
		switch b.op {
		case OpLt:
			if exact {
				num = num.Sub(one)
			}
			b.op = OpLe
		case OpGt:
			num, b.op = num.Add(one), OpGe
		case OpGe:
			if !exact {
				num = num.Add(one)
			}
		}
		narrowRange(n, b.op, num, &n.d128lo, &n.d128hi, decimal128.Num.Less)
	}
	if !n.hasLo {
		n.setMinLo()
	}
	if !n.hasHi {
		n.setMaxHi()
	}
	return nil
}

// setMinLo / setMaxHi fill the open side of a range so that the hot loops
// always test both bounds.
func (n *cnode) setMinLo() {
	switch n.kind {
	case kInt32:
		n.i64lo = math.MinInt32
	case kInt64, kBool:
		n.i64lo = math.MinInt64
	case kFloat64:
		n.f64lo = math.Inf(-1)
	case kDec128:
		n.d128lo = decimal128.MaxDecimal128.Negate()
	}
}

func (n *cnode) setMaxHi() {
	switch n.kind {
	case kInt32:
		n.i64hi = math.MaxInt32
	case kInt64, kBool:
		n.i64hi = math.MaxInt64
	case kFloat64:
		n.f64hi = math.Inf(1)
	case kDec128:
		n.d128hi = decimal128.MaxDecimal128
	}
}

func (n *cnode) addSetValue(p *Predicate, v Value) error {
	switch n.kind {
	case kInt32, kInt64:
		if isTemporalCol(n.typ) {
			if v.Kind != temporalKind(n.typ) {
				return n.typeErr(p, v)
			}
			n.i64set = append(n.i64set, v.Int)
			return nil
		}
		floor, exact, ok := scaledConst(v, decimalScale(n.typ))
		if !ok {
			if v.Kind == KindInt || v.Kind == KindDecimal {
				return nil // cannot equal any column value
			}
			return n.typeErr(p, v)
		}
		if exact && (n.kind == kInt64 || (floor >= math.MinInt32 && floor <= math.MaxInt32)) {
			n.i64set = append(n.i64set, floor)
		}
	case kFloat64:
		switch v.Kind {
		case KindFloat:
			n.f64set = append(n.f64set, v.Float)
		case KindInt:
			n.f64set = append(n.f64set, float64(v.Int))
		case KindDecimal:
			f, _ := strconv.ParseFloat(formatDecimal(v.Int, v.Scale), 64)
			n.f64set = append(n.f64set, f)
		default:
			return n.typeErr(p, v)
		}
	case kString:
		if v.Kind != KindString {
			return n.typeErr(p, v)
		}
		n.strset = append(n.strset, v.Str)
	case kBool:
		if v.Kind != KindBool {
			return n.typeErr(p, v)
		}
		n.boolset = append(n.boolset, v.Bool)
	case kDec128:
		if v.Kind != KindInt && v.Kind != KindDecimal {
			return n.typeErr(p, v)
		}
		s := decimalScale(n.typ)
		vs := v.Scale
		if v.Kind == KindInt {
			vs = 0
		}
		num := decimal128.FromI64(v.Int)
		if vs <= s {
			n.d128set = append(n.d128set, num.IncreaseScaleBy(s-vs))
		} else if q, r := num.Div(decimal128.FromI64(1).IncreaseScaleBy(vs - s)); r.Sign() == 0 {
			n.d128set = append(n.d128set, q)
		}
	}
	return nil
}

// rangeEmpty reports a range that no value satisfies.
func (n *cnode) rangeEmpty() bool {
	switch n.kind {
	case kInt32, kInt64, kBool:
		return n.i64lo > n.i64hi
	case kFloat64:
		return n.f64lo > n.f64hi
	case kString:
		return n.hasLo && n.hasHi && (n.strlo > n.strhi || (n.strlo == n.strhi && (n.strLoStrict || n.strHiStrict)))
	case kDec128:
		return n.d128hi.Less(n.d128lo)
	}
	return false
}

func isRangeOp(op Op) bool {
	switch op {
	case OpEq, OpLt, OpLe, OpGt, OpGe, OpBetween:
		return true
	}
	return false
}

// ---------------------------------------------------------------------------
// Serialization (ScanSpec travels in Flight tickets).

// MarshalPredicate encodes p as JSON.
func MarshalPredicate(p *Predicate) ([]byte, error) { return json.Marshal(p) }

// UnmarshalPredicate decodes and sanity-checks a predicate from untrusted
// bytes (structure only; types are checked when a scan compiles it).
func UnmarshalPredicate(b []byte) (*Predicate, error) {
	var p Predicate
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, nferr.Dataf("malformed predicate: %v", err)
	}
	if err := p.check(0); err != nil {
		return nil, err
	}
	return &p, nil
}

func (p *Predicate) check(depth int) error {
	if p == nil {
		return nferr.Dataf("malformed predicate: null node")
	}
	if depth > maxPredicateDepth {
		return nferr.Dataf("malformed predicate: nests deeper than %d levels", maxPredicateDepth)
	}
	switch p.Op {
	case OpAnd, OpOr:
		if len(p.Args) == 0 {
			return nferr.Dataf("malformed predicate: %s with no arguments", p.Op)
		}
		for _, a := range p.Args {
			if err := a.check(depth + 1); err != nil {
				return err
			}
		}
		return nil
	case OpEq, OpNe, OpLt, OpLe, OpGt, OpGe, OpBetween, OpIn, OpIsNull, OpIsNotNull, OpPrefix:
		if p.Column == "" {
			return nferr.Dataf("malformed predicate: %s without a column", p.Op)
		}
		for _, v := range p.Values {
			switch v.Kind {
			case KindInt, KindFloat, KindString, KindBool, KindDate, KindTimestamp, KindTime, KindDecimal:
			default:
				return nferr.Dataf("malformed predicate: constant of unknown kind %q", v.Kind)
			}
			if v.Kind == KindDecimal && (v.Scale < 0 || v.Scale > 38) {
				return nferr.Dataf("malformed predicate: decimal scale %d out of range", v.Scale)
			}
		}
		return nil
	}
	return nferr.Dataf("malformed predicate: unknown operator %q", p.Op)
}

// mergeRanges intersects the range tests of an AND that read the same
// integer or float column (x >= a AND x < b becomes one pass over x).
func mergeRanges(args []*cnode) []*cnode {
	out := args[:0:0]
	seen := map[int]*cnode{}
	for _, a := range args {
		mergeable := isRangeOp(a.op) && !a.constFalse && !a.constTrue &&
			(a.kind == kInt32 || a.kind == kInt64 || a.kind == kFloat64)
		if !mergeable {
			out = append(out, a)
			continue
		}
		if m, ok := seen[a.col]; ok {
			m.i64lo, m.i64hi = max(m.i64lo, a.i64lo), min(m.i64hi, a.i64hi)
			m.f64lo, m.f64hi = max(m.f64lo, a.f64lo), min(m.f64hi, a.f64hi)
			m.hasLo, m.hasHi = m.hasLo || a.hasLo, m.hasHi || a.hasHi
			continue
		}
		c := *a
		c.op = OpBetween // a normalized inclusive range
		seen[a.col] = &c
		out = append(out, &c)
	}
	return out
}
