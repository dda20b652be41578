package budget

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
)

// fileJSON is the budget file as written (see the package documentation).
type fileJSON struct {
	Version  int           `json:"version"`
	Dataset  string        `json:"dataset"`
	Epsilon  float64       `json:"epsilon"`
	Delta    float64       `json:"delta"`
	Orders   []float64     `json:"orders"`
	Releases []releaseJSON `json:"releases"`
	Checksum string        `json:"checksum,omitempty"`
}

// releaseJSON is one release as written. The ledger is kept as the bytes
// that were written, so rewriting the file never re-encodes an earlier
// release's ledger.
type releaseJSON struct {
	ID      string          `json:"id"`
	Time    string          `json:"time"`
	Command string          `json:"command"`
	Label   string          `json:"label"`
	Status  Status          `json:"status"`
	Ledger  json.RawMessage `json:"ledger"`
	RDP     []num           `json:"rdp"`
	Epsilon num             `json:"epsilon"`
	// Binding names what the reservation covers, when its run can be
	// resumed (ReserveBound); absent in files written before it existed.
	Binding string `json:"binding,omitempty"`
}

// num is a float64 whose JSON form allows ±∞, written as the strings
// "+Inf" and "-Inf" (the RDP of a non-private run recorded after it
// happened).
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	switch {
	case math.IsInf(float64(n), 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(float64(n), -1):
		return []byte(`"-Inf"`), nil
	}
	return json.Marshal(float64(n))
}

func (n *num) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"+Inf"`:
		*n = num(math.Inf(1))
		return nil
	case `"-Inf"`:
		*n = num(math.Inf(-1))
		return nil
	}
	if string(b) == "null" {
		return errors.New("null where a number belongs")
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = num(f)
	return nil
}

func toNums(x []float64) []num {
	out := make([]num, len(x))
	for i, v := range x {
		out[i] = num(v)
	}
	return out
}

func toFloats(x []num) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// checksum is the SHA-256 (hex) of the compact JSON of f without its
// checksum field: the canonical form, independent of indentation.
func checksum(f fileJSON) (string, error) {
	f.Checksum = ""
	b, err := json.Marshal(f)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// encode seals f with its checksum and returns the file's bytes.
func encode(f fileJSON) ([]byte, error) {
	if f.Releases == nil {
		f.Releases = []releaseJSON{}
	}
	sum, err := checksum(f)
	if err != nil {
		return nil, err
	}
	f.Checksum = sum
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// writeTemp writes data to a new temporary file in dir and syncs it; it
// returns the temporary file's name.
func writeTemp(path string, data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}

// syncDir fsyncs the directory holding path, so that a rename or link in it
// is durable.
func syncDir(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// replaceFile atomically replaces path with data: temporary file in the
// same directory, fsync, rename, fsync of the directory.
func replaceFile(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(path)
}

// createFile atomically creates path with data, failing with an error
// wrapping fs.ErrExist if path exists: the temporary file is hard-linked
// to path, which never replaces an existing file.
func createFile(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("it already exists and a budget file is never overwritten: %w", fs.ErrExist)
		}
		return err
	}
	if err := os.Remove(tmp); err != nil {
		return err
	}
	return syncDir(path)
}
