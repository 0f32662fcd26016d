package storage

import (
	"math/big"
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

func decimal64Num(v int64) decimal.Decimal64 { return decimal.Decimal64(v) }

func ratOf(typ arrow.DataType, v any) *big.Rat {
	switch x := v.(type) {
	case int32:
		return new(big.Rat).SetInt64(int64(x))
	case int64:
		if s := decimalScale(typ); s > 0 {
			return new(big.Rat).SetFrac(big.NewInt(x), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil))
		}
		return new(big.Rat).SetInt64(x)
	case float64:
		return new(big.Rat).SetFloat64(x)
	case decimal128.Num:
		return new(big.Rat).SetFrac(x.BigInt(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimalScale(typ))), nil))
	}
	panic("ratOf")
}

func constRat(c Value) *big.Rat {
	switch c.Kind {
	case KindInt, KindDate:
		return new(big.Rat).SetInt64(c.Int)
	case KindDecimal:
		return new(big.Rat).SetFrac(big.NewInt(c.Int), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.Scale)), nil))
	case KindFloat:
		return new(big.Rat).SetFloat64(c.Float)
	}
	panic("constRat " + c.Kind)
}

// randomPredicate builds a random predicate over testSchema.
// variedSpec is scan i of a series over the test schema: all's columns
// with a random filter, every fifth reading two columns, every seventh
// none (count(*)).
func variedSpec(all ScanSpec, rng *rand.Rand, i int) ScanSpec {
	spec := all
	spec.Filter = randomPredicate(rng, 2)
	if i%5 == 0 {
		spec.Columns = []string{"s", "id"}
	}
	if i%7 == 0 {
		spec.Columns = nil // count(*)
	}
	return spec
}

func randomPredicate(rng *rand.Rand, depth int) *Predicate {
	if depth > 0 && rng.Intn(3) == 0 {
		n := 2 + rng.Intn(2)
		args := make([]*Predicate, n)
		for i := range args {
			args[i] = randomPredicate(rng, depth-1)
		}
		if rng.Intn(2) == 0 {
			return And(args...)
		}
		return Or(args...)
	}
	ops := []Op{OpEq, OpNe, OpLt, OpLe, OpGt, OpGe, OpBetween, OpIn, OpIsNull, OpIsNotNull}
	op := ops[rng.Intn(len(ops))]
	cols := []string{"id", "i32", "price", "f", "s", "d", "b", "big"}
	col := cols[rng.Intn(len(cols))]
	var gen func() Value
	switch col {
	case "id":
		gen = func() Value { return Int(int64(rng.Intn(1200) - 100)) }
	case "i32":
		gen = func() Value {
			if rng.Intn(4) == 0 {
				return Decimal(int64(rng.Intn(2000)-1000), 1) // fractional constant on an int column
			}
			return Int(int64(rng.Intn(220) - 110))
		}
	case "price":
		gen = func() Value {
			switch rng.Intn(4) {
			case 0:
				return Decimal(int64(rng.Intn(200000)-50000), 3) // more digits than the column
			case 1:
				return Int(int64(rng.Intn(200) - 50))
			}
			return Decimal(int64(rng.Intn(20000)-5000), 2)
		}
	case "f":
		gen = func() Value {
			if rng.Intn(3) == 0 {
				return Decimal(int64(rng.Intn(20000)), 2)
			}
			return Float(float64(rng.Intn(1000)) / 8)
		}
	case "s":
		if rng.Intn(3) == 0 && op != OpIsNull && op != OpIsNotNull {
			op = OpPrefix
		}
		gen = func() Value { return Str(testWords[rng.Intn(len(testWords))]) }
	case "d":
		gen = func() Value { return Date(int32(7900 + rng.Intn(3200))) }
	case "b":
		gen = func() Value { return Bool(rng.Intn(2) == 1) }
	case "big":
		gen = func() Value { return Decimal(int64(rng.Intn(100000)-50000)*1_000_000_007, int32(rng.Intn(5))) }
	}
	switch op {
	case OpIsNull, OpIsNotNull:
		return &Predicate{Op: op, Column: col}
	case OpBetween:
		return Between(col, gen(), gen())
	case OpIn:
		n := 1 + rng.Intn(4)
		if rng.Intn(3) == 0 {
			n = smallSet + 1 + rng.Intn(60) // sorted and binary-searched (cnode.sortSets)
		}
		vs := make([]Value, n)
		for i := range vs {
			vs[i] = gen()
		}
		return In(col, vs...)
	case OpPrefix:
		return Prefix(col, testWords[rng.Intn(len(testWords))])
	}
	return Cmp(col, op, gen())
}

