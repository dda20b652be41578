package federated

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/dptune/dptune/federated/pki"
)

// TokenKey is the gRPC metadata key under which a client sends, with every
// call after Join, the hex of the token its Join was given.
const TokenKey = "dptune-vote-token"

// peerClient returns the client ID bound by the verified certificate of
// ctx's mutual-TLS connection; tls is false on a connection without TLS.
func peerClient(ctx context.Context) (id int, tls bool, err error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return 0, false, nil
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return 0, false, nil
	}
	chains := info.State.VerifiedChains
	if len(chains) == 0 || len(chains[0]) == 0 {
		return 0, true, status.Error(codes.PermissionDenied, "vote: the connection presents no verified client certificate")
	}
	if id, err = pki.ClientID(chains[0][0]); err != nil {
		return 0, true, status.Error(codes.PermissionDenied, err.Error())
	}
	return id, true, nil
}

// joinIdentity is the client ID the caller of Join is entitled to: with
// mutual TLS the one its certificate binds (certified true), else none.
func (s *Server) joinIdentity(ctx context.Context) (id int, certified bool, err error) {
	id, tls, err := peerClient(ctx)
	switch {
	case err != nil:
		return 0, false, err
	case !tls && s.RequireClientCert:
		return 0, false, status.Error(codes.PermissionDenied, "vote: this server takes mutual-TLS connections only")
	case tls && id >= s.job.Clients:
		return 0, false, status.Errorf(codes.PermissionDenied, "vote: the certificate binds client %d, the job has %d clients", id, s.job.Clients)
	}
	return id, tls, nil
}

// newTokenLocked draws client id's Join token.
func (s *Server) newTokenLocked(id int) ([]byte, error) {
	tok := make([]byte, 32)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	s.tokens[id] = tok
	return tok, nil
}

// authorize refuses (codes.PermissionDenied) a message that names client
// claimed unless the caller is that client: with mutual TLS the verified
// certificate must bind claimed, and in every case the call must carry
// the token claimed's Join was given, so a process that never joined, or
// joined as another client, is refused. Without TLS (--insecure, loopback
// only) the token is the only binding: whoever can read a client's
// traffic or memory can act as it.
func (s *Server) authorize(ctx context.Context, claimed int) error {
	id, tls, err := peerClient(ctx)
	switch {
	case err != nil:
		return err
	case !tls && s.RequireClientCert:
		return status.Error(codes.PermissionDenied, "vote: this server takes mutual-TLS connections only")
	case tls && id != claimed:
		return status.Errorf(codes.PermissionDenied, "vote: the message names client %d, the connection's certificate is client %d's", claimed, id)
	}
	var tok []byte
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(TokenKey); len(v) == 1 {
			tok, _ = hex.DecodeString(v[0])
		}
	}
	s.mu.Lock()
	want, joined := s.tokens[claimed]
	s.mu.Unlock()
	if !joined {
		return status.Errorf(codes.PermissionDenied, "vote: client %d has not joined this session", claimed)
	}
	if subtle.ConstantTimeCompare(tok, want) != 1 {
		return status.Errorf(codes.PermissionDenied, "vote: the message names client %d but does not carry its join token", claimed)
	}
	return nil
}

// sumSession names secure sum k of this session for its signatures.
func sumSession(session []byte, k int) []byte {
	return fmt.Appendf(slices.Clone(session), "/sum %d", k)
}
