package job

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/budget"
)

// CheckpointDir is the directory under a training run's output that holds
// its checkpoint (TrainSpec.Checkpoint).
const CheckpointDir = "checkpoint"

// checkpointFile is the one file of a checkpoint: a JSON header line, then
// the float32 state (little-endian): parameters, buffers, velocity and the
// moving average, if any.
const checkpointFile = "state.ckpt"

// checkpointFormat names the checkpoint's layout.
const checkpointFormat = "dptune-checkpoint/1"

// TrainSettings are a training run as its checkpoint keeps it: everything
// ResumeTrain needs to rebuild the run, with the calibrated noise
// multiplier. The seed, if any, is kept too: a checkpoint is the
// curator's, like the run's memory (mode 0600 in a 0700 directory).
type TrainSettings struct {
	Dataset      string          `json:"dataset"`
	DataDir      string          `json:"data_dir,omitempty"`
	Folder       *FolderSettings `json:"folder,omitempty"`
	Model        model.Spec      `json:"model"`
	NominalN     int             `json:"nominal_size"`
	FeatureCache string          `json:"feature_cache,omitempty"`

	Epsilon         float64 `json:"epsilon"`
	Delta           float64 `json:"delta"`
	NoiseMultiplier float64 `json:"noise_multiplier"`
	ClipNorm        float64 `json:"clip_norm"`
	BatchSize       int     `json:"batch_size"`
	Epochs          int     `json:"epochs"`
	LearningRate    float64 `json:"learning_rate"`
	Momentum        float64 `json:"momentum"`
	Schedule        string  `json:"lr_schedule"`
	EMADecay        float64 `json:"ema_decay"`
	NonPrivate      bool    `json:"non_private"`
	Accountant      string  `json:"accountant"`
	Seed            *uint64 `json:"seed,omitempty"`
	Budget          string  `json:"budget,omitempty"`
	Label           string  `json:"label,omitempty"`
}

// checkpointHeader is the checkpoint's first line.
type checkpointHeader struct {
	Format   string        `json:"format"`
	Settings TrainSettings `json:"settings"`
	State    dpsgd.State   `json:"state"`
	// Sizes of the float32 blocks that follow, and their SHA-256.
	Params   int    `json:"params"`
	Buffers  int    `json:"buffers"`
	Velocity int    `json:"velocity"`
	EMA      int    `json:"ema"`
	SHA256   string `json:"sha256"`
}

// settings is s as its checkpoint keeps it, with cfg's noise multiplier.
func (s TrainSpec) settings(cfg dpsgd.Config) TrainSettings {
	t := TrainSettings{Dataset: s.Data.Name, DataDir: s.Data.Dir, Folder: s.Data.folder, Model: s.Data.Arch.Spec, NominalN: s.Data.NominalN,
		FeatureCache: s.Data.Features.Dir, Epsilon: s.Epsilon, Delta: s.Delta, NoiseMultiplier: cfg.NoiseMultiplier, ClipNorm: s.ClipNorm,
		BatchSize: s.BatchSize, Epochs: s.Epochs, LearningRate: s.LearningRate, Momentum: s.Momentum, Schedule: s.Schedule.String(),
		EMADecay: s.EMADecay, NonPrivate: s.NonPrivate, Accountant: s.Accountant, Seed: s.Seed, Budget: s.Budget, Label: s.Label}
	if t.Folder != nil {
		t.Dataset = FolderName
	}
	for _, p := range []*string{&t.DataDir, &t.Budget, &t.FeatureCache} {
		if *p != "" {
			if abs, err := filepath.Abs(*p); err == nil {
				*p = abs // a resume may run from another directory
			}
		}
	}
	return t
}

// writeCheckpoint writes st of the run t into dir atomically (one file
// renamed into place after it is synced): a killed process leaves the
// previous checkpoint or this one, never a mix.
func writeCheckpoint(dir string, t TrainSettings, st dpsgd.State) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (a symbolic link?): the checkpoint is not written there", dir)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	var body []byte
	for _, v := range [][]float32{st.Params, st.Buffers, st.Velocity, st.EMA} {
		for _, f := range v {
			body = binary.LittleEndian.AppendUint32(body, math.Float32bits(f))
		}
	}
	h := checkpointHeader{Format: checkpointFormat, Settings: t, State: st, Params: len(st.Params), Buffers: len(st.Buffers),
		Velocity: len(st.Velocity), EMA: len(st.EMA)}
	sum, err := h.digest(body)
	if err != nil {
		return err
	}
	h.SHA256 = sum
	head, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return fsx.WriteFileAtomic(filepath.Join(dir, checkpointFile), append(append(head, '\n'), body...), 0o600)
}

// digest is the SHA-256 of the header without its digest and of the body:
// a checkpoint whose settings or state were changed after it was written
// (its noise multiplier, its step) is refused, not resumed under a ledger
// that no longer matches its steps.
func (h checkpointHeader) digest(body []byte) (string, error) {
	h.SHA256 = ""
	head, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	d := sha256.New()
	d.Write(head)
	d.Write(body)
	return hex.EncodeToString(d.Sum(nil)), nil
}

// maxCheckpointBytes bounds a checkpoint read back (four copies of
// model.MaxParams floats).
const maxCheckpointBytes = 16*model.MaxParams + 1<<20