// TestPredicateMatchesReference compares the vectorized filter and the
// row-group pruning with a row-at-a-time reference on random data with
// nulls, through real Parquet files.
func TestPredicateMatchesReference(t *testing.T) {
	alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer alloc.AssertSize(t, 0)
	db := openTestDB(t, WriteOptions{RowGroupRows: 300, FileRows: 900})
	sch := testSchema()
	rng := rand.New(rand.NewSource(1))
	rows := randomRows(rng, 0, 2000, 0.15)
	// Sort part of the data by id so that pruning has something to do.
	mustCreate(t, db, "t", sch)
	appendRows(t, db, "t", sch, rows)

	all := ScanSpec{Table: "t"}.AllColumns(mustTable(t, db, "t"))
	for i := 0; i < 300; i++ {
		p := randomPredicate(rng, 2)
		var want []row
		for _, r := range rows {
			if refEval(p, sch, r) {
				want = append(want, r)
			}
		}
		spec := all
		spec.Filter = p
		spec.BatchSize = []int{7, 64, 1000}[i%3]
		got, st := scanAll(t, db, spec, ScanOptions{Alloc: alloc, Parallelism: 1 + i%3})
		sortRows(got)
		sortRows(want)
		if !equalRows(got, want) {
			t.Fatalf("predicate %s: got %d rows, want %d", p, len(got), len(want))
		}
		if st.RowsReturned != int64(len(want)) {
			t.Fatalf("predicate %s: stats say %d rows returned, want %d", p, st.RowsReturned, len(want))
		}
		// Round trip through the wire format gives the same predicate.
		b, err := MarshalScanSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		back, err := UnmarshalScanSpec(b)
		if err != nil {
			t.Fatalf("round trip of %s: %v", p, err)
		}
		if back.Filter.String() != p.String() {
			t.Fatalf("round trip changed %s into %s", p, back.Filter)
		}
	}
}

func TestDecimalConstantsRescaled(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{{Name: "x", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}}}, nil)
	idx := func(string) (int, bool) { return 0, true }
	cases := []struct {
		p        *Predicate
		lo, hi   int64
		constF   bool
		constT   bool
		setEmpty bool
	}{
		{p: Cmp("x", OpLt, Decimal(55, 3)), hi: 5},                       // x < 0.055 <=> x <= 0.05
		{p: Cmp("x", OpLe, Decimal(55, 3)), hi: 5},                       // x <= 0.055 <=> x <= 0.05
		{p: Cmp("x", OpGt, Decimal(55, 3)), lo: 6},                       // x > 0.055 <=> x >= 0.06
		{p: Cmp("x", OpGe, Decimal(55, 3)), lo: 6},                       // x >= 0.055 <=> x >= 0.06
		{p: Cmp("x", OpGe, Decimal(-55, 3)), lo: -5},                     // x >= -0.055 <=> x >= -0.05
		{p: Cmp("x", OpLt, Int(3)), hi: 299},                             // x < 3 <=> x <= 2.99
		{p: Between("x", Decimal(5, 2), Decimal(7, 2)), lo: 5, hi: 7},    // Q6
		{p: Cmp("x", OpEq, Decimal(55, 3)), constF: false, lo: 6, hi: 5}, // empty range
	}
	for _, c := range cases {
		n, err := compilePredicate(c.p, sch, idx, 0)
		if err != nil {
			t.Fatalf("%s: %v", c.p, err)
		}
		if n.hasLo && n.i64lo != c.lo || n.hasHi && n.i64hi != c.hi {
			t.Errorf("%s: range [%d,%d], want [%d,%d]", c.p, n.i64lo, n.i64hi, c.lo, c.hi)
		}
	}
	if _, err := compilePredicate(Cmp("x", OpEq, Str("a")), sch, idx, 0); err == nil {
		t.Error("string constant on a decimal column: want an error")
	}
}

