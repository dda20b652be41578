package model

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/dptune/dptune/internal/fsx"
)

// Checkpoint format, version 1. A model directory holds two files:
//
//   - model.json: {"format": "dptune-model/1", "arch": {name, layers,
//     channels, height, width, classes}, "tensors": [{name, shape, offset}, …],
//     "params_file": "params.bin", "params_sha256": hex digest of params.bin,
//     "hyperparameters": {…}, "ledger": {…}} — the hyperparameters and the
//     privacy ledger of the run that produced the parameters, as the trainer
//     wrote them.
//   - params.bin: the flat parameter vector as little-endian IEEE-754 float32,
//     tensors in the order and at the offsets of "tensors" (PyTorch layouts:
//     conv weight [out, in, kh, kw], linear weight [out, in], bias [out]).
//
// A network with buffers (Net.Buffers: a datanorm layer's mean and
// variance) has a third file, buffers.bin, the buffers as little-endian
// float32 laid out as model.json's "buffers" list ({name, shape, offset}
// like "tensors"), with its SHA-256 in "buffers_sha256" and its name in
// "buffers_file". A network without buffers has none of these keys, so its
// checkpoint is what it was before buffers existed.
const (
	CheckpointFormat = "dptune-model/1"
	modelFile        = "model.json"
	paramsFile       = "params.bin"
	buffersFile      = "buffers.bin"
)

// Metadata is what a checkpoint records besides the parameters.
type Metadata struct {
	Hyperparameters json.RawMessage `json:"hyperparameters,omitempty"`
	Ledger          json.RawMessage `json:"ledger,omitempty"`
	// Input says how an image's pixels become the network's input; nil
	// for a model saved before it was recorded.
	Input *Input `json:"input,omitempty"`
}

// Input is what a model was trained on, as public facts: its classes'
// names (label i is Classes[i]) and its pixels' normalisation — an 8-bit
// value v of channel c becomes (v/255 − Mean[c]) / Std[c] (Mean and Std
// empty: v/255).
type Input struct {
	Dataset string    `json:"dataset,omitempty"`
	Classes []string  `json:"classes,omitempty"`
	Mean    []float64 `json:"mean,omitempty"`
	Std     []float64 `json:"std,omitempty"`
}

type checkpointHeader struct {
	Format       string   `json:"format"`
	Arch         Arch     `json:"arch"`
	Tensors      []Tensor `json:"tensors"`
	ParamsFile   string   `json:"params_file"`
	ParamsSHA256 string   `json:"params_sha256"`
	// Buffers, BuffersFile, BuffersSHA256: a network with buffers only.
	Buffers       []Tensor `json:"buffers,omitempty"`
	BuffersFile   string   `json:"buffers_file,omitempty"`
	BuffersSHA256 string   `json:"buffers_sha256,omitempty"`
	Metadata
}

// floatBytes is v as little-endian float32s.
func floatBytes(v []float32) []byte {
	buf := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(f))
	}
	return buf
}

// readFloats reads exactly len(dst) little-endian float32s from the file
// path into dst, checking them against the hex SHA-256 sum recorded in
// the header mpath.
func readFloats(path, mpath, sum string, dst []float32) error {
	buf, err := fsx.ReadFile(path, 4*int64(len(dst)))
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if len(buf) != 4*len(dst) {
		return fmt.Errorf("model: %s: %d bytes, want %d (%d float32 values)", path, len(buf), 4*len(dst), len(dst))
	}
	if s := sha256.Sum256(buf); hex.EncodeToString(s[:]) != sum {
		return fmt.Errorf("model: %s: SHA-256 does not match the one in %s", path, mpath)
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
	}
	return nil
}

