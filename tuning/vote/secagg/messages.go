package secagg

import (
	"fmt"
	"slices"
)

// Params are the public parameters of one summation.
type Params struct {
	Clients   int // n: client IDs are 0 … n−1; 2 ≤ n ≤ 255 (Shamir over GF(2^8))
	Threshold int // t: the fewest clients every round needs; 2 ≤ t ≤ n
	Length    int // d: words per vector, ≥ 1
}

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
	}
	return nil
}

// Keys is round 0's message: a client's two X25519 public keys.
type Keys struct {
	ID         int
	EncryptKey []byte // c_u^PK
	MaskKey    []byte // s_u^PK
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
