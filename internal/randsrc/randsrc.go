// Package randsrc makes the random sources of dptune.
//
// Every mechanism takes its randomness as an explicit *rand.Rand (math/rand/v2).
// A run with a seed is bit-for-bit reproducible: each purpose ("init",
// "sampling", "noise", "split", …) gets its own ChaCha8 stream derived from the
// seed and the purpose's name, so that, for example, changing how many noise
// draws a step makes does not shift which examples are sampled. Without a seed
// the streams are keyed from crypto/rand. A durable runner's invocation
// derives its streams from a secret 256-bit Key instead (Key.Stream,
// Key.Derive: HMAC-SHA256), so that a resumed invocation repeats its draws
// and nobody without the key can predict them.
package randsrc

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
)

// Seeded returns the ChaCha8 stream for purpose under seed. The key is
// SHA-256(seed as 8 little-endian bytes ‖ purpose).
func Seeded(seed uint64, purpose string) *mrand.Rand {
	return mrand.New(mrand.NewChaCha8(seededKey(seed, purpose)))
}

// seededKey is SHA-256(seed as 8 little-endian bytes ‖ purpose).
func seededKey(seed uint64, purpose string) [32]byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h := sha256.New()
	h.Write(b[:])
	h.Write([]byte(purpose))
	var key [32]byte
	copy(key[:], h.Sum(nil))
	return key
}

// Crypto returns a ChaCha8 stream keyed from crypto/rand: a fresh,
// unpredictable stream for runs without a seed.
func Crypto() *mrand.Rand {
	var key [32]byte
	rand.Read(key[:]) // crypto/rand.Read never returns an error (Go ≥ 1.24).
	return mrand.New(mrand.NewChaCha8(key))
}

// New returns Seeded(*seed, purpose) when seed is non-nil and Crypto() otherwise.
func New(seed *uint64, purpose string) *mrand.Rand {
	if seed == nil {
		return Crypto()
	}
	return Seeded(*seed, purpose)
}

// Key is a secret 256-bit key: a durable runner's invocation key (drawn
// from crypto/rand), or a key derived from one. Every stream and subkey
// derived from it is a pseudorandom function of the whole key — HMAC-SHA256
// (RFC 2104) of a domain-separated purpose — so guessing a stream costs
// about 2²⁵⁶ tries, not the 2⁶⁴ of a uint64 seed.
type Key [32]byte

// NewKey returns a fresh key from crypto/rand.
func NewKey() Key {
	var k Key
	rand.Read(k[:]) // crypto/rand.Read never returns an error (Go ≥ 1.24).
	return k
}

func (k *Key) prf(domain, purpose string) [32]byte {
	m := hmac.New(sha256.New, k[:])
	m.Write([]byte(domain))
	m.Write([]byte{0})
	m.Write([]byte(purpose))
	var out [32]byte
	copy(out[:], m.Sum(nil))
	return out
}

// Stream returns the ChaCha8 stream for purpose under k, seeded with the
// 32 bytes HMAC-SHA256(k, "stream" ‖ 0x00 ‖ purpose).
func (k *Key) Stream(purpose string) *mrand.Rand {
	return mrand.New(mrand.NewChaCha8(k.prf("stream", purpose)))
}

// Derive returns the subkey of k for purpose (e.g. one run of a tuning):
// HMAC-SHA256(k, "key" ‖ 0x00 ‖ purpose). Subkeys of distinct purposes
// and the streams of k are independent-looking to whoever lacks k.
func (k *Key) Derive(purpose string) *Key {
	d := Key(k.prf("key", purpose))
	return &d
}

// For returns key.Stream(purpose) when key is not nil, and New(seed,
// purpose) otherwise.
func For(seed *uint64, key *Key, purpose string) *mrand.Rand {
	if key != nil {
		return key.Stream(purpose)
	}
	return New(seed, purpose)
}

// SourceFor is For's stream as its ChaCha8 source, whose state
// MarshalBinary saves and UnmarshalBinary restores (a resumed run
// continues the same stream).
func SourceFor(seed *uint64, key *Key, purpose string) *mrand.ChaCha8 {
	switch {
	case key != nil:
		return mrand.NewChaCha8(key.prf("stream", purpose))
	case seed != nil:
		return mrand.NewChaCha8(seededKey(*seed, purpose))
	}
	var k [32]byte
	rand.Read(k[:]) // crypto/rand.Read never returns an error (Go ≥ 1.24).
	return mrand.NewChaCha8(k)
}

// MarshalText writes the key as 64 hexadecimal digits (it travels inside
// encrypted job inputs only).
func (k Key) MarshalText() ([]byte, error) { return []byte(hex.EncodeToString(k[:])), nil }

// UnmarshalText reads 64 hexadecimal digits.
func (k *Key) UnmarshalText(b []byte) error {
	if hex.DecodedLen(len(b)) != len(k) {
		return fmt.Errorf("randsrc: a key is 64 hexadecimal digits, have %d characters", len(b))
	}
	_, err := hex.Decode(k[:], b)
	return err
}
