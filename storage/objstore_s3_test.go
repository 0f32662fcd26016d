package storage

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/internal/s3test"
)

// useS3 points the process's S3 options at endpoint (path-style, the test
// server's credentials) for the test.
func useS3(t *testing.T, endpoint string, tweak func(*S3Options)) *s3Store {
	t.Helper()
	o := S3Options{Endpoint: endpoint, URLStyle: "path", AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey,
		MaxRetries: 3, PartSize: 64 << 10, ReadParallelism: 4, RequestTimeout: 5 * time.Second}
	if tweak != nil {
		tweak(&o)
	}
	if err := SetS3Options(o); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { SetS3Options(S3Options{}) })
	s, err := s3Default()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func putObject(t *testing.T, name string, b []byte) {
	t.Helper()
	nf, err := CreateFile(nil, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nf.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := nf.Close(); err != nil {
		t.Fatal(err)
	}
	if err := nf.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestS3Objects reads, lists and writes objects of a real S3 server
// (versitygw): ranged reads at random offsets (tail, split in parallel
// parts, past the end) equal the bytes written; globs; directories;
// missing objects and buckets; an object replaced under an open reader
// fails its reads rather than mixing versions; the tail cache is
// bounded.
func TestS3Objects(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	s := useS3(t, srv.Endpoint(), func(o *S3Options) { o.FooterCacheBytes = 3 * s3FooterTail })
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 1<<20+12345)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	putObject(t, "s3://bkt/d/x.parquet", data)
	putObject(t, "s3://bkt/d/y.parquet", data[:100])
	putObject(t, "s3://bkt/d/sub/z.parquet", data[:10])
	putObject(t, "s3://bkt/other.csv", []byte("a\n1\n"))

	r, err := openFile(nil, "s3://bkt/d/x.parquet")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := r.Stat()
	if st.Size() != int64(len(data)) || objectETag(st) == "" {
		t.Fatalf("stat: size %d etag %q", st.Size(), objectETag(st))
	}
	for i := 0; i < 60; i++ {
		off := rng.Int64N(int64(len(data)))
		n := rng.Int64N(300 << 10)
		if i%5 == 0 {
			off = int64(len(data)) - rng.Int64N(s3FooterTail) - 1 // the tail
		}
		p := make([]byte, n)
		k, err := r.ReadAt(p, off)
		want := data[off:min(off+n, int64(len(data)))]
		if off+n > int64(len(data)) {
			if err != io.EOF {
				t.Fatalf("read past the end at %d+%d: %v", off, n, err)
			}
		} else if err != nil {
			t.Fatalf("read %d+%d: %v", off, n, err)
		}
		if k != len(want) || !bytes.Equal(p[:k], want) {
			t.Fatalf("read %d+%d: %d bytes, not the object's", off, n, k)
		}
	}
	// Sequential reads (CSV, checksums).
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(all, data) {
		t.Fatalf("sequential read: %d bytes, %v", len(all), err)
	}

	got, err := matchFiles(nil, "s3://bkt/d/*.parquet")
	if err != nil || strings.Join(got, ",") != "s3://bkt/d/x.parquet,s3://bkt/d/y.parquet" {
		t.Fatalf("glob: %v %v", got, err)
	}
	if got, err = matchFiles(nil, "s3://bkt/d"); err != nil || len(got) != 2 {
		t.Fatalf("directory: %v %v", got, err)
	}
	if got, err = matchFiles(nil, "s3://bkt/*/*/*.parquet"); err != nil || strings.Join(got, ",") != "s3://bkt/d/sub/z.parquet" {
		t.Fatalf("glob of a subdirectory: %v %v", got, err)
	}
	if _, err := matchFiles(nil, "s3://bkt/none/*.parquet"); !nferr.Is(err, nferr.KindQuery) || !strings.Contains(err.Error(), "no file matches") {
		t.Fatalf("empty glob: %v", err)
	}
	if _, err := openFile(nil, "s3://bkt/missing.parquet"); !os.IsNotExist(err) {
		t.Fatalf("missing object: %v", err)
	}
	if _, _, err := readFooterIn(nil, "s3://bkt/missing.parquet"); !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing object's footer: %v", err)
	}
	if _, err := matchFiles(nil, "s3://nobucket/x"); !nferr.Is(err, nferr.KindQuery) || !strings.Contains(err.Error(), "bucket nobucket does not exist") {
		t.Fatalf("missing bucket: %v", err)
	}
	if _, _, err := readFooterIn(nil, "s3://bkt/d/y.parquet"); !nferr.Is(err, nferr.KindData) {
		t.Fatalf("not a Parquet object: %v", err)
	}

	// Replaced under an open reader: its next read fails (If-Match);
	// its cached tail is of the version it opened.
	r2, err := openFile(nil, "s3://bkt/d/x.parquet")
	if err != nil {
		t.Fatal(err)
	}
	putObject(t, "s3://bkt/d/x.parquet", bytes.Repeat([]byte{7}, len(data)))
	if _, err := r2.ReadAt(make([]byte, 10), 0); !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), "changed") {
		t.Fatalf("read of a replaced object: %v", err)
	}

	// Bad credentials are the caller's fault, named.
	useS3(t, srv.Endpoint(), func(o *S3Options) { o.SecretAccessKey = "wrong" })
	if _, err := openFile(nil, "s3://bkt/d/x.parquet"); !nferr.Is(err, nferr.KindAuth) {
		t.Fatalf("wrong secret: %v", err)
	}
	if used := s.tails.bytes(); used > 3*s3FooterTail || used == 0 {
		t.Fatalf("tail cache holds %d bytes, bound %d", used, 3*s3FooterTail)
	}
}

