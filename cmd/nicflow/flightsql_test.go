package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	gosql "database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	_ "github.com/apache/arrow-go/v18/arrow/flight/flightsql/driver"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	grpcMetadata "google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/nicflow/nicflow/cluster/flightsqlsrv"
	"github.com/nicflow/nicflow/cluster/pgwire"
	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/tpch"
)

// startFlightSQL serves dir over Flight SQL on a free loopback port.
func startFlightSQL(t *testing.T, dir string, edit func(*flightsqlsrv.Options)) *flightsqlsrv.Server {
	t.Helper()
	opts := flightsqlsrv.Options{Listen: "127.0.0.1:0", Open: func() (engine.Conn, error) {
		return engine.OpenConn(dir, engine.Options{Parallelism: 2})
	}}
	if edit != nil {
		edit(&opts)
	}
	srv, err := flightsqlsrv.Listen(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	t.Cleanup(func() { srv.Close() })
	return srv
}

func flightClient(t *testing.T, addr string, opts ...grpc.DialOption) *flightsql.Client {
	t.Helper()
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	c, err := flightsql.NewClient(addr, nil, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// flightFetch reads every endpoint of info: the column names and the rows
// in TPC-H's answer text (engine.RowsText, NULL as "").
func flightFetch(ctx context.Context, c *flightsql.Client, info *flight.FlightInfo) ([]string, [][]string, error) {
	var cols []string
	var rows [][]string
	for _, ep := range info.Endpoint {
		rdr, err := c.DoGet(ctx, ep.Ticket)
		if err != nil {
			return nil, nil, err
		}
		cols = cols[:0]
		for _, f := range rdr.Schema().Fields() {
			cols = append(cols, f.Name)
		}
		for rdr.Next() {
			text, err := engine.RowsText(rdr.RecordBatch(), "")
			if err != nil {
				rdr.Release()
				return nil, nil, err
			}
			rows = append(rows, text...)
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return nil, nil, err
		}
	}
	return cols, rows, nil
}

// flightRunner runs TPC-H query texts through a Flight SQL client.
func flightRunner(c *flightsql.Client) textRunner {
	return statementRunner(func(ctx context.Context, st string) ([]string, [][]string, error) {
		info, err := c.Execute(ctx, st)
		if err != nil {
			return nil, nil, err
		}
		return flightFetch(ctx, c, info)
	})
}

// TestFlightSQLTPCH runs the 22 TPC-H queries at SF 0.01 through arrow-go's
// Flight SQL client and checks every answer.
func TestFlightSQLTPCH(t *testing.T) {
	srv := startFlightSQL(t, tpchDir(t, 0.01), nil)
	c := flightClient(t, srv.Addr())
	for q := 1; q <= tpch.NumQueries; q++ {
		r := runTPCHQuery(context.Background(), flightRunner(c), q, 0.01, 1, true)
		if r.err != nil || r.verdict != "ok" {
			t.Errorf("Q%d: %v %s", q, r.err, r.verdict)
		}
	}
}

// flightQuery runs one query and returns its rows as text.
func flightQuery(t *testing.T, c *flightsql.Client, q string) [][]string {
	t.Helper()
	ctx := context.Background()
	info, err := c.Execute(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	_, rows, err := flightFetch(ctx, c, info)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return rows
}

// newDB is a new empty database directory.
func newDB(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	first, err := openSession(dir, true, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	return dir
}

// TestFlightSQLBehaviour: updates with row counts, a prepared statement
// with parameters of many types, metadata, an error's code and message,
// session settings, and cancellation.
func TestFlightSQLBehaviour(t *testing.T) {
	srv := startFlightSQL(t, newDB(t), nil)
	c := flightClient(t, srv.Addr())
	ctx := context.Background()

	// Updates: DDL and DML, with the rows they wrote.
	if _, err := c.ExecuteUpdate(ctx, "create table t (id int primary key, v text, d decimal(12,2), x double precision, b boolean, day date, ts timestamp, by bytea)"); err != nil {
		t.Fatal(err)
	}
	n, err := c.ExecuteUpdate(ctx, `insert into t (id, v, d) values (1, 'a', 1.50), (2, 'b', -2.25)`)
	if err != nil || n != 2 {
		t.Fatalf("insert: %d %v", n, err)
	}
	if n, err := c.ExecuteUpdate(ctx, "update t set v = 'c' where id = 2"); err != nil || n != 1 {
		t.Errorf("update: %d %v", n, err)
	}
	// A statement without rows sent as a query runs too.
	if got := flightQuery(t, c, "insert into t (id) values (9)"); len(got) != 0 {
		t.Errorf("insert as a query returned %v", got)
	}
	if n, err := c.ExecuteUpdate(ctx, "delete from t where id = 9"); err != nil || n != 1 {
		t.Errorf("delete: %d %v", n, err)
	}

	// Prepared statements: values of every kind, never SQL of their own.
	evil := "x'); drop table t; --"
	ins, err := c.Prepare(ctx, "insert into t (id, v, d, x, b, day, ts, by) values ($1, $2, $3, $4, $5, $6, $7, $8)")
	if err != nil {
		t.Fatal(err)
	}
	if up, ok := ins.IsUpdate(); !ok || !up {
		t.Errorf("an INSERT is not reported as an update: %v %v", up, ok)
	}
	mem := memory.DefaultAllocator
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 12, Scale: 2}}, {Name: "x", Type: arrow.PrimitiveTypes.Float64},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean}, {Name: "day", Type: arrow.FixedWidthTypes.Date32},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}}, {Name: "by", Type: arrow.BinaryTypes.Binary},
	}, nil)
	rb := array.NewRecordBuilder(mem, sch)
	rb.Field(0).(*array.Int64Builder).AppendValues([]int64{3, 4}, nil)
	rb.Field(1).(*array.StringBuilder).AppendValues([]string{evil, "plain"}, nil)
	rb.Field(2).(*array.Decimal128Builder).AppendValues([]decimal128.Num{decimal128.FromI64(725), decimal128.FromI64(-1)}, nil)
	rb.Field(3).(*array.Float64Builder).AppendValues([]float64{1.5, 0}, nil)
	rb.Field(4).(*array.BooleanBuilder).AppendValues([]bool{false, true}, nil)
	rb.Field(5).(*array.Date32Builder).AppendValues([]arrow.Date32{arrow.Date32FromTime(time.Date(2020, 2, 29, 0, 0, 0, 0, time.UTC)), 0}, nil)
	rb.Field(6).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{arrow.Timestamp(time.Date(2020, 2, 29, 1, 2, 3, 4000, time.UTC).UnixMicro()), 0}, nil)
	rb.Field(7).(*array.BinaryBuilder).AppendValues([][]byte{{1, 2}, nil}, []bool{true, false})
	params := rb.NewRecordBatch()
	rb.Release()
	ins.SetParameters(params)
	params.Release()
	if n, err := ins.ExecuteUpdate(ctx); err != nil || n != 2 {
		t.Fatalf("prepared insert of two rows: %d %v", n, err)
	}
	ins.Close(ctx)

	sel, err := c.Prepare(ctx, "select id, v, d, b, day, ts, by from t where id = $1 and v like $2")
	if err != nil {
		t.Fatal(err)
	}
	if ds := sel.DatasetSchema(); ds == nil || ds.NumFields() != 7 || ds.Field(2).Type.ID() != arrow.DECIMAL128 {
		t.Errorf("dataset schema: %v", ds)
	}
	pb := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32}, {Name: "b", Type: arrow.BinaryTypes.String}}, nil))
	pb.Field(0).(*array.Int32Builder).Append(3)
	pb.Field(1).(*array.StringBuilder).Append("x%")
	p2 := pb.NewRecordBatch()
	pb.Release()
	sel.SetParameters(p2)
	p2.Release()
	info, err := sel.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, rows, err := flightFetch(ctx, c, info)
	want := [][]string{{"3", evil, "7.25", "false", "2020-02-29", "2020-02-29 01:02:03.000004", `\x0102`}}
	if err != nil || fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("select with parameters:\n got %q %v\nwant %q", rows, err, want)
	}
	sel.Close(ctx)
	if got := flightQuery(t, c, "select count(*) from t"); fmt.Sprint(got) != "[[4]]" {
		t.Errorf("rows after the inserts: %v", got)
	}

	// Metadata.
	info, err = c.GetTables(ctx, &flightsql.GetTablesOpts{IncludeSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			ts, err := flight.DeserializeSchema(rec.Column(4).(*array.Binary).Value(i), mem)
			if err != nil {
				t.Fatal(err)
			}
			tables = append(tables, fmt.Sprintf("%s.%s.%s %s %d:%s", rec.Column(0).(*array.String).Value(i), rec.Column(1).(*array.String).Value(i),
				rec.Column(2).(*array.String).Value(i), rec.Column(3).(*array.String).Value(i), ts.NumFields(), ts.Field(2).Type))
		}
	}
	rdr.Release()
	if fmt.Sprint(tables) != "[nicflow.public.t TABLE 8:decimal(12, 2)]" {
		t.Errorf("GetTables: %v", tables)
	}
	pattern := "%"
	info, err = c.GetTables(ctx, &flightsql.GetTablesOpts{TableNameFilterPattern: &pattern, TableTypes: []string{"VIEW"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, rows, err := flightFetch(ctx, c, info); err != nil || len(rows) != 0 {
		t.Errorf("GetTables of views: %v %v", rows, err)
	}
	info, err = c.GetSqlInfo(ctx, []flightsql.SqlInfo{flightsql.SqlInfoFlightSqlServerName, flightsql.SqlInfoFlightSqlServerReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err = c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() || rdr.RecordBatch().NumRows() != 2 {
		t.Fatalf("GetSqlInfo: %v", rdr.Err())
	}
	u := rdr.RecordBatch().Column(1).(*array.DenseUnion)
	name := u.Field(u.ChildID(0)).(*array.String).Value(int(u.ValueOffset(0)))
	readOnly := u.Field(u.ChildID(1)).(*array.Boolean).Value(int(u.ValueOffset(1)))
	if name != "nicflow" || readOnly {
		t.Errorf("server name %q, read-only %v", name, readOnly)
	}
	rdr.Release()
	for name, get := range map[string]func() (*flight.FlightInfo, error){
		"catalogs":    func() (*flight.FlightInfo, error) { return c.GetCatalogs(ctx) },
		"schemas":     func() (*flight.FlightInfo, error) { return c.GetDBSchemas(ctx, &flightsql.GetDBSchemasOpts{}) },
		"table types": func() (*flight.FlightInfo, error) { return c.GetTableTypes(ctx) },
	} {
		info, err := get()
		if err != nil {
			t.Fatal(err)
		}
		_, rows, err := flightFetch(ctx, c, info)
		want := map[string]string{"catalogs": "[[nicflow]]", "schemas": "[[nicflow public]]", "table types": "[[EXTERNAL TABLE] [TABLE] [VIEW]]"}[name]
		if err != nil || fmt.Sprint(rows) != want {
			t.Errorf("%s: %v %v, want %s", name, rows, err, want)
		}
	}

	// Errors keep their kind as a code and their message.
	_, err = c.Execute(ctx, "select 1 from nosuch")
	if st, _ := status.FromError(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), `relation "nosuch" does not exist`) {
		t.Errorf("unknown table: %v", err)
	}
	_, err = c.ExecuteUpdate(ctx, "insert into t (id) values (1)")
	if st, _ := status.FromError(err); st.Code() != codes.DataLoss && st.Code() != codes.InvalidArgument || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("duplicate key: %v", err)
	}
	if _, err := c.Execute(ctx, "select 1; select 2"); status.Code(err) != codes.InvalidArgument {
		t.Errorf("two statements as a query: %v", err)
	}
	info, err = c.Execute(ctx, "select 1 / (id - id) from t")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := flightFetch(ctx, c, info); err == nil || !strings.Contains(err.Error(), "division by zero") {
		t.Errorf("an error while streaming: %v", err)
	}
	// A forged ticket is refused, not trusted.
	forged, _ := flightsql.CreateStatementQueryTicket([]byte("not a handle"))
	if _, _, err := flightFetch(ctx, c, &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: forged}}}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a forged ticket: %v", err)
	}

	// Settings stay with the connection's session.
	if _, err := c.ExecuteUpdate(ctx, "set time zone 'Asia/Kolkata'"); err != nil {
		t.Fatal(err)
	}
	// NB: the instant is the same; the session's zone reads the local time.
	local := "select cast(timestamp '2024-07-01 00:00:00' as timestamptz)"
	if got := flightQuery(t, c, local); fmt.Sprint(got) != "[[2024-06-30 18:30:00+00]]" {
		t.Errorf("time zone of the session: %v", got)
	}
	if got := flightQuery(t, flightClient(t, srv.Addr()), local); fmt.Sprint(got) != "[[2024-07-01 00:00:00+00]]" {
		t.Errorf("another connection's time zone: %v", got)
	}

	// Cancellation: CancelFlightInfo stops a running DoGet; a client that
	// goes away stops its statement.
	long := "select count(*) from generate_series(1, 2000000000) a"
	info, err = c.Execute(ctx, long)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	start := time.Now()
	go func() { _, _, err := flightFetch(ctx, c, info); errc <- err }()
	waitRunning(t, srv, 1)
	res, err := c.CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: info})
	if err != nil || res.Status != flight.CancelStatusCancelled {
		t.Errorf("CancelFlightInfo: %v %v", res, err)
	}
	if err := <-errc; status.Code(err) != codes.Canceled || time.Since(start) > 10*time.Second {
		t.Errorf("a canceled DoGet: %v after %v", err, time.Since(start))
	}
	info, err = c.Execute(ctx, long)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, _, err = flightFetch(cctx, c, info)
	cancel()
	if err == nil {
		t.Error("a DoGet past its deadline succeeded")
	}
	waitRunning(t, srv, 0)
	if got := flightQuery(t, c, "select 1 + 1"); fmt.Sprint(got) != "[[2]]" {
		t.Errorf("after cancellations: %v", got)
	}
}

