package tpch

import (
	"bytes"
	"embed"
	"encoding/csv"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/nicflow/nicflow/internal/nferr"
)

// answerFS holds the reference answers (see answers/README.md).
//
//go:embed answers/sf1/*.out answers/sf0.01/*.csv answers/sf0.1/*.csv
var answerFS embed.FS

// Result is a query result in canonical text form, as CheckAnswer expects
// it from the engine:
//
//   - integers in plain decimal ("42", "-7");
//   - decimals with exactly their scale's digits ("12.30" for scale 2,
//     "0.0500" for scale 4);
//   - floating-point numbers in full precision (Go's strconv 'g', -1);
//   - dates as YYYY-MM-DD;
//   - strings as they are (no quotes, no padding);
//   - NULL as the empty string.
type Result struct {
	Columns []string
	Rows    [][]string
}

// answerSFs are the scale factors with stored answers.
var answerSFs = []float64{0.01, 0.1, 1}

func answerDir(sf float64) (string, bool) {
	for _, s := range answerSFs {
		if math.Abs(sf-s) < 1e-9 {
			return "answers/sf" + strconv.FormatFloat(s, 'g', -1, 64), true
		}
	}
	return "", false
}

// HasAnswers reports whether reference answers exist for sf (0.01, 0.1
// and 1).
func HasAnswers(sf float64) bool {
	_, ok := answerDir(sf)
	return ok
}

// official reports whether the answers at sf are the official TPC-H ones
// (SF 1), checked with clause 2.1.3.5; the others are DuckDB's.
func official(sf float64) bool { return math.Abs(sf-1) < 1e-9 }

// ExpectedAnswer returns the stored answer of query q at sf. Official
// (SF 1) cells are trimmed of their padding; string cells keep leading
// spaces (addresses may start with one).
func ExpectedAnswer(q int, sf float64) (Result, error) {
	if err := checkQuery(q); err != nil {
		return Result{}, err
	}
	dir, ok := answerDir(sf)
	if !ok {
		return Result{}, nferr.Queryf("no reference answers for SF %g (only SF 0.01, 0.1 and 1)", sf)
	}
	if official(sf) {
		name := fmt.Sprintf("%s/q%02d.out", dir, q)
		b, err := answerFS.ReadFile(name)
		if err != nil {
			return Result{}, nferr.Internalf("reading %s: %v", name, err)
		}
		return parseOfficial(name, b)
	}
	name := fmt.Sprintf("%s/q%02d.csv", dir, q)
	b, err := answerFS.ReadFile(name)
	if err != nil {
		return Result{}, nferr.Internalf("reading %s: %v", name, err)
	}
	return parseCSV(name, b)
}

// parseOfficial reads the TPC-H kit's answer format: a header line, then
// '|'-separated rows; numbers left-padded, strings right-padded.
func parseOfficial(name string, b []byte) (Result, error) {
	lines := strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return Result{}, nferr.Dataf("%s: empty answer file", name)
	}
	var res Result
	for _, h := range strings.Split(lines[0], "|") {
		res.Columns = append(res.Columns, strings.TrimSpace(h))
	}
	for i, line := range lines[1:] {
		cells := strings.Split(line, "|")
		if len(cells) != len(res.Columns) {
			return Result{}, nferr.Dataf("%s line %d: %d fields, header has %d", name, i+2, len(cells), len(res.Columns))
		}
		for j, c := range cells {
			c = strings.TrimRight(c, " ")
			if t := strings.TrimLeft(c, " "); isNumber(t) {
				c = t
			}
			cells[j] = c
		}
		res.Rows = append(res.Rows, cells)
	}
	return res, nil
}

