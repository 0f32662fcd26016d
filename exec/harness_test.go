package exec

// The shared operator test harness.
//
// Every operator test in package exec runs through RunOpTest, which executes
// the operator over many physical layouts of the same logical input and
// compares the output with a row-at-a-time reference written in the test.
//
// Row values ([]any cells) use one Go type per column type:
//
//	int32 -> int32        int64 -> int64        float64 -> float64
//	bool -> bool          utf8 -> string        date32 -> arrow.Date32
//	decimal64/128 -> Dec  interval (month_day_nano) -> arrow.MonthDayNanoInterval
//	NULL -> nil
//
// Rows given to the harness (HarnessInput.Rows, MakeRecord) may be written
// loosely: int for any integer column, "1994-01-01" for a date, "12.34" or
// Dec for a decimal. The harness canonicalizes them (round trip through
// Arrow) before calling the reference, so references always see the types
// above.
//
// API:
//
//	RunOpTest(t, OpTest{...})         run one operator test in every configuration
//	OpTest.Inputs []HarnessInput      one per source operator (joins: left, right)
//	OpTest.Build(in []Operator)       build the operator under test over the sources
//	OpTest.Ref(in [][][]any)          expected rows (or an error: the operator must
//	                                  then fail with the same nferr kind and a message
//	                                  containing the reference error's message)
//	OpTest.Ordered                    compare in order, else as multisets
//
//	RandomRows(rng, schema, n, GenOpts{NullProb, Distinct, Range, StrLen, Col})
//	MakeRecord(t, mem, schema, rows)  rows -> arrow.RecordBatch (allocated from mem)
//	BatchRows(b) / CollectRows(env, op) operator output -> [][]any (live rows only)
//	ArrayValue(arr, i)                one cell as a row value
//	AssertRowsEqual(t, got, want, ordered)  decimal-, float- and NULL-aware comparison
//	ValuesEqual(a, b) / CompareValues(a, b) cell equality and a total order
//	D("12.34"), DecU(1234, 2)         decimal row values
//	NewTestEnv(mem)                   an Env over a checked allocator
//
// Configurations RunOpTest runs (each with a fresh
// memory.NewCheckedAllocator that must end at zero bytes, a fresh Budget that
// must end at zero used bytes, and sources that must all be closed by the
// operator's Close):
//
//   - batch sizes 1, 7, 1024 and 65536 rows (OpTest.BatchSizes overrides);
//     Env.BatchSize is set to the same value;
//   - three layouts of every source batch: dense (no Sel), selected (the
//     live rows are scattered in a larger physical batch whose other rows
//     are "poison": zeros, extreme values, NULLs, bad strings, and Sel lists
//     the live rows), and sliced (arrays with a non-zero Arrow offset);
//   - the input as given, and again with NULLs injected into nullable columns
//     (unless NoNullInjection);
//   - after a full run and Close, a rebuilt operator must give the same rows;
//   - Close before Open, Close twice, Next after end of stream;
//   - cancellation: after the context is canceled, Next never returns another
//     batch and fails with KindCanceled (or reports end of stream).
//
// Every batch is checked against the Operator contract: Len() > 0, one array
// per schema field of the schema's type, each of length N, Sel strictly
// ascending within [0, N).

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/nicflow/nicflow/internal/nferr"
)

// ---------------------------------------------------------------- decimals

// Dec is a decimal row value: U * 10^-S. Equality (ValuesEqual) is numeric:
// 1.50 equals 1.5.
type Dec struct {
	U *big.Int
	S int32
}

// D parses a decimal literal such as "-12.340"; the scale is the number of
// digits after the point. It panics on bad input (tests only).
func D(s string) Dec {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	var scale int32
	if i := strings.IndexByte(s, '.'); i >= 0 {
		scale = int32(len(s) - i - 1)
		s = s[:i] + s[i+1:]
	}
	u, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic("bad decimal " + s)
	}
	if neg {
		u.Neg(u)
	}
	return Dec{U: u, S: scale}
}

// DecU is the decimal u * 10^-s.
func DecU(u int64, s int32) Dec { return Dec{U: big.NewInt(u), S: s} }

func pow10Big(n int32) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

