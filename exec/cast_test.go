package exec

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/nicflow/nicflow/internal/nferr"
)

// castString evaluates CAST(s AS t).
func castString(s string, t expr.Type) (any, error) {
	ce, err := expr.CompileExpr(expr.Cast(expr.LitString(s), t), emptySchema)
	if err != nil {
		return nil, err
	}
	arr, err := ce.Eval(memory.NewGoAllocator(), &Batch{N: 1})
	if err != nil {
		return nil, err
	}
	defer arr.Release()
	return ArrayValue(arr, 0), nil
}

func trimSQL(s string) string { return string(expr.TrimSpaceBytes([]byte(s))) }

// FuzzCastString: string -> number/date/boolean casts never panic, fail only
// with KindQuery, and agree with independent parsers when they succeed.
func FuzzCastString(f *testing.F) {
	for _, s := range []string{"42", " -17 ", "+3", "9223372036854775808", "-9223372036854775808",
		"12.345", "-0.005", "1e3", "1.5E-2", ".5", "5.", "abc", "", " ", "1_000", "0x10",
		"NaN", "Infinity", "-inf", "1994-01-01", "1994-1-1", "2024-02-29", "2023-02-29",
		"-0001-01-01", "t", "FALSE", "yes", "1e400", strings.Repeat("9", 40), "1.2.3", "--1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		check := func(tp expr.Type) (any, bool) {
			v, err := castString(s, tp)
			if err != nil {
				if nferr.KindOf(err) != nferr.KindData {
					t.Fatalf("CAST(%q AS %s): error of kind %s: %v", s, tp, nferr.KindOf(err), err)
				}
				return nil, false
			}
			return v, true
		}
		if v, ok := check(expr.Int64Type); ok {
			want, err := strconv.ParseInt(trimSQL(s), 10, 64)
			if err != nil || v.(int64) != want {
				t.Fatalf("CAST(%q AS BIGINT) = %v, strconv says %v (%v)", s, v, want, err)
			}
		} else if want, err := strconv.ParseInt(trimSQL(s), 10, 64); err == nil {
			t.Fatalf("CAST(%q AS BIGINT) failed, strconv parses %d", s, want)
		}
		if v, ok := check(expr.Int32Type); ok {
			want, err := strconv.ParseInt(trimSQL(s), 10, 32)
			if err != nil || int64(v.(int32)) != want {
				t.Fatalf("CAST(%q AS INTEGER) = %v, strconv says %v (%v)", s, v, want, err)
			}
		}
		if v, ok := check(expr.Float64Type); ok {
			want, _ := strconv.ParseFloat(trimSQL(s), 64)
			if got := v.(float64); got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("CAST(%q AS DOUBLE) = %v, want %v", s, got, want)
			}
		}
		for _, tp := range []expr.Type{expr.DecimalType(10, 3), expr.DecimalType(38, 10), expr.DecimalType(18, 0)} {
			v, ok := check(tp)
			if !ok {
				continue
			}
			r, good := new(big.Rat).SetString(trimSQL(s))
			if !good || strings.ContainsAny(s, "/xXpP_") {
				t.Fatalf("CAST(%q AS %s) = %v but the text is not a number", s, tp, v)
			}
			want := roundRat(new(big.Rat).Mul(r, new(big.Rat).SetInt(pow10Big(tp.Scale))))
			if got := v.(Dec); got.U.Cmp(want) != 0 || got.S != tp.Scale {
				t.Fatalf("CAST(%q AS %s) = %v, want %s at scale %d", s, tp, got, want, tp.Scale)
			}
			if new(big.Int).Abs(want).Cmp(pow10Big(tp.Precision)) >= 0 {
				t.Fatalf("CAST(%q AS %s) = %v exceeds the precision", s, tp, v)
			}
		}
		if v, ok := check(expr.DateType); ok {
			days := int32(v.(arrow.Date32))
			back, err := expr.ParseDate(expr.FormatDate(days))
			if err != nil || back != days {
				t.Fatalf("CAST(%q AS DATE) = %d does not round-trip through %q", s, days, expr.FormatDate(days))
			}
			y, m, d := expr.CivilFromDays(int64(days))
			if !strings.Contains(trimSQL(s), strconv.Itoa(d)) || m < 1 || m > 12 || y < 1 || y > 9999 {
				t.Fatalf("CAST(%q AS DATE) = %s", s, expr.FormatDate(days))
			}
		}
		check(expr.BoolType)
	})
}
