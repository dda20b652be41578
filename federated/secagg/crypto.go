package secagg

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
)

// deriveKey is HKDF-SHA256 of an X25519 shared secret with a label: the
// 32-byte key of an AES-256 cipher.
func deriveKey(priv *ecdh.PrivateKey, peer []byte, label string) ([]byte, error) {
	pub, err := ecdh.X25519().NewPublicKey(peer)
	if err != nil {
		return nil, fmt.Errorf("secagg: bad public key: %w", err)
	}
	secret, err := priv.ECDH(pub)
	if err != nil {
		return nil, fmt.Errorf("secagg: key agreement: %w", err)
	}
	return hkdf.Key(sha256.New, secret, nil, label, 32)
}

// addPRG adds sign·PRG(key) to v modulo 2^64, word by word: the keystream of
// AES-256-CTR (zero IV) read as little-endian uint64s.
func addPRG(v []uint64, key []byte, sign int) error {
	block, err := aes.NewCipher(key)
	if err != nil {
		return err
	}
	stream := cipher.NewCTR(block, make([]byte, aes.BlockSize))
	buf := make([]byte, 8*len(v))
	stream.XORKeyStream(buf, buf)
	for i := range v {
		w := binary.LittleEndian.Uint64(buf[8*i:])
		if sign > 0 {
			v[i] += w
		} else {
			v[i] -= w
		}
	}
	return nil
}

// pairSign is the sign with which client u adds its mask shared with v.
func pairSign(u, v int) int {
	if u < v {
		return 1
	}
	return -1
}

// addPairMask adds u's pairwise mask with v (public key pubV) to y.
func addPairMask(y []uint64, u, v int, privU *ecdh.PrivateKey, pubV []byte) error {
	key, err := deriveKey(privU, pubV, pairLabel(u, v))
	if err != nil {
		return err
	}
	return addPRG(y, key, pairSign(u, v))
}

// pairLabel names the mask of the unordered pair {u, v}: both ends derive
// the same key.
func pairLabel(u, v int) string {
	if u > v {
		u, v = v, u
	}
	return fmt.Sprintf("dptune secagg mask %d %d", u, v)
}

// aead returns the AES-256-GCM cipher for shares from u to v.
func aead(priv *ecdh.PrivateKey, peer []byte) (cipher.AEAD, error) {
	key, err := deriveKey(priv, peer, "dptune secagg shares")
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// pairAAD binds a ciphertext to its sender and recipient.
func pairAAD(from, to int) []byte {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(from))
	binary.LittleEndian.PutUint64(b[8:], uint64(to))
	return b[:]
}

// seal encrypts plaintext for the pair (from, to) with a random nonce,
// which it prepends.
func seal(a cipher.AEAD, rand io.Reader, from, to int, plaintext []byte) ([]byte, error) {
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(plaintext)+a.Overhead())
	if _, err := io.ReadFull(rand, nonce); err != nil {
		return nil, err
	}
	return a.Seal(nonce, nonce, plaintext, pairAAD(from, to)), nil
}

// open decrypts what seal wrote; an altered ciphertext is an error.
func open(a cipher.AEAD, from, to int, ct []byte) ([]byte, error) {
	if len(ct) < a.NonceSize() {
		return nil, fmt.Errorf("secagg: share from client %d is truncated", from)
	}
	pt, err := a.Open(nil, ct[:a.NonceSize()], ct[a.NonceSize():], pairAAD(from, to))
	if err != nil {
		return nil, fmt.Errorf("secagg: share from client %d fails authentication: %w", from, err)
	}
	return pt, nil
}
