package shuffle

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

var tcpCorun = clusterMode{"tcp-corun", "tcp", "corun"}

func TestClusterKeyAuth(t *testing.T) {
	key := []byte("0123456789abcdef-cluster-secret")
	c := newCluster(t, 2, tcpCorun, Options{ClusterKey: key, AggSize: 2048})
	runAllToAll(t, c, 2, 300, 100, 7)

	addr := c.agents[0].Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	opts := DefaultOptions()

	// A peer with another key fails the handshake.
	wrong, _ := KeyTLSConfig([]byte("another-secret-of-16+ bytes"))
	if _, err := dialAddr(ctx, addr, wrong, &opts, nil, "intruder"); !nferr.Is(err, nferr.KindAuth) {
		t.Fatalf("wrong key: got %v, want KindAuth", err)
	}
	// A peer without a key gets neither a hello nor data: its plaintext
	// hello is not TLS, and the agent closes the connection.
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn := newStreamConn(raw, addr, DefaultMaxFrame, DefaultAggSize)
	if err := sendHello(conn, hello{role: roleAgent, node: 1, window: 1 << 20, maxFrame: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	raw.SetDeadline(time.Now().Add(5 * time.Second))
	if f, err := conn.readFrame(); err == nil {
		t.Fatalf("keyless peer read a %s frame", frameTypeNames[f.typ])
	}
	raw.Close()
	// The agent still serves peers that hold the key.
	runAllToAll(t, c, 1, 100, 50, 8)
	// The agent counts a rejection after closing the connection: wait.
	if !eventually(func() bool { return c.agents[0].Stats().Rejected >= 2 }) {
		t.Fatalf("rejected = %d, want at least 2", c.agents[0].Stats().Rejected)
	}
}

func TestMutualTLS(t *testing.T) {
	ca, caKey := newCA(t, "nicflow test CA")
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	leaf := newLeaf(t, ca, caKey)
	// Separate server and client configurations, as cluster.Keys hands out.
	server := &tls.Config{
		Certificates: []tls.Certificate{leaf},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}
	client := &tls.Config{Certificates: []tls.Certificate{leaf}, RootCAs: pool, MinVersion: tls.VersionTLS13}
	c := newCluster(t, 3, tcpCorun, Options{TLS: server, TLSClient: client, AggSize: 2048})
	runAllToAll(t, c, 1, 300, 100, 9)

	// A certificate from another CA is refused.
	other, otherKey := newCA(t, "rogue CA")
	rogue := &tls.Config{Certificates: []tls.Certificate{newLeaf(t, other, otherKey)}, RootCAs: pool, MinVersion: tls.VersionTLS13}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	opts := DefaultOptions()
	conn, err := dialAddr(ctx, c.agents[0].Addr(), rogue, &opts, nil, "rogue")
	if err == nil {
		// TLS 1.3 reports a rejected client certificate on the first read.
		sendHello(conn, hello{role: roleAgent, node: 1, window: 1 << 20, maxFrame: 1 << 20})
		conn.setDeadline(time.Now().Add(5 * time.Second))
		if f, rerr := conn.readFrame(); rerr == nil {
			t.Fatalf("rogue certificate read a %s frame", frameTypeNames[f.typ])
		}
		conn.close()
	} else if !nferr.Is(err, nferr.KindAuth) {
		t.Fatalf("rogue certificate: got %v", err)
	}
	// No certificate at all.
	noCert := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}
	if conn, err := dialAddr(ctx, c.agents[0].Addr(), noCert, &opts, nil, "anon"); err == nil {
		sendHello(conn, hello{role: roleAgent, node: 1, window: 1 << 20, maxFrame: 1 << 20})
		conn.setDeadline(time.Now().Add(5 * time.Second))
		if f, rerr := conn.readFrame(); rerr == nil {
			t.Fatalf("peer without a certificate read a %s frame", frameTypeNames[f.typ])
		}
		conn.close()
	}
	runAllToAll(t, c, 1, 100, 50, 10)
}

func TestSecurityRequired(t *testing.T) {
	_, err := NewAgent(AgentConfig{Node: 0, Peers: []string{"127.0.0.1:0", "127.0.0.1:1"}})
	if !nferr.Is(err, nferr.KindAuth) {
		t.Fatalf("agent without TLS, key or Insecure: got %v, want KindAuth", err)
	}
	if _, err := KeyTLSConfig([]byte("short")); !nferr.Is(err, nferr.KindQuery) {
		t.Fatalf("short key: got %v", err)
	}
}

// TestGarbageClosesOnlyThatConnection: random bytes, an HTTP request and a
// half-written hello on the agent port close those connections; the
// cluster keeps working.
func TestGarbageClosesOnlyThatConnection(t *testing.T) {
	c := newCluster(t, 2, tcpCorun, Options{AggSize: 2048, DialTimeout: 300 * time.Millisecond})
	runAllToAll(t, c, 1, 100, 50, 11)
	before := c.agents[0].Stats().Rejected
	hb := encodeFrames(t, &frame{typ: frameHello, body: hello{role: roleAgent, node: 1, window: 1 << 20, maxFrame: 1 << 20}.encode()})
	for _, junk := range [][]byte{
		[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		make([]byte, 100),
		hb[:20],
		append(append([]byte(nil), hb...), 0xde, 0xad, 0xbe, 0xef),
	} {
		raw, err := net.Dial("tcp", c.agents[0].Addr())
		if err != nil {
			t.Fatal(err)
		}
		raw.Write(junk)
		raw.SetDeadline(time.Now().Add(time.Second))
		// The agent closes the connection (the half hello times out).
		io.Copy(io.Discard, raw)
		raw.Close()
	}
	// A well-formed hello with the wrong role is refused with a reason.
	raw, err := net.Dial("tcp", c.agents[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	conn := newStreamConn(raw, "agent 0", DefaultMaxFrame, DefaultAggSize)
	sendHello(conn, hello{role: roleClient, window: 1 << 20, maxFrame: 1 << 20})
	if _, err := readHello(conn); !nferr.Is(err, nferr.KindAuth) || !strings.Contains(err.Error(), "worker on the agent port") {
		t.Fatalf("wrong role: got %v, want a KindAuth refusal", err)
	}
	raw.Close()
	eventually(func() bool { return c.agents[0].Stats().Rejected >= before+4 })
	if got := c.agents[0].Stats().Rejected; got < before+4 {
		t.Fatalf("rejected %d connections, want at least 3 more than %d", got, before)
	}
	runAllToAll(t, c, 2, 200, 50, 12)
}

func newCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

func newLeaf(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey) tls.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "node"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// eventually polls cond for up to 10 seconds.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func TestHandshakeErrKinds(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	if err := handshakeErr("p", reset); !nferr.Is(err, nferr.KindUnavailable) {
		t.Errorf("reset: %v", err)
	}
	if err := handshakeErr("p", io.EOF); !nferr.Is(err, nferr.KindUnavailable) {
		t.Errorf("EOF: %v", err)
	}
	if err := handshakeErr("p", errors.New("remote error: tls: bad certificate")); !nferr.Is(err, nferr.KindAuth) {
		t.Errorf("bad certificate: %v", err)
	}
}
