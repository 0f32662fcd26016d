package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Files in a key directory. `nicflow cluster init` writes the first three;
// `nicflow cluster cert` writes a node directory holding ClusterKeyFile,
// CACertFile, NodeCertFile and NodeKeyFile (and no CA key).
const (
	ClusterKeyFile = "cluster.key" // 32 random bytes, base64: memberlist's AES-256-GCM key
	CACertFile     = "ca.crt"      // the cluster CA certificate (PEM)
	CAKeyFile      = "ca.key"      // the CA's ECDSA P-256 private key (PEM, PKCS#8)
	NodeCertFile   = "node.crt"    // a node certificate issued by the CA (PEM)
	NodeKeyFile    = "node.key"    // its private key (PEM, PKCS#8)
)

// TLSServerName is the DNS name every nicflow certificate carries and every
// client verifies, so that nodes can be dialed by IP address while the
// certificate chain to the cluster CA is still checked.
const TLSServerName = "nicflow.cluster"

// clusterKeySize selects AES-256 in memberlist (it accepts 16, 24 or 32).
const clusterKeySize = 32

// InitKeys creates a key directory: a fresh cluster key and a new CA. It
// refuses to overwrite an existing key unless force is set, and leaves
// nothing behind when it fails.
func InitKeys(dir string, force bool) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nferr.IOf("creating key directory %s: %w", dir, err)
	}
	if !force {
		for _, f := range []string{ClusterKeyFile, CACertFile, CAKeyFile} {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				return nferr.Queryf("%s already holds a cluster key (%s); refusing to overwrite it (use --force to replace the cluster's keys)", dir, f)
			}
		}
	}
	key := make([]byte, clusterKeySize)
	if _, err := rand.Read(key); err != nil {
		return nferr.Internalf("generating cluster key: %v", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nferr.Internalf("generating CA key: %v", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "nicflow cluster CA", Organization: []string{"nicflow"}},
		NotBefore:             now.Add(-time.Hour), // NB: tolerate clock skew between machines
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nferr.Internalf("creating CA certificate: %v", err)
	}
	keyPEM, err := marshalKeyPEM(caKey)
	if err != nil {
		return err
	}
	return writeFilesAtomically(dir, []fileSpec{
		{ClusterKeyFile, []byte(base64.StdEncoding.EncodeToString(key) + "\n"), 0o600},
		{CACertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644},
		{CAKeyFile, keyPEM, 0o600},
	})
}

// IssueNodeDir writes a node directory to outDir for a node named name with
// the given role (RoleClient for client-only processes): the cluster key, the
// CA certificate and a certificate signed by the CA in keyDir, valid for
// validity. The node directory holds no CA key, so a stolen node directory
// cannot mint new identities (see docs/cluster.md, "Keys and certificates").
func IssueNodeDir(keyDir, outDir, name string, role Role, validity time.Duration) error {
	if name == "" || strings.ContainsAny(name, " /\\") {
		return nferr.Queryf("node name %q is empty or contains a space or slash", name)
	}
	if validity <= 0 {
		return nferr.Queryf("certificate validity must be positive, not %v", validity)
	}
	ca, err := loadCA(keyDir)
	if err != nil {
		return err
	}
	if ca.key == nil {
		return nferr.Authf("%s has no %s: certificates can only be issued from the directory written by `nicflow cluster init`", keyDir, CAKeyFile)
	}
	ck, err := os.ReadFile(filepath.Join(keyDir, ClusterKeyFile))
	if err != nil {
		return nferr.Authf("reading cluster key: %v", err)
	}
	cert, key, err := ca.issue(name, role, validity)
	if err != nil {
		return err
	}
	keyPEM, err := marshalKeyPEM(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		return nferr.IOf("creating node directory %s: %w", outDir, err)
	}
	return writeFilesAtomically(outDir, []fileSpec{
		{ClusterKeyFile, ck, 0o600},
		{CACertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}), 0o644},
		{NodeCertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert}), 0o644},
		{NodeKeyFile, keyPEM, 0o600},
	})
}

// Keys is a node's loaded security material: the gossip key, the CA that
// defines the cluster, and the node's own certificate. It hands out the TLS
// configurations every nicflow connection uses (control plane, client
// port, storage Flight service, shuffle transport). Safe for concurrent use.
type Keys struct {
	dir        string
	clusterKey []byte
	ca         *caBundle
	cert       tls.Certificate
	name       string
	role       Role
}

