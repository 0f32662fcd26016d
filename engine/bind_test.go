package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/engine/opt"

	"github.com/nicflow/nicflow/engine/bind"

	"github.com/nicflow/nicflow/engine/plan"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/internal/nferr"
)

// TestBindErrorsGolden pins the binder's error messages (positions and
// carets included) for the cases of testdata/bind_errors.sql.
func TestBindErrorsGolden(t *testing.T) {
	src := string(mustRead(t, "testdata/bind_errors.sql"))
	var b strings.Builder
	for _, c := range strings.Split(src, "\n----\n") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		_, err := newTestSession().bindScript(c)
		if err == nil {
			t.Errorf("no error for:\n%s", c)
			continue
		}
		if k := nferr.KindOf(err); k != nferr.KindQuery {
			t.Errorf("error kind %v for %q: %v", k, c, err)
		}
		fmt.Fprintf(&b, "%s\n~~~~\n%s\n\n", c, err)
	}
	checkGolden(t, "bind_errors.golden", b.String())
}

// TestTypes pins result types and folded values of expressions.
func TestTypes(t *testing.T) {
	cases := []struct{ expr, want string }{
		{"1", "integer 1"},
		{"3000000000", "bigint 3000000000"},
		{"0.06", "decimal(2,2) 0.06"},
		{".06 - 0.01", "decimal(3,2) 0.05"},
		{"100.00 * 2", "decimal(6,2) 200.00"},
		{"7.0 / 2", "decimal(17,16) 3.5000000000000000"},
		{"7 / 2", "integer 3"},
		{"7 % 3", "integer 1"},
		{"1e3", "double 1000"},
		{"1.5 + 1e0", "double 2.5"},
		{"date '1998-12-01' - interval '90' day (3)", "date date '1998-09-02'"},
		{"date '1996-01-31' + interval '1' month", "date date '1996-02-29'"},
		{"date '1994-01-01' + interval '1' year", "date date '1995-01-01'"},
		{"date '1995-01-01' - date '1994-01-01'", "integer 365"},
		{"date '1995-01-01' + 1", "date date '1995-01-02'"},
		{"interval '3 months 2 days'", "interval interval '3 months 2 days'"},
		{"extract(year from date '1995-06-17')", "bigint 1995"},
		{"'a' || 'b'", "varchar 'ab'"},
		{"'a' || 1", "varchar 'a1'"},
		{"1 < 2 and not false", "boolean true"},
		{"null::integer is null", "boolean true"},
		{"1 in (1, 2, null)", "boolean true"},
		{"3 in (1, 2, null)", "boolean NULL"},
		{"null = 1", "boolean NULL"},
		{"1 is distinct from null", "boolean true"},
		{"coalesce(null, 2, 3)", "integer 2"},
		{"case when 1 > 2 then 'a' else 'b' end", "varchar 'b'"},
		{"cast('12.345' as decimal(5,2))", "decimal(5,2) 12.35"},
		{"cast(12.5 as integer)", "integer 13"},
		{"cast('2020-02-29' as date)", "date date '2020-02-29'"},
		{"'abc' like 'a%'", "boolean true"},
		{"'abc' ilike 'A_C'", "boolean true"},
		{"upper('x')", "varchar 'X'"},
		{"-(-5)", "integer 5"},
		{"1 between 0 and 2", "boolean true"},
		{"date '2020-01-01' < '2020-02-01'", "boolean true"},
	}
	for _, c := range cases {
		q := bindQuery(t, "select "+c.expr)
		p, err := opt.Optimize(q.Plan)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		pr, ok := p.(*plan.ProjectNode)
		if !ok {
			t.Fatalf("%s: plan %T", c.expr, p)
		}
		e := pr.Exprs[0]
		got := plan.TypeString(e.Type()) + " " + e.String()
		if got != c.want {
			t.Errorf("%s: got %s, want %s", c.expr, got, c.want)
		}
	}
	// Column types over the TPC-H schema.
	colCases := []struct{ expr, want string }{
		{"l_extendedprice * (1 - l_discount)", "decimal(31,4)"},
		{"l_extendedprice * (1 - l_discount) * (1 + l_tax)", "decimal(38,6)"},
		{"sum(l_quantity)", "decimal(38,2)"},
		{"avg(l_quantity)", "decimal(38,16)"},
		{"avg(l_linenumber)", "double"},
		{"sum(l_linenumber)", "bigint"},
		{"count(*)", "bigint"},
		{"count(distinct l_suppkey)", "bigint"},
		{"min(l_shipdate)", "date"},
		{"ps_supplycost * ps_availqty", "decimal(25,2)"},
		{"l_quantity < 24", "boolean"},
		{"sum(l_extendedprice) / 7.0", "decimal(38,16)"},
		{"l_discount + 1.5e0", "double"},
		{"l_orderkey + l_linenumber", "bigint"},
		{"substring(l_comment, 1, 2)", "varchar"},
		{"extract(year from l_shipdate)", "bigint"},
		{"l_shipdate + interval '1' month", "date"},
	}
	for _, c := range colCases {
		q := bindQuery(t, "select "+c.expr+" from lineitem, partsupp")
		cols := q.Plan.Columns()
		if got := plan.TypeString(cols[0].Type); got != c.want {
			t.Errorf("%s: got %s, want %s", c.expr, got, c.want)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := readFileBytes(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStatements binds DDL, DML and session statements.
func TestStatements(t *testing.T) {
	s := newTestSession()
	cases := []struct{ sql, want string }{
		{"create table t (a integer not null, b decimal(15,2), c varchar(10), d date, e boolean, f double precision, g bigint, h smallint)",
			"create t [a int32, b decimal64(15, 2)?, c utf8?, d date32?, e bool?, f float64?, g int64?, h int32?]"},
		{"create table if not exists t2 as select n_name, n_nationkey * 2 as k from nation",
			"create t2 [n_name utf8, k int64?] as query"},
		{"create table t3 (x, y) as select 1, 'a'", "create t3 [x int32, y utf8] as query"},
		{"create external table e stored as parquet location 'data/e/'", "external e parquet data/e/ schema=false"},
		{"create external table e2 (a int) stored as parquet location '/x'", "external e2 parquet /x schema=true"},
		{"drop table if exists t, t2", "drop table [t t2] if-exists=true"},
		{"drop view v", "drop view [v] if-exists=false"},
		{"insert into nation values (99, 'X', 1, 'c')", "insert nation [n_nationkey n_name n_regionkey n_comment]"},
		{"insert into region select * from region", "insert region [r_regionkey r_name r_comment]"},
		{"copy lineitem from 'lineitem.tbl'", "copy lineitem tbl '|' header=false cols=16"},
		{"copy nation (n_nationkey, n_name) from 'n.csv' with (format csv, delimiter ';', header true, null 'NA')", "copy nation csv ';' header=true cols=2"},
		{"copy part from 'p.parquet'", "copy part parquet ',' header=false cols=9"},
		{"explain analyze select 1", "explain analyze=true verbose=false"},
		{"show tables", "show tables"},
		{"show memory_limit", "show memory_limit"},
		{"describe region", "describe region 3 columns"},
		{"set parallelism = 4", "set parallelism=4"},
		{"set memory_limit to '2GiB'", "set memory_limit=2GiB"},
		{"set x = -1", "set x=-1"},
		{"create view v2 (a) as select n_name, n_nationkey from nation", "view v2 [a n_nationkey] SELECT n_name, n_nationkey FROM nation"},
	}
	for _, c := range cases {
		stmts, err := s.bindScript(c.sql)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		got := describeStmt(stmts[0])
		if got != c.want {
			t.Errorf("%s:\n got  %s\n want %s", c.sql, got, c.want)
		}
	}
	// The INSERT casts to the table's types and fills missing columns with NULL.
	s.views.AddTable(&plan.TableDef{Name: "tn", Schema: arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: plan.TypInt64}, {Name: "v", Type: plan.TypString, Nullable: true}}, nil)})
	stmts, err := s.bindScript("insert into tn (k) values (99)")
	if err != nil {
		t.Fatal(err)
	}
	ins := stmts[0].(*bind.InsertStmt)
	if err := plan.ValidatePlan(ins.Query.Plan); err != nil {
		t.Fatal(err)
	}
	p, err := opt.Optimize(ins.Query.Plan)
	if err != nil {
		t.Fatal(err)
	}
	if got := opt.ExplainPlan(p, opt.ExplainOptions{NoRows: true}); !strings.Contains(got, "k := CAST(column1 AS bigint)") || !strings.Contains(got, "v := NULL") {
		t.Errorf("insert plan:\n%s", got)
	}
}

func describeStmt(st bind.Statement) string {
	schema := func(s interface {
		NumFields() int
	}) string {
		return ""
	}
	_ = schema
	switch x := st.(type) {
	case *bind.CreateTableStmt:
		var f []string
		for _, fl := range x.Schema.Fields() {
			s := fl.Name + " " + fl.Type.String()
			if fl.Nullable {
				s += "?"
			}
			f = append(f, s)
		}
		out := "create " + x.Name + " [" + strings.Join(f, ", ") + "]"
		if x.Query != nil {
			out += " as query"
		}
		return out
	case *bind.CreateExternalTableStmt:
		return fmt.Sprintf("external %s %s %s schema=%v", x.Name, x.Format, x.Location, x.Schema != nil)
	case *bind.DropStmt:
		k := "table"
		if x.View {
			k = "view"
		}
		return fmt.Sprintf("drop %s %v if-exists=%v", k, x.Names, x.IfExists)
	case *bind.InsertStmt:
		return fmt.Sprintf("insert %s %v", x.Table.Name, x.Query.Names)
	case *bind.CopyStmt:
		return fmt.Sprintf("copy %s %s %q header=%v cols=%d", x.Table.Name, x.Format, x.Delimiter, x.Header, len(x.Columns))
	case *bind.ExplainStmt:
		return fmt.Sprintf("explain analyze=%v verbose=%v", x.Analyze, x.Verbose)
	case *bind.ShowTablesStmt:
		return "show tables"
	case *bind.ShowStmt:
		return "show " + x.Name
	case *bind.DescribeStmt:
		return fmt.Sprintf("describe %s %d columns", x.Name, x.Schema.NumFields())
	case *bind.SetStmt:
		return "set " + x.Name + "=" + x.Value
	case *bind.CreateViewStmt:
		var names []string
		for _, f := range x.Schema.Fields() {
			names = append(names, f.Name)
		}
		return fmt.Sprintf("view %s %v %s", x.Name, names, x.SQL)
	}
	return fmt.Sprintf("%T", st)
}

// TestBindShapes checks binder behaviours on small queries.
func TestBindShapes(t *testing.T) {
	cases := []struct{ sql, want string }{
		// ORDER BY an input column not in the select list: a hidden column.
		{"select n_name from nation order by n_regionkey desc",
			"Project [nation.n_name]\n  Sort [nation.n_regionkey DESC]\n    Project [nation.n_name, nation.n_regionkey]\n      Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]\n"},
		// GROUP BY position and alias, ORDER BY alias and position.
		{"select n_regionkey as r, count(*) as c from nation group by 1 order by c, 1",
			"Sort [c, r]\n  Project [r, c]\n    Aggregate group=[nation.n_regionkey] aggs=[count(*)]\n      Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]\n"},
		// USING hides the right copy of the column.
		{"select * from nation join region on n_regionkey = r_regionkey join nation n2 using (n_nationkey)",
			"Project [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment, region.r_regionkey, region.r_name, region.r_comment, n2.n_name, n2.n_regionkey, n2.n_comment]\n  Join inner cond=[nation.n_nationkey = n2.n_nationkey]\n    Join inner cond=[nation.n_regionkey = region.r_regionkey]\n      Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]\n      Scan region [region.r_regionkey, region.r_name, region.r_comment]\n    Scan nation AS n2 [n2.n_nationkey, n2.n_name, n2.n_regionkey, n2.n_comment]\n"},
		// FULL JOIN USING merges the column with COALESCE, listed first by *.
		{"select * from region r1 full join region r2 using (r_regionkey)",
			"Project [r_regionkey, r1.r_name, r1.r_comment, r2.r_name, r2.r_comment]\n  Project [r1.r_regionkey, r1.r_name, r1.r_comment, r2.r_regionkey, r2.r_name, r2.r_comment, r_regionkey := coalesce(r1.r_regionkey, r2.r_regionkey)]\n    Join full cond=[r1.r_regionkey = r2.r_regionkey]\n      Scan region AS r1 [r1.r_regionkey, r1.r_name, r1.r_comment]\n      Scan region AS r2 [r2.r_regionkey, r2.r_name, r2.r_comment]\n"},
		// A second USING finds the merged column of the first.
		{"select r_regionkey, r3.r_regionkey from region r1 join region r2 using (r_regionkey) left join region r3 using (r_regionkey)",
			"Project [r1.r_regionkey, r3.r_regionkey]\n  Join left cond=[r_regionkey = r3.r_regionkey]\n    Join inner cond=[r1.r_regionkey = r2.r_regionkey]\n      Scan region AS r1 [r1.r_regionkey, r1.r_name, r1.r_comment]\n      Scan region AS r2 [r2.r_regionkey, r2.r_name, r2.r_comment]\n    Scan region AS r3 [r3.r_regionkey, r3.r_name, r3.r_comment]\n"},
		// Window functions over an aggregate.
		{"select n_regionkey, sum(count(*)) over (order by n_regionkey rows between unbounded preceding and current row) from nation group by n_regionkey",
			"Project [nation.n_regionkey, sum]\n  Window [sum := sum(count(*)) OVER (ORDER BY nation.n_regionkey ROWS unbounded preceding..current row)]\n    Aggregate group=[nation.n_regionkey] aggs=[count(*)]\n      Scan nation [nation.n_nationkey, nation.n_name, nation.n_regionkey, nation.n_comment]\n"},
		// Set operations convert to a common type.
		{"select 1 union all select 2.5",
			"SetOp union all [?column?]\n  Project [?column? := CAST(?column? AS decimal(11,1))]\n    Project [?column? := 1]\n      Values 1 rows\n  Project [?column? := CAST(?column? AS decimal(11,1))]\n    Project [?column? := 2.5]\n      Values 1 rows\n"},
		// WITH used twice is shared; VALUES with column aliases.
		{"with c as (select * from (values (1, 'a'), (2, 'b')) v (k, s)) select x.k from c x, c y where x.k = y.k",
			"Project [x.k]\n  Filter x.k = y.k\n    Join inner\n      SharedScan 1 (c) [x.k, x.s]\n      SharedScan 1 (c) [y.k, y.s]\nShared 1 (c):\n  Project [k, s]\n    Values 2 rows [column1, column2]\n"},
		// FILTER (WHERE) becomes a CASE inside the aggregate.
		{"select count(*) filter (where r_regionkey > 1), sum(r_regionkey) filter (where r_name like 'A%') from region",
			"Project [count, sum]\n  Aggregate aggs=[count(CASE WHEN region.r_regionkey > 1 THEN 1 END), sum(CASE WHEN region.r_name LIKE 'A%' THEN region.r_regionkey END)]\n    Scan region [region.r_regionkey, region.r_name, region.r_comment]\n"},
		// IS NOT DISTINCT FROM, simple CASE, COALESCE.
		{"select case r_name when 'ASIA' then 1 else 2 end, coalesce(r_comment, 'none') from region where r_regionkey is not distinct from 1",
			"Project [case := CASE WHEN region.r_name = 'ASIA' THEN 1 ELSE 2 END, coalesce := coalesce(region.r_comment, 'none')]\n  Filter region.r_regionkey IS NOT DISTINCT FROM 1\n    Scan region [region.r_regionkey, region.r_name, region.r_comment]\n"},
	}
	for _, c := range cases {
		q := bindQuery(t, c.sql)
		if err := plan.ValidatePlan(q.Plan); err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		if got := opt.ExplainPlan(q.Plan, opt.ExplainOptions{NoRows: true}); got != c.want {
			t.Errorf("%s:\n got:\n%s want:\n%s", c.sql, got, c.want)
		}
	}
}

// TestBindFromScript checks that errors point into the script, not the
// statement: positions are the script's.
func TestBindFromScript(t *testing.T) {
	src := "select 1;\nselect\n  nope\nfrom nation;"
	stmts, err := sql.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bind.Bind(plan.TPCHCatalog(), src, stmts[1].Stmt)
	want := "line 3, column 3: column \"nope\" does not exist\n  nope\n  ^"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestCreateTableAsNull(t *testing.T) {
	stmts, err := newTestSession().bindScript("create table t as select null as a, 1 as b")
	if err != nil {
		t.Fatal(err)
	}
	ct := stmts[0].(*bind.CreateTableStmt)
	if err := plan.ValidatePlan(ct.Query.Plan); err != nil {
		t.Fatal(err)
	}
	cols := ct.Query.Plan.Columns()
	if !plan.IsString(cols[0].Type) || !plan.IsString(ct.Schema.Field(0).Type) || !plan.IsInteger(cols[1].Type) {
		t.Fatalf("columns %v schema %v", cols, ct.Schema)
	}
}
