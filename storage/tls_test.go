package storage

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"
)

// selfSigned makes a CA-less certificate for 127.0.0.1 usable as both
// server and client certificate, and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "nicflow-test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// TestMutualTLS serves scans over mutual TLS; a client without a
// certificate is refused.
func TestMutualTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	nodeDB := openTestDB(t, WriteOptions{})
	srv, err := NewServer(nodeDB, "127.0.0.1:0", ServerOptions{NodeID: "tls1", TLS: &tls.Config{
		Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	}})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Stop(time.Second)
	coord := openTestDB(t, WriteOptions{})
	mustCreate(t, coord, "t", loadSchema())
	appendRows(t, coord, "t", loadSchema(), []row{{int32(1), int64(100), int32(5), "a"}, {int32(2), int64(200), int32(6), nil}})
	nodes := []Node{{ID: "tls1", Addr: srv.Addr()}}
	client := ClientOptions{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}}
	if err := coord.Place(context.Background(), "t", nodes, 1, client); err != nil {
		t.Fatal(err)
	}
	rs := NewRemoteScanner(coord, nodes, client)
	defer rs.Close()
	it, err := rs.OpenScan(context.Background(), ScanSpec{Table: "t", Columns: []string{"k"}}, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := drain(t, it)
	if err != nil || len(rows) != 2 {
		t.Fatalf("scan over mutual TLS: %d rows, %v", len(rows), err)
	}
	// No client certificate: refused.
	bad := NewRemoteScanner(coord, nodes, ClientOptions{TLS: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}})
	defer bad.Close()
	it, err = bad.OpenScan(context.Background(), ScanSpec{Table: "t", Columns: []string{"k"}}, ScanOptions{})
	if err == nil {
		_, err = drain(t, it)
	}
	if err == nil {
		t.Fatal("a client without a certificate was served")
	}
}
