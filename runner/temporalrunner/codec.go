package temporalrunner

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/proto"
)

// Encrypted payloads carry these metadata.
const (
	encodingEncrypted = "binary/dptune-aes-gcm"
	metaKeyID         = "dptune-key-id"
)

// Codec is a Temporal PayloadCodec that encrypts every payload — workflow
// and activity inputs and outputs, signals, query results, heartbeats, and
// (through the failure converter) error messages — with AES-256-GCM under
// the curator's key, so that the Temporal server and its database hold
// only ciphertext: no score, no model, no seed.
//
// An encrypted payload is the serialised original payload sealed with a
// fresh random 96-bit nonce (prepended), its metadata naming the encoding
// and the key's id (the first 8 bytes of SHA-256 of the key, hex), so that a
// process holding another key says so instead of failing obscurely.
type Codec struct {
	aead  cipher.AEAD
	keyID string
}

// NewCodec returns the codec of a 32-byte key.
func NewCodec(key []byte) (*Codec, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("temporalrunner: the payload key must be 32 bytes, have %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(key)
	return &Codec{aead: aead, keyID: hex.EncodeToString(sum[:8])}, nil
}

// Encode implements converter.PayloadCodec.
func (c *Codec) Encode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, err
		}
		nonce := make([]byte, c.aead.NonceSize(), c.aead.NonceSize()+len(plain)+c.aead.Overhead())
		rand.Read(nonce) // crypto/rand.Read never returns an error (Go ≥ 1.24).
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{"encoding": []byte(encodingEncrypted), metaKeyID: []byte(c.keyID)},
			Data:     c.aead.Seal(nonce, nonce, plain, []byte(c.keyID)),
		}
	}
	return out, nil
}

// Decode implements converter.PayloadCodec. Payloads that are not
// encrypted (the server's own) pass through.
func (c *Codec) Decode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		if string(p.GetMetadata()["encoding"]) != encodingEncrypted {
			out[i] = p
			continue
		}
		if id := string(p.GetMetadata()[metaKeyID]); id != c.keyID {
			return nil, fmt.Errorf("temporalrunner: a payload is encrypted with key %s, this process has key %s: give every worker the curator's key file", id, c.keyID)
		}
		d := p.GetData()
		n := c.aead.NonceSize()
		if len(d) < n {
			return nil, errors.New("temporalrunner: an encrypted payload is truncated")
		}
		plain, err := c.aead.Open(nil, d[:n], d[n:], []byte(c.keyID))
		if err != nil {
			return nil, errors.New("temporalrunner: an encrypted payload fails authentication (tampered or truncated)")
		}
		var q commonpb.Payload
		if err := proto.Unmarshal(plain, &q); err != nil {
			return nil, fmt.Errorf("temporalrunner: a decrypted payload is malformed: %w", err)
		}
		out[i] = &q
	}
	return out, nil
}

// LoadKey reads a key file: 64 hexadecimal digits (a 256-bit key) and an
// optional newline. It refuses a file that others than its owner can read
// or write.
func LoadKey(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("temporal key file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("temporal key file %s has mode %v: it must be readable by its owner only (chmod 600)", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("temporal key file: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("temporal key file %s must hold 64 hexadecimal digits (a 256-bit key)", path)
	}
	return key, nil
}

// CreateKey writes a fresh random key to path with mode 0600, unless the
// file exists (then it does nothing: the curator's key is kept).
func CreateKey(path string) error {
	key := make([]byte, 32)
	rand.Read(key)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("temporal key file: %w", err)
	}
	_, err = f.WriteString(hex.EncodeToString(key) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
