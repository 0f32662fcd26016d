package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/tpch"
)

// scriptClient is a client program (testdata/clients) that runs scripts
// sent on its standard input: statements separated by a U+001D line, a
// script ended by a U+001E line; it answers with the last result's
// columns and rows (fields separated by U+001F), or U+0015 SQLSTATE and
// message, then a U+001E line.
type scriptClient struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startScriptClient(t *testing.T, name string, args ...string) *scriptClient {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &scriptClient{cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	return c
}

// run sends one script and reads its answer; a SQL error is returned
// with its SQLSTATE first.
func (c *scriptClient) run(stmts []string) (tpch.Result, error) {
	if _, err := io.WriteString(c.in, strings.Join(stmts, "\n\x1d\n")+"\n\x1e\n"); err != nil {
		return tpch.Result{}, err
	}
	var lines []string
	for {
		l, err := c.out.ReadString('\n')
		if err != nil {
			return tpch.Result{}, fmt.Errorf("client ended: %v", err)
		}
		l = strings.TrimSuffix(l, "\n")
		if l == "\x1e" {
			break
		}
		lines = append(lines, l)
	}
	if len(lines) > 0 && strings.HasPrefix(lines[0], "\x15") {
		return tpch.Result{}, fmt.Errorf("%s", lines[0][1:])
	}
	var res tpch.Result
	for i, l := range lines {
		f := strings.Split(l, "\x1f")
		if i == 0 {
			res.Columns = f
		} else {
			res.Rows = append(res.Rows, f)
		}
	}
	return res, nil
}

func (c *scriptClient) runner() textRunner {
	return func(ctx context.Context, text string, keep bool) (tpch.Result, int64, error) {
		stmts, err := engine.SplitScript(text)
		if err != nil {
			return tpch.Result{}, 0, err
		}
		r, err := c.run(stmts)
		return r, -1, err
	}
}

// TestServeJDBC runs the 22 TPC-H queries at SF 0.01 through PostgreSQL's
// JDBC driver (pgjdbc, server-side prepared statements) and checks every
// answer. It needs a JDK and the driver (Debian: default-jdk-headless
// libpostgresql-jdbc-java).
func TestServeJDBC(t *testing.T) {
	jar := "/usr/share/java/postgresql.jar"
	if _, err := os.Stat(jar); err != nil {
		t.Skip("pgjdbc is not installed (Debian: apt-get install libpostgresql-jdbc-java)")
	}
	if _, err := exec.LookPath("javac"); err != nil {
		t.Skip("no JDK (Debian: apt-get install default-jdk-headless)")
	}
	classes := t.TempDir()
	if out, err := exec.Command("javac", "-cp", jar, "-d", classes, filepath.Join("testdata", "clients", "NicflowJdbc.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	addr := startPGServer(t, tpchDir(t, 0.01))
	c := startScriptClient(t, "java", "-cp", classes+string(os.PathListSeparator)+jar, "NicflowJdbc", addr)
	for q := 1; q <= tpch.NumQueries; q++ {
		r := runTPCHQuery(context.Background(), c.runner(), q, 0.01, 1, true)
		if r.err != nil || r.verdict != "ok" {
			t.Errorf("Q%d: %v %s", q, r.err, r.verdict)
		}
	}
	// DatabaseMetaData, as JDBC tools browse: the tables, a table's columns.
	if r, err := c.run([]string{"!tables"}); err != nil || len(r.Rows) != 8 || fmt.Sprint(r.Rows[0]) != "[customer TABLE]" {
		t.Errorf("getTables: %v %v", r.Rows, err)
	}
	if r, err := c.run([]string{"!columns nation"}); err != nil || fmt.Sprint(r.Rows) != "[[n_nationkey int8 0] [n_name varchar 0] [n_regionkey int8 0] [n_comment varchar 0]]" {
		t.Errorf("getColumns: %v %v", r.Rows, err)
	}
	// Keys (pg_constraint's conkey and confkey, pg_index), on a database
	// of its own: the TPC-H tables have none.
	if r, err := c.run([]string{"!importedkeys nation"}); err != nil || len(r.Rows) != 0 {
		t.Errorf("getImportedKeys of a table without foreign keys: %v %v", r.Rows, err)
	}
	k := startScriptClient(t, "java", "-cp", classes+string(os.PathListSeparator)+jar, "NicflowJdbc", startPGServerOn(t, t.TempDir(), true))
	for _, s := range []string{
		"create table j_parent (id int, k int, code text unique, primary key (k, id))",
		"create table j_child (cid int primary key, pk int, pid int, qty int, foreign key (pk, pid) references j_parent (k, id))",
		"create index j_child_q on j_child (qty, cid)",
		"create table j_arr (id int, tags text[], nums bigint[] not null)",
	} {
		if _, err := k.run([]string{s}); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	// Array columns: pgjdbc names their types after pg_type (_varchar,
	// _int8), as DBeaver shows them.
	if r, err := k.run([]string{"!columns j_arr"}); err != nil || fmt.Sprint(r.Rows) != "[[id int4 1] [tags _varchar 1] [nums _int8 0]]" {
		t.Errorf("getColumns of array columns: %v %v", r.Rows, err)
	}
	if r, err := k.run([]string{"!importedkeys j_child"}); err != nil || fmt.Sprint(r.Rows) != "[[j_parent k pk 1 j_child_pk_pid_fkey] [j_parent id pid 2 j_child_pk_pid_fkey]]" {
		t.Errorf("getImportedKeys: %v %v", r.Rows, err)
	}
	// getPrimaryKeys and getIndexInfo read _pg_expandarray(i.indkey).
	if r, err := k.run([]string{"!primarykeys j_parent"}); err != nil || fmt.Sprint(r.Rows) != "[[k 1 j_parent_pkey] [id 2 j_parent_pkey]]" {
		t.Errorf("getPrimaryKeys: %v %v", r.Rows, err)
	}
	if r, err := c.run([]string{"!primarykeys nation"}); err != nil || len(r.Rows) != 0 {
		t.Errorf("getPrimaryKeys of a table without one: %v %v", r.Rows, err)
	}
	if r, err := k.run([]string{"!indexes j_child"}); err != nil || fmt.Sprint(r.Rows) != "[[j_child_pkey f cid 1] [j_child_q t qty 1] [j_child_q t cid 2]]" {
		t.Errorf("getIndexInfo: %v %v", r.Rows, err)
	}
}

// TestServePsycopg2 runs the 22 TPC-H queries at SF 0.01 through Python's
// psycopg2 (libpq) with autocommit and checks every answer; in psycopg2's
// default mode (a transaction block opened before the first statement)
// reads run and a write is refused with SQLSTATE 25001. It needs
// python3-psycopg2.
func TestServePsycopg2(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import psycopg2").Run(); err != nil {
		t.Skip("psycopg2 is not installed (Debian: apt-get install python3-psycopg2)")
	}
	addr := startPGServer(t, tpchDir(t, 0.01))
	host, port, _ := strings.Cut(addr, ":")
	script := filepath.Join("testdata", "clients", "nicflow_psycopg2.py")
	c := startScriptClient(t, py, script, host, port, "autocommit")
	for q := 1; q <= tpch.NumQueries; q++ {
		r := runTPCHQuery(context.Background(), c.runner(), q, 0.01, 1, true)
		if r.err != nil || r.verdict != "ok" {
			t.Errorf("Q%d: %v %s", q, r.err, r.verdict)
		}
	}
	b := startScriptClient(t, py, script, host, port, "block")
	if r, err := b.run([]string{"select count(*) from nation where n_regionkey = 1"}); err != nil || fmt.Sprint(r.Rows) != "[[5]]" {
		t.Errorf("a read in a transaction block: %v %v", r.Rows, err)
	}
	if _, err := b.run([]string{"create table py_t (a int)"}); err == nil || !strings.HasPrefix(err.Error(), "25001 CREATE cannot run inside a transaction block") {
		t.Errorf("a write in a transaction block: %v", err)
	}
}

// TestServeSQLAlchemy runs testdata/clients/nicflow_sqlalchemy.py against
// the server: SQLAlchemy with psycopg2 (connect, the inspector's tables,
// columns with their types, views, has_table, primary and foreign keys,
// indexes, unique and check constraints) and pandas (read_sql with
// parameters, dates, NULLs and arrays; to_sql create, append and
// replace, read back equal). It needs python3-sqlalchemy, python3-pandas and python3-psycopg2.
func TestServeSQLAlchemy(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import sqlalchemy, pandas, psycopg2").Run(); err != nil {
		t.Skip("SQLAlchemy, pandas or psycopg2 is not installed (Debian: apt-get install python3-sqlalchemy python3-pandas python3-psycopg2)")
	}
	// NB: a database of its own: the script creates a table and a view,
	// which the other tests' TPC-H database must not have.
	dir := t.TempDir()
	opts := tpch.GenOptions{SF: 0.01, Format: tpch.FormatParquet, Dir: dir}
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := runTpchGen(context.Background(), opts, io.Discard, os.Stderr); err != nil {
		t.Fatal(err)
	}
	addr := startPGServer(t, dir)
	host, port, _ := strings.Cut(addr, ":")
	out, err := exec.Command(py, filepath.Join("testdata", "clients", "nicflow_sqlalchemy.py"), host, port).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("nicflow_sqlalchemy.py: %v\n%s", err, out)
	}
}

var rewritePsql = flag.Bool("rewrite-psql", false, "rewrite cmd/nicflow/testdata/psql_describe.golden instead of comparing")

// TestServePsqlDescribe runs psql's describe commands on a TPC-H
// database (\dt, \dv, \dn, \l, \df, \d nation, \d+ lineitem) and on
// tables with keys, indexes, checks and foreign keys (\d TABLE, \d
// INDEX), and compares their output, as psql prints it, with
// testdata/psql_describe.golden (-rewrite-psql writes it). Made with
// psql 15 (Debian's postgresql-client-15).
func TestServePsqlDescribe(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("psql is not installed (Debian: apt-get install postgresql-client)")
	}
	if v, err := exec.Command("psql", "--version").Output(); err == nil {
		t.Logf("%s", v)
	}
	var b strings.Builder
	psql := func(addr string, cmds ...string) {
		host, port, _ := strings.Cut(addr, ":")
		for _, cmd := range cmds {
			out, err := exec.Command("psql", "-X", "-h", host, "-p", port, "-U", "nicflow", "-c", cmd).CombinedOutput()
			if err != nil || strings.Contains(string(out), "ERROR") {
				t.Errorf("psql %s: %v\n%s", cmd, err, out)
			}
			fmt.Fprintf(&b, "== %s\n%s\n", cmd, out)
		}
	}
	psql(startPGServer(t, tpchDir(t, 0.01)), `\dt`, `\dt nation`, `\dv`, `\dn`, `\l`, `\df`, `\du`, `\d nation`, `\d+ lineitem`)
	// Keys, indexes, checks and foreign keys (both ends), on a database of
	// its own: the TPC-H tables have none.
	keys := startPGServerOn(t, t.TempDir(), true)
	for _, s := range []string{
		"create table d_parent (id int primary key, code text unique, born date default current_date, tags text[], scores int[] not null default '{}')",
		"create table d_child (cid bigint primary key, pid int not null references d_parent (id), qty int check (qty > 0), note text)",
		"create index d_child_qn on d_child (qty, note)",
		"create view d_v as select cid, qty * 2 as q2 from d_child",
	} {
		host, port, _ := strings.Cut(keys, ":")
		if out, err := exec.Command("psql", "-X", "-h", host, "-p", port, "-U", "nicflow", "-c", s).CombinedOutput(); err != nil {
			t.Fatalf("psql %s: %v\n%s", s, err, out)
		}
	}
	psql(keys, `\d d_parent`, `\d d_child`, `\d d_child_qn`, `\d+ d_v`)
	golden := filepath.Join("testdata", "psql_describe.golden")
	if *rewritePsql {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestServePsqlDescribe -rewrite-psql writes it)", err)
	}
	if b.String() != string(want) {
		t.Errorf("psql's describe output differs from %s:\n%s", golden, b.String())
	}
}

