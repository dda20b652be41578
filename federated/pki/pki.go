// Package pki holds the curator's certificates for DP-Hype (package
// federated): a certificate authority, the server's TLS certificate, and
// each client's certificate, which serves both as its TLS client
// certificate (mutual TLS) and as the long-term signing key of the actively
// secure secure summation (Bonawitz et al. 2017, §4 and Figure 4: every
// client signs its round-0 public keys and the survivor set U3 it was sent,
// and checks the others' certificates and signatures itself).
//
// A client certificate binds one client ID (0-based, as the server assigns
// them; part i of an n-way split is client i−1) in a single URI subject
// alternative name urn:dptune:vote:client:<id>; its subject CN
// "dptune vote client <id>" is for people only. The client's TLS key and
// its signing key are the same key. Keys are Ed25519 (crypto/ed25519);
// certificates made elsewhere may also hold ECDSA keys, which sign SHA-256
// of the message.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// uriPrefix starts the URI SAN that binds a client ID.
const uriPrefix = "urn:dptune:vote:client:"

// MaxFileSize bounds every certificate or key file read (bytes).
const MaxFileSize = 1 << 20

// Validity is how long the certificates Generate writes are valid.
const Validity = 365 * 24 * time.Hour

// ClientURI is the URI SAN that binds client id.
func ClientURI(id int) *url.URL {
	u, _ := url.Parse(uriPrefix + strconv.Itoa(id))
	return u
}

// ClientID returns the client ID c binds: it must carry exactly one URI
// SAN, urn:dptune:vote:client:<id> with 0 ≤ id ≤ 254.
func ClientID(c *x509.Certificate) (int, error) {
	if len(c.URIs) != 1 || !strings.HasPrefix(c.URIs[0].String(), uriPrefix) {
		return 0, fmt.Errorf("pki: certificate %q binds no DP-Hype client ID (want one URI SAN %s<id>)", c.Subject.CommonName, uriPrefix)
	}
	s := strings.TrimPrefix(c.URIs[0].String(), uriPrefix)
	id, err := strconv.Atoi(s)
	if err != nil || id < 0 || id > 254 || strconv.Itoa(id) != s {
		return 0, fmt.Errorf("pki: certificate %q binds a bad client ID %q", c.Subject.CommonName, s)
	}
	return id, nil
}

// VerifyClient parses the DER certificate der, checks that it chains to
// roots and is valid now for client authentication, and returns it with
// the client ID it binds.
func VerifyClient(roots *x509.CertPool, der []byte) (*x509.Certificate, int, error) {
	if roots == nil {
		return nil, 0, errors.New("pki: no certificate authority to check client certificates against")
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, 0, fmt.Errorf("pki: client certificate: %w", err)
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, 0, fmt.Errorf("pki: client certificate %q: %w", c.Subject.CommonName, err)
	}
	id, err := ClientID(c)
	if err != nil {
		return nil, 0, err
	}
	return c, id, nil
}

// Sign signs msg with key: Ed25519 signs msg itself, ECDSA signs its
// SHA-256 (ASN.1 signature).
func Sign(key crypto.Signer, msg []byte) ([]byte, error) {
	switch key.Public().(type) {
	case ed25519.PublicKey:
		return key.Sign(nil, msg, crypto.Hash(0))
	case *ecdsa.PublicKey:
		h := sha256.Sum256(msg)
		return key.Sign(rand.Reader, h[:], crypto.SHA256)
	}
	return nil, fmt.Errorf("pki: signing key of type %T: want Ed25519 or ECDSA", key.Public())
}

// CheckSignature returns an error unless sig is c's key's signature (as
// Sign makes it) on msg.
func CheckSignature(c *x509.Certificate, msg, sig []byte) error {
	var alg x509.SignatureAlgorithm
	switch c.PublicKey.(type) {
	case ed25519.PublicKey:
		alg = x509.PureEd25519
	case *ecdsa.PublicKey:
		alg = x509.ECDSAWithSHA256
	default:
		return fmt.Errorf("pki: certificate %q holds a %T key: want Ed25519 or ECDSA", c.Subject.CommonName, c.PublicKey)
	}
	if err := c.CheckSignature(alg, msg, sig); err != nil {
		return fmt.Errorf("pki: bad signature by %q: %w", c.Subject.CommonName, err)
	}
	return nil
}

// ReadFile reads a regular file of at most MaxFileSize bytes; anything
// else (a FIFO, a device, a directory, a larger file) is an error.
func ReadFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, MaxFileSize)
	}
	return b, nil
}

// LoadCA reads a PEM file of CA certificates.
func LoadCA(path string) (*x509.CertPool, error) {
	b, err := ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("--ca %s holds no PEM certificate", path)
	}
	return pool, nil
}

// LoadKeyPair reads a PEM certificate and its PEM private key.
func LoadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	c, err := ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--tls-cert: %w", err)
	}
	k, err := ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--tls-key: %w", err)
	}
	pair, err := tls.X509KeyPair(c, k)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--tls-cert %s, --tls-key %s: %w", certFile, keyFile, err)
	}
	return pair, nil
}

