package adbc

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/tpch"
)

// binDir holds the nicflow binary the tests build once.
var binDir string

func TestMain(m *testing.M) {
	var err error
	if binDir, err = os.MkdirTemp("", "nicflow-adbc-"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

var build sync.Once

// nicflow builds the binary, in the main module (the repository root).
func nicflow(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(binDir, "nicflow")
	build.Do(func() {
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/nicflow")
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			os.Remove(bin)
			t.Fatalf("building nicflow: %v\n%s", err, out)
		}
	})
	if _, err := os.Stat(bin); err != nil {
		t.Fatal("no nicflow binary (its build failed)")
	}
	return bin
}

var flightLine = regexp.MustCompile(`to Flight SQL clients on (\S+) `)

// serve starts `nicflow serve` on dir with extra flags and returns the
// Flight SQL address it prints.
func serve(t *testing.T, bin, dir string, flags ...string) string {
	t.Helper()
	args := append([]string{"serve", "--dir", dir, "--pg-listen", "127.0.0.1:0", "--flightsql-listen", "127.0.0.1:0", "--parallel", "2"}, flags...)
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Error("nicflow serve did not stop on SIGINT")
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := flightLine.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
			t.Log(sc.Text())
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("nicflow serve did not say where Flight SQL listens")
	}
	return ""
}

func open(t *testing.T, opts map[string]string) adbc.Connection {
	t.Helper()
	db, err := flightsql.NewDriver(memory.DefaultAllocator).NewDatabase(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cn, err := db.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cn.Close() })
	return cn
}

// query runs one statement and returns its columns and rows as text.
func query(ctx context.Context, cn adbc.Connection, q string, params arrow.RecordBatch) ([]string, [][]string, error) {
	st, err := cn.NewStatement()
	if err != nil {
		return nil, nil, err
	}
	defer st.Close()
	if err := st.SetSqlQuery(q); err != nil {
		return nil, nil, err
	}
	if params != nil {
		if err := st.Prepare(ctx); err != nil {
			return nil, nil, err
		}
		if err := st.Bind(ctx, params); err != nil {
			return nil, nil, err
		}
	}
	rdr, _, err := st.ExecuteQuery(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer rdr.Release()
	var cols []string
	for _, f := range rdr.Schema().Fields() {
		cols = append(cols, f.Name)
	}
	var rows [][]string
	for rdr.Next() {
		text, err := engine.RowsText(rdr.RecordBatch(), "")
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, text...)
	}
	return cols, rows, rdr.Err()
}

// TestADBCTPCH runs the 22 TPC-H queries at SF 0.01 through the ADBC
// Flight SQL driver against `nicflow serve` and checks every answer.
func TestADBCTPCH(t *testing.T) {
	bin := nicflow(t)
	dir := filepath.Join(t.TempDir(), "sf0.01")
	if out, err := exec.Command(bin, "tpch", "gen", "--sf", "0.01", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("tpch gen: %v\n%s", err, out)
	}
	addr := serve(t, bin, dir)
	cn := open(t, map[string]string{adbc.OptionKeyURI: "grpc://" + addr})
	ctx := context.Background()
	for q := 1; q <= tpch.NumQueries; q++ {
		params, _ := tpch.AnswerParams(q, 0.01)
		text, err := tpch.Query(q, params)
		if err != nil {
			t.Fatal(err)
		}
		stmts, err := engine.SplitScript(text)
		if err != nil {
			t.Fatal(err)
		}
		var got tpch.Result
		for _, s := range stmts {
			cols, rows, err := query(ctx, cn, s, nil)
			if err != nil {
				t.Fatalf("Q%d: %v", q, err)
			}
			if len(cols) > 0 {
				got = tpch.Result{Columns: cols, Rows: rows}
			}
		}
		if err := tpch.CheckAnswer(q, 0.01, got); err != nil {
			t.Errorf("Q%d: %v", q, err)
		}
	}

	// A prepared statement with parameters.
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "p1", Type: arrow.BinaryTypes.String}, {Name: "p2", Type: arrow.PrimitiveTypes.Int64}}, nil))
	b.Field(0).(*array.StringBuilder).Append("FRANCE")
	b.Field(1).(*array.Int64Builder).Append(3)
	rec := b.NewRecordBatch()
	b.Release()
	_, rows, err := query(ctx, cn, "select n_name, n_regionkey from nation where n_name = $1 and n_regionkey = $2", rec)
	rec.Release()
	if err != nil || fmt.Sprint(rows) != "[[FRANCE 3]]" {
		t.Errorf("prepared with parameters: %v %v", rows, err)
	}

	// An update's row count.
	st, _ := cn.NewStatement()
	st.SetSqlQuery("create table copy_of_region as select * from region")
	if n, err := st.ExecuteUpdate(ctx); err != nil || n != 5 {
		t.Errorf("CREATE TABLE AS through ExecuteUpdate: %d %v", n, err)
	}
	st.Close()

	// GetObjects: catalogs, schemas and tables with their columns.
	rdr, err := cn.GetObjects(ctx, adbc.ObjectDepthAll, nil, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		cat := rec.Column(0).(*array.String)
		schemas := rec.Column(1).(*array.List)
		for i := 0; i < int(rec.NumRows()); i++ {
			seen = append(seen, cat.Value(i))
			s0, s1 := schemas.ValueOffsets(i)
			ss := schemas.ListValues().(*array.Struct)
			names := ss.Field(0).(*array.String)
			tables := ss.Field(1).(*array.List)
			for j := s0; j < s1; j++ {
				t0, t1 := tables.ValueOffsets(int(j))
				tnames := tables.ListValues().(*array.Struct).Field(0).(*array.String)
				for k := t0; k < t1; k++ {
					seen = append(seen, names.Value(int(j))+"."+tnames.Value(int(k)))
				}
			}
		}
	}
	rdr.Release()
	if s := strings.Join(seen, " "); !strings.Contains(s, "nicflow") || !strings.Contains(s, "public.lineitem") || !strings.Contains(s, "public.copy_of_region") {
		t.Errorf("GetObjects: %s", s)
	}
}

// TestADBCLogin: with --auth, ADBC logs in with a user and password (basic
// authentication, then the bearer token); a wrong password is refused.
func TestADBCLogin(t *testing.T) {
	bin := nicflow(t)
	dir := t.TempDir()
	add := exec.Command(bin, "user", "add", "--dir", dir, "alice")
	add.Stdin = strings.NewReader("correct horse\ncorrect horse\n")
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("user add: %v\n%s", err, out)
	}
	addr := serve(t, bin, dir, "--auth", "--create")
	cn := open(t, map[string]string{adbc.OptionKeyURI: "grpc://" + addr, adbc.OptionKeyUsername: "alice", adbc.OptionKeyPassword: "correct horse"})
	if _, rows, err := query(context.Background(), cn, "select 6 * 7", nil); err != nil || fmt.Sprint(rows) != "[[42]]" {
		t.Errorf("query after login: %v %v", rows, err)
	}
	db, err := flightsql.NewDriver(memory.DefaultAllocator).NewDatabase(map[string]string{adbc.OptionKeyURI: "grpc://" + addr, adbc.OptionKeyUsername: "alice", adbc.OptionKeyPassword: "wrong"})
	if err == nil {
		defer db.Close()
		var cn adbc.Connection
		if cn, err = db.Open(context.Background()); err == nil {
			defer cn.Close()
			_, _, err = query(context.Background(), cn, "select 1", nil)
		}
	}
	if err == nil || !strings.Contains(err.Error(), "password authentication failed") {
		t.Errorf("a wrong password: %v", err)
	}
}
