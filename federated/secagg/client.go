package secagg

import (
	"bytes"
	"crypto/ecdh"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/hashicorp/vault/shamir"

	"github.com/dptune/dptune/federated/pki"
)

// shareLen is the length of one Shamir share of a 32-byte secret: the
// secret's bytes evaluated at one point, plus the point.
const shareLen = 33

// ErrRefused is returned by a client asked for something the protocol
// forbids: a round out of order, a second unmasking, a survivor list that
// is not a subset of the clients it heard from, a key or signature that
// fails its check.
var ErrRefused = errors.New("secagg: request refused")

// Client is one party of a summation. Its methods are the protocol's rounds
// and must be called in order, each once; any other call returns an error
// wrapping ErrRefused and the client stays where it was. A failed check of
// what the server relayed (a certificate, a signature, a share) aborts the
// client: it answers nothing more.
type Client struct {
	p         Params
	id        int
	rand      io.Reader
	auth      *Auth
	enc, mask *ecdh.PrivateKey
	b         []byte // self-mask seed b_u
	stage     int
	sent      Keys
	keys      map[int]Keys
	certs     map[int]*x509.Certificate // with auth: U1's verified certificates
	u2, u3    []int
	received  map[int][]byte // v → decrypted (share of s_v^SK ‖ share of b_v)
}

// NewClient returns client id of a summation with parameters p, drawing its
// keys and masks from rand (crypto/rand.Reader outside tests). With auth it
// plays the actively secure variant: it signs its keys and U3, and checks
// every other client's certificate and signatures; auth's certificate must
// chain to auth.Roots and bind id. With auth nil nothing is signed or
// checked, and only a semi-honest server is withstood.
func NewClient(p Params, id int, rand io.Reader, auth *Auth) (*Client, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if id < 0 || id >= p.Clients {
		return nil, fmt.Errorf("secagg: client ID %d out of 0 … %d", id, p.Clients-1)
	}
	if auth != nil {
		_, bound, err := pki.VerifyClient(auth.Roots, auth.Cert)
		if err != nil {
			return nil, err
		}
		if bound != id {
			return nil, fmt.Errorf("secagg: the certificate binds client %d, not %d", bound, id)
		}
		if auth.Key == nil {
			return nil, errors.New("secagg: no signing key")
		}
	}
	c := &Client{p: p, id: id, rand: rand, auth: auth, b: make([]byte, 32)}
	var err error
	if c.enc, err = ecdh.X25519().GenerateKey(rand); err != nil {
		return nil, err
	}
	if c.mask, err = ecdh.X25519().GenerateKey(rand); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(rand, c.b); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Client) at(stage int, round string) error {
	if c.stage != stage {
		return fmt.Errorf("%w: client %d asked for %s out of order", ErrRefused, c.id, round)
	}
	return nil
}

// abort ends the client's part: it answers nothing more.
func (c *Client) abort(format string, a ...any) error {
	c.stage = -1
	return fmt.Errorf("%w: client %d aborts: %s", ErrRefused, c.id, fmt.Sprintf(format, a...))
}

// AdvertiseKeys is round 0: the client's public keys, signed with Auth.
func (c *Client) AdvertiseKeys() (Keys, error) {
	if err := c.at(0, "its keys"); err != nil {
		return Keys{}, err
	}
	k := Keys{ID: c.id, EncryptKey: c.enc.PublicKey().Bytes(), MaskKey: c.mask.PublicKey().Bytes()}
	if c.auth != nil {
		sig, err := pki.Sign(c.auth.Key, keysMessage(c.p.Session, k))
		if err != nil {
			return Keys{}, err
		}
		k.Cert, k.Sig = c.auth.Cert, sig
	}
	c.stage, c.sent = 1, k
	return k, nil
}

