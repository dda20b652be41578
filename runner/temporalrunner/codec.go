package temporalrunner

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
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
	encodingEncrypted = "binary/dptune-aes-gcm-bound"
	metaKeyID         = "dptune-key-id"
)

// Binding is the context a payload is sealed to: AES-GCM's associated data,
// so that a payload opens only in the workflow, the run and the role it was
// sealed for.
type Binding struct {
	WorkflowID string
	// RunID is the workflow run's ID; "" for the start input, which is
	// sealed before the server names the run.
	RunID string
	// Role says what the payload is: "start", "submit", "job input", "job
	// output", "results query", "results answer", "key answer",
	// "progress", "failure", … (roleOf).
	Role string
}

// ad is the associated data: a version tag, the key's id and the
// binding's fields, each length-prefixed.
func (b Binding) ad(keyID string) []byte {
	out := []byte("dptune payload v2")
	for _, s := range []string{keyID, b.WorkflowID, b.RunID, b.Role} {
		out = binary.BigEndian.AppendUint32(out, uint32(len(s)))
		out = append(out, s...)
	}
	return out
}

// Codec seals every payload — workflow and activity inputs and outputs,
// signals, query arguments and answers, heartbeats, and (through
// FailureConverter) failures — with AES-256-GCM under the curator's key,
// bound to its Binding, so that the Temporal server and its database hold
// only ciphertext (no score, no model, no seed) and cannot move a payload
// to another workflow, run or role. Open refuses a payload that is not
// sealed: nothing from the server is taken as plaintext.
//
// A sealed payload is the serialised original payload sealed with a fresh
// random 96-bit nonce (prepended), its metadata naming the encoding and the
// key's id (the first 8 bytes of SHA-256 of the key, hex), so that a
// process holding another key says so instead of failing obscurely.
type Codec struct {
	aead  cipher.AEAD
	keyID string
	wrap  []byte // the invocation-key wrapping key (HKDF of the key)
}

// NewCodec returns the codec of a 32-byte key.
func NewCodec(key []byte) (*Codec, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("temporalrunner: the payload key must be 32 bytes, have %d", len(key))
	}
	aead, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	wrap, err := hkdf.Key(sha256.New, key, nil, "dptune invocation key wrap", 32)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(key)
	return &Codec{aead: aead, keyID: hex.EncodeToString(sum[:8]), wrap: wrap}, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Seal returns p encrypted and bound to b.
func (c *Codec) Seal(p *commonpb.Payload, b Binding) (*commonpb.Payload, error) {
	plain, err := proto.Marshal(p)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, c.aead.NonceSize(), c.aead.NonceSize()+len(plain)+c.aead.Overhead())
	rand.Read(nonce) // crypto/rand.Read never returns an error (Go ≥ 1.24).
	return &commonpb.Payload{
		Metadata: map[string][]byte{"encoding": []byte(encodingEncrypted), metaKeyID: []byte(c.keyID)},
		Data:     c.aead.Seal(nonce, nonce, plain, b.ad(c.keyID)),
	}, nil
}

// ErrUnsealed is the error of a payload that is not sealed by this codec's
// key for the expected binding: plaintext, another key's, tampered, or
// replayed from another workflow, run or role.
var ErrUnsealed = errors.New("temporalrunner: refused a payload")

// Open returns the payload p seals for b. It refuses (ErrUnsealed) a
// plaintext payload, one sealed under another key, and one sealed for
// another binding.
func (c *Codec) Open(p *commonpb.Payload, b Binding) (*commonpb.Payload, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: the %s payload of workflow %q is missing", ErrUnsealed, b.Role, b.WorkflowID)
	}
	if enc := string(p.GetMetadata()["encoding"]); enc != encodingEncrypted {
		return nil, fmt.Errorf("%w: the %s payload of workflow %q is not sealed (encoding %q): only payloads this version of dptune sealed with the curator's key are accepted", ErrUnsealed, b.Role, b.WorkflowID, enc)
	}
	if id := string(p.GetMetadata()[metaKeyID]); id != c.keyID {
		return nil, fmt.Errorf("%w: a payload is encrypted with key %s, this process has key %s: give every worker the curator's key file", ErrUnsealed, id, c.keyID)
	}
	d := p.GetData()
	n := c.aead.NonceSize()
	if len(d) < n {
		return nil, fmt.Errorf("%w: an encrypted payload is truncated", ErrUnsealed)
	}
	plain, err := c.aead.Open(nil, d[:n], d[n:], b.ad(c.keyID))
	if err != nil {
		return nil, fmt.Errorf("%w: the %s payload of workflow %q run %q fails authentication (tampered, or replayed from another workflow, run or role)", ErrUnsealed, b.Role, b.WorkflowID, b.RunID)
	}
	var q commonpb.Payload
	if err := proto.Unmarshal(plain, &q); err != nil {
		return nil, fmt.Errorf("temporalrunner: a decrypted payload is malformed: %w", err)
	}
	return &q, nil
}

// LoadKey reads a key file: 64 hexadecimal digits (a 256-bit key) and an
// optional newline. It refuses a file that others than its owner can read
// or write.
func LoadKey(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("temporal key file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("temporal key file %s is not a regular file", path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("temporal key file %s has mode %v: it must be readable by its owner only (chmod 600)", path, st.Mode().Perm())
	}
	if st.Size() > 1024 {
		return nil, fmt.Errorf("temporal key file %s must hold 64 hexadecimal digits (a 256-bit key)", path)
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
