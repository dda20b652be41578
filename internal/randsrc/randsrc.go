// Package randsrc makes the random sources of dptune.
//
// Every mechanism takes its randomness as an explicit *rand.Rand (math/rand/v2).
// A run with a seed is bit-for-bit reproducible: each purpose ("init",
// "sampling", "noise", "split", …) gets its own ChaCha8 stream derived from the
// seed and the purpose's name, so that, for example, changing how many noise
// draws a step makes does not shift which examples are sampled. Without a seed
// the streams are keyed from crypto/rand.
package randsrc

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	mrand "math/rand/v2"
)

// Seeded returns the ChaCha8 stream for purpose under seed. The key is
// SHA-256(seed as 8 little-endian bytes ‖ purpose).
func Seeded(seed uint64, purpose string) *mrand.Rand {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h := sha256.New()
	h.Write(b[:])
	h.Write([]byte(purpose))
	var key [32]byte
	copy(key[:], h.Sum(nil))
	return mrand.New(mrand.NewChaCha8(key))
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