func parseCSV(name string, b []byte) (Result, error) {
	r := csv.NewReader(bytes.NewReader(b))
	recs, err := r.ReadAll()
	if err != nil {
		return Result{}, nferr.Dataf("%s: %v", name, err)
	}
	if len(recs) == 0 {
		return Result{}, nferr.Dataf("%s: empty answer file", name)
	}
	if len(recs[0]) == 1 {
		// NB: encoding/csv skips blank lines, but in a one-column file a
		// blank line is a row holding NULL (Q17 at SF 0.01).
		lines := strings.Split(strings.TrimSuffix(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n"), "\n")
		res := Result{Columns: recs[0]}
		for _, l := range lines[1:] {
			if u, err := strconv.Unquote(l); err == nil && strings.HasPrefix(l, `"`) {
				l = u
			}
			res.Rows = append(res.Rows, []string{l})
		}
		return res, nil
	}
	return Result{Columns: recs[0], Rows: recs[1:]}, nil
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// orderKey is one ORDER BY key of a query's result: a column index and
// its direction.
type orderSpec struct {
	cols  []int // result columns of the ORDER BY, in order
	limit bool  // the query has a LIMIT: ties at the cut may differ
}

// orderBy lists each query's ORDER BY columns (positions in the result).
var orderBy = [NumQueries + 1]orderSpec{
	1: {cols: []int{0, 1}}, 2: {cols: []int{0, 2, 1, 3}, limit: true}, 3: {cols: []int{1, 2}, limit: true},
	4: {cols: []int{0}}, 5: {cols: []int{1}}, 6: {}, 7: {cols: []int{0, 1, 2}}, 8: {cols: []int{0}},
	9: {cols: []int{0, 1}}, 10: {cols: []int{2}, limit: true}, 11: {cols: []int{1}}, 12: {cols: []int{0}},
	13: {cols: []int{1, 0}}, 14: {}, 15: {cols: []int{0}}, 16: {cols: []int{3, 0, 1, 2}}, 17: {},
	18: {cols: []int{4, 3}, limit: true}, 19: {}, 20: {cols: []int{0}}, 21: {cols: []int{1, 0}, limit: true},
	22: {cols: []int{0}},
}

// ratioCols are the official-answer columns that are averages or ratios
// (clause 2.1.3.5: within 1%); other decimal columns are sums of money or
// money values, exact to the cent.
var ratioCols = map[[2]int]bool{
	{1, 6}: true, {1, 7}: true, {1, 8}: true, // avg_qty, avg_price, avg_disc
	{8, 1}: true, {14, 0}: true, {17, 0}: true, // mkt_share, promo_revenue, avg_yearly
}

// cellCheck compares one cell; it returns "" when got is acceptable, or
// the rule that failed.
type cellCheck func(q, col int, want, got string) string

// officialCell applies clause 2.1.3.5 to an SF 1 answer cell.
func officialCell(q, col int, want, got string) string {
	if want == got || (strings.TrimSpace(want) == strings.TrimSpace(got) && !isNumber(strings.TrimSpace(want))) {
		return ""
	}
	w, errW := strconv.ParseFloat(strings.TrimSpace(want), 64)
	g, errG := strconv.ParseFloat(strings.TrimSpace(got), 64)
	if errW != nil || errG != nil {
		return "values differ"
	}
	switch {
	case ratioCols[[2]int{q, col}]:
		// Clause 2.1.3.5: within 1% when reported to the precision of the
		// validation output (Q8 prints mkt_share 0.0344 as 0.03).
		if math.Abs(roundTo(g, decimals(want))-w) <= 0.01*math.Abs(w)+1e-9 {
			return ""
		}
		return "averages and ratios must be within 1%"
	case !strings.Contains(want, "."):
		if g == w {
			return ""
		}
		return "counts and integers must match exactly"
	default:
		// NB: "exact to the cent" means the exact value rounds to the
		// printed cents; half a cent of slack accepts the published
		// answers' own rounding of x.xx5 values (Q9 prints a .855 as .85).
		// Compared as exact rationals: float64 cannot hold cents of 10^11.
		wr, ok1 := new(big.Rat).SetString(strings.TrimSpace(want))
		gr, ok2 := new(big.Rat).SetString(strings.TrimSpace(got))
		if ok1 && ok2 && new(big.Rat).Abs(new(big.Rat).Sub(gr, wr)).Cmp(halfCent) <= 0 {
			return ""
		}
		return "sums of money must be exact to the cent"
	}
}

var halfCent = big.NewRat(1, 200)

// decimals returns the number of digits after the point in s.
func decimals(s string) int {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return len(s) - i - 1
	}
	return 0
}

// roundTo rounds v half away from zero to d decimals.
func roundTo(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

// referenceCell compares a cell of a DuckDB reference answer: strings
// exactly, numbers within a relative 1e-6 or an absolute 0.01.
func referenceCell(_, _ int, want, got string) string {
	if want == got {
		return ""
	}
	w, errW := strconv.ParseFloat(want, 64)
	g, errG := strconv.ParseFloat(got, 64)
	if errW != nil || errG != nil {
		return "values differ"
	}
	if d := math.Abs(g - w); d <= 0.01 || d <= 1e-6*math.Abs(w) {
		return ""
	}
	return "numbers must agree within 1e-6 relative or 0.01 absolute"
}

// CheckAnswer compares got, query q's result at scale factor sf, with the
// reference answer: the official answer at SF 1 (precision rules of TPC-H
// clause 2.1.3.5) or DuckDB's at SF 0.01 and 0.1 (numbers within 1e-6
// relative or 0.01 absolute). The row order must be the query's ORDER BY
// order; rows whose ORDER BY keys are equal may come in any order, and in
// queries with a LIMIT, rows tied with the last kept row may be other rows
// with the same keys. The error names the first mismatching row and
// column with the expected and the actual value.
//
// The queries must have been run with AnswerParams(q, sf).
func CheckAnswer(q int, sf float64, got Result) error {
	want, err := ExpectedAnswer(q, sf)
	if err != nil {
		return err
	}
	check := cellCheck(referenceCell)
	if official(sf) {
		check = officialCell
	}
	return compareResults(q, sf, want, got, check)
}

// CompareAnswers compares got with want, two answers to query q at scale
// factor sf computed by different runs (a cluster's and a server's, at a
// scale factor without reference answers), with CheckAnswer's rules for
// reference answers: the ORDER BY order, ties in any order, numbers within
// 1e-6 relative or 0.01 absolute.
func CompareAnswers(q int, sf float64, want, got Result) error {
	if q < 1 || q > NumQueries {
		return nferr.Queryf("no TPC-H query %d", q)
	}
	return compareResults(q, sf, want, got, referenceCell)
}

func compareResults(q int, sf float64, want, got Result, check cellCheck) error {
	where := fmt.Sprintf("Q%d at SF %g", q, sf)
	if len(got.Columns) != len(want.Columns) {
		return nferr.Dataf("%s: %d columns (%s), expected %d (%s)", where, len(got.Columns), strings.Join(got.Columns, ", "), len(want.Columns), strings.Join(want.Columns, ", "))
	}
	for i, w := range want.Columns {
		if !columnNameMatches(w, got.Columns[i]) {
			return nferr.Dataf("%s: column %d is named %q, expected %q", where, i+1, got.Columns[i], w)
		}
	}
	for i, r := range got.Rows {
		if len(r) != len(want.Columns) {
			return nferr.Dataf("%s: row %d has %d values, expected %d", where, i+1, len(r), len(want.Columns))
		}
	}
	spec := orderBy[q]
	keyOf := func(r []string) string {
		var sb strings.Builder
		for _, c := range spec.cols {
			sb.WriteString(strings.TrimSpace(r[c]))
			sb.WriteByte(0)
		}
		return sb.String()
	}
	n := min(len(want.Rows), len(got.Rows))
	// Walk runs of expected rows with equal ORDER BY keys.
	for start := 0; start < n; {
		end := start + 1
		if len(spec.cols) > 0 {
			k := keyOf(want.Rows[start])
			for end < len(want.Rows) && keyOf(want.Rows[end]) == k {
				end++
			}
		} else {
			end = len(want.Rows)
		}
		lastRun := end >= len(want.Rows)
		end = min(end, n)
		if end-start == 1 {
			if err := compareRow(where, q, start, want, want.Rows[start], got.Rows[start], check); err != nil {
				return err
			}
			start = end
			continue
		}
		// A tie: match every got row of the run with an unused expected row.
		used := make([]bool, end-start)
		for gi := start; gi < end; gi++ {
			matched := false
			for wi := start; wi < end; wi++ {
				if !used[wi-start] && compareRow(where, q, gi, want, want.Rows[wi], got.Rows[gi], check) == nil {
					used[wi-start], matched = true, true
					break
				}
			}
			if matched {
				continue
			}
			if lastRun && spec.limit && len(spec.cols) > 0 {
				// Rows tied with the LIMIT cut: only their keys are known.
				if err := compareKeys(where, q, gi, want, spec.cols, want.Rows[start], got.Rows[gi], check); err != nil {
					return err
				}
				continue
			}
			// Report against the first unused expected row of the run.
			for wi := start; wi < end; wi++ {
				if !used[wi-start] {
					err := compareRow(where, q, gi, want, want.Rows[wi], got.Rows[gi], check)
					return nferr.Dataf("%s (rows %d..%d tie on their ORDER BY keys and may come in any order)", err.Error(), start+1, end)
				}
			}
		}
		start = end
	}
	if len(got.Rows) != len(want.Rows) {
		if len(got.Rows) > len(want.Rows) {
			return nferr.Dataf("%s: %d rows, expected %d; first extra row: %s", where, len(got.Rows), len(want.Rows), strings.Join(got.Rows[len(want.Rows)], "|"))
		}
		return nferr.Dataf("%s: %d rows, expected %d; first missing row: %s", where, len(got.Rows), len(want.Rows), strings.Join(want.Rows[len(got.Rows)], "|"))
	}
	return nil
}

func compareRow(where string, q, row int, want Result, w, g []string, check cellCheck) error {
	for c := range w {
		if why := check(q, c, w[c], g[c]); why != "" {
			return nferr.Dataf("%s: row %d, column %s: expected %q, got %q (%s)", where, row+1, want.Columns[c], w[c], g[c], why)
		}
	}
	return nil
}

func compareKeys(where string, q, row int, want Result, cols []int, w, g []string, check cellCheck) error {
	for _, c := range cols {
		if why := check(q, c, w[c], g[c]); why != "" {
			return nferr.Dataf("%s: row %d, column %s: expected %q, got %q (%s)", where, row+1, want.Columns[c], w[c], g[c], why)
		}
	}
	return nil
}

// columnNameMatches compares a reference header with the engine's column
// name: official headers are truncated ("l" for l_returnflag,
// "o_orderdat") or generic ("col6"), and expressions may be named
// differently by each engine, so only plain identifiers are compared, as
// case-insensitive prefixes.
func columnNameMatches(want, got string) bool {
	w, g := strings.ToLower(strings.TrimSpace(want)), strings.ToLower(strings.TrimSpace(got))
	if w == "" || strings.HasPrefix(w, "col") && isNumber(w[3:]) {
		return true
	}
	for _, r := range w {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return true
		}
	}
	return strings.HasPrefix(g, w)
}
