package storage

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

// TestRemoteBytes reads tables placed on storage nodes as stored bytes:
// the answers equal the local scan's at parallelism 1 and 3, the nodes
// run no scan of their own, the bytes on the wire are the chunks read
// (and footers), damaged bytes at one replica are read from the other,
// and damaged bytes at every replica are a data error naming the file and
// the node.
func TestRemoteBytes(t *testing.T) {
	coord := openTestDB(t, WriteOptions{RowGroupRows: 250, FileRows: 1500})
	sch := testSchema()
	rng := rand.New(rand.NewSource(5))
	mustCreate(t, coord, "t", sch)
	appendRows(t, coord, "t", sch, randomRows(rng, 0, 3000, 0.1))
	n1, n2 := startNode(t, "n1", 0), startNode(t, "n2", 0)
	nodes := []Node{{ID: "n1", Addr: n1.srv.Addr()}, {ID: "n2", Addr: n2.srv.Addr()}}
	if err := coord.Place(context.Background(), "t", nodes, 2, ClientOptions{}); err != nil {
		t.Fatal(err)
	}
	tb := mustTable(t, coord, "t")
	alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer alloc.AssertSize(t, 0)
	rs := NewRemoteScanner(coord, nil, ClientOptions{ScanMode: ScanModeBytes})
	defer rs.Close()
	all := ScanSpec{Table: "t"}.AllColumns(tb)
	for i := 0; i < 30; i++ {
		spec := variedSpec(all, rng, i)
		want, _ := scanAll(t, coord, spec, ScanOptions{})
		sortRows(want)
		for _, par := range []int{1, 3} {
			got, st, err := remoteScan(t, rs, spec, ScanOptions{Alloc: alloc, Parallelism: par})
			if err != nil {
				t.Fatalf("bytes scan %s: %v", spec.Filter, err)
			}
			sortRows(got)
			if !equalRows(got, want) {
				t.Fatalf("bytes scan %s (parallelism %d): %d rows, want %d", spec.Filter, par, len(got), len(want))
			}
			if len(spec.Columns) > 0 && st.RowGroupsTotal > st.RowGroupsPruned && (st.ByteScans == 0 || st.WireBytes < st.BytesRead) {
				t.Fatalf("bytes scan %s: %d byte scans, %d bytes on the wire for %d read", spec.Filter, st.ByteScans, st.WireBytes, st.BytesRead)
			}
		}
	}
	if n := n1.scans.Load() + n2.scans.Load(); n != 0 {
		t.Errorf("the nodes ran %d scans of their own", n)
	}
	// The stored bytes of the whole table cross the wire once, with a
	// footer's tail per file.
	_, st, err := remoteScan(t, rs, all, ScanOptions{Alloc: alloc})
	if err != nil {
		t.Fatal(err)
	}
	if limit := st.BytesRead + int64(len(tb.Files))*footerTail; st.WireBytes > limit || st.WireBytes < st.BytesRead {
		t.Errorf("%d bytes on the wire for %d bytes of chunks in %d files", st.WireBytes, st.BytesRead, len(tb.Files))
	}

	// A chunk damaged at n1 (each file's primary): read from n2.
	want, _ := scanAll(t, coord, all, ScanOptions{})
	sortRows(want)
	f := tb.Files[0]
	damage := func(n *testNode) {
		p := filepath.Join(n.db.Dir(), f.Path)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[100] ^= 0xff
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	primary := map[string]*testNode{"n1": n1, "n2": n2}[f.Nodes[0]]
	damage(primary)
	got, _, err := remoteScan(t, rs, all, ScanOptions{Alloc: alloc})
	if err != nil {
		t.Fatalf("with a damaged replica: %v", err)
	}
	sortRows(got)
	if !equalRows(got, want) {
		t.Fatalf("with a damaged replica: %d rows, want %d", len(got), len(want))
	}
	damage(map[string]*testNode{"n1": n1, "n2": n2}[f.Nodes[1]])
	_, _, err = remoteScan(t, rs, all, ScanOptions{Alloc: alloc})
	if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), f.Path) || !strings.Contains(err.Error(), "storage node") {
		t.Fatalf("with both replicas damaged: %v (kind %v)", err, nferr.KindOf(err))
	}

	// Every node down: unavailable, not bad data.
	n1.srv.Stop(0)
	n2.srv.Stop(0)
	_, _, err = remoteScan(t, rs, all, ScanOptions{Alloc: alloc})
	if !nferr.Is(err, nferr.KindUnavailable) {
		t.Fatalf("with every node down: %v (kind %v)", err, nferr.KindOf(err))
	}
}

