package sql

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/internal/tpchq"
)

var rewrite = flag.Bool("rewrite", false, "rewrite golden files in testdata instead of comparing")

// checkGolden compares got with testdata/name, or rewrites it with -rewrite.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *rewrite {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -rewrite to create it)", err)
	}
	if string(want) != got {
		wl, gl := strings.Split(string(want), "\n"), strings.Split(got, "\n")
		for i := 0; i < len(wl) || i < len(gl); i++ {
			var w, g string
			if i < len(wl) {
				w = wl[i]
			}
			if i < len(gl) {
				g = gl[i]
			}
			if w != g {
				t.Fatalf("%s differs at line %d (run go test -rewrite after checking):\nwant: %s\ngot:  %s", path, i+1, w, g)
			}
		}
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tpchQueries returns the 22 TPC-H query texts, q01..q22.
func tpchQueries(t testing.TB) []string {
	var qs []string
	for i := 1; i <= 22; i++ {
		q, err := tpchq.Text(i)
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	return qs
}

// roundTrip checks that printing stmt and parsing the text back gives a tree
// that prints the same (in both the canonical and the parenthesized form).
func roundTrip(t testing.TB, where string, st Statement) {
	t.Helper()
	for _, pr := range []func(Node) string{Deparse, DeparseFull} {
		text := pr(st)
		st2, err := ParseOne(text)
		if err != nil {
			t.Fatalf("%s: deparsed text does not parse: %v\ntext: %s", where, err, text)
		}
		if text2 := pr(st2); text2 != text {
			t.Fatalf("%s: round trip not stable:\nfirst:  %s\nsecond: %s", where, text, text2)
		}
		// The trees must be equal too, positions aside.
		if !reflect.DeepEqual(stripPos(st), stripPos(st2)) && pr(st) == Deparse(st) {
			t.Fatalf("%s: trees differ after a round trip through %s", where, text)
		}
	}
}

// stripPos returns a copy of the tree's printed structure without positions:
// the fully parenthesized text plus the node types in walk order is enough
// to tell trees apart.
func stripPos(st Statement) string {
	var b strings.Builder
	b.WriteString(DeparseFull(st))
	Walk(st, func(n Node) bool {
		fmt.Fprintf(&b, " %T", n)
		return true
	})
	return b.String()
}

func TestTPCHQueriesParse(t *testing.T) {
	for i, q := range tpchQueries(t) {
		stmts, err := Parse(q)
		if err != nil {
			t.Fatalf("q%02d: %v", i+1, err)
		}
		want := 1
		if i+1 == 15 {
			want = 3 // create view, select, drop view
		}
		if len(stmts) != want {
			t.Fatalf("q%02d: %d statements, want %d", i+1, len(stmts), want)
		}
		for j, rs := range stmts {
			if got := q[rs.Start.Offset:rs.End]; got != rs.Text {
				t.Fatalf("q%02d stmt %d: span text mismatch", i+1, j)
			}
			if strings.HasSuffix(rs.Text, ";") || strings.HasPrefix(rs.Text, "--") {
				t.Fatalf("q%02d stmt %d: span %q should exclude comments and ';'", i+1, j, rs.Text)
			}
			roundTrip(t, fmt.Sprintf("q%02d stmt %d", i+1, j), rs.Stmt)
		}
	}
}

func TestTPCHShapes(t *testing.T) {
	qs := tpchQueries(t)
	// Q1: the ANSI interval with its leading precision.
	q1, err := ParseOne(qs[0])
	if err != nil {
		t.Fatal(err)
	}
	var iv *IntervalLit
	Walk(q1, func(n Node) bool {
		if x, ok := n.(*IntervalLit); ok {
			iv = x
		}
		return true
	})
	if iv == nil || iv.Value != "90" || iv.Unit != "day" || iv.Precision != 3 {
		t.Fatalf("q1 interval: %+v", iv)
	}
	// The interval sits on line 16 of q01.sql, after a tab and "l_shipdate <= date '1998-12-01' - ".
	if iv.Line != 16 || iv.Col != 36 {
		t.Fatalf("q1 interval position %d:%d, want 16:36", iv.Line, iv.Col)
	}
	// Q13: derived table with column aliases and a left outer join.
	q13, _ := ParseOne(qs[12])
	from := q13.(*Query).Body.(*Select).From[0].(*DerivedTable)
	if from.Alias.Name.Name != "c_orders" || len(from.Alias.Columns) != 2 || from.Alias.Columns[1].Name != "c_count" {
		t.Fatalf("q13 alias: %+v", from.Alias)
	}
	inner := from.Query.Body.(*Select).From[0].(*Join)
	if inner.Kind != LeftJoin || inner.On == nil {
		t.Fatalf("q13 join: %+v", inner)
	}
	// Q15: view with columns.
	stmts, _ := Parse(qs[14])
	cv := stmts[0].Stmt.(*CreateView)
	if cv.Name.Last().Name != "revenue0" || len(cv.Columns) != 2 {
		t.Fatalf("q15 view: %+v", cv)
	}
	if d := stmts[2].Stmt.(*Drop); d.Kind != ObjView || d.Names[0].Last().Name != "revenue0" {
		t.Fatalf("q15 drop: %+v", d)
	}
	// Q22: substring(... from 1 for 2) becomes substring(x, 1, 2).
	if got := Deparse(mustParse(t, qs[21])); !strings.Contains(got, "substring(c_phone, 1, 2) IN ('13', '31'") {
		t.Fatalf("q22 deparse: %s", got)
	}
}

func mustParse(t testing.TB, src string) Statement {
	t.Helper()
	st, err := ParseOne(src)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestStatementsGolden(t *testing.T) {
	src := readFile(t, "testdata/statements.sql")
	stmts, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, rs := range stmts {
		fmt.Fprintf(&b, "# line %d\n%s\n=> %s\n", rs.Start.Line, rs.Text, Deparse(rs.Stmt))
		if full := DeparseFull(rs.Stmt); full != Deparse(rs.Stmt) {
			fmt.Fprintf(&b, "=( %s\n", full)
		}
		b.WriteString("\n")
		roundTrip(t, fmt.Sprintf("line %d", rs.Start.Line), rs.Stmt)
	}
	checkGolden(t, "statements.golden", b.String())
}

// TestErrorsGolden runs every case of testdata/errors.sql (cases separated
// by lines "----") and pins the exact error text, line, column and caret.
func TestErrorsGolden(t *testing.T) {
	src := readFile(t, "testdata/errors.sql")
	var b strings.Builder
	for _, c := range strings.Split(src, "\n----\n") {
		c = strings.TrimPrefix(c, "\n")
		if strings.TrimSpace(c) == "" {
			continue
		}
		_, err := Parse(c)
		if err == nil {
			t.Errorf("no error for:\n%s", c)
			continue
		}
		if k := nferr.KindOf(err); k != nferr.KindQuery {
			t.Errorf("error kind %v for %q: %v", k, c, err)
		}
		fmt.Fprintf(&b, "%s\n~~~~\n%s\n\n", strings.TrimRight(c, "\n"), err)
	}
	checkGolden(t, "errors.golden", b.String())
}

func TestScripts(t *testing.T) {
	stmts, err := Parse(";;  select 1 ;\n;\n select 2; -- done\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) != 2 || stmts[0].Text != "select 1" || stmts[1].Text != "select 2" || stmts[1].Start.Line != 3 || stmts[1].Start.Col != 2 {
		t.Fatalf("got %+v", stmts)
	}
	if stmts, err := Parse("  -- only a comment\n"); err != nil || len(stmts) != 0 {
		t.Fatalf("comment-only script: %v %v", stmts, err)
	}
	if _, err := ParseOne("select 1; select 2"); err == nil {
		t.Fatal("ParseOne accepted two statements")
	}
}

func TestPrecedence(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"1 + 2 * 3", "1 + (2 * 3)"},
		{"1 - 2 - 3", "(1 - 2) - 3"},
		{"-2 ^ 2", "(-2) ^ 2"},
		{"-x::int", "-(x::INTEGER)"},
		{"a or b and not c", "a OR (b AND (NOT c))"},
		{"a = b is null", "(a = b) IS NULL"},
		{"a || b = c", "(a || b) = c"},
		{"a + 1 between 2 and 3 + 4", "(a + 1) BETWEEN 2 AND (3 + 4)"},
		{"not a like 'x' and b", "(NOT (a LIKE 'x')) AND b"},
		{"a < b = c", "(a < b) = c"},
		{"x in (1, 2) = y", "(x IN (1, 2)) = y"},
		{"a is distinct from b and c", "(a IS DISTINCT FROM b) AND c"},
	} {
		e, err := ParseExpr(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got := DeparseFull(e); got != c.want {
			t.Errorf("%s: got %s, want %s", c.in, got, c.want)
		}
	}
}

func TestDepthLimit(t *testing.T) {
	deep := strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000)
	for _, src := range []string{
		"select " + deep,
		"select " + strings.Repeat("- ", 100000) + "1",
		"select " + strings.Repeat("not ", 100000) + "true",
		"select 1" + strings.Repeat(" + 1", 100000),
		"select * from t where a in " + strings.Repeat("(select a from t where a in ", 20000) + "(1)" + strings.Repeat(")", 20000),
		strings.Repeat("(", 100000) + "select 1" + strings.Repeat(")", 100000),
		"select * from " + strings.Repeat("(", 100000) + "t",
	} {
		_, err := Parse(src)
		if err == nil || !strings.Contains(err.Error(), "nested too deeply") || nferr.KindOf(err) != nferr.KindQuery {
			t.Errorf("%.40s...: want a nesting error, got %v", src, err)
		}
	}
	// Just under the limit works.
	ok := "select " + strings.Repeat("(", 1000) + "1" + strings.Repeat(")", 1000)
	if _, err := Parse(ok); err != nil {
		t.Fatal(err)
	}
}

func TestPositions(t *testing.T) {
	src := "select a,\n\tbb + \"Cc\"\nfrom t"
	st := mustParse(t, src)
	sel := st.(*Query).Body.(*Select)
	bin := sel.Items[1].Expr.(*BinaryExpr)
	if bin.Line != 2 || bin.Col != 2 || bin.Offset != 11 {
		t.Fatalf("bb at %+v", bin.Pos)
	}
	r := bin.R.(*ColumnRef)
	if r.Parts[0].Name != "Cc" || !r.Parts[0].Quoted || r.Col != 7 {
		t.Fatalf("\"Cc\" at %+v %+v", r.Pos, r.Parts[0])
	}
	tn := sel.From[0].(*TableName)
	if tn.Line != 3 || tn.Col != 6 {
		t.Fatalf("t at %+v", tn.Pos)
	}
	// Every node has a position inside the source.
	for _, q := range tpchQueries(t) {
		stmts, _ := Parse(q)
		for _, rs := range stmts {
			Walk(rs.Stmt, func(n Node) bool {
				p := n.Position()
				if p.Line < 1 || p.Col < 1 || p.Offset < rs.Start.Offset || p.Offset >= rs.End {
					t.Fatalf("%T has position %+v outside its statement %+v..%d", n, p, rs.Start, rs.End)
				}
				return true
			})
		}
	}
}

func BenchmarkParseTPCH(b *testing.B) {
	qs := tpchQueries(b)
	n := 0
	for _, q := range qs {
		n += len(q)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		for _, q := range qs {
			if _, err := Parse(q); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestTokenWindow: the parser holds a few tokens at a time, not one per
// token of the script (a 100,000-value IN list), and a lexical error
// anywhere in the script still comes before a syntax error earlier in it.
func TestTokenWindow(t *testing.T) {
	var b strings.Builder
	b.WriteString("select 1 where x in (0")
	for i := 1; i < 100000; i++ {
		fmt.Fprintf(&b, ",%d", i)
	}
	b.WriteString("); select 2")
	w, err := newTokenWindow(b.String())
	if err != nil {
		t.Fatal(err)
	}
	p := &parser{src: b.String(), toks: w}
	most := 0
	for p.peek().kind != tokEOF {
		if _, err := p.parseStatement(); err != nil {
			t.Fatal(err)
		}
		most = max(most, len(w.buf))
		p.acceptOp(";")
	}
	if most > 1024 {
		t.Errorf("the parser held %d tokens", most)
	}
	if _, err := Parse("select 1 +; select 'abc"); err == nil || !strings.Contains(err.Error(), "unterminated") {
		t.Errorf("a lexical error after a syntax error: %v", err)
	}
	if _, err := Parse(b.String()); err != nil {
		t.Fatal(err)
	}
}

// TestParseAnalyze: ANALYZE's tree (options, tables, columns, their
// positions) and the word VERBOSE, which right after ANALYZE is the
// option and elsewhere, or quoted, a table.
func TestParseAnalyze(t *testing.T) {
	a := mustParse(t, "analyze verbose t (a, \"B\"),\n  public.s").(*Analyze)
	if !a.Verbose || a.SkipLocked || len(a.Tables) != 2 || a.Col != 1 {
		t.Fatalf("got %+v", a)
	}
	t0, t1 := a.Tables[0], a.Tables[1]
	if t0.Name.Parts[0].Name != "t" || t0.Col != 17 || len(t0.Columns) != 2 || t0.Columns[1].Name != "B" || !t0.Columns[1].Quoted || t0.Columns[1].Col != 23 {
		t.Errorf("first table %+v", t0)
	}
	if len(t1.Name.Parts) != 2 || t1.Name.Parts[1].Name != "s" || t1.Line != 2 || t1.Col != 3 || t1.Columns != nil {
		t.Errorf("second table %+v", t1)
	}
	for src, want := range map[string]struct {
		verbose, skip bool
		tables        []string
	}{
		"analyze":                              {},
		"analyse verbose":                      {verbose: true},
		`analyze "verbose"`:                    {tables: []string{"verbose"}},
		"analyze verbose verbose":              {verbose: true, tables: []string{"verbose"}},
		"analyze (verbose off, skip_locked) x": {skip: true, tables: []string{"x"}},
		"analyze (verbose) verbose, y":         {verbose: true, tables: []string{"verbose", "y"}},
	} {
		a := mustParse(t, src).(*Analyze)
		var got []string
		for _, at := range a.Tables {
			got = append(got, at.Name.Parts[0].Name)
		}
		if a.Verbose != want.verbose || a.SkipLocked != want.skip || !reflect.DeepEqual(got, want.tables) {
			t.Errorf("%s: got verbose %v, skip_locked %v, tables %v", src, a.Verbose, a.SkipLocked, got)
		}
		roundTrip(t, src, a)
	}
	for src, want := range map[string]string{
		"analyze 1":             "line 1, column 9: expected a table name, found number 1",
		"analyze t (a,)":        "line 1, column 14: expected a column name, found ')'",
		"analyze (verbose 2) t": "line 1, column 18: ANALYZE option VERBOSE takes a boolean",
		"analyze (freeze) t":    "line 1, column 10: unknown ANALYZE option FREEZE",
		"analyze t; analyze ,":  "line 1, column 20: expected a table name, found ','",
	} {
		_, err := Parse(src)
		if err == nil || nferr.KindOf(err) != nferr.KindQuery || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", src, err, want)
		}
	}
}
