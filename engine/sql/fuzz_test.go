package sql

import (
	"strings"
	"testing"

	"github.com/nicflow/nicflow/internal/nferr"
)

// FuzzParse feeds random and mutated SQL to the parser: it must never panic
// or hang, every error must be a KindQuery error with a position, and every
// accepted statement must print and parse back to the same tree.
//
//	go test -run '^$' -fuzz FuzzParse -fuzztime 60s ./engine/sql
func FuzzParse(f *testing.F) {
	for _, q := range tpchQueries(f) {
		f.Add(q)
	}
	stmts, err := Parse(readFile(f, "testdata/statements.sql"))
	if err != nil {
		f.Fatal(err)
	}
	for _, rs := range stmts {
		f.Add(rs.Text)
	}
	for _, c := range strings.Split(readFile(f, "testdata/errors.sql"), "\n----\n") {
		f.Add(c)
	}
	f.Add("select ((((((1))))))")
	f.Add("create table c (a int references p (x) match full on delete restrict, b int, constraint f foreign key (b) references q)")
	f.Add(`select * from read_csv('x.csv', columns = {'a': 'INTEGER', "b": 'TEXT'}, quote = '''')`)
	f.Add("select lag(x, 2 ignore nulls) over w, first_value(y) respect nulls over (order by y groups between 1 preceding and current row exclude ties) from t window w as (order by x)")
	f.Add("select x from t where a in (select 1) and exists (select 1) or not b")
	f.Fuzz(func(t *testing.T, src string) {
		stmts, err := Parse(src)
		if err != nil {
			if k := nferr.KindOf(err); k != nferr.KindQuery {
				t.Fatalf("error of kind %v: %v", k, err)
			}
			if !strings.Contains(err.Error(), "line ") {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		for _, rs := range stmts {
			roundTrip(t, "fuzz", rs.Stmt)
		}
		if e, err := ParseExpr(src); err == nil {
			text := Deparse(e)
			e2, err := ParseExpr(text)
			if err != nil || Deparse(e2) != text {
				t.Fatalf("expression round trip: %q -> %q (%v)", src, text, err)
			}
		}
	})
}