func TestParseDecimal(t *testing.T) {
	cases := []struct {
		in    string
		prec  int32
		scale int32
		want  int64
		why   string
	}{
		{"12.34", 15, 2, 1234, ""},
		{"-0.05", 15, 2, -5, ""},
		{"7", 15, 2, 700, ""},
		{"7.", 15, 2, 700, ""},
		{".5", 15, 2, 50, ""},
		{"+1.10", 15, 2, 110, ""},
		{"1.230", 15, 2, 123, ""},
		{"1.234", 15, 2, 0, "more than 2 digits after the decimal point"},
		{"1e5", 15, 2, 0, "not a decimal number"},
		{"", 15, 2, 0, "empty decimal"},
		{"-", 15, 2, 0, "not a decimal number"},
		{"1.2.3", 15, 2, 0, "two decimal points"},
		{"9999999999999.99", 15, 2, 999999999999999, ""},
		{"10000000000000.00", 15, 2, 0, "overflows decimal(15,2)"},
		{"99999999999999999999", 18, 0, 0, "overflows decimal(18,0)"},
		{"0000000000000000000000001.5", 15, 2, 150, ""},
	}
	for _, c := range cases {
		got, why := parseDecimalPrec([]byte(c.in), c.prec, c.scale)
		if why != c.why || (why == "" && got != c.want) {
			t.Errorf("parseDecimalPrec(%q, %d, %d) = %d, %q; want %d, %q", c.in, c.prec, c.scale, got, why, c.want, c.why)
		}
	}
	ints := []struct {
		in   string
		bits int
		want int64
		why  string
	}{
		{"2147483647", 32, 2147483647, ""},
		{"-2147483648", 32, -2147483648, ""},
		{"2147483648", 32, 0, "overflows int32"},
		{"-9223372036854775808", 64, -9223372036854775808, ""},
		{"9223372036854775808", 64, 0, "overflows int64"},
		{"12a", 64, 0, "not an integer"},
	}
	for _, c := range ints {
		got, why := parseInt([]byte(c.in), c.bits)
		if why != c.why || (why == "" && got != c.want) {
			t.Errorf("parseInt(%q) = %d, %q; want %d, %q", c.in, got, why, c.want, c.why)
		}
	}
	for _, c := range []struct {
		in   string
		want int32
		why  string
	}{{"1970-01-01", 0, ""}, {"1998-12-01", 10561, ""}, {"1992-02-29", 8094, ""}, {"1993-02-29", 0, "no such date"}, {"1993-13-01", 0, "no such date"}, {"19930101", 0, "not a date (want YYYY-MM-DD)"}} {
		got, why := parseDate([]byte(c.in))
		if why != c.why || (why == "" && got != c.want) {
			t.Errorf("parseDate(%q) = %d, %q; want %d, %q", c.in, got, why, c.want, c.why)
		}
	}
}

// TestScanTicketCodec: a ticket carries the codec the client asks for, and
// a ticket asking for an unknown codec is bad data.
func TestScanTicketCodec(t *testing.T) {
	for _, c := range []string{"", "none", "lz4", "zstd"} {
		b, err := MarshalScanSpec(ScanSpec{Table: "t", Codec: c})
		if err != nil {
			t.Fatal(err)
		}
		back, err := UnmarshalScanSpec(b)
		if err != nil || back.Codec != c {
			t.Errorf("codec %q: %v, %q", c, err, back.Codec)
		}
	}
	b, _ := MarshalScanSpec(ScanSpec{Table: "t", Codec: "gzip"})
	if _, err := UnmarshalScanSpec(b); !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), "gzip") {
		t.Errorf("codec gzip: %v", err)
	}
}
