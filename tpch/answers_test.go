package tpch

import (
	"strings"
	"testing"

	"github.com/nicflow/nicflow/internal/nferr"
)

func cloneResult(r Result) Result {
	out := Result{Columns: append([]string(nil), r.Columns...)}
	for _, row := range r.Rows {
		out.Rows = append(out.Rows, append([]string(nil), row...))
	}
	return out
}

// TestAnswersSelfCheck: every stored answer passes against itself.
func TestAnswersSelfCheck(t *testing.T) {
	for _, sf := range []float64{0.01, 0.1, 1} {
		if !HasAnswers(sf) {
			t.Fatalf("HasAnswers(%g) = false", sf)
		}
		for q := 1; q <= NumQueries; q++ {
			want, err := ExpectedAnswer(q, sf)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Rows) == 0 {
				t.Errorf("Q%d SF %g: no rows", q, sf)
			}
			if err := CheckAnswer(q, sf, cloneResult(want)); err != nil {
				t.Errorf("self check: %v", err)
			}
		}
	}
	if HasAnswers(10) || HasAnswers(0.5) {
		t.Errorf("HasAnswers true for SF without answers")
	}
	if err := CheckAnswer(1, 10, Result{}); !nferr.Is(err, nferr.KindQuery) {
		t.Errorf("SF 10: %v", err)
	}
}