// TestScanModeAuto: a scan whose filter keeps few rows (by the planner's
// estimate) is filtered at the node; others read stored bytes.
func TestScanModeAuto(t *testing.T) {
	n1 := startNode(t, "n1", 0)
	coord := placedOn(t, n1, "n1")
	tb := mustTable(t, coord, "t")
	rs := NewRemoteScanner(coord, nil, ClientOptions{})
	defer rs.Close()
	spec := ScanSpec{Table: "t"}.AllColumns(tb)
	spec.Filter = Cmp("id", OpLt, Int(30))
	want, _ := scanAll(t, coord, spec, ScanOptions{})
	for _, c := range []struct {
		sel   float64
		bytes bool
	}{{0, true}, {0.5, true}, {0.01, false}} {
		spec.Selectivity = c.sel
		before := n1.scans.Load()
		got, st, err := remoteScan(t, rs, spec, ScanOptions{})
		if err != nil || len(got) != len(want) {
			t.Fatalf("selectivity %g: %d rows (want %d), %v", c.sel, len(got), len(want), err)
		}
		if byNode := n1.scans.Load() > before; byNode == c.bytes || (st.ByteScans > 0) != c.bytes {
			t.Errorf("selectivity %g: node scans %v, byte scans %d; want bytes %v", c.sel, byNode, st.ByteScans, c.bytes)
		}
	}
}

// TestReadRequestsRefused: a read names a table and file of the node's
// catalog with its checksum, and ranges inside it; anything else is
// refused with a clear error, and the node keeps serving.
func TestReadRequestsRefused(t *testing.T) {
	n1 := startNode(t, "n1", 0)
	coord := placedOn(t, n1, "n1")
	f := mustTable(t, coord, "t").Files[0]
	c, err := dialNode(n1.srv.Addr(), ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	read := func(body []byte) ([]byte, error) {
		st, err := c.DoAction(context.Background(), &flight.Action{Type: readAction, Body: body})
		if err != nil {
			return nil, decodeStatus(err, "n1")
		}
		var out []byte
		for {
			res, err := st.Recv()
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			if err != nil {
				return nil, decodeStatus(err, "n1")
			}
			out = append(out, res.GetBody()...)
		}
	}
	req := func(r readRequest) []byte { b, _ := json.Marshal(r); return b }
	good := readRequest{Table: "t", Path: f.Path, Checksum: f.Checksum, Ranges: [][2]int64{{0, 4}, {f.Size - 4, 4}}}
	if b, err := read(req(good)); err != nil || string(b) != "PAR1PAR1" {
		t.Fatalf("a good read: %q, %v", b, err)
	}
	for _, c := range []struct {
		what string
		body []byte
		kind nferr.Kind
	}{
		{"garbage", []byte("{nope"), nferr.KindData},
		{"unknown table", req(readRequest{Table: "nope", Path: f.Path, Checksum: f.Checksum}), nferr.KindUnavailable},
		{"path outside the catalog", req(readRequest{Table: "t", Path: "../../../etc/passwd", Checksum: f.Checksum, Ranges: [][2]int64{{0, 10}}}), nferr.KindUnavailable},
		{"the catalog's own files", req(readRequest{Table: "t", Path: "catalog/MANIFEST-000001", Checksum: f.Checksum}), nferr.KindUnavailable},
		{"another checksum", req(readRequest{Table: "t", Path: f.Path, Checksum: "xxh3:0000000000000000"}), nferr.KindUnavailable},
		{"no checksum", req(readRequest{Table: "t", Path: f.Path}), nferr.KindUnavailable},
		{"range past the end", req(readRequest{Table: "t", Path: f.Path, Checksum: f.Checksum, Ranges: [][2]int64{{f.Size - 2, 4}}}), nferr.KindQuery},
		{"negative range", req(readRequest{Table: "t", Path: f.Path, Checksum: f.Checksum, Ranges: [][2]int64{{-1, 4}}}), nferr.KindQuery},
		{"too many ranges", req(readRequest{Table: "t", Path: f.Path, Checksum: f.Checksum, Ranges: make([][2]int64, maxReadRanges+1)}), nferr.KindQuery},
	} {
		if _, err := read(c.body); !nferr.Is(err, c.kind) {
			t.Errorf("%s: %v (kind %v), want kind %v", c.what, err, nferr.KindOf(err), c.kind)
		}
	}
	// A file truncated under the catalog: bad data, not its bytes.
	if err := os.Truncate(filepath.Join(n1.db.Dir(), f.Path), f.Size-10); err != nil {
		t.Fatal(err)
	}
	if _, err := read(req(good)); !nferr.Is(err, nferr.KindData) {
		t.Errorf("a truncated file: %v (kind %v)", err, nferr.KindOf(err))
	}
}
