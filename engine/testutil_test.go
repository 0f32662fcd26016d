package engine

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/engine/bind"

	"github.com/nicflow/nicflow/engine/plan"

	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/internal/tpchq"
)

var rewrite = flag.Bool("rewrite", false, "rewrite golden files in testdata instead of comparing")

// checkGolden compares got with testdata/name, or rewrites it with -rewrite.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *rewrite {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
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

// tpchQuery returns TPC-H query n (1..22) with its validation parameters.
func tpchQuery(t testing.TB, n int) string {
	t.Helper()
	q, err := tpchq.Text(n)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// session applies DDL of views to an overlay, as the embedded session does,
// so that scripts like Q15 (create view; select; drop view) bind.
type testSession struct {
	cat   plan.Catalog
	views *plan.MemCatalog
}

func newTestSession() *testSession {
	views := plan.NewMemCatalog()
	return &testSession{cat: plan.OverlayCatalog{Base: plan.TPCHCatalog(), Views: views}, views: views}
}

// bindScript binds every statement of src, applying CREATE/DROP VIEW as it
// goes, and returns the bound query statements.
func (s *testSession) bindScript(src string) ([]bind.Statement, error) {
	stmts, err := sql.Parse(src)
	if err != nil {
		return nil, err
	}
	var out []bind.Statement
	for _, rs := range stmts {
		st, err := bind.Bind(s.cat, src, rs.Stmt)
		if err != nil {
			return nil, err
		}
		switch x := st.(type) {
		case *bind.CreateViewStmt:
			if err := s.views.AddView(&plan.ViewDef{Name: x.Name, Columns: x.Columns, SQL: x.SQL}, x.OrReplace); err != nil {
				return nil, err
			}
		case *bind.DropStmt:
			for _, n := range x.Names {
				if x.View {
					s.views.DropView(n)
				}
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// bindQuery binds a script and returns its only query statement.
func bindQuery(t testing.TB, src string) *bind.QueryStmt {
	t.Helper()
	stmts, err := newTestSession().bindScript(src)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	var q *bind.QueryStmt
	for _, st := range stmts {
		if x, ok := st.(*bind.QueryStmt); ok {
			if q != nil {
				t.Fatalf("more than one query in %s", src)
			}
			q = x
		}
	}
	if q == nil {
		t.Fatalf("no query in %s", src)
	}
	return q
}

func readFileBytes(path string) ([]byte, error) { return os.ReadFile(path) }

// newTestSessionWith is newTestSession over another base catalog.
func newTestSessionWith(base plan.Catalog) *testSession {
	views := plan.NewMemCatalog()
	return &testSession{cat: plan.OverlayCatalog{Base: base, Views: views}, views: views}
}

// queryRows runs q on s and returns its rows as text ("a|b|NULL"), failing
// the test on an error.
func queryRows(t *testing.T, s *Session, q string) []string {
	t.Helper()
	res, err := s.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	_, rows, err := resultRows(res, &sqlRecord{})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return rows
}
