package cluster

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// handshake runs a TLS handshake between a server and a client config over
// an in-memory pipe and returns the server's and the client's errors.
func handshake(server, client *tls.Config) (error, error) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	a.SetDeadline(time.Now().Add(5 * time.Second))
	b.SetDeadline(time.Now().Add(5 * time.Second))
	srvErr := make(chan error, 1)
	go func() {
		s := tls.Server(a, server)
		err := s.Handshake()
		if err == nil {
			// TLS 1.3: the client's certificate is checked after the
			// client's handshake finished; read to surface the verdict.
			_, err = s.Read(make([]byte, 1))
		}
		srvErr <- err
	}()
	c := tls.Client(b, client)
	cerr := c.Handshake()
	if cerr == nil {
		c.Write([]byte{1})
		_, cerr = c.Read(make([]byte, 1))
		if ne, ok := cerr.(net.Error); ok && ne.Timeout() {
			cerr = nil
		}
		c.Close()
	}
	serr := <-srvErr
	return serr, cerr
}

func TestKeysAndMutualTLS(t *testing.T) {
	dir := t.TempDir()
	if err := InitKeys(dir, false); err != nil {
		t.Fatal(err)
	}
	if err := InitKeys(dir, false); !nferr.Is(err, nferr.KindQuery) || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Errorf("second init: %v", err)
	}
	for _, f := range []string{ClusterKeyFile, CAKeyFile} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v %v", f, st.Mode(), err)
		}
	}
	w, err := LoadKeys(dir, "w1", RoleWorker)
	if err != nil {
		t.Fatal(err)
	}
	c, err := LoadKeys(dir, "coord", RoleCoordinator)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.GossipKey()) != 32 {
		t.Errorf("gossip key of %d bytes", len(w.GossipKey()))
	}
	if a, b := w.DeriveKey("shuffle", 32), c.DeriveKey("shuffle", 32); string(a) != string(b) || string(a) == string(w.DeriveKey("other", 32)) {
		t.Error("derived keys: same label must agree across nodes, different labels must differ")
	}
	if serr, cerr := handshake(w.ServerTLS(), c.ClientTLS()); serr != nil || cerr != nil {
		t.Fatalf("same cluster: server %v, client %v", serr, cerr)
	}

	// Another cluster's certificate is refused both ways.
	other := t.TempDir()
	InitKeys(other, false)
	x, err := LoadKeys(other, "x", RoleWorker)
	if err != nil {
		t.Fatal(err)
	}
	if serr, cerr := handshake(w.ServerTLS(), x.ClientTLS()); serr == nil && cerr == nil {
		t.Error("server accepted a client of another cluster")
	}
	if _, cerr := handshake(x.ServerTLS(), c.ClientTLS()); cerr == nil {
		t.Error("client accepted a server of another cluster")
	}
	// A client without a certificate is refused.
	noCert := c.ClientTLS()
	noCert.Certificates = nil
	if serr, _ := handshake(w.ServerTLS(), noCert); serr == nil {
		t.Error("server accepted a client without a certificate")
	}

	// Node directories: no CA key, a certificate bound to one role.
	nd := filepath.Join(t.TempDir(), "w2")
	if err := IssueNodeDir(dir, nd, "w2", RoleWorker, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(nd, CAKeyFile)); err == nil {
		t.Error("node directory holds the CA key")
	}
	k2, err := LoadKeys(nd, "ignored", RoleWorker)
	if err != nil {
		t.Fatal(err)
	}
	if k2.Name() != "w2" {
		t.Errorf("name from certificate: %s", k2.Name())
	}
	if serr, cerr := handshake(c.ServerTLS(), k2.ClientTLS()); serr != nil || cerr != nil {
		t.Errorf("node directory cert: %v %v", serr, cerr)
	}
	if _, err := LoadKeys(nd, "w2", RoleCoordinator); !nferr.Is(err, nferr.KindAuth) {
		t.Errorf("worker certificate used as coordinator: %v", err)
	}
	if err := IssueNodeDir(nd, t.TempDir(), "w3", RoleWorker, time.Hour); !nferr.Is(err, nferr.KindAuth) {
		t.Errorf("issuing from a node directory: %v", err)
	}
	// Missing or corrupt keys are auth errors naming the file.
	if _, err := LoadKeys(t.TempDir(), "n", RoleWorker); !nferr.Is(err, nferr.KindAuth) || !strings.Contains(err.Error(), "cluster init") {
		t.Errorf("empty dir: %v", err)
	}
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, ClusterKeyFile), []byte("not base64!"), 0o600)
	if _, err := LoadKeys(bad, "n", RoleWorker); !nferr.Is(err, nferr.KindAuth) || !strings.Contains(err.Error(), ClusterKeyFile) {
		t.Errorf("corrupt key: %v", err)
	}
}
