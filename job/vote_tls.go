package job

import (
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dptune/dptune/federated/pki"
	"github.com/dptune/dptune/federated/secagg"
)

// VoteTransport secures the vote's gRPC connections. By default it is
// mutual TLS 1.3: Cert and Key are this side's certificate and key (PEM)
// and CA the curator's CA certificate (PEM; `dptune vote certs` writes all
// three). The server requires a client certificate from the CA and takes
// the client's ID from it; a client's certificate binds its ID (URI SAN
// urn:dptune:vote:client:<id>, package federated/pki) and its key also
// signs the secure sums' keys and survivor sets. Insecure is plaintext
// gRPC, allowed on loopback addresses only: client IDs are then bound by
// the Join token alone and the secure sums are unauthenticated, which
// withstands a semi-honest server only.
type VoteTransport struct {
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

// check refuses (ErrInvalid) an insecure transport on a non-loopback
// address, and a TLS transport without its three files.
func (t VoteTransport) check(addr string) error {
	if t.Insecure {
		if !IsLoopback(addr) {
			return invalidf("--insecure is allowed on a loopback address only, not %s: use --tls-cert, --tls-key and --ca (dptune vote certs writes them)", addr)
		}
		return nil
	}
	if t.Cert == "" || t.Key == "" || t.CA == "" {
		return invalidf("the vote runs over mutual TLS: give --tls-cert, --tls-key and --ca (dptune vote certs writes them), or --insecure on loopback")
	}
	return nil
}

// serverOption is the gRPC server's transport credentials for listening
// on addr, and whether every call must come over mutual TLS. Errors wrap
// ErrInvalid.
func (t VoteTransport) serverOption(addr string) (grpc.ServerOption, bool, error) {
	if err := t.check(addr); err != nil {
		return nil, false, err
	}
	if t.Insecure {
		return grpc.Creds(insecure.NewCredentials()), false, nil
	}
	cfg, err := pki.ServerTLS(t.Cert, t.Key, t.CA)
	if err != nil {
		return nil, false, invalidf("%v", err)
	}
	return grpc.Creds(credentials.NewTLS(cfg)), true, nil
}

// CheckServer refuses, before any work, a server transport that cannot
// serve on addr: --insecure off loopback, missing or unreadable files.
func (t VoteTransport) CheckServer(addr string) error {
	_, _, err := t.serverOption(addr)
	return err
}

// clientOption is a client's transport credentials for the server at addr
// and, over TLS, its long-term identity for the secure sums. Errors wrap
// ErrInvalid.
func (t VoteTransport) clientOption(addr string) (grpc.DialOption, *secagg.Auth, int, error) {
	if err := t.check(addr); err != nil {
		return nil, nil, 0, err
	}
	if t.Insecure {
		return grpc.WithTransportCredentials(insecure.NewCredentials()), nil, -1, nil
	}
	c, err := pki.ClientTLS(t.Cert, t.Key, t.CA)
	if err != nil {
		return nil, nil, 0, invalidf("%v", err)
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(c.TLS)), &secagg.Auth{Cert: c.Cert, Key: c.Key, Roots: c.Roots}, c.ID, nil
}

// CheckClient refuses, before any work, a client transport that cannot
// reach addr: --insecure off loopback, missing or unreadable files, a
// certificate that binds no client ID or another part than part (if > 0).
func (t VoteTransport) CheckClient(addr string, part int) error {
	_, _, id, err := t.clientOption(addr)
	if err == nil && part > 0 && id >= 0 && part != id+1 {
		return invalidf("--part %d: the certificate %s is client %d's (part %d)", part, t.Cert, id, id+1)
	}
	return err
}

// GenerateVoteCerts writes the curator's CA and the server's and clients'
// certificates and keys into dir (pki.Generate); VoteCertFiles names them.
func GenerateVoteCerts(dir string, clients int, hosts []string, keepCAKey bool) error {
	return pki.Generate(dir, clients, hosts, keepCAKey)
}

// VoteCertFiles are the names GenerateVoteCerts writes (pki.Files).
func VoteCertFiles(clients int, keepCAKey bool) []string { return pki.Files(clients, keepCAKey) }