// LoadKeys reads a key directory for the node named name with role role.
// When the directory holds node.crt/node.key (from `nicflow cluster cert`),
// that certificate is used and must name the same role; otherwise the node
// issues itself a certificate with the CA key (directories from `nicflow
// cluster init`). Errors are KindAuth: a node without valid keys must not
// start.
func LoadKeys(dir, name string, role Role) (*Keys, error) {
	raw, err := os.ReadFile(filepath.Join(dir, ClusterKeyFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nferr.Authf("no cluster key in %s (create one with `nicflow cluster init --dir %s`)", dir, dir)
		}
		return nil, nferr.Authf("reading cluster key in %s: %v", dir, err)
	}
	ck, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || (len(ck) != 16 && len(ck) != 24 && len(ck) != 32) {
		return nil, nferr.Authf("%s is not a cluster key (want base64 of 16, 24 or 32 bytes)", filepath.Join(dir, ClusterKeyFile))
	}
	ca, err := loadCA(dir)
	if err != nil {
		return nil, err
	}
	k := &Keys{dir: dir, clusterKey: ck, ca: ca, name: name, role: role}
	certPath, keyPath := filepath.Join(dir, NodeCertFile), filepath.Join(dir, NodeKeyFile)
	if _, err := os.Stat(certPath); err == nil {
		c, err := tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			return nil, nferr.Authf("loading node certificate %s: %v", certPath, err)
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			return nil, nferr.Authf("parsing node certificate %s: %v", certPath, err)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			return nil, nferr.Authf("node certificate %s is not signed by the cluster CA %s: %v", certPath, filepath.Join(dir, CACertFile), err)
		}
		if r := certRole(leaf); r != role {
			return nil, nferr.Authf("node certificate %s is for a %v, not a %v", certPath, r, role)
		}
		c.Leaf = leaf
		k.cert = c
		k.name = leaf.Subject.CommonName
		return k, nil
	}
	if ca.key == nil {
		return nil, nferr.Authf("%s holds neither %s nor %s: cannot get a certificate", dir, NodeCertFile, CAKeyFile)
	}
	// NB: one year: the certificate lives only in this process's memory.
	der, key, err := ca.issue(name, role, 365*24*time.Hour)
	if err != nil {
		return nil, err
	}
	leaf, _ := x509.ParseCertificate(der)
	k.cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
	return k, nil
}

// Dir is the key directory the keys were loaded from.
func (k *Keys) Dir() string { return k.dir }

// Name is the name in the node's certificate.
func (k *Keys) Name() string { return k.name }

// GossipKey is memberlist's encryption key.
func (k *Keys) GossipKey() []byte { return append([]byte(nil), k.clusterKey...) }

// DeriveKey returns n bytes derived from the cluster key for one purpose
// (HKDF-SHA256 with label as info), for layers that authenticate with a
// shared key instead of TLS (e.g. a shuffle handshake HMAC). Different labels
// give independent keys; the cluster key itself is never reused.
func (k *Keys) DeriveKey(label string, n int) []byte {
	out, err := hkdf.Key(sha256.New, k.clusterKey, nil, "nicflow/"+label, n)
	if err != nil {
		// INVARIANT: hkdf.Key fails only when n > 255*32 bytes.
		panic(fmt.Sprintf("cluster: DeriveKey(%q, %d): %v", label, n, err))
	}
	return out
}

// ServerTLS is the configuration for a nicflow server port: TLS 1.3, the
// node's certificate, and client certificates required and verified against
// the cluster CA. A peer without a certificate of this cluster fails the
// handshake.
func (k *Keys) ServerTLS() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{k.cert},
		ClientCAs:    k.ca.pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
}

// ClientTLS is the configuration for dialing a nicflow server port: TLS 1.3,
// the node's certificate as client certificate, the server verified against
// the cluster CA under TLSServerName.
func (k *Keys) ClientTLS() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{k.cert},
		RootCAs:      k.ca.pool,
		ServerName:   TLSServerName,
	}
}

// PeerIdentity returns the node name and role of a verified TLS peer (from
// the certificate the handshake verified).
func PeerIdentity(cs tls.ConnectionState) (string, Role, error) {
	if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return "", 0, nferr.Authf("peer presented no verified certificate")
	}
	leaf := cs.VerifiedChains[0][0]
	return leaf.Subject.CommonName, certRole(leaf), nil
}

