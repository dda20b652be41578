package temporalrunner

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/dptune/dptune/internal/fsx"
)

// KeyBlob is an invocation's secret 256-bit key wrapped by the curator
// (Codec.WrapKey): what the workflow holds and the server stores.
type KeyBlob []byte

// ErrForeignKey is the error of a key blob that this curator did not wrap
// for this invocation and these settings (one the server chose, or another
// invocation's), or whose invocation this curator has closed.
var ErrForeignKey = errors.New("temporalrunner: refused the invocation's key")

// keyAD binds a wrapped key to its workflow ID and its settings' digest.
func keyAD(workflowID string, settings [32]byte) []byte {
	ad := []byte("dptune invocation key v1")
	ad = binary.BigEndian.AppendUint32(ad, uint32(len(workflowID)))
	ad = append(ad, workflowID...)
	return append(ad, settings[:]...)
}

// WrapKey seals an invocation key with AES-256-GCM under the wrapping key
// (HKDF-SHA256 of the curator's key, info "dptune invocation key wrap";
// never sent to the server), a fresh random nonce and, as associated data,
// the workflow ID and the digest of the invocation's settings.
func (c *Codec) WrapKey(key [32]byte, workflowID string, settings [32]byte) (KeyBlob, error) {
	aead, err := newGCM(c.wrap)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(key)+aead.Overhead())
	rand.Read(nonce) // crypto/rand.Read never returns an error (Go ≥ 1.24).
	return aead.Seal(nonce, nonce, key[:], keyAD(workflowID, settings)), nil
}

// UnwrapKey opens a KeyBlob wrapped for workflowID and settings; any other
// blob is refused with an error wrapping ErrForeignKey.
func (c *Codec) UnwrapKey(b KeyBlob, workflowID string, settings [32]byte) ([32]byte, error) {
	var key [32]byte
	aead, err := newGCM(c.wrap)
	if err != nil {
		return key, err
	}
	n := aead.NonceSize()
	if len(b) != n+len(key)+aead.Overhead() {
		return key, fmt.Errorf("%w: workflow %s holds a key blob of %d bytes, not one this curator wrapped", ErrForeignKey, workflowID, len(b))
	}
	plain, err := aead.Open(nil, b[:n], b[n:], keyAD(workflowID, settings))
	if err != nil {
		return key, fmt.Errorf("%w: workflow %s holds a key this curator did not wrap for it and these settings", ErrForeignKey, workflowID)
	}
	copy(key[:], plain)
	return key, nil
}

// blobID names a key blob in the record of open invocations.
func blobID(b KeyBlob) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:16])
}

// record is the curator's own list of the invocations it started and has
// not closed: for each workflow ID, the ids (blobID) of the key blobs it
// wrapped for it, those whose Open has not completed marked "started ". Only a blob on this list may resume an invocation, so
// that the server cannot replay the key of an invocation that has closed
// (its release made) into a new one. It lives beside the key file, mode
// 0600, and holds no secret.
type record struct{ path string }

// update applies f to the record's open lists under an exclusive lock and
// writes the result.
func (r record) update(f func(open map[string][]string)) error {
	if err := os.MkdirAll(filepath.Dir(r.path), 0o700); err != nil {
		return err
	}
	lock, err := os.OpenFile(r.path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("temporalrunner: the record of open invocations: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("temporalrunner: locking %s: %w", r.path, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	var doc struct {
		Open map[string][]string `json:"open"`
	}
	b, err := os.ReadFile(r.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("temporalrunner: the record of open invocations: %w", err)
	default:
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("temporalrunner: the record of open invocations %s is malformed: %v", r.path, err)
		}
	}
	if doc.Open == nil {
		doc.Open = map[string][]string{}
	}
	f(doc.Open)
	for id, l := range doc.Open {
		if len(l) == 0 {
			delete(doc.Open, id)
		}
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := fsx.WriteFileAtomic(r.path, append(out, '\n'), 0o600); err != nil {
		return fmt.Errorf("temporalrunner: the record of open invocations: %w", err)
	}
	return nil
}

// open returns the blob ids recorded open for workflowID.
func (r record) open(workflowID string) ([]string, error) {
	var l []string
	err := r.update(func(open map[string][]string) { l = slices.Clone(open[workflowID]) })
	return l, err
}

// set records ids as workflowID's open blobs (none: closed).
func (r record) set(workflowID string, ids ...string) error {
	return r.update(func(open map[string][]string) { open[workflowID] = ids })
}
