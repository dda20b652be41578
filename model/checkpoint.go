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
const (
	CheckpointFormat = "dptune-model/1"
	modelFile        = "model.json"
	paramsFile       = "params.bin"
)

// Metadata is what a checkpoint records besides the parameters.
type Metadata struct {
	Hyperparameters json.RawMessage `json:"hyperparameters,omitempty"`
	Ledger          json.RawMessage `json:"ledger,omitempty"`
}

type checkpointHeader struct {
	Format       string   `json:"format"`
	Arch         Arch     `json:"arch"`
	Tensors      []Tensor `json:"tensors"`
	ParamsFile   string   `json:"params_file"`
	ParamsSHA256 string   `json:"params_sha256"`
	Metadata
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
	buf := make([]byte, 4*len(n.Params))
	for i, v := range n.Params {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
	}
	sum := sha256.Sum256(buf)
	if err := writeFileAtomic(filepath.Join(dir, paramsFile), buf); err != nil {
		return err
	}
	h := checkpointHeader{Format: CheckpointFormat, Arch: n.Arch, Tensors: n.Tensors,
		ParamsFile: paramsFile, ParamsSHA256: hex.EncodeToString(sum[:]), Metadata: meta}
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
// tensors that do not match the architecture, a params.bin of the wrong size
// or whose SHA-256 differs from the one recorded.
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
	ppath := filepath.Join(dir, filepath.Base(h.ParamsFile))
	buf, err := fsx.ReadFile(ppath, 4*int64(len(n.Params)))
	if err != nil {
		return nil, Metadata{}, fmt.Errorf("model: %w", err)
	}
	if len(buf) != 4*len(n.Params) {
		return nil, Metadata{}, fmt.Errorf("model: %s: %d bytes, want %d (%d float32 parameters)", ppath, len(buf), 4*len(n.Params), len(n.Params))
	}
	if sum := sha256.Sum256(buf); hex.EncodeToString(sum[:]) != h.ParamsSHA256 {
		return nil, Metadata{}, fmt.Errorf("model: %s: SHA-256 does not match the one in %s", ppath, mpath)
	}
	for i := range n.Params {
		n.Params[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
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
