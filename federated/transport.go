package federated

import (
	"errors"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dptune/dptune/federated/pki"
	"github.com/dptune/dptune/federated/secagg"
)

// ErrTransport is wrapped by every error that refuses a Transport before
// any connection: plaintext off loopback, missing or unreadable files, a
// certificate for another client than asked. Package job turns it into a
// refused request (exit status 2).
var ErrTransport = errors.New("vote transport refused")

// transportError is a one-line refusal wrapping ErrTransport.
type transportError struct{ msg string }

func (e transportError) Error() string { return e.msg }
func (e transportError) Unwrap() error { return ErrTransport }

func transportf(format string, a ...any) error {
	return transportError{msg: fmt.Sprintf(format, a...)}
}

// Transport secures the vote's gRPC connections (Serve, Dial).
//
// By default it is mutual TLS 1.3: Cert and Key are this side's
// certificate and key (PEM) and CA the curator's CA certificate (PEM;
// GenerateCerts, `dptune vote certs`, writes all three). The server
// requires a client certificate from the CA and takes the client's ID from
// it; a client's certificate binds its ID (URI SAN
// urn:dptune:vote:client:<id>, package pki) and its key also signs the
// secure sums' keys and survivor sets, so the secure sums withstand a
// malicious server colluding with up to Job.Colluding clients (see the
// package comment, "Adversaries").
//
// Insecure is plaintext gRPC, allowed on loopback addresses only: client
// IDs are then bound by the Join token alone and the secure sums are
// unauthenticated, which withstands a semi-honest server only.
type Transport struct {
	Cert, Key, CA string
	Insecure      bool
}

// IsLoopback reports whether addr (HOST:PORT) names a loopback host:
// localhost or a loopback IP. An empty host (every interface) is not.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// check refuses (ErrTransport) an insecure transport on a non-loopback
// address, and a TLS transport without its three files.
func (t Transport) check(addr string) error {
	if t.Insecure {
		if !IsLoopback(addr) {
			return transportf("--insecure is allowed on a loopback address only, not %s: use --tls-cert, --tls-key and --ca (dptune vote certs writes them)", addr)
		}
		return nil
	}
	if t.Cert == "" || t.Key == "" || t.CA == "" {
		return transportf("the vote runs over mutual TLS: give --tls-cert, --tls-key and --ca (dptune vote certs writes them), or --insecure on loopback")
	}
	return nil
}

// serverOption is the gRPC server's transport credentials for listening
// on addr, and whether every call must come over mutual TLS. Errors wrap
// ErrTransport.
func (t Transport) serverOption(addr string) (grpc.ServerOption, bool, error) {
	if err := t.check(addr); err != nil {
		return nil, false, err
	}
	if t.Insecure {
		return grpc.Creds(insecure.NewCredentials()), false, nil
	}
	cfg, err := pki.ServerTLS(t.Cert, t.Key, t.CA)
	if err != nil {
		return nil, false, transportf("%v", err)
	}
	return grpc.Creds(credentials.NewTLS(cfg)), true, nil
}

// CheckServer refuses, before any work, a server transport that cannot
// serve on addr: Insecure off loopback, missing or unreadable files. The
// error wraps ErrTransport.
func (t Transport) CheckServer(addr string) error {
	_, _, err := t.serverOption(addr)
	return err
}

// clientOption is a client's transport credentials for the server at addr
// and, over TLS, its long-term identity for the secure sums and the client
// ID its certificate binds (-1 without TLS). Errors wrap ErrTransport.
func (t Transport) clientOption(addr string) (grpc.DialOption, *secagg.Auth, int, error) {
	if err := t.check(addr); err != nil {
		return nil, nil, 0, err
	}
	if t.Insecure {
		return grpc.WithTransportCredentials(insecure.NewCredentials()), nil, -1, nil
	}
	c, err := pki.ClientTLS(t.Cert, t.Key, t.CA)
	if err != nil {
		return nil, nil, 0, transportf("%v", err)
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(c.TLS)), &secagg.Auth{Cert: c.Cert, Key: c.Key, Roots: c.Roots}, c.ID, nil
}

// CheckClient refuses, before any work, a client transport that cannot
// reach addr: Insecure off loopback, missing or unreadable files, a
// certificate that binds no client ID or another part than part (if > 0;
// part p is client p−1). The error wraps ErrTransport.
func (t Transport) CheckClient(addr string, part int) error {
	_, _, id, err := t.clientOption(addr)
	if err == nil && part > 0 && id >= 0 && part != id+1 {
		return transportf("--part %d: the certificate %s is client %d's (part %d)", part, t.Cert, id, id+1)
	}
	return err
}

// GenerateCerts writes the curator's CA and the server's and clients'
// certificates and keys into dir, with the errors of pki.Generate;
// CertFiles names them.
func GenerateCerts(dir string, clients int, hosts []string, keepCAKey bool) error {
	return pki.Generate(dir, clients, hosts, keepCAKey)
}

// CertFiles are the names GenerateCerts writes (pki.Files).
func CertFiles(clients int, keepCAKey bool) []string { return pki.Files(clients, keepCAKey) }