// ShareKeys is round 1: given U1's keys (sorted by ID, including this
// client's own), it Shamir-shares s_u^SK and b_u among U1 with threshold t
// and encrypts each client's pair of shares for it. With Auth it first
// checks, for every v ∈ U1, that v's certificate chains to the CA and binds
// v, and that v signed its keys for this session; and, in any case, that
// its own keys are the ones it sent and no two clients share a key
// (Bonawitz et al. 2017, Figure 4, round 1). A failed check aborts.
func (c *Client) ShareKeys(u1 []Keys) (Shares, error) {
	if err := c.at(1, "its shares"); err != nil {
		return Shares{}, err
	}
	ids := make([]int, len(u1))
	c.keys = map[int]Keys{}
	for i, k := range u1 {
		ids[i] = k.ID
		c.keys[k.ID] = k
	}
	if err := c.p.checkIDs("U1", ids); err != nil {
		return Shares{}, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	if _, ok := slices.BinarySearch(ids, c.id); !ok {
		return Shares{}, fmt.Errorf("%w: U1 leaves out client %d", ErrRefused, c.id)
	}
	if own := c.keys[c.id]; !bytes.Equal(own.EncryptKey, c.sent.EncryptKey) || !bytes.Equal(own.MaskKey, c.sent.MaskKey) {
		return Shares{}, c.abort("U1 holds keys for it that it never sent")
	}
	seen := map[string]bool{}
	for _, k := range u1 {
		for _, b := range [][]byte{k.EncryptKey, k.MaskKey} {
			if seen[string(b)] {
				return Shares{}, c.abort("a public key appears twice in U1")
			}
			seen[string(b)] = true
		}
	}
	if c.auth != nil {
		c.certs = map[int]*x509.Certificate{}
		for _, k := range u1 {
			cert, bound, err := pki.VerifyClient(c.auth.Roots, k.Cert)
			if err != nil {
				return Shares{}, c.abort("client %d's keys: %v", k.ID, err)
			}
			if bound != k.ID {
				return Shares{}, c.abort("client %d's keys come with client %d's certificate", k.ID, bound)
			}
			if err := pki.CheckSignature(cert, keysMessage(c.p.Session, k), k.Sig); err != nil {
				return Shares{}, c.abort("client %d's keys: %v", k.ID, err)
			}
			c.certs[k.ID] = cert
		}
	}
	skShares, err := shamir.Split(c.mask.Bytes(), len(ids), c.p.Threshold)
	if err != nil {
		return Shares{}, err
	}
	bShares, err := shamir.Split(c.b, len(ids), c.p.Threshold)
	if err != nil {
		return Shares{}, err
	}
	commit := sha256.Sum256(c.b)
	out := Shares{From: c.id, Ciphertext: map[int][]byte{}, Commitment: commit[:]}
	for i, v := range ids {
		a, err := aead(c.enc, c.keys[v].EncryptKey)
		if err != nil {
			return Shares{}, err
		}
		ct, err := seal(a, c.rand, c.id, v, append(skShares[i], bShares[i]...))
		if err != nil {
			return Shares{}, err
		}
		out.Ciphertext[v] = ct
	}
	c.stage = 2
	return out, nil
}

// MaskInput is round 2: given the ciphertexts addressed to this client by
// every client of U2 (sender → ciphertext), it decrypts them — an altered
// one is an error, and the client aborts — and returns x masked:
// y = x + PRG(b_u) + Σ_{v∈U2, v≠u} ±PRG(s_uv) mod 2^64. x has length d.
func (c *Client) MaskInput(x []uint64, in map[int][]byte) (Masked, error) {
	if err := c.at(2, "its masked input"); err != nil {
		return Masked{}, err
	}
	if len(x) != c.p.Length {
		return Masked{}, fmt.Errorf("secagg: input of length %d, want %d", len(x), c.p.Length)
	}
	u2 := slices.Sorted(maps.Keys(in))
	if err := c.p.checkIDs("U2", u2); err != nil {
		return Masked{}, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	if _, ok := in[c.id]; !ok {
		return Masked{}, fmt.Errorf("%w: U2 leaves out client %d", ErrRefused, c.id)
	}
	received := map[int][]byte{}
	for _, v := range u2 {
		k, ok := c.keys[v]
		if !ok {
			return Masked{}, fmt.Errorf("%w: client %d in U2 is not in U1", ErrRefused, v)
		}
		a, err := aead(c.enc, k.EncryptKey)
		if err != nil {
			return Masked{}, err
		}
		pt, err := open(a, v, c.id, in[v])
		if err != nil {
			c.stage = -1 // abort: nothing more from this client
			return Masked{}, err
		}
		if len(pt) != 2*shareLen {
			c.stage = -1
			return Masked{}, fmt.Errorf("secagg: share from client %d has %d bytes", v, len(pt))
		}
		received[v] = pt
	}
	y := slices.Clone(x)
	if err := addPRG(y, c.b, 1); err != nil {
		return Masked{}, err
	}
	for _, v := range u2 {
		if v == c.id {
			continue
		}
		if err := addPairMask(y, c.id, v, c.mask, c.keys[v].MaskKey); err != nil {
			return Masked{}, err
		}
	}
	c.u2, c.received, c.stage = u2, received, 3
	return Masked{From: c.id, Y: y}, nil
}

// ConsistencyCheck is round 3 (Bonawitz et al. 2017, Figure 4): given
// the survivors U3 (sorted; ⊆ U2, at least t and MinSurvivors, including
// this client), it
// signs (Session, U3) with Auth (an empty signature without) and remembers
// U3: the unmasking will reveal shares for this U3 and no other. It answers
// once.
func (c *Client) ConsistencyCheck(u3 []int) (Signature, error) {
	if err := c.at(3, "its signature on U3"); err != nil {
		return Signature{}, err
	}
	if err := c.p.checkIDs("U3", u3); err != nil {
		return Signature{}, c.abort("%v", err)
	}
	if !isSubset(u3, c.u2) {
		return Signature{}, c.abort("U3 is not a subset of U2")
	}
	if _, ok := slices.BinarySearch(u3, c.id); !ok {
		return Signature{}, c.abort("U3 leaves out client %d, whose masked input was accepted", c.id)
	}
	if len(u3) < c.p.MinSurvivors {
		return Signature{}, c.abort("U3 has %d clients, fewer than the %d the inputs' noise needs", len(u3), c.p.MinSurvivors)
	}
	out := Signature{From: c.id}
	if c.auth != nil {
		sig, err := pki.Sign(c.auth.Key, u3Message(c.p.Session, u3))
		if err != nil {
			return Signature{}, err
		}
		out.Sig = sig
	}
	c.u3, c.stage = slices.Clone(u3), 4
	return out, nil
}

// Unmask is round 4: given U4's signatures on U3, it reveals, for each
// v ∈ U2, its share of b_v if v ∈ U3 and its share of s_v^SK otherwise —
// only after checking that at least t distinct clients of U3 signed the U3
// this client signed (with Auth: each signature valid under the signer's
// certificate from round 0; without, only the count). So a server that
// sends two survivor sets to two groups of clients cannot get both kinds
// of share for one v when 2t > n + c, c the clients colluding with it:
// each set needs t signatures, at least t − c of them from honest clients,
// who sign once, and 2(t − c) > n − c of them do not exist. It answers
// once; a failed check aborts.
func (c *Client) Unmask(u4 []Signature) (Unmask, error) {
	if err := c.at(4, "unmasking"); err != nil {
		return Unmask{}, err
	}
	signers := map[int]bool{}
	for _, s := range u4 {
		if _, ok := slices.BinarySearch(c.u3, s.From); !ok || signers[s.From] {
			return Unmask{}, c.abort("a signature on U3 from client %d, not a distinct client of U3", s.From)
		}
		if c.auth != nil {
			if err := pki.CheckSignature(c.certs[s.From], u3Message(c.p.Session, c.u3), s.Sig); err != nil {
				return Unmask{}, c.abort("client %d's signature is not on the U3 client %d was sent: %v", s.From, c.id, err)
			}
		}
		signers[s.From] = true
	}
	if len(signers) < c.p.Threshold {
		return Unmask{}, c.abort("%d clients signed U3, fewer than the threshold %d", len(signers), c.p.Threshold)
	}
	c.stage = 5
	u3 := c.u3
	out := Unmask{From: c.id, SelfMask: map[int][]byte{}, MaskKeys: map[int][]byte{}}
	for _, v := range c.u2 {
		pt := c.received[v]
		if _, ok := slices.BinarySearch(u3, v); ok {
			out.SelfMask[v] = slices.Clone(pt[shareLen:])
		} else {
			out.MaskKeys[v] = slices.Clone(pt[:shareLen])
		}
	}
	return out, nil
}
