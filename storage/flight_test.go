package storage

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

type testNode struct {
	db  *DB
	srv *Server
	// Scans the node served (ServerOptions.ScanObserver) and their rows.
	scans, scanRows, scanErrs atomic.Int64
}

func startNode(t testing.TB, id string, maxMsg int) *testNode {
	t.Helper()
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := &testNode{db: db}
	srv, err := NewServer(db, "127.0.0.1:0", ServerOptions{NodeID: id, MaxMessageBytes: maxMsg,
		ScanObserver: func(d time.Duration, st ScanStats, err error) {
			if d <= 0 {
				t.Errorf("scan observed with duration %v", d)
			}
			n.scans.Add(1)
			n.scanRows.Add(st.RowsReturned)
			if err != nil {
				n.scanErrs.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	n.srv = srv
	t.Cleanup(func() { srv.Stop(time.Second); db.Close() })
	return n
}

func drain(t testing.TB, it RecordIterator) ([]row, error) {
	t.Helper()
	defer it.Close()
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for {
		rec, err := it.Next(context.Background())
		if err != nil {
			return nil, err
		}
		if rec == nil {
			break
		}
		recs = append(recs, rec)
	}
	if it.Schema().NumFields() == 0 {
		n := 0
		for _, r := range recs {
			n += int(r.NumRows())
		}
		return make([]row, n), nil
	}
	return rowsOf(t, recs), nil
}

// TestRemoteScansMatchLocal places a table on two storage nodes and checks
// that scans through Flight give the local answers, including failover when
// one node goes away.
func TestRemoteScansMatchLocal(t *testing.T) {
	coord := openTestDB(t, WriteOptions{RowGroupRows: 250, FileRows: 500})
	sch := testSchema()
	rng := rand.New(rand.NewSource(7))
	mustCreate(t, coord, "t", sch)
	appendRows(t, coord, "t", sch, randomRows(rng, 0, 3000, 0.1))
	// A small message limit forces records to be split.
	n1, n2 := startNode(t, "n1", 4<<10), startNode(t, "n2", 4<<10)
	nodes := []Node{{ID: "n1", Addr: n1.srv.Addr()}, {ID: "n2", Addr: n2.srv.Addr()}}
	if err := coord.Place(context.Background(), "t", nodes, 2, ClientOptions{}); err != nil {
		t.Fatal(err)
	}
	tb := mustTable(t, coord, "t")
	for _, f := range tb.Files {
		if len(f.Nodes) != 2 {
			t.Fatalf("file %s placed on %v, want 2 replicas", f.Path, f.Nodes)
		}
	}
	if got := mustTable(t, n1.db, "t").Rows(); got != 3000 {
		t.Fatalf("node n1 holds %d rows, want 3000", got)
	}
	alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer alloc.AssertSize(t, 0)
	// NB: the nodes' own scans (ScanModeRows; bytes: TestRemoteBytes).
	rs := NewRemoteScanner(coord, nil, ClientOptions{ScanMode: ScanModeRows})
	defer rs.Close()
	// Scans compressed by the storage nodes read the same (and leak no
	// decompressed buffer).
	var codecs []*RemoteScanner
	for _, c := range []string{"lz4", "zstd"} {
		r := NewRemoteScanner(coord, nil, ClientOptions{Codec: c, ScanMode: ScanModeRows})
		defer r.Close()
		codecs = append(codecs, r)
	}
	all := ScanSpec{Table: "t"}.AllColumns(tb)
	var remoteRows int64
	for i := 0; i < 40; i++ {
		spec := variedSpec(all, rng, i)
		want, _ := scanAll(t, coord, spec, ScanOptions{})
		scanner := rs
		if i%3 > 0 {
			scanner = codecs[i%3-1]
		}
		it, err := scanner.OpenScan(context.Background(), spec, ScanOptions{Alloc: alloc})
		if err != nil {
			t.Fatal(err)
		}
		got, err := drain(t, it)
		if err != nil {
			t.Fatalf("remote scan %s: %v", spec.Filter, err)
		}
		sortRows(got)
		sortRows(want)
		if !equalRows(got, want) {
			t.Fatalf("remote scan %s: %d rows, local %d", spec.Filter, len(got), len(want))
		}
		remoteRows += int64(len(got))
	}
	// The nodes observed every scan they served (their metrics).
	if n1.scans.Load()+n2.scans.Load() < 40 || n1.scanRows.Load()+n2.scanRows.Load() != remoteRows || n1.scanErrs.Load()+n2.scanErrs.Load() != 0 {
		t.Errorf("observed %d+%d scans, %d+%d rows (%d errors), want at least 40 scans and %d rows",
			n1.scans.Load(), n2.scans.Load(), n1.scanRows.Load(), n2.scanRows.Load(), n1.scanErrs.Load()+n2.scanErrs.Load(), remoteRows)
	}
	// Node n1 goes away: files fail over to n2.
	n1.srv.Stop(time.Second)
	want, _ := scanAll(t, coord, all, ScanOptions{})
	it, err := rs.OpenScan(context.Background(), all, ScanOptions{Alloc: alloc})
	if err != nil {
		t.Fatal(err)
	}
	got, err := drain(t, it)
	if err != nil {
		t.Fatalf("scan with n1 down: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("scan with n1 down: %d rows, want %d", len(got), len(want))
	}
	// Both down: a KindUnavailable error naming a node.
	n2.srv.Stop(time.Second)
	it, err = rs.OpenScan(context.Background(), all, ScanOptions{Alloc: alloc})
	if err != nil {
		t.Fatal(err)
	}
	_, err = drain(t, it)
	if !nferr.Is(err, nferr.KindUnavailable) || !strings.Contains(err.Error(), "storage node n") {
		t.Fatalf("scan with all nodes down: %v (kind %v)", err, nferr.KindOf(err))
	}
}

// TestServerSurvivesGarbage sends bad tickets and puts: each gets a clear
// error and the server keeps serving.
func TestServerSurvivesGarbage(t *testing.T) {
	n := startNode(t, "g1", 0)
	mustCreate(t, n.db, "t", loadSchema())
	cl := newNodeClients(ClientOptions{})
	defer cl.close()
	c, err := cl.get(n.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	good, _ := MarshalScanSpec(ScanSpec{Table: "t", Columns: []string{"k"}})
	tickets := map[string]string{
		"":                          "not a nicflow scan ticket",
		"hello":                     "not a nicflow scan ticket",
		ticketMagic + "{":           "malformed scan ticket",
		ticketMagic + `{"table":1}`: "malformed scan ticket",
		ticketMagic + `{"table":"t","columns":["k"],"filter":{"op":"xor"}}`:                                           "unknown operator",
		ticketMagic + `{"table":"t","columns":["k"],"filter":{"op":"=","col":"k","vals":[{"k":"string","str":"x"}]}}`: "does not match column k",
		ticketMagic + `{"table":"nope","columns":[]}`:                                                                 "does not hold table nope",
		ticketMagic + `{"table":"t","columns":["zz"]}`:                                                                `unknown column "zz"`,
		ticketMagic + `{"table":"t","files":[{"path":"../../etc/passwd"}],"columns":[]}`:                              "does not hold file ../../etc/passwd",
	}
	for tk, want := range tickets {
		st, err := c.DoGet(context.Background(), &flight.Ticket{Ticket: []byte(tk)})
		if err == nil {
			_, err = st.Recv()
		}
		err = decodeStatus(err, "g1")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ticket %q: %v, want an error containing %q", tk, err, want)
		}
		// A table or file the node lacks is a stale placement (another
		// replica may hold it): KindUnavailable. Anything else is bad data
		// or a bad query.
		k := nferr.KindOf(err)
		if stale := strings.Contains(want, "does not hold"); (stale && k != nferr.KindUnavailable) || (!stale && k != nferr.KindData && k != nferr.KindQuery) {
			t.Errorf("ticket %q: kind %v", tk, k)
		}
	}
	// Garbage puts.
	for _, body := range []string{"", "{", `{"magic":"nfput1","table":"t","path":"/etc/x.parquet","size":3}`} {
		st, err := c.DoPut(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		st.Send(&flight.FlightData{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(body)}, DataBody: []byte("abc")})
		st.CloseSend()
		_, err = st.Recv()
		if err == nil {
			t.Errorf("put %q accepted", body)
		}
	}
	// Still serving.
	st, err := c.DoGet(context.Background(), &flight.Ticket{Ticket: good})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil && !strings.Contains(err.Error(), "EOF") {
		t.Fatalf("good ticket after garbage: %v", err)
	}
	// ListFlights / GetFlightInfo.
	lf, err := c.ListFlights(context.Background(), &flight.Criteria{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := lf.Recv()
	if err != nil || info.GetFlightDescriptor().GetPath()[0] != "main.t" {
		t.Fatalf("ListFlights: %v %v", info, err)
	}
	if _, err := c.GetFlightInfo(context.Background(), &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"t"}}); err != nil {
		t.Fatal(err)
	}
}

// TestPlaceContiguous: files are placed in contiguous blocks in the
// table's file order (the first half on the first node), so that a wide
// scan's task, which reads a contiguous block of row groups, finds its rows
// on one node; a replica goes to the next node.
func TestPlaceContiguous(t *testing.T) {
	coord := openTestDB(t, WriteOptions{RowGroupRows: 250, FileRows: 500})
	sch := testSchema()
	mustCreate(t, coord, "t", sch)
	appendRows(t, coord, "t", sch, randomRows(rand.New(rand.NewSource(3)), 0, 3000, 0.1))
	n1, n2 := startNode(t, "n1", 4<<20), startNode(t, "n2", 4<<20)
	nodes := []Node{{ID: "n1", Addr: n1.srv.Addr()}, {ID: "n2", Addr: n2.srv.Addr()}}
	for _, repl := range []int{1, 2} {
		if err := coord.Place(context.Background(), "t", nodes, repl, ClientOptions{}); err != nil {
			t.Fatal(err)
		}
		files := mustTable(t, coord, "t").Files
		if len(files) != 6 {
			t.Fatalf("%d files, want 6", len(files))
		}
		for i, f := range files {
			home, other := "n1", "n2"
			if i >= 3 {
				home, other = "n2", "n1"
			}
			want := []string{home}
			if repl == 2 {
				want = append(want, other)
			}
			if fmt.Sprint(f.Nodes) != fmt.Sprint(want) {
				t.Errorf("replication %d: file %d on %v, want %v", repl, i, f.Nodes, want)
			}
		}
	}
}