// Rescale returns d at scale s, rounding half away from zero when s is
// smaller than d's scale.
func (d Dec) Rescale(s int32) Dec {
	switch {
	case s == d.S:
		return d
	case s > d.S:
		return Dec{U: new(big.Int).Mul(d.U, pow10Big(s-d.S)), S: s}
	}
	div := pow10Big(d.S - s)
	q, r := new(big.Int).QuoRem(d.U, div, new(big.Int))
	r.Abs(r).Mul(r, big.NewInt(2))
	if r.Cmp(div) >= 0 {
		if d.U.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return Dec{U: q, S: s}
}

// Cmp compares d and e numerically.
func (d Dec) Cmp(e Dec) int {
	s := max(d.S, e.S)
	return d.Rescale(s).U.Cmp(e.Rescale(s).U)
}

// Add returns d+e at scale max(d.S, e.S).
func (d Dec) Add(e Dec) Dec {
	s := max(d.S, e.S)
	return Dec{U: new(big.Int).Add(d.Rescale(s).U, e.Rescale(s).U), S: s}
}

// Sub returns d-e at scale max(d.S, e.S).
func (d Dec) Sub(e Dec) Dec {
	s := max(d.S, e.S)
	return Dec{U: new(big.Int).Sub(d.Rescale(s).U, e.Rescale(s).U), S: s}
}

// Mul returns d*e at scale d.S+e.S.
func (d Dec) Mul(e Dec) Dec { return Dec{U: new(big.Int).Mul(d.U, e.U), S: d.S + e.S} }

// Float64 converts d to the nearest float64.
func (d Dec) Float64() float64 {
	f, _ := new(big.Rat).SetFrac(d.U, pow10Big(d.S)).Float64()
	return f
}

func (d Dec) String() string {
	if d.U == nil {
		return "<nil Dec>"
	}
	s := new(big.Int).Abs(d.U).String()
	if d.S > 0 {
		if len(s) <= int(d.S) {
			s = strings.Repeat("0", int(d.S)-len(s)+1) + s
		}
		s = s[:len(s)-int(d.S)] + "." + s[len(s)-int(d.S):]
	}
	if d.U.Sign() < 0 {
		s = "-" + s
	}
	return s
}

// ------------------------------------------------------- rows <-> arrow

// ArrayValue returns cell i of arr as a row value (nil for NULL).
func ArrayValue(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.Date32:
		return a.Value(i)
	case *array.Decimal64:
		return Dec{U: big.NewInt(int64(a.Value(i))), S: a.DataType().(*arrow.Decimal64Type).Scale}
	case *array.Decimal128:
		return Dec{U: a.Value(i).BigInt(), S: a.DataType().(*arrow.Decimal128Type).Scale}
	case *array.MonthDayNanoInterval:
		return a.Value(i)
	case *array.Null:
		return nil
	case *array.List:
		// An array's elements ([]any).
		lo, hi := a.ValueOffsets(i)
		out := make([]any, 0, hi-lo)
		for j := lo; j < hi; j++ {
			out = append(out, ArrayValue(a.ListValues(), int(j)))
		}
		return out
	}
	panic(fmt.Sprintf("ArrayValue: unsupported array type %s", arr.DataType()))
}

// BatchRows returns the live rows of b.
func BatchRows(b *Batch) [][]any {
	rows := make([][]any, 0, b.Len())
	add := func(i int) {
		row := make([]any, len(b.Cols))
		for c, col := range b.Cols {
			row[c] = ArrayValue(col, i)
		}
		rows = append(rows, row)
	}
	if b.Sel == nil {
		for i := 0; i < b.N; i++ {
			add(i)
		}
	} else {
		for _, i := range b.Sel {
			add(int(i))
		}
	}
	return rows
}

// CollectRows opens op, drains it and closes it, returning all live rows.
func CollectRows(env *Env, op Operator) (rows [][]any, err error) {
	defer func() {
		if cerr := op.Close(); err == nil {
			err = cerr
		}
	}()
	if err := op.Open(env); err != nil {
		return nil, err
	}
	for {
		b, err := op.Next()
		if err != nil {
			return rows, err
		}
		if b == nil {
			return rows, nil
		}
		rows = append(rows, BatchRows(b)...)
	}
}