func TestOfficialFormatParsing(t *testing.T) {
	q1, err := ExpectedAnswer(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if q1.Columns[0] != "l" || q1.Columns[9] != "count_order" || len(q1.Rows) != 4 {
		t.Fatalf("Q1 header %v, %d rows", q1.Columns, len(q1.Rows))
	}
	if got := strings.Join(q1.Rows[0], "|"); got != "A|F|37734107.00|56586554400.73|53758257134.87|55909065222.83|25.52|38273.13|0.05|1478493" {
		t.Errorf("Q1 row 1 = %s", got)
	}
	q18, _ := ExpectedAnswer(18, 1)
	if q18.Columns[3] != "o_orderdat" || q18.Columns[5] != "col6" || q18.Rows[0][0] != "Customer#000128120" || q18.Rows[0][1] != "128120" {
		t.Errorf("Q18 parsed as %v / %v", q18.Columns, q18.Rows[0])
	}
	// Strings keep leading spaces (addresses may start with one) but lose
	// their padding.
	r, err := parseOfficial("x", []byte("a      |b   \n x  |  12\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Rows[0][0] != " x" || r.Rows[0][1] != "12" {
		t.Errorf("parsed %q", r.Rows[0])
	}
	if _, err := parseOfficial("x", []byte("a|b\n1|2|3\n")); !nferr.Is(err, nferr.KindData) {
		t.Errorf("ragged row: %v", err)
	}
}

// mustFail checks that err is a data error mentioning every fragment.
func mustFail(t *testing.T, err error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("perturbed answer passed")
	}
	if !nferr.Is(err, nferr.KindData) {
		t.Errorf("error kind %v: %v", nferr.KindOf(err), err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q lacks %q", err, f)
		}
	}
}

func TestCheckAnswerPerturbed(t *testing.T) {
	// Money sum off by a cent at SF 1.
	got, _ := ExpectedAnswer(3, 1)
	got = cloneResult(got)
	want := got.Rows[4][1]
	got.Rows[4][1] = "99.99"
	mustFail(t, CheckAnswer(3, 1, got), "row 5", "column revenue", want, "99.99", "cent")

	// An exact .xx5 value printed rounded down is accepted; a cent off is not.
	q9, _ := ExpectedAnswer(9, 1)
	q9 = cloneResult(q9)
	v := q9.Rows[0][2] // e.g. 1234.56
	q9.Rows[0][2] = v + "5"
	if err := CheckAnswer(9, 1, q9); err != nil {
		t.Errorf("half-cent: %v", err)
	}
	q9.Rows[0][2] = v[:len(v)-1] + string(v[len(v)-1]^1)
	mustFail(t, CheckAnswer(9, 1, q9), "row 1", "sum_profit")

	// Ratios within 1% pass, beyond fail.
	q14, _ := ExpectedAnswer(14, 1)
	q14 = cloneResult(q14) // 16.38
	q14.Rows[0][0] = "16.50"
	if err := CheckAnswer(14, 1, q14); err != nil {
		t.Errorf("ratio within 1%%: %v", err)
	}
	q14.Rows[0][0] = "16.60"
	mustFail(t, CheckAnswer(14, 1, q14), "promo_revenue", "1%")
	// Ratios are compared at the precision of the official output.
	q8, _ := ExpectedAnswer(8, 1)
	q8 = cloneResult(q8) // 0.03, 0.04
	q8.Rows[0][1] = "0.03443589040665479"
	if err := CheckAnswer(8, 1, q8); err != nil {
		t.Errorf("Q8 unrounded ratio: %v", err)
	}
	q8.Rows[0][1] = "0.0249" // reported as 0.02
	mustFail(t, CheckAnswer(8, 1, q8), "mkt_share")

	// Counts are exact.
	q4, _ := ExpectedAnswer(4, 1)
	q4 = cloneResult(q4)
	q4.Rows[2][1] = "10001"
	mustFail(t, CheckAnswer(4, 1, q4), "row 3", "order_count", "10001")

	// A string differs.
	q5, _ := ExpectedAnswer(5, 0.1)
	q5 = cloneResult(q5)
	q5.Rows[0][0] = "ATLANTIS"
	mustFail(t, CheckAnswer(5, 0.1, q5), "row 1", "n_name", "ATLANTIS")

	// DuckDB answers: numbers within 1e-6 relative pass.
	q1, _ := ExpectedAnswer(1, 0.01)
	q1 = cloneResult(q1)
	q1.Rows[0][4] = "505822441.48" // 505822441.4861: 0.0061 off
	if err := CheckAnswer(1, 0.01, q1); err != nil {
		t.Errorf("within tolerance: %v", err)
	}
	q1.Rows[0][4] = "505922441.48"
	mustFail(t, CheckAnswer(1, 0.01, q1), "sum_disc_price", "505922441.48")

	// Wrong shape.
	q1.Rows = q1.Rows[:2]
	q1.Rows[0][4] = "505822441.4861"
	mustFail(t, CheckAnswer(1, 0.01, q1), "2 rows, expected 4")
	q1.Columns = q1.Columns[:3]
	mustFail(t, CheckAnswer(1, 0.01, q1), "3 columns")
	ok, _ := ExpectedAnswer(6, 1)
	ok = cloneResult(ok)
	ok.Columns[0] = "income"
	mustFail(t, CheckAnswer(6, 1, ok), `named "income"`)
}

// TestCheckAnswerOrder: rows out of ORDER BY order fail; rows tied on the
// ORDER BY keys may be permuted.
func TestCheckAnswerOrder(t *testing.T) {
	got, _ := ExpectedAnswer(13, 1)
	got = cloneResult(got)
	got.Rows[1], got.Rows[2] = got.Rows[2], got.Rows[1]
	mustFail(t, CheckAnswer(13, 1, got), "row 2")

	want := Result{Columns: []string{"n_name", "revenue"}, Rows: [][]string{
		{"CHINA", "100.00"}, {"JAPAN", "50.00"}, {"INDIA", "50.00"}, {"VIETNAM", "10.00"}}}
	perm := cloneResult(want)
	perm.Rows[1], perm.Rows[2] = perm.Rows[2], perm.Rows[1]
	if err := compareResults(5, 1, want, perm, officialCell); err != nil {
		t.Errorf("tied rows permuted: %v", err)
	}
	perm.Rows[1][0] = "INDONESIA"
	mustFail(t, compareResults(5, 1, want, perm, officialCell), "tie", "INDONESIA")

	// With a LIMIT, rows tied with the cut may be other rows with the same
	// keys (Q10: order by revenue desc, limit 20).
	w10 := Result{Columns: []string{"c_custkey", "c_name", "revenue"}, Rows: [][]string{
		{"1", "a", "9.00"}, {"2", "b", "5.00"}, {"3", "c", "5.00"}}}
	g10 := cloneResult(w10)
	g10.Rows[2] = []string{"4", "d", "5.00"}
	if err := compareResults(10, 1, w10, g10, officialCell); err != nil {
		t.Errorf("tie at the limit: %v", err)
	}
	g10.Rows[2][2] = "4.00"
	mustFail(t, compareResults(10, 1, w10, g10, officialCell), "row 3", "revenue")
}

// FuzzParseAnswers: the answer-file parsers never panic and keep every row
// as wide as the header.
func FuzzParseAnswers(f *testing.F) {
	for _, name := range []string{"answers/sf1/q01.out", "answers/sf1/q18.out", "answers/sf0.01/q02.csv", "answers/sf0.01/q17.csv"} {
		b, err := answerFS.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("a|b\n1|\n"))
	f.Add([]byte("x\n\n\"q\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, parse := range []func(string, []byte) (Result, error){parseOfficial, parseCSV} {
			r, err := parse("fuzz", b)
			if err != nil {
				continue
			}
			for _, row := range r.Rows {
				if len(row) != len(r.Columns) && len(r.Columns) > 1 {
					t.Fatalf("row %q vs header %q", row, r.Columns)
				}
			}
		}
	})
}

// TestCompareAnswers compares two runs' answers where no reference exists.
func TestCompareAnswers(t *testing.T) {
	want, _ := ExpectedAnswer(3, 0.1)
	got := cloneResult(want)
	if err := CompareAnswers(3, 7, want, got); err != nil {
		t.Fatalf("an answer differs from itself: %v", err)
	}
	got.Rows[2][1] = "9" + got.Rows[2][1] // far beyond 0.01 and 1e-6 relative
	mustFail(t, CompareAnswers(3, 7, want, got), "Q3 at SF 7", "row 3", "revenue")
	got = cloneResult(want)
	got.Rows = got.Rows[:len(got.Rows)-1]
	mustFail(t, CompareAnswers(3, 7, want, got), "rows")
	if err := CompareAnswers(23, 7, want, want); err == nil {
		t.Error("query 23 compared")
	}
}
