package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/engine/opt"

	"github.com/nicflow/nicflow/engine/bind"

	"github.com/nicflow/nicflow/engine/plan"

	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/internal/nferr"
)

// FuzzBind feeds random and mutated SQL through parse, bind and optimize
// against the TPC-H catalog: no panic (a recovered one is a KindInternal
// error, which fails), every plan valid, every error with a kind.
//
//	go test -run '^$' -fuzz FuzzBind -fuzztime 60s ./engine
func FuzzBind(f *testing.F) {
	for i := 1; i <= 22; i++ {
		f.Add(tpchQuery(f, i))
	}
	addCases := func(path, sep string) {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		for _, c := range strings.Split(string(b), sep) {
			f.Add(c)
		}
	}
	addCases("testdata/bind_errors.sql", "\n----\n")
	// Recursive CTEs, subqueries evaluated row by row, DML with FROM,
	// USING and RETURNING.
	for _, c := range []string{
		"with recursive r(k) as (select 1 union select n_nationkey from r join nation on n_regionkey = k) select k from r",
		"with recursive r(k, d) as (select 0, 1.5 union all select k + 1, d * 2 from r where k < 5) select * from r",
		"select n_name, (select r_name from region where r_regionkey >= n_regionkey order by r_name limit 1) from nation",
		"select n_name from nation where exists (select 1 from region where r_regionkey = n_regionkey and exists (select 1 from supplier where s_nationkey = n_nationkey and s_acctbal > r_regionkey))",
		"select (select count(*) from region where r_regionkey < n_regionkey) as c, count(*) from nation group by 1",
		"update nation set n_comment = r_comment from region where r_regionkey = n_regionkey returning n_name",
		"delete from nation using region where r_regionkey = n_regionkey and r_name = 'ASIA' returning *",
		// LATERAL (each decorrelation road) and row values.
		"select n_name, l.s_name from nation left join lateral (select s_name from supplier where s_nationkey = n_nationkey order by s_acctbal desc limit 2) l on true",
		"select r_name, l.c from region, lateral (select count(*) as c from nation where n_regionkey = r_regionkey) l",
		"select r_name, l.n_name from region join lateral (select distinct n_name from nation where n_regionkey <= r_regionkey) l on l.n_name > r_name",
		"select r_name, g from region, generate_series(1, r_regionkey) g",
		"select n_name from nation where (n_regionkey, n_nationkey) > (1, 5) and (n_regionkey, n_name) in ((0, 'ALGERIA'), (1, 'BRAZIL'))",
	} {
		f.Add(c)
	}
	rules, _ := filepath.Glob("testdata/rules/*.sql")
	for _, r := range rules {
		addCases(r, "\n----\n")
	}
	addCases(filepath.Join("sql", "testdata", "statements.sql"), ";\n")
	f.Fuzz(func(t *testing.T, src string) {
		stmts, err := sql.Parse(src)
		if err != nil {
			return
		}
		s := newTestSession()
		for _, rs := range stmts {
			st, err := bind.Bind(s.cat, src, rs.Stmt)
			if err != nil {
				if nferr.KindOf(err) == nferr.KindInternal {
					t.Fatalf("internal error binding %q: %v", rs.Text, err)
				}
				continue
			}
			var q *bind.QueryStmt
			switch x := st.(type) {
			case *bind.QueryStmt:
				q = x
			case *bind.ExplainStmt:
				q, _ = x.Stmt.(*bind.QueryStmt)
			case *bind.InsertStmt:
				q = x.Query
			case *bind.CreateTableStmt:
				q = x.Query
			}
			if q == nil {
				continue
			}
			if err := plan.ValidatePlan(q.Plan); err != nil {
				t.Fatalf("invalid bound plan for %q: %v", rs.Text, err)
			}
			p, err := opt.Optimize(q.Plan)
			if err != nil {
				if nferr.KindOf(err) == nferr.KindInternal {
					t.Fatalf("internal error optimizing %q: %v", rs.Text, err)
				}
				continue
			}
			if err := plan.ValidatePlan(p); err != nil {
				t.Fatalf("invalid optimized plan for %q: %v\n%s", rs.Text, err, opt.ExplainPlan(p, opt.ExplainOptions{Verbose: true}))
			}
			_ = opt.ExplainPlan(p, opt.ExplainOptions{Verbose: true})
		}
	})
}
