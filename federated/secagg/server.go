package secagg

import (
	"bytes"
	"crypto/ecdh"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/vault/shamir"

	"github.com/dptune/dptune/federated/pki"
)

// ErrLate is returned for a message that arrives after its round closed; a
// masked vector that arrives late is never unmasked.
var ErrLate = errors.New("secagg: message after its round closed")

// Server collects the clients' messages round by round and outputs the sum
// of the survivors' vectors. Add* accept one message per client per round;
// Close* end a round with whoever has sent, and fail if fewer than the
// threshold did. Every error leaves nothing released.
type Server struct {
	p        Params
	stage    int
	keys     map[int]Keys
	u1       []int
	shares   map[int]Shares
	u2       []int
	masked   map[int][]uint64
	u3       []int
	sigs     map[int]Signature
	u4       []int
	unmasked map[int]Unmask
}

// NewServer returns the server of a summation with parameters p.
func NewServer(p Params) (*Server, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	return &Server{p: p, keys: map[int]Keys{}, shares: map[int]Shares{}, masked: map[int][]uint64{}, sigs: map[int]Signature{}, unmasked: map[int]Unmask{}}, nil
}

func (s *Server) accept(stage, from int, seen bool, members []int) error {
	switch {
	case s.stage > stage:
		return fmt.Errorf("%w (client %d)", ErrLate, from)
	case s.stage < stage:
		return fmt.Errorf("secagg: client %d is ahead of the protocol", from)
	case from < 0 || from >= s.p.Clients:
		return fmt.Errorf("secagg: unknown client %d", from)
	case seen:
		return fmt.Errorf("secagg: client %d sent twice in one round", from)
	}
	if members != nil {
		if _, ok := slices.BinarySearch(members, from); !ok {
			return fmt.Errorf("secagg: client %d dropped out of an earlier round", from)
		}
	}
	return nil
}

// AddKeys accepts round 0's message. Its two keys must differ from each
// other and from every key already in U1, and a message with a certificate
// must be signed by it (the server checks no certificate chain: every
// client does that itself, and the caller may check it against the
// transport's); the server's check only keeps a bad message from aborting
// the honest clients.
func (s *Server) AddKeys(k Keys) error {
	_, seen := s.keys[k.ID]
	if err := s.accept(0, k.ID, seen, nil); err != nil {
		return err
	}
	for _, b := range [][]byte{k.EncryptKey, k.MaskKey} {
		if _, err := ecdh.X25519().NewPublicKey(b); err != nil {
			return fmt.Errorf("secagg: client %d: %w", k.ID, err)
		}
	}
	// Distinct keys: a key repeated within a message or across U1 would
	// make every honest client refuse U1 (Client.ShareKeys) and abort.
	if bytes.Equal(k.EncryptKey, k.MaskKey) {
		return fmt.Errorf("secagg: client %d's encryption and masking keys are equal", k.ID)
	}
	for _, o := range s.keys {
		for _, a := range [][]byte{o.EncryptKey, o.MaskKey} {
			if bytes.Equal(a, k.EncryptKey) || bytes.Equal(a, k.MaskKey) {
				return fmt.Errorf("secagg: client %d repeats a key of client %d", k.ID, o.ID)
			}
		}
	}
	if len(k.Cert) > 0 {
		cert, err := x509.ParseCertificate(k.Cert)
		if err != nil {
			return fmt.Errorf("secagg: client %d's certificate: %w", k.ID, err)
		}
		if err := pki.CheckSignature(cert, keysMessage(s.p.Session, k), k.Sig); err != nil {
			return fmt.Errorf("secagg: client %d's keys: %w", k.ID, err)
		}
	}
	s.keys[k.ID] = k
	return nil
}

