package exec

import (
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/internal/nferr"
)

// The int64 fast paths of decimal128 products and of widening casts, and
// their fallbacks: operands beyond int64 take the checked 128-bit path,
// whose overflow beyond 38 digits is an error, and every result is checked
// against exact big-integer arithmetic.

var fastSchema = arrow.NewSchema([]arrow.Field{
	{Name: "w", Type: &arrow.Decimal128Type{Precision: 38, Scale: 4}, Nullable: true},
	{Name: "m", Type: &arrow.Decimal64Type{Precision: 18, Scale: 2}, Nullable: true},
	{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
}, nil)

func bigPow10(k int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil) }

// fastRows mixes values that fit int64 with ones that do not (around
// ±2^63 and up to 20 digits), NULLs, and the int64 extremes.
func fastRows(r *rand.Rand, n int) [][]any {
	edges := []*big.Int{
		big.NewInt(0), big.NewInt(1), big.NewInt(-1),
		big.NewInt(1<<63 - 1), new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 63)), // fit int64
		new(big.Int).Lsh(big.NewInt(1), 63), new(big.Int).Neg(new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), 63), big.NewInt(1))), // just beyond
		new(big.Int).Sub(bigPow10(20), big.NewInt(1)), new(big.Int).Neg(bigPow10(19)),
		bigPow10(25), new(big.Int).Neg(bigPow10(30)), // overflow beside the largest m
	}
	var rows [][]any
	for k := 0; k < n; k++ {
		var w, m, i any
		switch r.IntN(10) {
		case 0:
			w = nil
		case 1, 2:
			w = Dec{U: edges[r.IntN(len(edges))], S: 4}
		default:
			w = Dec{U: big.NewInt(r.Int64N(2_000_000_000_000) - 1_000_000_000_000), S: 4}
		}
		switch r.IntN(8) {
		case 0:
			m = nil
		case 1:
			m = Dec{U: big.NewInt([]int64{999_999_999_999_999_999, -999_999_999_999_999_999, 0}[r.IntN(3)]), S: 2}
		default:
			m = Dec{U: big.NewInt(r.Int64N(20_000) - 10_000), S: 2}
		}
		if r.IntN(8) > 0 {
			i = int32(r.Int32() - 1<<30)
		}
		rows = append(rows, []any{w, m, i})
	}
	return rows
}

func TestDecimalFastPathsMatchBigInt(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	rows := fastRows(r, 3000)
	u := func(v any) *big.Int {
		switch x := v.(type) {
		case Dec:
			return x.U
		case int32:
			return big.NewInt(int64(x))
		}
		return nil
	}
	lim38 := bigPow10(38)
	cases := []struct {
		name  string
		e     expr.Expr
		scale int32
		want  func(row []any) *big.Int // nil: NULL
	}{
		{"d128*d64", expr.Mul(expr.Col(0, "w"), expr.Col(1, "m")), 6, func(row []any) *big.Int {
			if row[0] == nil || row[1] == nil {
				return nil
			}
			return new(big.Int).Mul(u(row[0]), u(row[1]))
		}},
		{"d64*d128", expr.Mul(expr.Col(1, "m"), expr.Col(0, "w")), 6, func(row []any) *big.Int {
			if row[0] == nil || row[1] == nil {
				return nil
			}
			return new(big.Int).Mul(u(row[0]), u(row[1]))
		}},
		{"d128*d128", expr.Mul(expr.Col(0, "w"), expr.Cast(expr.Col(1, "m"), expr.DecimalType(30, 2))), 6, func(row []any) *big.Int {
			if row[0] == nil || row[1] == nil {
				return nil
			}
			return new(big.Int).Mul(u(row[0]), u(row[1]))
		}},
		{"widen d64", expr.Cast(expr.Col(1, "m"), expr.DecimalType(38, 9)), 9, func(row []any) *big.Int {
			if row[1] == nil {
				return nil
			}
			return new(big.Int).Mul(u(row[1]), bigPow10(7))
		}},
		{"widen int32", expr.Cast(expr.Col(2, "i"), expr.DecimalType(25, 5)), 5, func(row []any) *big.Int {
			if row[2] == nil {
				return nil
			}
			return new(big.Int).Mul(u(row[2]), bigPow10(5))
		}},
	}
	wide := func(row []any) bool {
		for _, v := range row[:2] {
			if x := u(v); x != nil && !x.IsInt64() {
				return true
			}
		}
		return false
	}
	for _, c := range cases {
		checkedWide, overflows := 0, 0
		// Split the rows into batches evaluated separately: a batch with a
		// product beyond 38 digits must fail, the others must match.
		for start := 0; start < len(rows); start += 100 {
			batch := rows[start:min(start+100, len(rows))]
			var overflow bool
			for _, row := range batch {
				if w := c.want(row); w != nil && new(big.Int).Abs(w).Cmp(lim38) >= 0 {
					overflow = true
				}
			}
			got, err := evalRows(t, fastSchema, batch, c.e)
			if overflow {
				if err == nil || nferr.KindOf(err) != nferr.KindData || !strings.Contains(err.Error(), "overflow") {
					t.Fatalf("%s rows %d..: got %v, want a decimal overflow error", c.name, start, err)
				}
				overflows++
				continue
			}
			if err != nil {
				t.Fatalf("%s rows %d..: %v", c.name, start, err)
			}
			for k, row := range batch {
				want := c.want(row)
				if want == nil {
					if got[k] != nil {
						t.Fatalf("%s row %v: got %v, want NULL", c.name, row, got[k])
					}
					continue
				}
				d, ok := got[k].(Dec)
				if !ok || d.S != c.scale || d.U.Cmp(want) != 0 {
					t.Fatalf("%s row %v: got %v, want %s scale %d", c.name, row, got[k], want, c.scale)
				}
				if wide(row) {
					checkedWide++
				}
			}
		}
		if strings.HasPrefix(c.name, "d") && (checkedWide == 0 || overflows == 0) {
			t.Fatalf("%s: %d results from operands beyond int64 checked, %d overflowing batches: the rows should exercise both", c.name, checkedWide, overflows)
		}
	}
}

// TestWidenCastChecksPrecision: a widening cast to fewer integer digits
// than the source has is checked on the fast path too.
func TestWidenCastChecksPrecision(t *testing.T) {
	rows := [][]any{{nil, Dec{U: big.NewInt(123_456_789_012), S: 2}, nil}} // 1234567890.12
	if _, err := evalRows(t, fastSchema, rows, expr.Cast(expr.Col(1, "m"), expr.DecimalType(19, 10))); err == nil || !strings.Contains(err.Error(), "out of range for type DECIMAL(19,10)") {
		t.Fatalf("cast to DECIMAL(19,10): %v, want an out of range error", err)
	}
	got, err := evalRows(t, fastSchema, rows, expr.Cast(expr.Col(1, "m"), expr.DecimalType(20, 10)))
	if err != nil || got[0].(Dec).U.Cmp(new(big.Int).Mul(big.NewInt(123_456_789_012), bigPow10(8))) != 0 {
		t.Fatalf("cast to DECIMAL(20,10): %v %v", got, err)
	}
}