// Save writes the network and meta to dir (created if needed) in the
// checkpoint format above. params.bin is written first and model.json last,
// each through a temporary file of a random name renamed into place
// (fsx.WriteFileAtomic), so an interrupted Save never leaves a model.json
// that describes other parameters, and a symbolic link planted in dir is
// replaced, never written through.
func (n *Net) Save(dir string, meta Metadata) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	buf := floatBytes(n.Params)
	sum := sha256.Sum256(buf)
	if err := writeFileAtomic(filepath.Join(dir, paramsFile), buf); err != nil {
		return err
	}
	h := checkpointHeader{Format: CheckpointFormat, Arch: n.Arch, Tensors: n.Tensors,
		ParamsFile: paramsFile, ParamsSHA256: hex.EncodeToString(sum[:]), Metadata: meta}
	if len(n.Buffers) > 0 {
		buf := floatBytes(n.Buffers)
		sum := sha256.Sum256(buf)
		if err := writeFileAtomic(filepath.Join(dir, buffersFile), buf); err != nil {
			return err
		}
		h.Buffers, h.BuffersFile, h.BuffersSHA256 = n.BufferTensors, buffersFile, hex.EncodeToString(sum[:])
	}
	js, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	return writeFileAtomic(filepath.Join(dir, modelFile), append(js, '\n'))
}

// Load reads a network saved by Save from dir. It returns an error naming the
// file if either file is missing or corrupt: unknown format, a spec whose
// shapes do not work (model.json's "layers"; a checkpoint written before
// specs existed has none, and its "name" mnist-cnn or cifar10-cnn names the
// opacus-mnist or opacus-cifar10 spec),
// tensors or buffers that do not match the architecture, a params.bin (or
// buffers.bin) of the wrong size or whose SHA-256 differs from the one
// recorded.
func Load(dir string) (*Net, Metadata, error) {
	mpath := filepath.Join(dir, modelFile)
	js, err := fsx.ReadFile(mpath, maxHeaderBytes)
	if err != nil {
		return nil, Metadata{}, fmt.Errorf("model: %w", err)
	}
	var h checkpointHeader
	if err := json.Unmarshal(js, &h); err != nil {
		return nil, Metadata{}, fmt.Errorf("model: %s: %w", mpath, err)
	}
	if h.Format != CheckpointFormat {
		return nil, Metadata{}, fmt.Errorf("model: %s: format %q, want %q", mpath, h.Format, CheckpointFormat)
	}
	arch, err := h.Arch.Resolve()
	if err != nil {
		return nil, Metadata{}, fmt.Errorf("model: %s: %w", mpath, err)
	}
	n, err := NewZero(arch)
	if err != nil {
		return nil, Metadata{}, err
	}
	if fmt.Sprint(h.Tensors) != fmt.Sprint(n.Tensors) {
		return nil, Metadata{}, fmt.Errorf("model: %s: tensors %v do not match the %s network", mpath, h.Tensors, arch.Name)
	}
	if fmt.Sprint(h.Buffers) != fmt.Sprint(n.BufferTensors) {
		return nil, Metadata{}, fmt.Errorf("model: %s: buffers %v do not match the %s network's %v", mpath, h.Buffers, arch.Name, n.BufferTensors)
	}
	if err := readFloats(filepath.Join(dir, filepath.Base(h.ParamsFile)), mpath, h.ParamsSHA256, n.Params); err != nil {
		return nil, Metadata{}, err
	}
	if len(n.Buffers) > 0 {
		if err := readFloats(filepath.Join(dir, filepath.Base(h.BuffersFile)), mpath, h.BuffersSHA256, n.Buffers); err != nil {
			return nil, Metadata{}, err
		}
	}
	return n, h.Metadata, nil
}

// maxHeaderBytes bounds model.json (a spec of MaxSpecLayers layers and its
// metadata take a few kilobytes).
const maxHeaderBytes = 16 << 20

// writeFileAtomic writes b to path with mode 0644 through a temporary file
// of a random name renamed into place (fsx.WriteFileAtomic): no partial
// file is left, and a symbolic link planted at path or beside it is
// replaced, never written through.
func writeFileAtomic(path string, b []byte) error {
	if err := fsx.WriteFileAtomic(path, b, 0o644); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	return nil
}