// CloseKeys ends round 0 and returns U1's keys, sorted by ID, for every
// client.
func (s *Server) CloseKeys() ([]Keys, error) {
	if s.stage != 0 {
		return nil, errors.New("secagg: round 0 already closed")
	}
	s.u1 = slices.Sorted(maps.Keys(s.keys))
	if err := s.p.checkIDs("U1", s.u1); err != nil {
		return nil, err
	}
	s.stage = 1
	out := make([]Keys, len(s.u1))
	for i, id := range s.u1 {
		out[i] = s.keys[id]
	}
	return out, nil
}

// AddShares accepts round 1's message: one ciphertext for each client of U1.
func (s *Server) AddShares(m Shares) error {
	_, seen := s.shares[m.From]
	if err := s.accept(1, m.From, seen, s.u1); err != nil {
		return err
	}
	if !slices.Equal(slices.Sorted(maps.Keys(m.Ciphertext)), s.u1) || len(m.Commitment) != sha256.Size {
		return fmt.Errorf("secagg: client %d's shares are not one per client of U1 with a commitment", m.From)
	}
	s.shares[m.From] = m
	return nil
}

// CloseShares ends round 1 and returns U2.
func (s *Server) CloseShares() ([]int, error) {
	if s.stage != 1 {
		return nil, errors.New("secagg: round 1 is not open")
	}
	s.u2 = slices.Sorted(maps.Keys(s.shares))
	if err := s.p.checkIDs("U2", s.u2); err != nil {
		return nil, err
	}
	s.stage = 2
	return slices.Clone(s.u2), nil
}

// SharesFor returns the ciphertexts addressed to client id by U2 (sender →
// ciphertext), after round 1 closed.
func (s *Server) SharesFor(id int) (map[int][]byte, error) {
	if s.stage < 2 {
		return nil, errors.New("secagg: round 1 is not closed")
	}
	out := map[int][]byte{}
	for _, u := range s.u2 {
		out[u] = s.shares[u].Ciphertext[id]
	}
	return out, nil
}

// AddMasked accepts round 2's message. After CloseMasked it returns ErrLate.
func (s *Server) AddMasked(m Masked) error {
	_, seen := s.masked[m.From]
	if err := s.accept(2, m.From, seen, s.u2); err != nil {
		return err
	}
	if len(m.Y) != s.p.Length {
		return fmt.Errorf("secagg: client %d sent %d words, want %d", m.From, len(m.Y), s.p.Length)
	}
	s.masked[m.From] = slices.Clone(m.Y)
	return nil
}

// Masked returns client id's masked vector as the server holds it.
func (s *Server) Masked(id int) []uint64 { return slices.Clone(s.masked[id]) }

// CloseMasked ends round 2 and returns U3, the clients whose vectors are
// in the sum.
func (s *Server) CloseMasked() ([]int, error) {
	if s.stage != 2 {
		return nil, errors.New("secagg: round 2 is not open")
	}
	s.u3 = slices.Sorted(maps.Keys(s.masked))
	if err := s.p.checkIDs("U3", s.u3); err != nil {
		return nil, err
	}
	s.stage = 3
	return slices.Clone(s.u3), nil
}

// AddSignature accepts round 3's message from a client of U3: its
// signature on U3, checked against the certificate it sent in round 0 when
// it sent one.
func (s *Server) AddSignature(m Signature) error {
	_, seen := s.sigs[m.From]
	if err := s.accept(3, m.From, seen, s.u3); err != nil {
		return err
	}
	if c := s.keys[m.From].Cert; len(c) > 0 {
		cert, err := x509.ParseCertificate(c)
		if err != nil {
			return err
		}
		if err := pki.CheckSignature(cert, u3Message(s.p.Session, s.u3), m.Sig); err != nil {
			return fmt.Errorf("secagg: client %d's signature on U3: %w", m.From, err)
		}
	}
	s.sigs[m.From] = Signature{From: m.From, Sig: slices.Clone(m.Sig)}
	return nil
}

