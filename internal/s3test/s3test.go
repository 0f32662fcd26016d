// Package s3test runs a real S3-compatible server for tests: versitygw
// (github.com/versity/versitygw) with its posix backend over a temporary
// directory, on loopback. The binary is built from the Go module proxy
// (`go install github.com/versity/versitygw/cmd/versitygw@Version`) into a
// cache directory reused across runs ($NICFLOW_TEST_CACHE, else the user
// cache directory's nicflow-test/bin); a test that cannot build it (no go
// command, no module proxy) skips, saying why. The first build takes
// about two minutes on two cores; later runs start the cached binary in
// well under a second.
//
// A Server also has a fault proxy in front of it (Proxy): its endpoint
// answers 503 SlowDown to requests while told to, counts requests, and can
// kill the server after a number of GETs, so that tests see throttling
// and a server that dies mid-scan.
package s3test

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nicflow/nicflow/internal/emutest"
)

// Version is the versitygw release the tests build.
const Version = "v1.8.0"

// Credentials of the server's root user.
const (
	AccessKey = "nicflowtest"
	SecretKey = "nicflowtestsecret"
)

var build struct {
	once sync.Once
	path string
	err  error
	took time.Duration
}

// Binary returns the path of the versitygw binary, building it at the
// first call of the process when the cache lacks it.
func Binary(t testing.TB) string {
	t.Helper()
	emutest.Skip(t, "versitygw")
	build.once.Do(func() {
		dir := os.Getenv("NICFLOW_TEST_CACHE")
		if dir == "" {
			c, err := os.UserCacheDir()
			if err != nil {
				build.err = fmt.Errorf("no cache directory: %v", err)
				return
			}
			dir = filepath.Join(c, "nicflow-test")
		}
		bin := filepath.Join(dir, "bin", "versitygw-"+Version+"-"+runtime.GOOS+"-"+runtime.GOARCH)
		if _, err := os.Stat(bin); err == nil {
			build.path = bin
			return
		}
		goCmd, err := exec.LookPath("go")
		if err != nil {
			if g := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(g) {
				goCmd = g
			} else {
				build.err = fmt.Errorf("no go command to build versitygw with")
				return
			}
		}
		tmp, err := os.MkdirTemp("", "versitygw-build-")
		if err != nil {
			build.err = err
			return
		}
		defer os.RemoveAll(tmp)
		start := time.Now()
		cmd := exec.Command(goCmd, "install", "github.com/versity/versitygw/cmd/versitygw@"+Version)
		cmd.Env = append(os.Environ(), "GOBIN="+tmp, "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
		cmd.Dir = tmp
		out, err := cmd.CombinedOutput()
		build.took = time.Since(start)
		if err != nil {
			build.err = fmt.Errorf("go install versitygw@%s: %v\n%s", Version, err, out)
			return
		}
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			build.err = err
			return
		}
		if err := os.Rename(filepath.Join(tmp, "versitygw"), bin); err != nil {
			build.err = err
			return
		}
		build.path = bin
	})
	if build.err != nil {
		t.Skipf("cannot build the S3 test server versitygw %s from the module proxy, so the S3 tests do not run: %v", Version, build.err)
	}
	if build.took > 0 {
		t.Logf("built versitygw %s in %s (cached at %s)", Version, build.took.Round(time.Second), build.path)
	}
	return build.path
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// Server is a running versitygw over a temporary directory, with a fault
// proxy in front.
type Server struct {
	t    testing.TB
	bin  string
	Dir  string // the posix backend's directory: one subdirectory a bucket
	addr string // versitygw's address (host:port)
	cmd  *exec.Cmd
	done chan struct{}

	proxy *httptest
	// Throttle, while positive, is how many more requests the proxy
	// answers 503 SlowDown.
	Throttle atomic.Int64
	// KillAfterGets, while positive, kills the server when that many
	// more GETs of object bytes have passed the proxy.
	KillAfterGets atomic.Int64
	// Requests and Throttled count the proxy's requests and 503s.
	Requests, Throttled atomic.Int64
}

type httptest struct {
	ln  net.Listener
	srv *http.Server
}

// Start starts versitygw with buckets (made as directories), stopped at
// the test's end.
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	bin := Binary(t)
	s := &Server{t: t, bin: bin, Dir: t.TempDir()}
	for _, b := range buckets {
		if err := os.Mkdir(filepath.Join(s.Dir, b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	ln.Close()
	s.start()
	t.Cleanup(s.Stop)
	s.startProxy()
	return s
}

func (s *Server) start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, "--port", s.addr, "--access", AccessKey, "--secret", SecretKey, "--region", "us-east-1", "--quiet", "posix", s.Dir)
	s.cmd.Stdout, s.cmd.Stderr = io.Discard, io.Discard
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("starting versitygw: %v", err)
	}
	s.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { c.Wait(); close(done) }(s.cmd, s.done)
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-s.done:
			s.t.Fatalf("versitygw exited at start: %v", s.cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("versitygw does not listen on %s after 15s", s.addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill kills the server process (SIGKILL) and waits for it.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		<-s.done
	}
}

// Restart starts the server again on the same address and directory.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	s.start()
}

// Stop kills the server and the proxy.
func (s *Server) Stop() {
	s.Kill()
	if s.proxy != nil {
		s.proxy.srv.Close()
	}
}

// Endpoint is the server's own URL.
func (s *Server) Endpoint() string { return "http://" + s.addr }

// ProxyEndpoint is the fault proxy's URL.
func (s *Server) ProxyEndpoint() string { return "http://" + s.proxy.ln.Addr().String() }

func (s *Server) startProxy() {
	target, _ := url.Parse(s.Endpoint())
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = log.New(io.Discard, "", 0)
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		// The server is gone: drop the connection as a dead server
		// would, rather than answer.
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return
			}
		}
		w.WriteHeader(http.StatusBadGateway)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Requests.Add(1)
		if s.Throttle.Load() > 0 && s.Throttle.Add(-1) >= 0 {
			s.Throttled.Add(1)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
			return
		}
		if r.Method == http.MethodGet && r.Header.Get("Range") != "" && s.KillAfterGets.Load() > 0 {
			if s.KillAfterGets.Add(-1) == 0 {
				s.Kill()
			}
		}
		rp.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.t.Fatal(err)
	}
	s.proxy = &httptest{ln: ln, srv: &http.Server{Handler: h}}
	go s.proxy.srv.Serve(ln)
}
