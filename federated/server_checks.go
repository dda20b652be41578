package federated

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/dptune/dptune/federated/pki"
)

// closedLocked reports whether the named phase exists and has closed.
func (s *Server) closedLocked(name string) bool {
	p, ok := s.phases[name]
	if !ok {
		return false
	}
	select {
	case <-p.closed:
		return true
	default:
		return false
	}
}

// currentRoundLocked is the plain FedAvg round now open: the first whose
// phase has not closed, once the vote's unmasking has closed; −1 before
// that, Final.Rounds after the last. An update is accepted for this round
// only, so a client cannot pre-load a later round or reopen an earlier one.
func (s *Server) currentRoundLocked() int {
	if !s.closedLocked(sumPhase("unmask", 0)) {
		return -1
	}
	for r := range s.job.Final.Rounds {
		if !s.closedLocked(fmt.Sprintf("round-%d", r)) {
			return r
		}
	}
	return s.job.Final.Rounds
}

// checkAdvertisedCert refuses, over mutual TLS, a round-0 message from
// client id whose certificate der is not the one the connection verified:
// it must be byte-equal to the peer's verified leaf certificate, chain to
// the CA that verified it for client authentication, and bind id. Every
// client checks the others' certificates itself (secagg.Client); the
// server's check keeps one hostile client's message out of U1, where it
// would make every honest client abort. Without TLS (--insecure) the keys
// are unauthenticated and nothing is checked.
func (s *Server) checkAdvertisedCert(ctx context.Context, id int, der []byte) error {
	if !s.RequireClientCert {
		return nil
	}
	p, ok := peer.FromContext(ctx)
	if !ok {
		return status.Error(codes.PermissionDenied, "vote: no peer")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return status.Error(codes.PermissionDenied, "vote: the connection presents no verified client certificate")
	}
	chain := info.State.VerifiedChains[0]
	if !bytes.Equal(der, chain[0].Raw) {
		return status.Errorf(codes.PermissionDenied, "vote: client %d's keys carry a certificate other than its connection's", id)
	}
	roots := x509.NewCertPool()
	roots.AddCert(chain[len(chain)-1])
	_, bound, err := pki.VerifyClient(roots, der)
	if err != nil {
		return status.Errorf(codes.PermissionDenied, "vote: client %d's keys: %v", id, err)
	}
	if bound != id {
		return status.Errorf(codes.PermissionDenied, "vote: keys for client %d carry client %d's certificate", id, bound)
	}
	return nil
}

// expelLocked drops client id and ends its Join stream: a client whose
// message was refused as hostile takes no further part, and the round
// closes with the others.
func (s *Server) expelLocked(id int) {
	s.dropLocked(id)
	if k, ok := s.kicked[id]; ok {
		close(k)
		delete(s.kicked, id)
	}
}
