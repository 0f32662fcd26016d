package shuffle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Authentication of agent-to-agent connections.
//
// Two hooks, one mechanism: both end in TLS 1.3 with a certificate on each
// side, so data is encrypted and a peer that cannot prove its identity gets
// nothing but a failed handshake.
//
//   - Options.TLS: a complete mutual-TLS config (the cluster issue supplies
//     one from the cluster CA).
//   - Options.ClusterKey: a shared secret. KeyTLSConfig derives an Ed25519
//     key pair from it (HKDF-SHA256), presents a self-signed certificate for
//     that key, and accepts exactly the peers whose certificate carries the
//     same public key, that is, the peers that know the secret. Go's TLS has
//     no pre-shared-key mode; this gets the same guarantee from the standard
//     handshake without hand-written cryptography.
//
// Local connections (worker to offloaded agent) are protected by the file
// system instead: the agent's socket and the shared-memory ring are created
// mode 0600 and the agent checks the peer's uid (see transport.go).

const minClusterKey = 16

// KeyTLSConfig returns a TLS config, usable for dialing and accepting, that
// authenticates both ends by knowledge of key.
func KeyTLSConfig(key []byte) (*tls.Config, error) {
	if len(key) < minClusterKey {
		return nil, nferr.Queryf("shuffle: cluster key has %d bytes, want at least %d", len(key), minClusterKey)
	}
	seed, err := hkdf.Key(sha256.New, key, []byte("nicflow shuffle"), "agent identity v1", ed25519.SeedSize)
	if err != nil {
		return nil, nferr.Internalf("shuffle: deriving key: %v", err)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "nicflow shuffle agent"},
		// A fixed, wide validity: the certificate is only a carrier for the
		// derived public key, which is what peers check.
		NotBefore:   time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:    time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    []string{"nicflow-shuffle"},
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, pub, priv)
	if err != nil {
		return nil, nferr.Internalf("shuffle: creating certificate: %v", err)
	}
	verify := func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("peer presented no certificate")
		}
		c, err := x509.ParseCertificate(raw[0])
		if err != nil {
			return err
		}
		pk, ok := c.PublicKey.(ed25519.PublicKey)
		if !ok || !bytes.Equal(pk, pub) {
			return errors.New("peer does not hold the cluster key")
		}
		return nil
	}
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: priv}},
		MinVersion:   tls.VersionTLS13,
		ClientAuth:   tls.RequireAnyClientCert,
		// NB: chain verification is replaced, not skipped: VerifyPeerCertificate
		// accepts only the public key derived from the cluster key.
		InsecureSkipVerify:    true,
		VerifyPeerCertificate: verify,
		ServerName:            "nicflow-shuffle",
	}, nil
}

// tlsConfigs returns the configs for accepting and dialing agent
// connections, or nils for plain TCP.
func (o *Options) tlsConfigs() (server, client *tls.Config, err error) {
	if o.TLS != nil {
		client = o.TLS
		if o.TLSClient != nil {
			client = o.TLSClient
		}
		return o.TLS, client, nil
	}
	if o.ClusterKey != nil {
		c, err := KeyTLSConfig(o.ClusterKey)
		return c, c, err
	}
	return nil, nil, nil
}