func certRole(c *x509.Certificate) Role {
	if len(c.Subject.OrganizationalUnit) == 1 {
		if r, err := ParseRole(c.Subject.OrganizationalUnit[0]); err == nil {
			return r
		}
	}
	return 0
}

type caBundle struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey // nil in node directories
	pool *x509.CertPool
}

func loadCA(dir string) (*caBundle, error) {
	path := filepath.Join(dir, CACertFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nferr.Authf("reading cluster CA: %v", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, nferr.Authf("%s is not a PEM certificate", path)
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil, nferr.Authf("parsing %s: %v", path, err)
	}
	if !cert.IsCA {
		return nil, nferr.Authf("%s is not a CA certificate", path)
	}
	ca := &caBundle{cert: cert, pool: x509.NewCertPool()}
	ca.pool.AddCert(cert)
	kb, err := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if errors.Is(err, fs.ErrNotExist) {
		return ca, nil
	}
	if err != nil {
		return nil, nferr.Authf("reading CA key: %v", err)
	}
	kblk, _ := pem.Decode(kb)
	if kblk == nil {
		return nil, nferr.Authf("%s is not a PEM key", filepath.Join(dir, CAKeyFile))
	}
	pk, err := x509.ParsePKCS8PrivateKey(kblk.Bytes)
	if err != nil {
		return nil, nferr.Authf("parsing %s: %v", filepath.Join(dir, CAKeyFile), err)
	}
	ek, ok := pk.(*ecdsa.PrivateKey)
	if !ok || !ek.PublicKey.Equal(cert.PublicKey) {
		return nil, nferr.Authf("%s does not belong to %s", filepath.Join(dir, CAKeyFile), path)
	}
	ca.key = ek
	return ca, nil
}

// issue signs a leaf certificate for name/role usable for both server and
// client authentication. The role is the subject's single OU.
func (ca *caBundle) issue(name string, role Role, validity time.Duration) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nferr.Internalf("generating node key: %v", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	notAfter := now.Add(validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	dns := []string{TLSServerName}
	if name != "" && name != TLSServerName {
		dns = append(dns, sanitizeDNS(name))
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, OrganizationalUnit: []string{role.String()}, Organization: []string{"nicflow"}},
		DNSNames:     dns,
		NotBefore:    now.Add(-time.Hour), // NB: tolerate clock skew between machines
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, nferr.Internalf("issuing certificate for %s: %v", name, err)
	}
	return der, key, nil
}

// sanitizeDNS maps a node name to a valid DNS label sequence (letters,
// digits, '-', '.'); it only decorates the certificate, identity is the CN.
func sanitizeDNS(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b), ".-") + ".node." + TLSServerName
}

func randomSerial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nferr.Internalf("generating serial number: %v", err)
	}
	return s, nil
}

func marshalKeyPEM(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, nferr.Internalf("encoding private key: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

type fileSpec struct {
	name string
	data []byte
	mode os.FileMode
}

// writeFilesAtomically writes each file to a temporary name in dir, syncs
// it, then renames all into place; on any failure it removes what it wrote.
func writeFilesAtomically(dir string, files []fileSpec) (err error) {
	var tmps, done []string
	defer func() {
		if err != nil {
			for _, t := range tmps {
				os.Remove(t)
			}
			for _, d := range done {
				os.Remove(d)
			}
		}
	}()
	for _, f := range files {
		t, err := os.CreateTemp(dir, "."+f.name+"-*")
		if err != nil {
			return nferr.IOf("writing %s: %w", filepath.Join(dir, f.name), err)
		}
		tmps = append(tmps, t.Name())
		if err := t.Chmod(f.mode); err != nil {
			t.Close()
			return nferr.IOf("writing %s: %w", filepath.Join(dir, f.name), err)
		}
		if _, err := t.Write(f.data); err != nil {
			t.Close()
			return nferr.IOf("writing %s: %w", filepath.Join(dir, f.name), err)
		}
		if err := t.Sync(); err != nil {
			t.Close()
			return nferr.IOf("syncing %s: %w", filepath.Join(dir, f.name), err)
		}
		if err := t.Close(); err != nil {
			return nferr.IOf("closing %s: %w", filepath.Join(dir, f.name), err)
		}
	}
	for i, f := range files {
		dst := filepath.Join(dir, f.name)
		if err := os.Rename(tmps[i], dst); err != nil {
			return nferr.IOf("installing %s: %w", dst, err)
		}
		done = append(done, dst)
	}
	tmps = nil
	return nil
}