// ServerTLS is the server's TLS 1.3 configuration: its certificate, and
// mutual TLS: a client must present a certificate for client
// authentication that chains to the CA in caFile.
func ServerTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	pair, err := LoadKeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	pool, err := LoadCA(caFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert,
		MinVersion: tls.VersionTLS13}, nil
}

// Client is a client's TLS configuration and its long-term identity.
type Client struct {
	TLS   *tls.Config
	ID    int            // the client ID its certificate binds
	Cert  []byte         // its certificate, DER
	Key   crypto.Signer  // its private key
	Roots *x509.CertPool // the curator's CA
}

// ClientTLS reads a client's certificate and key and the CA: the
// certificate must chain to the CA and bind a client ID.
func ClientTLS(certFile, keyFile, caFile string) (Client, error) {
	pair, err := LoadKeyPair(certFile, keyFile)
	if err != nil {
		return Client{}, err
	}
	pool, err := LoadCA(caFile)
	if err != nil {
		return Client{}, err
	}
	_, id, err := VerifyClient(pool, pair.Certificate[0])
	if err != nil {
		return Client{}, fmt.Errorf("--tls-cert %s: %w", certFile, err)
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return Client{}, fmt.Errorf("--tls-key %s: not a signing key", keyFile)
	}
	if _, err := Sign(key, []byte("check")); err != nil {
		return Client{}, fmt.Errorf("--tls-key %s: %w", keyFile, err)
	}
	return Client{TLS: &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, MinVersion: tls.VersionTLS13},
		ID: id, Cert: pair.Certificate[0], Key: key, Roots: pool}, nil
}

// Generate writes into dir, for local use: a self-signed CA (ca.pem, and
// ca.key if keepCAKey), the server's certificate for localhost, 127.0.0.1,
// ::1 and hosts (server.pem, server.key), and for i = 1 … clients client
// i's certificate (client-<i>.pem, client-<i>.key), which binds client ID
// i−1 (the client of --part i/n). Keys are Ed25519 in PKCS #8 PEM, mode
// 0600; every certificate is valid for Validity. Each file is written to a
// temporary file and renamed into place (an existing file is replaced, with
// the new mode); a symbolic link at any of the names is refused.
func Generate(dir string, clients int, hosts []string, keepCAKey bool) error {
	if clients < 1 || clients > 255 {
		return fmt.Errorf("pki: %d clients: need 1 … 255", clients)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	now := time.Now().Add(-time.Hour)
	caPub, caKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "dptune vote CA"}, NotBefore: now, NotAfter: now.Add(Validity),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	if caTmpl.SerialNumber, err = serial(); err != nil {
		return err
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caPub, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "ca.pem"), "CERTIFICATE", caDER, 0o644); err != nil {
		return err
	}
	if keepCAKey {
		if err := writeKey(filepath.Join(dir, "ca.key"), caKey); err != nil {
			return err
		}
	}
	issue := func(name string, tmpl *x509.Certificate) error {
		pub, key, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return err
		}
		if tmpl.SerialNumber, err = serial(); err != nil {
			return err
		}
		tmpl.NotBefore, tmpl.NotAfter, tmpl.KeyUsage = now, now.Add(Validity), x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, pub, caKey)
		if err != nil {
			return err
		}
		if err := writePEM(filepath.Join(dir, name+".pem"), "CERTIFICATE", der, 0o644); err != nil {
			return err
		}
		return writeKey(filepath.Join(dir, name+".key"), key)
	}
	srv := &x509.Certificate{Subject: pkix.Name{CommonName: "dptune vote server"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			srv.IPAddresses = append(srv.IPAddresses, ip)
		} else {
			srv.DNSNames = append(srv.DNSNames, h)
		}
	}
	if err := issue("server", srv); err != nil {
		return err
	}
	for i := 1; i <= clients; i++ {
		c := &x509.Certificate{Subject: pkix.Name{CommonName: fmt.Sprintf("dptune vote client %d", i-1)},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, URIs: []*url.URL{ClientURI(i - 1)}}
		if err := issue(fmt.Sprintf("client-%d", i), c); err != nil {
			return err
		}
	}
	return nil
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func writeKey(path string, key ed25519.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der, 0o600)
}

// writePEM writes der as a PEM block of the given kind to path with the
// given mode: into a fresh temporary file of the same directory (created
// with O_EXCL, mode 0600, then set to mode) renamed over path, so a key is
// never readable by others while it is written and an existing file's
// looser mode is not kept. A symbolic link (or anything but a regular
// file) at path is refused, never followed.
func writePEM(path, kind string, der []byte, mode os.FileMode) error {
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("pki: %s exists and is not a regular file (a symbolic link?): refusing to write through it", path)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Chmod(mode)
	if err == nil {
		err = pem.Encode(f, &pem.Block{Type: kind, Bytes: der})
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// Files are the names Generate writes into its directory for the given
// number of clients (ca.key only if keepCAKey).
func Files(clients int, keepCAKey bool) []string {
	out := []string{"ca.pem"}
	if keepCAKey {
		out = append(out, "ca.key")
	}
	out = append(out, "server.pem", "server.key")
	for i := 1; i <= clients; i++ {
		out = append(out, fmt.Sprintf("client-%d.pem", i), fmt.Sprintf("client-%d.key", i))
	}
	return out
}