// TestS3Faults: throttling (503 SlowDown) is retried with backoff and the
// reads return the right bytes; a server that stays throttled or is
// killed gives a KindUnavailable error naming the endpoint, never a short
// read; after a restart reads work again.
func TestS3Faults(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	data := bytes.Repeat([]byte("nicflow!"), 40000)
	useS3(t, srv.Endpoint(), nil)
	putObject(t, "s3://bkt/f", data)

	useS3(t, srv.ProxyEndpoint(), func(o *S3Options) { o.MaxRetries = 4 })
	srv.Throttle.Store(3)
	r, err := openFile(nil, "s3://bkt/f")
	if err != nil {
		t.Fatalf("open while throttled 3 times: %v", err)
	}
	srv.Throttle.Store(3)
	p := make([]byte, 200000)
	if _, err := r.ReadAt(p, 1000); err != nil || !bytes.Equal(p, data[1000:201000]) {
		t.Fatalf("read while throttled: %v", err)
	}
	if srv.Throttled.Load() != 6 {
		t.Fatalf("%d requests throttled, want 6", srv.Throttled.Load())
	}

	srv.Throttle.Store(1000)
	start := time.Now()
	_, err = r.ReadAt(p, 0)
	if !nferr.Is(err, nferr.KindUnavailable) || !strings.Contains(err.Error(), srv.ProxyEndpoint()) || !strings.Contains(err.Error(), "SlowDown") {
		t.Fatalf("read throttled for good: %v", err)
	}
	t.Logf("throttled for good: %v after %s", err, time.Since(start).Round(time.Millisecond))
	srv.Throttle.Store(0)

	srv.Kill()
	_, err = r.ReadAt(p, 0)
	if !nferr.Is(err, nferr.KindUnavailable) || !strings.Contains(err.Error(), "can be run again") {
		t.Fatalf("read of a killed server: %v", err)
	}
	if _, err := openFile(nil, "s3://bkt/f"); !nferr.Is(err, nferr.KindUnavailable) {
		t.Fatalf("open on a killed server: %v", err)
	}
	srv.Restart()
	if _, err := r.ReadAt(p, 5); err != nil || !bytes.Equal(p, data[5:200005]) {
		t.Fatalf("read after a restart: %v", err)
	}
}

func TestS3OptionsValidate(t *testing.T) {
	for _, o := range []S3Options{
		{URLStyle: "dns"}, {MaxRetries: -1}, {MaxRetries: 51}, {ReadParallelism: 300}, {PartSize: 100},
		{RequestTimeout: -time.Second}, {AccessKeyID: "a"}, {Endpoint: "ftp://x"}, {Endpoint: "http://"},
	} {
		if err := o.Validate(); !nferr.Is(err, nferr.KindQuery) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	for _, o := range []S3Options{{}, {Endpoint: "127.0.0.1:9000", URLStyle: "path"}, {Endpoint: "https://s3.example.com"}} {
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
	t.Setenv("AWS_ENDPOINT_URL", "http://10.0.0.1:9000")
	t.Setenv("AWS_REGION", "eu-west-3")
	d := S3Options{}.withDefaults()
	if d.Endpoint != "http://10.0.0.1:9000" || d.Region != "eu-west-3" || d.MaxRetries != 5 || d.PartSize != 8<<20 {
		t.Fatalf("defaults: %+v", d)
	}
}