// CloseSignatures ends round 3 and returns U4's signatures, sorted by
// signer, for every client of U4; it fails if fewer than t signed.
func (s *Server) CloseSignatures() ([]Signature, error) {
	if s.stage != 3 {
		return nil, errors.New("secagg: round 3 is not open")
	}
	s.u4 = slices.Sorted(maps.Keys(s.sigs))
	if err := s.p.checkIDs("U4", s.u4); err != nil {
		return nil, err
	}
	s.stage = 4
	out := make([]Signature, len(s.u4))
	for i, id := range s.u4 {
		out[i] = s.sigs[id]
	}
	return out, nil
}

// AddUnmask accepts round 4's message from a client of U4: shares of b_v
// for v ∈ U3 and of s_v^SK for v ∈ U2∖U3, nothing else.
func (s *Server) AddUnmask(m Unmask) error {
	_, seen := s.unmasked[m.From]
	if err := s.accept(4, m.From, seen, s.u4); err != nil {
		return err
	}
	var dropped []int
	for _, v := range s.u2 {
		if _, ok := slices.BinarySearch(s.u3, v); !ok {
			dropped = append(dropped, v)
		}
	}
	if !slices.Equal(slices.Sorted(maps.Keys(m.SelfMask)), s.u3) || !slices.Equal(slices.Sorted(maps.Keys(m.MaskKeys)), dropped) {
		return fmt.Errorf("secagg: client %d's unmasking shares do not match U3", m.From)
	}
	s.unmasked[m.From] = m
	return nil
}

// Sum ends round 4 and returns Σ_{u∈U3} x_u mod 2^64. It needs shares from
// at least t clients (U5 ⊆ U4); a reconstructed secret that does not match its
// commitment or public key aborts the summation.
func (s *Server) Sum() ([]uint64, error) {
	if s.stage != 4 {
		return nil, errors.New("secagg: round 4 is not open")
	}
	s.stage = 5
	u5 := slices.Sorted(maps.Keys(s.unmasked))
	if len(u5) < s.p.Threshold {
		return nil, fmt.Errorf("secagg: %d clients answered the unmasking, fewer than the threshold %d", len(u5), s.p.Threshold)
	}
	sum := make([]uint64, s.p.Length)
	for _, u := range s.u3 {
		for i, w := range s.masked[u] {
			sum[i] += w
		}
	}
	collect := func(v int, self bool) [][]byte {
		parts := make([][]byte, 0, len(u5))
		for _, w := range u5 {
			if self {
				parts = append(parts, s.unmasked[w].SelfMask[v])
			} else {
				parts = append(parts, s.unmasked[w].MaskKeys[v])
			}
		}
		return parts
	}
	for _, v := range s.u2 {
		if _, ok := slices.BinarySearch(s.u3, v); ok {
			b, err := shamir.Combine(collect(v, true))
			if err != nil {
				return nil, fmt.Errorf("secagg: reconstructing client %d's self-mask: %w", v, err)
			}
			if c := sha256.Sum256(b); !bytes.Equal(c[:], s.shares[v].Commitment) {
				return nil, fmt.Errorf("secagg: client %d's self-mask does not match its commitment: a share was altered", v)
			}
			if err := addPRG(sum, b, -1); err != nil {
				return nil, err
			}
			continue
		}
		raw, err := shamir.Combine(collect(v, false))
		if err != nil {
			return nil, fmt.Errorf("secagg: reconstructing client %d's mask key: %w", v, err)
		}
		priv, err := ecdh.X25519().NewPrivateKey(raw)
		if err != nil || !bytes.Equal(priv.PublicKey().Bytes(), s.keys[v].MaskKey) {
			return nil, fmt.Errorf("secagg: client %d's mask key does not match its public key: a share was altered", v)
		}
		for _, u := range s.u3 {
			// Remove the mask u added for the pair (u, v).
			key, err := deriveKey(priv, s.keys[u].MaskKey, pairLabel(u, v))
			if err != nil {
				return nil, err
			}
			if err := addPRG(sum, key, -pairSign(u, v)); err != nil {
				return nil, err
			}
		}
	}
	return sum, nil
}
