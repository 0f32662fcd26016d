package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/internal/s3test"
	"github.com/nicflow/nicflow/storage"
	"github.com/nicflow/nicflow/tpch"
)

// TestTPCHOverS3 (issue 34): the eight TPC-H tables at SF 0.01 are written
// to a real S3-compatible server (versitygw) with COPY ... TO 's3://...',
// a second database has only views over those objects, and the 22 queries
// run on it give the reference answers (tpch run --verify). Then the
// errors a user meets: a missing object (a bad query), a missing bucket,
// and the server gone (retryable, naming the endpoint).
func TestTPCHOverS3(t *testing.T) {
	srv := s3test.Start(t, "tpch")
	if err := storage.SetS3Options(storage.S3Options{Endpoint: srv.Endpoint(), URLStyle: "path",
		AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey, MaxRetries: 2, RequestTimeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { storage.SetS3Options(storage.S3Options{}) })
	ctx := context.Background()
	src := tpchDir(t, 0.01)
	opts, err := sessionOptions("", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	alloc := memory.NewCheckedAllocator(memory.DefaultAllocator)
	opts.Alloc = alloc
	t.Cleanup(func() { alloc.AssertSize(t, 0) })
	run := func(s *engine.Session, sql string) [][]string {
		t.Helper()
		r, err := s.Query(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		defer r.Close()
		var rows [][]string
		for {
			rec, err := r.Next()
			if err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			if rec == nil {
				return rows
			}
			rs, err := engine.RowsText(rec, "NULL")
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, rs...)
		}
	}
	s, err := engine.Open(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tpch.AllTables() {
		run(s, "COPY "+tb.String()+" TO 's3://tpch/sf0.01/"+tb.String()+".parquet'")
	}
	want := run(s, "SELECT count(*), sum(l_extendedprice) FROM lineitem")
	s.Close()

	dst := t.TempDir()
	marker, err := os.ReadFile(filepath.Join(src, tpch.MarkerFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, tpch.MarkerFile), marker, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = engine.Open(dst, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tpch.AllTables() {
		run(s, "CREATE VIEW "+tb.String()+" AS SELECT * FROM 's3://tpch/sf0.01/"+tb.String()+".parquet'")
	}
	if got := run(s, "SELECT count(*), sum(l_extendedprice) FROM lineitem"); strings.Join(got[0], "|") != strings.Join(want[0], "|") {
		t.Fatalf("lineitem over S3: %v, local %v", got, want)
	}
	if got := run(s, "SELECT count(*) FROM read_parquet('s3://tpch/sf0.01/n*.parquet')"); got[0][0] != "25" {
		t.Errorf("a glob over the bucket (nation only): %v", got)
	}
	s.Close()

	var out, errb bytes.Buffer
	if err := runTpchRun(ctx, tpchRunFlags{dir: dst, queries: "1-22", runs: 1, verify: true, format: formatTable}, &out, &errb); err != nil {
		t.Fatalf("tpch run over S3: %v\n%s\n%s", err, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "TPC-H SF 0.01, 22 queries") || strings.Contains(out.String(), "WRONG") {
		t.Fatalf("tpch run over S3:\n%s", out.String())
	}
	t.Logf("\n%s", out.String())

	s, err = engine.Open(dst, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fails := func(sql string, kind nferr.Kind, wantMsg string) {
		t.Helper()
		r, err := s.Query(ctx, sql)
		if err == nil {
			_, err = r.Next()
			r.Close()
		}
		if err == nil || !nferr.Is(err, kind) || !strings.Contains(err.Error(), wantMsg) {
			t.Errorf("%s: %v (kind %v); want a %v error containing %q", sql, err, nferr.KindOf(err), kind, wantMsg)
		}
	}
	fails("SELECT * FROM 's3://tpch/sf0.01/missing.parquet'", nferr.KindQuery, "missing.parquet")
	fails("SELECT * FROM 's3://nobucket/x.parquet'", nferr.KindQuery, "nobucket")
	srv.Kill()
	fails("SELECT count(*) FROM nation", nferr.KindUnavailable, strings.TrimPrefix(srv.Endpoint(), "http://"))
	srv.Restart()
	if got := run(s, "SELECT count(*) FROM nation"); got[0][0] != "25" {
		t.Errorf("nation after the server's restart: %v", got)
	}
}