// readCheckpoint reads the checkpoint in dir, or returns an error naming
// the file for one that is missing, truncated, corrupt or of another
// format.
func readCheckpoint(dir string) (TrainSettings, *dpsgd.State, error) {
	path := filepath.Join(dir, checkpointFile)
	b, err := fsx.ReadFile(path, maxCheckpointBytes)
	if err != nil {
		return TrainSettings{}, nil, err
	}
	i := bytes.IndexByte(b, '\n')
	var h checkpointHeader
	if i < 0 || json.Unmarshal(b[:i], &h) != nil || h.Format != checkpointFormat {
		return TrainSettings{}, nil, fmt.Errorf("%s: not a dptune checkpoint", path)
	}
	body := b[i+1:]
	sum, err := h.digest(body)
	if err != nil {
		return TrainSettings{}, nil, err
	}
	sizes := []int{h.Params, h.Buffers, h.Velocity, h.EMA}
	n := 0
	for _, s := range sizes {
		if s < 0 || s > model.MaxParams {
			return TrainSettings{}, nil, fmt.Errorf("%s: corrupt header", path)
		}
		n += s
	}
	if len(body) != 4*n || sum != h.SHA256 {
		return TrainSettings{}, nil, fmt.Errorf("%s: truncated or corrupt (its SHA-256 does not match)", path)
	}
	blocks := make([][]float32, 4)
	for k, s := range sizes {
		if s == 0 {
			continue
		}
		blocks[k] = make([]float32, s)
		for j := range blocks[k] {
			blocks[k][j] = math.Float32frombits(binary.LittleEndian.Uint32(body))
			body = body[4:]
		}
	}
	st := h.State
	st.Params, st.Buffers, st.Velocity, st.EMA = blocks[0], blocks[1], blocks[2], blocks[3]
	if st.Params == nil {
		st.Params = []float32{}
	}
	if st.Buffers == nil {
		st.Buffers = []float32{}
	}
	return h.Settings, &st, nil
}

// CheckpointOf reports whether dir (a run's output) holds an unfinished
// run's checkpoint.
func CheckpointOf(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, CheckpointDir, checkpointFile))
	return err == nil
}

// TrainHooks are what a resumed run reports as it goes (TrainSpec's
// Progress, Warn and Started).
type TrainHooks struct {
	Progress func(TrainProgress)
	Warn     func(string)
	Started  func(dpsgd.Config)
}

// ResumeTrain continues the training run whose checkpoint is in out's
// checkpoint directory (written by Train with TrainSpec.Checkpoint) with
// the settings it kept: the same data, network, calibrated noise and, for
// a seeded run, the same random streams, so that it ends bit for bit as the
// run never stopped, with a ledger that counts every step once. The budget
// file, if the run had one, is not charged again: a reservation the killed
// run left is taken over and settled with the run's ledger, and a run
// whose charge was already settled (an interrupted one) charges nothing
// more. The release is returned as Train returns it; the checkpoint is
// removed once the run finishes. Errors wrap ErrInvalid for a missing or
// corrupt checkpoint or data that no longer matches it.
func ResumeTrain(ctx context.Context, out string, hooks TrainHooks) (*Release, *NotPrivateDiagnostics, error) {
	dir := filepath.Join(out, CheckpointDir)
	t, st, err := readCheckpoint(dir)
	if err != nil {
		return nil, nil, invalid(err)
	}
	src, err := t.source()
	if err != nil {
		return nil, nil, err
	}
	sched, err := dpsgd.ParseSchedule(t.Schedule)
	if err != nil {
		return nil, nil, invalid(err)
	}
	s := TrainSpec{Data: src, Epsilon: t.Epsilon, Delta: t.Delta, NoiseMultiplier: t.NoiseMultiplier, ClipNorm: t.ClipNorm,
		BatchSize: t.BatchSize, Epochs: t.Epochs, LearningRate: t.LearningRate, Momentum: t.Momentum, Schedule: sched,
		EMADecay: t.EMADecay, NonPrivate: t.NonPrivate, Accountant: t.Accountant, Seed: t.Seed, Label: t.Label,
		Progress: hooks.Progress, Warn: hooks.Warn, Started: hooks.Started, Checkpoint: dir, resume: st, settingsKept: &t}
	if t.NonPrivate {
		s.NoiseMultiplier = 0
	}
	if t.Budget != "" {
		s.resumeBudget = t.Budget
	}
	return withInput(s.Data)(withheld(trainRelease(ctx, s)))
}

// source rebuilds the run's data source.
func (t TrainSettings) source() (Source, error) {
	var src Source
	var err error
	if t.Folder != nil {
		src, _, err = folderDataset(t.DataDir, &t.Model, t.NominalN, *t.Folder)
	} else if src, err = Dataset(t.Dataset, t.DataDir); err == nil {
		if t.NominalN != src.NominalN {
			src = src.WithNominalSize(t.NominalN)
		}
		src, err = src.WithModel(t.Model)
	}
	if err != nil {
		return src, err
	}
	src.Features.Dir = t.FeatureCache
	return src, nil
}

// takeOver is a resumed run's charge: the reservation the killed run left
// in the budget file path (budget.Attach), settled with the resumed run's
// ledger. When there is none (the stopped run settled its charge, or the
// checkpoint was copied or resumed before), the steps still to run are
// reserved anew (rest): never less than what runs, at worst twice what an
// interrupted run already paid for.
func takeOver(path, dataset, label string, seeded bool, worst, rest accounting.Ledger) (*charge, error) {
	if path == "" {
		return &charge{}, nil
	}
	if seeded {
		return nil, invalidf("a budget file does not take a seeded run")
	}
	r, found, err := budget.Attach(path, dataset, "train", label, worst)
	if err != nil {
		return nil, invalid(err)
	}
	if found {
		return &charge{r: r, worst: worst}, nil
	}
	c, err := reserve(path, false, dataset, "train", label+" (resumed)", rest)
	if c != nil {
		c.whole = true
	}
	return c, err
}