// TestServePgcli runs pgcli (3.5, psycopg 3) as a user would, its input
// piped: it connects (its completion refresher's catalog queries run in
// the background; pgcli would tolerate any that failed) and its \dt lists
// the tables (its query has relkind = ANY($1), an array parameter).
func TestServePgcli(t *testing.T) {
	if _, err := exec.LookPath("pgcli"); err != nil {
		t.Skip("pgcli is not installed (Debian: apt-get install pgcli)")
	}
	addr := startPGServer(t, tpchDir(t, 0.01))
	host, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command("pgcli", "-h", host, "-p", port, "-U", "nicflow", "nicflow")
	cmd.Stdin = strings.NewReader("\\dt\nselect count(*) from nation\n")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // pgcli's config and history
	out, _ := cmd.CombinedOutput()
	for _, want := range []string{"| public | nation   | table | nicflow |", "SELECT 8", "| 25    |"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("pgcli: no %q in its output:\n%s", want, out)
		}
	}
}

var rewriteClientStatements = flag.Bool("rewrite-client-statements", false, "rewrite the answers in cmd/nicflow/testdata/clients/statements/*.sql instead of comparing")

// TestClientStatements replays the catalog statements clients sent
// (testdata/clients/statements/*.sql, recorded with serve
// --log-statements, each file naming its client and version) on a TPC-H
// database and compares each one's answer, "ok" or its error, with the
// one recorded after it: what works for a client, and what still fails
// (arrays), stays as it was unless the file is rewritten.
func TestClientStatements(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "clients", "statements", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded client statements: %v", err)
	}
	opts, err := sessionOptions("", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := engine.Open(tpchDir(t, 0.01), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	answer := func(stmt string) string {
		r, err := s.Query(context.Background(), stmt)
		if err == nil {
			for {
				rec, nerr := r.Next()
				if nerr != nil || rec == nil {
					err = nerr
					break
				}
			}
			r.Close()
		}
		if err != nil {
			msg, _, _ := strings.Cut(err.Error(), "\n")
			return "-- error: " + msg
		}
		return "-- ok"
	}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		var stmt []string
		n := 0
		for _, line := range strings.SplitAfter(string(b), "\n") {
			l := strings.TrimRight(line, "\n")
			if len(stmt) > 0 && (l == "-- ok" || strings.HasPrefix(l, "-- error: ")) {
				text := strings.Join(stmt, "\n")
				got := answer(text)
				n++
				if !*rewriteClientStatements && got != l {
					t.Errorf("%s: statement %d\n%s\ngot  %s\nwant %s", path, n, text, got, l)
				}
				out.WriteString(got + "\n")
				stmt = nil
				continue
			}
			if len(stmt) == 0 && (l == "" || strings.HasPrefix(l, "--")) {
				out.WriteString(line)
				continue
			}
			stmt = append(stmt, l)
			out.WriteString(line)
		}
		if len(stmt) > 0 {
			t.Errorf("%s: a statement without its answer at the end", path)
		}
		if *rewriteClientStatements {
			if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("%s: %d statements", path, n)
	}
}