// appendValue appends row value v (loosely typed, see the file comment) to
// builder bld of type dt.
func appendValue(bld array.Builder, dt arrow.DataType, v any) error {
	if v == nil {
		bld.AppendNull()
		return nil
	}
	switch b := bld.(type) {
	case *array.Int32Builder:
		x, ok := toInt64(v)
		if !ok || x != int64(int32(x)) {
			return fmt.Errorf("value %v (%T) is not an int32", v, v)
		}
		b.Append(int32(x))
	case *array.Int64Builder:
		x, ok := toInt64(v)
		if !ok {
			return fmt.Errorf("value %v (%T) is not an int64", v, v)
		}
		b.Append(x)
	case *array.Float64Builder:
		switch x := v.(type) {
		case float64:
			b.Append(x)
		case int:
			b.Append(float64(x))
		default:
			return fmt.Errorf("value %v (%T) is not a float64", v, v)
		}
	case *array.BooleanBuilder:
		x, ok := v.(bool)
		if !ok {
			return fmt.Errorf("value %v (%T) is not a bool", v, v)
		}
		b.Append(x)
	case *array.StringBuilder:
		x, ok := v.(string)
		if !ok {
			return fmt.Errorf("value %v (%T) is not a string", v, v)
		}
		b.Append(x)
	case *array.Date32Builder:
		switch x := v.(type) {
		case arrow.Date32:
			b.Append(x)
		case string:
			d, err := expr.ParseDate(x)
			if err != nil {
				return err
			}
			b.Append(arrow.Date32(d))
		default:
			return fmt.Errorf("value %v (%T) is not a date", v, v)
		}
	case *array.Decimal64Builder:
		d, err := toDec(v, dt.(*arrow.Decimal64Type).Scale)
		if err != nil {
			return err
		}
		if !d.U.IsInt64() {
			return fmt.Errorf("value %v does not fit decimal64", v)
		}
		b.Append(decimal.Decimal64(d.U.Int64()))
	case *array.Decimal128Builder:
		d, err := toDec(v, dt.(*arrow.Decimal128Type).Scale)
		if err != nil {
			return err
		}
		b.Append(decimal128.FromBigInt(d.U))
	case *array.MonthDayNanoIntervalBuilder:
		x, ok := v.(arrow.MonthDayNanoInterval)
		if !ok {
			return fmt.Errorf("value %v (%T) is not an interval", v, v)
		}
		b.Append(x)
	default:
		return fmt.Errorf("unsupported column type %s", dt)
	}
	return nil
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// toDec converts a loosely typed decimal value to scale s exactly.
func toDec(v any, s int32) (Dec, error) {
	var d Dec
	switch x := v.(type) {
	case Dec:
		d = x
	case string:
		d = D(x)
	case int:
		d = DecU(int64(x), 0)
	case int64:
		d = DecU(x, 0)
	default:
		return Dec{}, fmt.Errorf("value %v (%T) is not a decimal", v, v)
	}
	if d.S > s {
		if r := d.Rescale(s); r.Cmp(d) != 0 {
			return Dec{}, fmt.Errorf("decimal %v does not fit scale %d", d, s)
		}
	}
	return d.Rescale(s), nil
}

// MakeRecord builds a record batch of schema from rows, allocating from mem.
func MakeRecord(t testing.TB, mem memory.Allocator, schema *arrow.Schema, rows [][]any) arrow.RecordBatch {
	t.Helper()
	rec, err := makeRecord(mem, schema, rows)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func makeRecord(mem memory.Allocator, schema *arrow.Schema, rows [][]any) (arrow.RecordBatch, error) {
	bld := array.NewRecordBuilder(mem, schema)
	defer bld.Release()
	for r, row := range rows {
		if len(row) != schema.NumFields() {
			return nil, fmt.Errorf("row %d has %d values, schema has %d columns", r, len(row), schema.NumFields())
		}
		for c, v := range row {
			if err := appendValue(bld.Field(c), schema.Field(c).Type, v); err != nil {
				return nil, fmt.Errorf("row %d column %d (%s): %v", r, c, schema.Field(c).Name, err)
			}
		}
	}
	return bld.NewRecordBatch(), nil
}

// canonicalRows round-trips rows through Arrow so every value has its
// canonical row type.
func canonicalRows(t testing.TB, schema *arrow.Schema, rows [][]any) [][]any {
	t.Helper()
	rec := MakeRecord(t, memory.NewGoAllocator(), schema, rows)
	defer rec.Release()
	return BatchRows(&Batch{Cols: rec.Columns(), N: int(rec.NumRows())})
}

// ------------------------------------------------------------ comparison

// typeRank orders row values of different Go types (NULL first).
func typeRank(v any) int {
	switch v.(type) {
	case nil:
		return 0
	case bool:
		return 1
	case int32:
		return 2
	case int64:
		return 3
	case float64:
		return 4
	case Dec:
		return 5
	case arrow.Date32:
		return 6
	case string:
		return 7
	case arrow.MonthDayNanoInterval:
		return 8
	}
	return 9
}

// CompareValues is a total order on row values: NULL first, then by type,
// then by value (decimals numerically, NaN after all other floats).
func CompareValues(a, b any) int {
	ra, rb := typeRank(a), typeRank(b)
	if ra != rb {
		return cmpInt(ra, rb)
	}
	switch x := a.(type) {
	case nil:
		return 0
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case int32:
		return cmpInt(x, b.(int32))
	case int64:
		return cmpInt(x, b.(int64))
	case float64:
		y := b.(float64)
		switch {
		case math.IsNaN(x) && math.IsNaN(y):
			return 0
		case math.IsNaN(x):
			return 1
		case math.IsNaN(y):
			return -1
		}
		return cmpInt(x, y)
	case Dec:
		return x.Cmp(b.(Dec))
	case arrow.Date32:
		return cmpInt(x, b.(arrow.Date32))
	case string:
		return strings.Compare(x, b.(string))
	case arrow.MonthDayNanoInterval:
		y := b.(arrow.MonthDayNanoInterval)
		if c := cmpInt(x.Months, y.Months); c != 0 {
			return c
		}
		if c := cmpInt(x.Days, y.Days); c != 0 {
			return c
		}
		return cmpInt(x.Nanoseconds, y.Nanoseconds)
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

func cmpInt[T int | int32 | int64 | float64 | arrow.Date32](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ValuesEqual reports whether two row values are equal: decimals
// numerically, floats within a relative 1e-9 (sums in another order), NaN
// equal to NaN, NULL equal to NULL.
func ValuesEqual(a, b any) bool {
	if fa, ok := a.(float64); ok {
		fb, ok := b.(float64)
		if !ok {
			return false
		}
		if math.IsNaN(fa) || math.IsNaN(fb) {
			return math.IsNaN(fa) && math.IsNaN(fb)
		}
		if fa == fb {
			return true
		}
		return math.Abs(fa-fb) <= 1e-9*math.Max(math.Abs(fa), math.Abs(fb))
	}
	return CompareValues(a, b) == 0 && typeRank(a) == typeRank(b)
}

func compareRows(a, b []any) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := CompareValues(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmpInt(len(a), len(b))
}

func rowsEqual(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !ValuesEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

func fmtRow(r []any) string {
	parts := make([]string, len(r))
	for i, v := range r {
		switch x := v.(type) {
		case nil:
			parts[i] = "NULL"
		case string:
			parts[i] = fmt.Sprintf("%q", x)
		case arrow.Date32:
			parts[i] = expr.FormatDate(int32(x))
		default:
			parts[i] = fmt.Sprint(x)
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// diffRows returns "" when got equals want (in order when ordered, else as
// multisets), or a description of the first differences.
func diffRows(got, want [][]any, ordered bool) string {
	if !ordered {
		got = sortedRows(got)
		want = sortedRows(want)
	}
	var sb strings.Builder
	if len(got) != len(want) {
		fmt.Fprintf(&sb, "got %d rows, want %d\n", len(got), len(want))
	}
	shown := 0
	for i := 0; i < max(len(got), len(want)) && shown < 8; i++ {
		var g, w []any
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) && i < len(want) && rowsEqual(g, w) {
			continue
		}
		shown++
		gs, ws := "-", "-"
		if i < len(got) {
			gs = fmtRow(g)
		}
		if i < len(want) {
			ws = fmtRow(w)
		}
		fmt.Fprintf(&sb, "row %d: got %s, want %s\n", i, gs, ws)
	}
	return sb.String()
}

func sortedRows(rows [][]any) [][]any {
	s := append([][]any(nil), rows...)
	sort.SliceStable(s, func(i, j int) bool { return compareRows(s[i], s[j]) < 0 })
	return s
}

// AssertRowsEqual fails t unless got equals want (in order when ordered,
// else as multisets).
func AssertRowsEqual(t testing.TB, got, want [][]any, ordered bool) {
	t.Helper()
	if d := diffRows(got, want, ordered); d != "" {
		t.Fatalf("rows differ:\n%s", d)
	}
}

// ------------------------------------------------------ random generation

// GenOpts controls RandomRows.
type GenOpts struct {
	// NullProb is the probability that a cell of a nullable field is NULL.
	NullProb float64
	// Distinct > 0 draws every cell from Distinct values per column (so joins
	// and groups collide); 0 draws from [-Range, Range].
	Distinct int
	// Range bounds the integer behind each value (int value, unscaled
	// decimal, days after 2000-01-01, float*4); default 1000.
	Range int64
	// StrLen is the maximum length in characters of a random string
	// (default 8).
	StrLen int
	// Col overrides the generator of column i (NullProb still applies).
	Col map[int]func(r *rand.Rand) any
}

// strAlphabet mixes ASCII, LIKE metacharacters and multi-byte UTF-8 so
// string functions meet all of them.
var strAlphabet = []rune("aAbBcxyzZ09 _%\\é日")

// RandomRows returns n random rows of schema.
func RandomRows(r *rand.Rand, schema *arrow.Schema, n int, o GenOpts) [][]any {
	rows := make([][]any, n)
	for i := range rows {
		row := make([]any, schema.NumFields())
		for c := range row {
			f := schema.Field(c)
			if f.Nullable && o.NullProb > 0 && r.Float64() < o.NullProb {
				continue
			}
			if g := o.Col[c]; g != nil {
				row[c] = g(r)
				continue
			}
			row[c] = RandomValue(r, f.Type, o)
		}
		rows[i] = row
	}
	return rows
}

// RandomValue returns one random non-NULL value of type dt.
func RandomValue(r *rand.Rand, dt arrow.DataType, o GenOpts) any {
	var k int64
	if o.Distinct > 0 {
		k = int64(r.IntN(o.Distinct))
	} else {
		rg := o.Range
		if rg <= 0 {
			rg = 1000
		}
		k = r.Int64N(2*rg+1) - rg
	}
	switch t := dt.(type) {
	case *arrow.Int32Type:
		return int32(k)
	case *arrow.Int64Type:
		return k
	case *arrow.Float64Type:
		return float64(k) / 4
	case *arrow.BooleanType:
		return k&1 == 0
	case *arrow.StringType:
		if o.Distinct > 0 {
			return fmt.Sprintf("v%d", k)
		}
		maxLen := o.StrLen
		if maxLen <= 0 {
			maxLen = 8
		}
		rs := make([]rune, r.IntN(maxLen+1))
		for i := range rs {
			rs[i] = strAlphabet[r.IntN(len(strAlphabet))]
		}
		return string(rs)
	case *arrow.Date32Type:
		return arrow.Date32(10957 + k) // 10957 = 2000-01-01
	case *arrow.Decimal64Type:
		return DecU(clampDigits(k, t.Precision), t.Scale)
	case *arrow.Decimal128Type:
		return DecU(clampDigits(k, t.Precision), t.Scale)
	case *arrow.MonthDayNanoIntervalType:
		return arrow.MonthDayNanoInterval{Months: int32(k % 25), Days: int32(k % 40)}
	}
	panic(fmt.Sprintf("RandomValue: unsupported type %s", dt))
}

func clampDigits(k int64, prec int32) int64 {
	if prec >= 18 {
		return k
	}
	lim := int64(1)
	for i := int32(0); i < prec; i++ {
		lim *= 10
	}
	return k % lim
}

// poisonValue returns a value meant to break operators that look at rows
// outside the selection: zero divisors, extremes that overflow, NaN, strings
// that do not parse.
func poisonValue(r *rand.Rand, dt arrow.DataType) any {
	if r.IntN(4) == 0 {
		return nil
	}
	pick := r.IntN(3)
	switch t := dt.(type) {
	case *arrow.Int32Type:
		return [...]int32{0, math.MaxInt32, math.MinInt32}[pick]
	case *arrow.Int64Type:
		return [...]int64{0, math.MaxInt64, math.MinInt64}[pick]
	case *arrow.Float64Type:
		return [...]float64{0, math.NaN(), math.Inf(-1)}[pick]
	case *arrow.BooleanType:
		return pick == 0
	case *arrow.StringType:
		return [...]string{"", "not a number", "%_\\"}[pick]
	case *arrow.Date32Type:
		return [...]arrow.Date32{0, arrow.Date32(expr.MaxDate), arrow.Date32(expr.MinDate)}[pick]
	case *arrow.Decimal64Type:
		m := new(big.Int).Sub(pow10Big(min(t.Precision, 18)), big.NewInt(1))
		return [...]Dec{DecU(0, t.Scale), {U: m, S: t.Scale}, {U: new(big.Int).Neg(m), S: t.Scale}}[pick]
	case *arrow.Decimal128Type:
		m := new(big.Int).Sub(pow10Big(t.Precision), big.NewInt(1))
		return [...]Dec{DecU(0, t.Scale), {U: m, S: t.Scale}, {U: new(big.Int).Neg(m), S: t.Scale}}[pick]
	case *arrow.MonthDayNanoIntervalType:
		return arrow.MonthDayNanoInterval{Months: [...]int32{0, math.MaxInt32, math.MinInt32}[pick]}
	}
	return nil
}

// ------------------------------------------------------------ the runner

// HarnessInput is one input of an operator test.
type HarnessInput struct {
	Schema *arrow.Schema
	Rows   [][]any
}

// OpTest describes one operator test for RunOpTest.
type OpTest struct {
	Name   string
	Inputs []HarnessInput
	// Build builds the operator under test over the given sources (one per
	// input, in order). The operator owns them: its Close must close them.
	Build func(in []Operator) (Operator, error)
	// Ref returns the expected output rows for the given (canonical) input
	// rows, or the error the operator must fail with.
	Ref func(in [][][]any) ([][]any, error)
	// Ordered compares rows in order; otherwise as multisets.
	Ordered bool
	// BatchSizes overrides the default batch sizes {1, 7, 1024, 65536}.
	BatchSizes []int
	// NoNullInjection skips the configurations with injected NULLs.
	NoNullInjection bool
	// NullInjectProb is the probability of injecting a NULL into a cell of a
	// nullable column (default 0.15).
	NullInjectProb float64
	// NoCancel skips the cancellation check (operators that legitimately
	// produce their output without pulling from their inputs again).
	NoCancel bool
	// Seed seeds layouts and null injection (default: fixed per test name).
	Seed uint64
	// Budget, when positive, is the memory budget of every run (tiny ones
	// force spilling).
	Budget int64
	// Spill gives every run a spill space in a temporary directory and
	// checks that every file is gone after Close; SpillRuns counts the runs
	// that spilled.
	Spill     bool
	SpillRuns *int
}

type layout int

const (
	layoutDense layout = iota
	layoutSel
	layoutSliced
)

func (l layout) String() string { return [...]string{"dense", "sel", "sliced"}[l] }

// DefaultBatchSizes are the batch sizes RunOpTest runs by default.
var DefaultBatchSizes = []int{1, 7, 1024, 65536}

// NewTestEnv returns an Env over mem with a 16 GiB budget (large enough to
// never trigger, so Used() can be checked for leaks), DefaultBatchSize and
// two pipelines.
func NewTestEnv(mem memory.Allocator) *Env {
	return &Env{Ctx: context.Background(), Alloc: mem, Budget: NewBudget(16 << 30), BatchSize: DefaultBatchSize, Parallelism: 2}
}

func seedOf(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

// RunOpTest runs tc in every configuration listed in the file comment.
func RunOpTest(t *testing.T, tc OpTest) {
	t.Helper()
	seed := tc.Seed
	if seed == 0 {
		seed = seedOf(tc.Name)
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	inputs := make([][][]any, len(tc.Inputs))
	for i, in := range tc.Inputs {
		inputs[i] = canonicalRows(t, in.Schema, in.Rows)
	}
	variants := []struct {
		name string
		in   [][][]any
	}{{"asis", inputs}}
	if !tc.NoNullInjection {
		p := tc.NullInjectProb
		if p == 0 {
			p = 0.15
		}
		inj := make([][][]any, len(inputs))
		changed := false
		for i, rows := range inputs {
			inj[i] = make([][]any, len(rows))
			for r, row := range rows {
				nr := append([]any(nil), row...)
				for c := range nr {
					if tc.Inputs[i].Schema.Field(c).Nullable && rng.Float64() < p {
						changed = changed || nr[c] != nil
						nr[c] = nil
					}
				}
				inj[i][r] = nr
			}
		}
		if changed {
			variants = append(variants, struct {
				name string
				in   [][][]any
			}{"nulls", inj})
		}
	}
	sizes := tc.BatchSizes
	if sizes == nil {
		sizes = DefaultBatchSizes
	}
	total := 0
	for _, in := range inputs {
		total += len(in)
	}
	for _, v := range variants {
		want, wantErr := tc.Ref(v.in)
		first := true
		for _, bs := range sizes {
			for _, l := range []layout{layoutDense, layoutSel, layoutSliced} {
				// NB: batch size 1 over big inputs only runs dense: the
				// other layouts add nothing at that size.
				if bs == 1 && total > 4096 && l != layoutDense {
					continue
				}
				name := fmt.Sprintf("%s/%s/bs=%d/%s", tc.Name, v.name, bs, l)
				got, err := runOpOnce(t, name, &tc, v.in, bs, l, rng)
				checkOutcome(t, name, got, err, want, wantErr, tc.Ordered)
				if first {
					first = false
					// Rebuild after Close: the same input gives the same rows.
					got2, err2 := runOpOnce(t, name+"/rerun", &tc, v.in, bs, l, rng)
					checkOutcome(t, name+"/rerun", got2, err2, want, wantErr, tc.Ordered)
				}
			}
		}
	}
	checkCloseBeforeOpen(t, &tc, inputs, rng)
	if !tc.NoCancel {
		if want, wantErr := tc.Ref(inputs); wantErr == nil && len(want) > 0 {
			checkCancel(t, &tc, inputs, rng)
		}
	}
}

func checkOutcome(t *testing.T, name string, got [][]any, err error, want [][]any, wantErr error, ordered bool) {
	t.Helper()
	if wantErr != nil {
		if err == nil {
			t.Fatalf("%s: got %d rows and no error, want error %q (%s)", name, len(got), wantErr, nferr.KindOf(wantErr))
		}
		if nferr.KindOf(err) != nferr.KindOf(wantErr) || !strings.Contains(err.Error(), wantErr.Error()) {
			t.Fatalf("%s: got error %q (%s), want error containing %q (%s)", name, err, nferr.KindOf(err), wantErr, nferr.KindOf(wantErr))
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: unexpected error: %v (%s)", name, err, nferr.KindOf(err))
	}
	if d := diffRows(got, want, ordered); d != "" {
		t.Fatalf("%s: rows differ:\n%s", name, d)
	}
}

// buildSources lays out each input's rows as record batches allocated from
// mem and wraps them in BatchSources. To keep the checked allocator's
// per-allocation cost bounded, many small batches are slices of one large
// record (dense layout: only when there are more than 64 batches).
func buildSources(t *testing.T, mem memory.Allocator, tc *OpTest, inputs [][][]any, bs int, l layout, rng *rand.Rand) []*BatchSource {
	t.Helper()
	srcs := make([]*BatchSource, len(inputs))
	for i, rows := range inputs {
		schema := tc.Inputs[i].Schema
		var recs []arrow.RecordBatch
		var sels [][]int32
		nb := (len(rows) + bs - 1) / bs
		switch {
		case l == layoutDense && nb <= 64:
			for start := 0; start < len(rows); start += bs {
				recs = append(recs, MakeRecord(t, mem, schema, rows[start:min(start+bs, len(rows))]))
			}
		case l == layoutDense:
			full := MakeRecord(t, mem, schema, rows)
			for start := 0; start < len(rows); start += bs {
				recs = append(recs, full.NewSlice(int64(start), int64(min(start+bs, len(rows)))))
			}
			full.Release()
		case l == layoutSel:
			// Scatter the live rows of each batch among 0..2 poison rows
			// each; batch k is the slice [bounds[k], bounds[k+1]) of one
			// physical record.
			var phys [][]any
			bounds := []int{0}
			for start := 0; start < len(rows); start += bs {
				var sel []int32
				base := len(phys)
				for _, row := range rows[start:min(start+bs, len(rows))] {
					for g := rng.IntN(3); g > 0; g-- {
						phys = append(phys, poisonRow(rng, schema))
					}
					sel = append(sel, int32(len(phys)-base))
					phys = append(phys, row)
				}
				for g := rng.IntN(3); g > 0; g-- {
					phys = append(phys, poisonRow(rng, schema))
				}
				bounds = append(bounds, len(phys))
				sels = append(sels, sel)
			}
			full := MakeRecord(t, mem, schema, phys)
			for k := 0; k+1 < len(bounds); k++ {
				recs = append(recs, full.NewSlice(int64(bounds[k]), int64(bounds[k+1])))
			}
			full.Release()
		case l == layoutSliced:
			// Poison rows between batches (and before the first) so every
			// array has a non-zero offset and garbage around it.
			var phys [][]any
			var bounds [][2]int
			for start := 0; start < len(rows); start += bs {
				for g := 1 + rng.IntN(3); g > 0; g-- {
					phys = append(phys, poisonRow(rng, schema))
				}
				b0 := len(phys)
				phys = append(phys, rows[start:min(start+bs, len(rows))]...)
				bounds = append(bounds, [2]int{b0, len(phys)})
			}
			phys = append(phys, poisonRow(rng, schema))
			full := MakeRecord(t, mem, schema, phys)
			for _, b := range bounds {
				recs = append(recs, full.NewSlice(int64(b[0]), int64(b[1])))
			}
			full.Release()
		}
		if len(recs) == 0 {
			sels = nil
		}
		src, err := NewBatchSourceWithSel(schema, recs, sels)
		for _, r := range recs {
			r.Release()
		}
		if err != nil {
			t.Fatalf("building source %d: %v", i, err)
		}
		srcs[i] = src
	}
	return srcs
}

func poisonRow(rng *rand.Rand, schema *arrow.Schema) []any {
	row := make([]any, schema.NumFields())
	for c := range row {
		f := schema.Field(c)
		row[c] = poisonValue(rng, f.Type)
		if row[c] == nil && !f.Nullable {
			row[c] = RandomValue(rng, f.Type, GenOpts{Distinct: 1})
		}
	}
	return row
}

func asOperators(srcs []*BatchSource) []Operator {
	ops := make([]Operator, len(srcs))
	for i, s := range srcs {
		ops[i] = s
	}
	return ops
}

// checkBatch verifies b against the Operator contract.
func checkBatch(schema *arrow.Schema, b *Batch) error {
	if b.Len() <= 0 {
		return fmt.Errorf("batch with %d live rows (N=%d, Sel=%v)", b.Len(), b.N, b.Sel != nil)
	}
	if len(b.Cols) != schema.NumFields() {
		return fmt.Errorf("batch has %d columns, schema %d", len(b.Cols), schema.NumFields())
	}
	for i, c := range b.Cols {
		if c == nil {
			return fmt.Errorf("column %d is nil", i)
		}
		if c.Len() != b.N {
			return fmt.Errorf("column %d has length %d, batch N=%d", i, c.Len(), b.N)
		}
		if !arrow.TypeEqual(c.DataType(), schema.Field(i).Type) {
			return fmt.Errorf("column %d has type %s, schema says %s", i, c.DataType(), schema.Field(i).Type)
		}
	}
	if b.Sel != nil {
		if err := checkSel(b.Sel, b.N); err != nil {
			return err
		}
	}
	return nil
}

func runOpOnce(t *testing.T, name string, tc *OpTest, inputs [][][]any, bs int, l layout, rng *rand.Rand) (rows [][]any, runErr error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	env := NewTestEnv(mem)
	env.BatchSize = bs
	if tc.Budget > 0 {
		env.Budget = NewBudget(tc.Budget)
	}
	var spillRoot string
	if tc.Spill {
		spillRoot = t.TempDir()
		env.Spill = NewSpill(spillRoot, "test", 0)
	}
	srcs := buildSources(t, mem, tc, inputs, bs, l, rng)
	defer func() {
		for _, s := range srcs {
			s.Close()
		}
		if env.Spill != nil {
			if env.Spill.Written() > 0 && tc.SpillRuns != nil {
				*tc.SpillRuns++
			}
			if left := filesUnder(spillRoot); len(left) > 0 {
				t.Fatalf("%s: spill files left after the operator's Close: %v", name, left)
			}
			if err := env.Spill.Close(); err != nil {
				t.Fatalf("%s: closing the spill space: %v", name, err)
			}
		}
		if t.Failed() {
			return
		}
		mem.AssertSize(t, 0)
		if u := env.Budget.Used(); u != 0 {
			t.Fatalf("%s: %d bytes still reserved in the budget after Close", name, u)
		}
	}()
	op, err := tc.Build(asOperators(srcs))
	if err != nil {
		t.Fatalf("%s: build: %v", name, err)
	}
	op = Checked(op, name) // the Operator contract, checked on every batch
	schema := op.Schema()
	runErr = func() error {
		if err := op.Open(env); err != nil {
			return err
		}
		for {
			b, err := op.Next()
			if err != nil {
				if b != nil {
					t.Fatalf("%s: Next returned a batch and an error", name)
				}
				// The same error again.
				if _, err2 := op.Next(); err2 == nil {
					t.Fatalf("%s: Next after error %q returned no error", name, err)
				}
				return err
			}
			if b == nil {
				for k := 0; k < 2; k++ {
					if b2, err2 := op.Next(); b2 != nil || err2 != nil {
						t.Fatalf("%s: Next after end of stream returned (%v, %v)", name, b2 != nil, err2)
					}
				}
				return nil
			}
			if err := checkBatch(schema, b); err != nil {
				t.Fatalf("%s: contract violation: %v", name, err)
			}
			rows = append(rows, BatchRows(b)...)
		}
	}()
	if err := op.Close(); err != nil && runErr == nil {
		t.Fatalf("%s: Close: %v", name, err)
	}
	if err := op.Close(); err != nil && runErr == nil {
		t.Fatalf("%s: second Close: %v", name, err)
	}
	for i, s := range srcs {
		if !s.closed {
			t.Fatalf("%s: input %d was not closed by the operator's Close", name, i)
		}
	}
	return rows, runErr
}

func checkCloseBeforeOpen(t *testing.T, tc *OpTest, inputs [][][]any, rng *rand.Rand) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	srcs := buildSources(t, mem, tc, inputs, 7, layoutDense, rng)
	op, err := tc.Build(asOperators(srcs))
	if err != nil {
		t.Fatalf("%s/close-before-open: build: %v", tc.Name, err)
	}
	if err := op.Close(); err != nil {
		t.Fatalf("%s: Close before Open: %v", tc.Name, err)
	}
	for i, s := range srcs {
		if !s.closed {
			t.Fatalf("%s: Close before Open did not close input %d", tc.Name, i)
		}
	}
	mem.AssertSize(t, 0)
}

func checkCancel(t *testing.T, tc *OpTest, inputs [][][]any, rng *rand.Rand) {
	t.Helper()
	name := tc.Name + "/cancel"
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	env := NewTestEnv(mem)
	env.BatchSize = 7
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env.Ctx = ctx
	srcs := buildSources(t, mem, tc, inputs, 7, layoutDense, rng)
	op, err := tc.Build(asOperators(srcs))
	if err != nil {
		t.Fatalf("%s: build: %v", name, err)
	}
	defer func() {
		if err := op.Close(); err != nil && !nferr.Is(err, nferr.KindCanceled) {
			t.Errorf("%s: Close: %v", name, err)
		}
		for _, s := range srcs {
			s.Close()
		}
		mem.AssertSize(t, 0)
	}()
	if err := op.Open(env); err != nil {
		t.Fatalf("%s: Open: %v", name, err)
	}
	if _, err := op.Next(); err != nil {
		t.Fatalf("%s: first Next: %v", name, err)
	}
	cancel()
	b, err := op.Next()
	if b != nil {
		t.Fatalf("%s: Next returned a batch after the context was canceled", name)
	}
	if err != nil && !nferr.Is(err, nferr.KindCanceled) {
		t.Fatalf("%s: Next after cancel: got %v (%s), want KindCanceled", name, err, nferr.KindOf(err))
	}
}
