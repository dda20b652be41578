package secagg

import (
	"crypto"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"slices"
)

// Params are the public parameters of one summation.
type Params struct {
	Clients   int // n: client IDs are 0 … n−1; 2 ≤ n ≤ 255 (Shamir over GF(2^8))
	Threshold int // t: the fewest clients every round needs; 2 ≤ t ≤ n
	Length    int // d: words per vector, ≥ 1
	// MinSurvivors, if above Threshold, is the fewest inputs the sum may
	// hold: a client refuses a U3 smaller than it (the noise the inputs
	// carry is calibrated for that many; a server may not shrink the sum).
	MinSurvivors int
	// Session names this summation (at most MaxSession bytes): every
	// signature covers it, so a signature from one session or sum is
	// worth nothing in another.
	Session []byte
}

// MaxSession caps Params.Session.
const MaxSession = 1024

// MaxClients is the most clients a summation may have: Vault's Shamir
// shares live in GF(2^8), which has 255 non-zero evaluation points.
const MaxClients = 255

// MaxLength caps the vector length (8 bytes of keystream per word per pair).
const MaxLength = 1 << 24

// Check returns an error if p is not a valid summation.
func (p Params) Check() error {
	switch {
	case p.Clients < 2 || p.Clients > MaxClients:
		return fmt.Errorf("secagg: %d clients: need 2 … %d", p.Clients, MaxClients)
	case p.Threshold < 2 || p.Threshold > p.Clients:
		return fmt.Errorf("secagg: threshold %d with %d clients: need 2 ≤ t ≤ n", p.Threshold, p.Clients)
	case p.Length < 1 || p.Length > MaxLength:
		return fmt.Errorf("secagg: vector length %d: need 1 … %d", p.Length, MaxLength)
	case p.MinSurvivors > p.Clients:
		return fmt.Errorf("secagg: %d survivors needed of %d clients", p.MinSurvivors, p.Clients)
	case len(p.Session) > MaxSession:
		return fmt.Errorf("secagg: session name of %d bytes: at most %d", len(p.Session), MaxSession)
	}
	return nil
}

// Auth is a client's long-term credentials for the actively secure
// variant: its certificate, issued by the curator's CA and binding its
// client ID (package federated/pki), the certificate's private key, and
// the CA every other client's certificate must chain to.
type Auth struct {
	Cert  []byte         // DER
	Key   crypto.Signer  // Ed25519 or ECDSA
	Roots *x509.CertPool // the curator's CA
}

// Keys is round 0's message: a client's two X25519 public keys and, with
// Auth, its certificate and its signature on (Session, ID, c_u^PK, s_u^PK).
type Keys struct {
	ID         int
	EncryptKey []byte // c_u^PK
	MaskKey    []byte // s_u^PK
	Cert       []byte // DER; empty without Auth
	Sig        []byte // empty without Auth
}

// Signature is round 3's (ConsistencyCheck) message: client From's
// signature on (Session, U3); empty without Auth.
type Signature struct {
	From int
	Sig  []byte
}

// Shares is round 1's message from client From: one ciphertext per client of
// U1 (including From itself), and the commitment SHA-256(b_u).
type Shares struct {
	From       int
	Ciphertext map[int][]byte // recipient → AES-GCM(share of s_u^SK ‖ share of b_u)
	Commitment []byte
}

// Masked is round 2's message: client From's masked vector y_u.
type Masked struct {
	From int
	Y    []uint64
}

// Unmask is round 3's message from client From: its share of b_v for each
// survivor v and of s_v^SK for each client v that dropped after round 1.
type Unmask struct {
	From     int
	SelfMask map[int][]byte
	MaskKeys map[int][]byte
}

// checkIDs returns an error unless ids are distinct client IDs of p, sorted.
func (p Params) checkIDs(what string, ids []int) error {
	if !slices.IsSorted(ids) {
		return fmt.Errorf("secagg: %s is not sorted", what)
	}
	for i, id := range ids {
		if id < 0 || id >= p.Clients || (i > 0 && ids[i-1] == id) {
			return fmt.Errorf("secagg: %s has a bad or repeated client %d", what, id)
		}
	}
	if len(ids) < p.Threshold {
		return fmt.Errorf("secagg: %s has %d clients, fewer than the threshold %d", what, len(ids), p.Threshold)
	}
	return nil
}

// isSubset reports whether sorted a ⊆ sorted b.
func isSubset(a, b []int) bool {
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); !ok {
			return false
		}
	}
	return true
}

// keysMessage is what a client signs in round 0.
func keysMessage(session []byte, k Keys) []byte {
	b := []byte("dptune secagg round 0 keys\x00")
	b = appendBytes(b, session)
	b = binary.BigEndian.AppendUint64(b, uint64(k.ID))
	b = appendBytes(b, k.EncryptKey)
	return appendBytes(b, k.MaskKey)
}

// u3Message is what a client signs in round 3: the survivors it was sent.
func u3Message(session []byte, u3 []int) []byte {
	b := []byte("dptune secagg round 3 U3\x00")
	b = appendBytes(b, session)
	b = binary.BigEndian.AppendUint64(b, uint64(len(u3)))
	for _, id := range u3 {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
	}
	return b
}

// appendBytes appends v with its length in front.
func appendBytes(b, v []byte) []byte {
	return append(binary.BigEndian.AppendUint64(b, uint64(len(v))), v...)
}
