package secagg

import (
	"crypto/ecdh"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/hashicorp/vault/shamir"
)

// shareLen is the length of one Shamir share of a 32-byte secret: the
// secret's bytes evaluated at one point, plus the point.
const shareLen = 33

// ErrRefused is returned by a client asked for something the protocol
// forbids: a round out of order, a second unmasking, a survivor list that
// is not a subset of the clients it heard from.
var ErrRefused = errors.New("secagg: request refused")

// Client is one party of a summation. Its methods are the protocol's rounds
// and must be called in order, each once; any other call returns an error
// wrapping ErrRefused and the client stays where it was.
type Client struct {
	p         Params
	id        int
	rand      io.Reader
	enc, mask *ecdh.PrivateKey
	b         []byte // self-mask seed b_u
	stage     int
	keys      map[int]Keys
	u2        []int
	received  map[int][]byte // v → decrypted (share of s_v^SK ‖ share of b_v)
}

// NewClient returns client id of a summation with parameters p, drawing its
// keys and masks from rand (crypto/rand.Reader outside tests).
func NewClient(p Params, id int, rand io.Reader) (*Client, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if id < 0 || id >= p.Clients {
		return nil, fmt.Errorf("secagg: client ID %d out of 0 … %d", id, p.Clients-1)
	}
	c := &Client{p: p, id: id, rand: rand, b: make([]byte, 32)}
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

// AdvertiseKeys is round 0: the client's public keys.
func (c *Client) AdvertiseKeys() (Keys, error) {
	if err := c.at(0, "its keys"); err != nil {
		return Keys{}, err
	}
	c.stage = 1
	return Keys{ID: c.id, EncryptKey: c.enc.PublicKey().Bytes(), MaskKey: c.mask.PublicKey().Bytes()}, nil
}

// ShareKeys is round 1: given U1's keys (sorted by ID, including this
// client's own), it Shamir-shares s_u^SK and b_u among U1 with threshold t
// and encrypts each client's pair of shares for it.
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

// Unmask is round 3: given the survivors U3 (sorted; ⊆ U2, at least t), it
// reveals, for each v ∈ U2, its share of b_v if v ∈ U3 and its share of
// s_v^SK otherwise. It answers once: a second request, whatever its list, is
// refused, so the server never holds both kinds of share from this client
// for one v.
func (c *Client) Unmask(u3 []int) (Unmask, error) {
	if err := c.at(3, "unmasking"); err != nil {
		return Unmask{}, err
	}
	if err := c.p.checkIDs("U3", u3); err != nil {
		return Unmask{}, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	if !isSubset(u3, c.u2) {
		return Unmask{}, fmt.Errorf("%w: U3 is not a subset of U2", ErrRefused)
	}
	c.stage = 4
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