// waitRunning waits until the server runs n statements.
func waitRunning(t *testing.T, srv *flightsqlsrv.Server, n int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); srv.Running() != n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d statements running, want %d", srv.Running(), n)
		}
	}
}

// TestFlightSQLAuth: with users, basic authentication gives a bearer token;
// a wrong password, an unknown user, no credentials and a forged token are
// refused (Unauthenticated); removing the user revokes the token.
func TestFlightSQLAuth(t *testing.T) {
	dir := newDB(t)
	users := pgwire.UsersFile(dir)
	if err := pgwire.AddUser(users, "alice", "correct horse"); err != nil {
		t.Fatal(err)
	}
	if _, err := flightsqlsrv.Listen(flightsqlsrv.Options{Listen: "0.0.0.0:0", Open: func() (engine.Conn, error) { return nil, nil }}); err == nil {
		t.Error("listening on 0.0.0.0 without authentication was allowed")
	}
	if _, err := flightsqlsrv.Listen(flightsqlsrv.Options{Listen: "0.0.0.0:0", UsersFile: users, Open: func() (engine.Conn, error) { return nil, nil }}); err == nil {
		t.Error("listening on 0.0.0.0 with passwords in the clear was allowed")
	}
	srv := startFlightSQL(t, dir, func(o *flightsqlsrv.Options) { o.UsersFile = users })
	c := flightClient(t, srv.Addr())
	ctx := context.Background()
	if _, err := c.Execute(ctx, "select 1"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("no credentials: %v", err)
	}
	for _, who := range [][2]string{{"alice", "wrong"}, {"mallory", "correct horse"}} {
		_, err := c.Client.AuthenticateBasicToken(ctx, who[0], who[1])
		if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "password authentication failed") {
			t.Errorf("%s with a wrong password: %v", who[0], err)
		}
	}
	actx, err := c.Client.AuthenticateBasicToken(ctx, "alice", "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if got := flightQueryCtx(t, actx, c, "select 6 * 7"); fmt.Sprint(got) != "[[42]]" {
		t.Errorf("query with the token: %v", got)
	}
	forged := metadataCtx("Bearer nf1_" + strings.Repeat("A", 43))
	if _, err := c.Execute(forged, "select 1"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("a forged token: %v", err)
	}
	if _, err := c.Execute(metadataCtx("Bearer garbage"), "select 1"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("a malformed token: %v", err)
	}
	// The database/sql driver sends the password on every call.
	db, err := gosql.Open("flightsql", "flightsql://alice:correct%20horse@"+srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int64
	if err := db.QueryRow("select 40 + 2").Scan(&v); err != nil || v != 42 {
		t.Errorf("database/sql with a password: %d %v", v, err)
	}
	if err := pgwire.RemoveUser(users, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Execute(actx, "select 1"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("the token of a removed user: %v", err)
	}
}

func metadataCtx(auth string) context.Context {
	return metadataOut(context.Background(), "authorization", auth)
}

func flightQueryCtx(t *testing.T, ctx context.Context, c *flightsql.Client, q string) [][]string {
	t.Helper()
	info, err := c.Execute(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	_, rows, err := flightFetch(ctx, c, info)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return rows
}

// TestFlightSQLTLS: with a certificate the server speaks TLS only.
func TestFlightSQLTLS(t *testing.T) {
	ca := newTestCA(t, "test CA")
	cert := ca.issue(t, t.TempDir(), "server", "127.0.0.1", true)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	srv := startFlightSQL(t, newDB(t), func(o *flightsqlsrv.Options) {
		o.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	})
	c := flightClient(t, srv.Addr(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool})))
	if got := flightQuery(t, c, "select 40 + 2"); fmt.Sprint(got) != "[[42]]" {
		t.Errorf("query over TLS: %v", got)
	}
	plain := flightClient(t, srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := plain.Execute(ctx, "select 1"); err == nil {
		t.Error("a plain connection was served by a TLS server")
	}
}

// TestFlightSQLDatabaseSQL: arrow-go's database/sql driver, with
// parameters.
func TestFlightSQLDatabaseSQL(t *testing.T) {
	srv := startFlightSQL(t, newDB(t), nil)
	db, err := gosql.Open("flightsql", "flightsql://"+srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("create table kv (k bigint, v text, f double precision)"); err != nil {
		t.Fatal(err)
	}
	for i, v := range []string{"one", "two", "it's three"} {
		res, err := db.Exec("insert into kv values ($1, $2, $3)", int64(i+1), v, float64(i)+0.5)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			t.Errorf("rows affected: %d %v", n, err)
		}
	}
	rows, err := db.Query("select k, v, f from kv where k >= $1 and v <> $2 order by k", int64(2), "two")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var k int64
		var v string
		var f float64
		if err := rows.Scan(&k, &v, &f); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d|%s|%g", k, v, f))
	}
	if err := rows.Err(); err != nil || fmt.Sprint(got) != "[3|it's three|2.5]" {
		t.Errorf("query with parameters: %v %v", got, err)
	}
	rows.Close()
	var n int64
	if err := db.QueryRow("select count(*) from kv where v like $1", "%o%").Scan(&n); err != nil || n != 2 {
		t.Errorf("count with a parameter: %d %v", n, err)
	}
	if _, err := db.Query("select nosuch from kv"); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("an error through database/sql: %v", err)
	}
}

func metadataOut(ctx context.Context, k, v string) context.Context {
	return grpcMetadata.AppendToOutgoingContext(ctx, k, v)
}
