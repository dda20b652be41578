package job

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/budget"
)

// CheckpointDir is the directory that holds a training run's checkpoint
// (TrainSpec.Checkpoint) inside the run's curator directory: a run into
// OUT keeps it in OUT-curator/checkpoint (CheckpointPath), never in OUT,
// so that OUT holds only what may be published.
const CheckpointDir = "checkpoint"

// CuratorDir is the curator directory beside the output directory out
// ("out/mnist" → "out/mnist-curator"): what a job keeps that is not part
// of its release (a training run's checkpoint, a tuner's caches).
func CuratorDir(out string) string { return filepath.Clean(out) + "-curator" }

// CheckpointPath is the checkpoint directory of a training run into out:
// CuratorDir(out)/checkpoint.
func CheckpointPath(out string) string { return filepath.Join(CuratorDir(out), CheckpointDir) }

// checkpointFile is the one file of a checkpoint: a JSON header line, then
// the float32 state (little-endian): parameters, buffers, velocity and the
// moving average, if any.
const checkpointFile = "state.ckpt"

// checkpointLock is the file a process holds an exclusive flock(2) on while
// it trains from or into the checkpoint directory.
const checkpointLock = "lock"

// checkpointFormat names the checkpoint's layout. Format 1 had an unkeyed
// digest and is refused.
const checkpointFormat = "dptune-checkpoint/2"

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
	// Clipping is "automatic" for automatic clipping with stability
	// constant AutoClipGamma; both are absent for flat clipping, whose
	// checkpoints (and their budget bindings) are as they were.
	Clipping      string  `json:"clipping,omitempty"`
	AutoClipGamma float64 `json:"auto_clip_gamma,omitempty"`
}

// checkpointHeader is the checkpoint's first line.
type checkpointHeader struct {
	Format   string        `json:"format"`
	Settings TrainSettings `json:"settings"`
	State    dpsgd.State   `json:"state"`
	lineage
	// Sizes of the float32 blocks that follow.
	Params   int `json:"params"`
	Buffers  int `json:"buffers"`
	Velocity int `json:"velocity"`
	EMA      int `json:"ema"`
	// MAC is HMAC-SHA256 under the curator's checkpoint key of the header
	// without it and of the blocks (checkpointMAC).
	MAC string `json:"hmac_sha256"`
}

// lineage is what a checkpoint says of the processes that ran for it.
type lineage struct {
	// Start is the step the process that wrote the checkpoint started
	// from: 0 for the run's first process, the checkpoint's step for a
	// resume.
	Start int `json:"start"`
	// Prior is the worst case charged for every earlier process of the
	// run (empty for the first): a resume adds the worst case of the
	// process it continues and states the sum, with its own steps, in
	// its release.
	Prior accounting.Ledger `json:"prior"`
	// Data is the SHA-256 of the training and test sets the run read
	// (dataDigest): a resume on other data is refused.
	Data string `json:"data_digest"`
	// Dir is the absolute checkpoint directory it was written in: a
	// checkpoint copied elsewhere is not resumed there, so one checkpoint
	// does not grow two continuations.
	Dir string `json:"dir"`
}

// checkpoint is a checkpoint as read back, authenticated.
type checkpoint struct {
	settings TrainSettings
	state    *dpsgd.State
	lineage
}

// settings is s as its checkpoint keeps it, with cfg's noise multiplier.
func (s TrainSpec) settings(cfg dpsgd.Config) TrainSettings {
	t := TrainSettings{Dataset: s.Data.Name, DataDir: s.Data.Dir, Folder: s.Data.folder, Model: s.Data.Arch.Spec, NominalN: s.Data.NominalN,
		FeatureCache: s.Data.Features.Dir, Epsilon: s.Epsilon, Delta: s.Delta, NoiseMultiplier: cfg.NoiseMultiplier, ClipNorm: s.ClipNorm,
		BatchSize: s.BatchSize, Epochs: s.Epochs, LearningRate: s.LearningRate, Momentum: s.Momentum, Schedule: s.Schedule.String(),
		EMADecay: s.EMADecay, NonPrivate: s.NonPrivate, Accountant: s.Accountant, Seed: s.Seed, Budget: s.Budget, Label: s.Label}
	if s.Clipping != dpsgd.FlatClipping {
		t.Clipping, t.AutoClipGamma = s.Clipping.String(), s.AutoClipGamma
	}
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

// writeCheckpoint writes st of the run t, with its lineage, into dir
// atomically (one file renamed into place after it is synced): a killed
// process leaves the previous checkpoint or this one, never a mix. The
// file is authenticated under key (checkpointKey).
func writeCheckpoint(dir string, key []byte, t TrainSettings, l lineage, st dpsgd.State) error {
	if err := checkCuratorPath(dir); err != nil {
		return err
	}
	var body []byte
	for _, v := range [][]float32{st.Params, st.Buffers, st.Velocity, st.EMA} {
		for _, f := range v {
			body = binary.LittleEndian.AppendUint32(body, math.Float32bits(f))
		}
	}
	h := checkpointHeader{Format: checkpointFormat, Settings: t, State: st, lineage: l, Params: len(st.Params), Buffers: len(st.Buffers),
		Velocity: len(st.Velocity), EMA: len(st.EMA)}
	mac, err := h.mac(key, body)
	if err != nil {
		return err
	}
	h.MAC = mac
	head, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return fsx.WriteFileAtomic(filepath.Join(dir, checkpointFile), append(append(head, '\n'), body...), 0o600)
}

// mac is HMAC-SHA256 under key of a domain tag, the header without its MAC
// and the body: a checkpoint whose settings, lineage or state were changed
// after it was written (its noise multiplier, its step, its budget file) is
// refused, not resumed under a ledger that no longer matches its steps.
// The key never lives in the output or curator directory, so whoever can
// edit those cannot forge a checkpoint.
func (h checkpointHeader) mac(key, body []byte) (string, error) {
	h.MAC = ""
	head, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("dptune checkpoint\x00"))
	m.Write(head)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil)), nil
}

// maxCheckpointBytes bounds a checkpoint read back (four copies of
// model.MaxParams floats).
const maxCheckpointBytes = 16*model.MaxParams + 1<<20

// readCheckpoint reads the checkpoint in dir and authenticates it under
// key, or returns an error naming the file for one that is missing,
// truncated, corrupt, edited or of another format.
func readCheckpoint(dir string, key []byte) (*checkpoint, error) {
	path := filepath.Join(dir, checkpointFile)
	b, err := fsx.ReadFile(path, maxCheckpointBytes)
	if err != nil {
		return nil, err
	}
	i := bytes.IndexByte(b, '\n')
	var h checkpointHeader
	if i < 0 || json.Unmarshal(b[:i], &h) != nil {
		return nil, fmt.Errorf("%s: not a dptune checkpoint", path)
	}
	if h.Format != checkpointFormat {
		return nil, fmt.Errorf("%s: checkpoint format %q, not %q (written by another version of dptune): it cannot be resumed", path, h.Format, checkpointFormat)
	}
	body := b[i+1:]
	want, err := h.mac(key, body)
	if err != nil {
		return nil, err
	}
	if !hmac.Equal([]byte(want), []byte(h.MAC)) {
		return nil, fmt.Errorf("%s: its authentication code does not match under the checkpoint key %s: the file was edited, damaged, or written under another key; it is kept, not resumed", path, keyName())
	}
	sizes := []int{h.Params, h.Buffers, h.Velocity, h.EMA}
	n := 0
	for _, s := range sizes {
		if s < 0 || s > model.MaxParams {
			return nil, fmt.Errorf("%s: corrupt header", path)
		}
		n += s
	}
	if len(body) != 4*n {
		return nil, fmt.Errorf("%s: truncated", path)
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
	return &checkpoint{settings: h.Settings, state: &st, lineage: h.lineage}, nil
}

// CheckpointOf reports whether out (a run's output directory) has an
// unfinished run's checkpoint in CheckpointPath(out).
func CheckpointOf(out string) bool {
	_, err := os.Stat(filepath.Join(CheckpointPath(out), checkpointFile))
	return err == nil
}

// checkpointKeyEnv names the environment variable that, when set, is the
// path of the checkpoint key file instead of CheckpointKeyFile's default.
const checkpointKeyEnv = "DPTUNE_CHECKPOINT_KEY"

// CheckpointKeyFile is the curator's checkpoint key file: the file named by
// $DPTUNE_CHECKPOINT_KEY, else checkpoint.key in dptune's directory under
// the user's configuration directory (os.UserConfigDir: $XDG_CONFIG_HOME
// or ~/.config on Linux). It holds 32 random bytes in hex (mode 0600),
// created by the first checkpointed run; every checkpoint is authenticated
// under it (HMAC-SHA256), so a checkpoint resumes only where its key is.
func CheckpointKeyFile() (string, error) {
	if p := os.Getenv(checkpointKeyEnv); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no place for the checkpoint key (%v): set $%s to a file path", err, checkpointKeyEnv)
	}
	return filepath.Join(dir, "dptune", "checkpoint.key"), nil
}

// keyName is the key file's path for messages.
func keyName() string {
	p, err := CheckpointKeyFile()
	if err != nil {
		return "(none)"
	}
	return p
}

// checkpointKey reads the checkpoint key, creating it when create is true
// and it is missing (exclusively: of two runs creating it at once, both
// read the one that was made first). Errors wrap ErrInvalid: no key to
// resume with, a key file that is not 64 hex digits, one others can read,
// one inside a directory in outside (a run's release or curator
// directory, which others may read or write).
func checkpointKey(create bool, outside ...string) ([]byte, error) {
	path, err := CheckpointKeyFile()
	if err != nil {
		return nil, invalid(err)
	}
	if err := keyOutside(path, outside); err != nil {
		return nil, err
	}
	b, err := fsx.ReadFile(path, 1<<10)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, invalidf("checkpoint key %s: %v", path, err)
		}
		k, t := randsrc.NewKey(), randsrc.NewKey()
		tmp := fmt.Sprintf("%s.%x.tmp", path, t[:6])
		err = fsx.WriteFileAtomic(tmp, []byte(hex.EncodeToString(k[:])+"\n"), 0o600)
		if err == nil {
			// A link never replaces an existing file: whoever links first
			// made the key.
			if err = os.Link(tmp, path); errors.Is(err, fs.ErrExist) {
				err = nil
			}
			os.Remove(tmp)
		}
		if err != nil {
			return nil, invalidf("checkpoint key %s: %v", path, err)
		}
		b, err = fsx.ReadFile(path, 1<<10)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, invalidf("the checkpoint key %s is missing: a checkpoint resumes only under the key it was written with (copy that key file here, or set $%s)", path, checkpointKeyEnv)
	}
	if err != nil {
		return nil, invalidf("checkpoint key %s: %v", path, err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, invalidf("checkpoint key %s: mode %v lets others read it; chmod 600 it", path, fi.Mode().Perm())
	}
	key, err := hex.DecodeString(string(bytes.TrimSpace(b)))
	if err != nil || len(key) != 32 {
		return nil, invalidf("checkpoint key %s: not 64 hex digits", path)
	}
	return key, nil
}

// keyOutside refuses a key file at path inside any of dirs (symbolic links
// resolved): a key kept with what it authenticates protects nothing.
func keyOutside(path string, dirs []string) error {
	// resolve is p made absolute with the symbolic links of its longest
	// existing prefix resolved (the rest may not exist yet).
	resolve := func(p string) string {
		abs, err := filepath.Abs(p)
		if err != nil {
			return p
		}
		for d, rest := abs, ""; ; d, rest = filepath.Dir(d), filepath.Join(filepath.Base(d), rest) {
			if r, err := filepath.EvalSymlinks(d); err == nil {
				return filepath.Join(r, rest)
			}
			if d == filepath.Dir(d) {
				return abs
			}
		}
	}
	key := resolve(path)
	for _, d := range dirs {
		if rel, err := filepath.Rel(resolve(d), key); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return invalidf("the checkpoint key %s is inside %s: keep it where the run's output is not (set $%s elsewhere)", path, d, checkpointKeyEnv)
		}
	}
	return nil
}

// checkCuratorPath refuses a checkpoint directory dir, or a parent of it
// ending in "-curator", that exists and is not a directory of its own
// (a symbolic link, a file): the checkpoint is never written through a
// link to somewhere else.
func checkCuratorPath(dir string) error {
	for _, p := range []string{filepath.Dir(dir), dir} {
		if p == filepath.Dir(dir) && !strings.HasSuffix(p, "-curator") {
			continue
		}
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory (a symbolic link?): no checkpoint is written there", p)
		}
	}
	return nil
}

// openCheckpointDir checks the checkpoint directory dir (checkCuratorPath),
// creates it (mode 0700) and takes its lock without waiting: a second
// process training from or into the same checkpoint is refused at once.
// unlock releases the lock. Errors wrap ErrInvalid.
func openCheckpointDir(dir string) (unlock func(), err error) {
	if err := checkCuratorPath(dir); err != nil {
		return nil, invalid(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, invalidf("checkpoint directory: %v", err)
	}
	if err := checkCuratorPath(dir); err != nil {
		return nil, invalid(err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, invalidf("checkpoint directory: %v", err)
	}
	unlock, err = fsx.TryLock(filepath.Join(dir, checkpointLock))
	if errors.Is(err, fsx.ErrLocked) {
		return nil, invalidf("%s is in use by another dptune process (a run still training, or another resume): wait for it to end", dir)
	}
	if err != nil {
		return nil, invalidf("checkpoint directory %s: %v", dir, err)
	}
	return unlock, nil
}

// removeCheckpoint removes the finished run's checkpoint directory dir, and
// its curator directory if that is left empty.
func removeCheckpoint(dir string, warn func(string)) {
	if err := os.RemoveAll(dir); err != nil && warn != nil {
		warn(fmt.Sprintf("could not remove the checkpoint %s: %v", dir, err))
	}
	if parent := filepath.Dir(dir); strings.HasSuffix(parent, "-curator") {
		os.Remove(parent) // fails, harmlessly, when the directory holds anything else
	}
}

// TrainHooks are what a resumed run reports as it goes (TrainSpec's
// Progress, Warn and Started).
type TrainHooks struct {
	Progress func(TrainProgress)
	Warn     func(string)
	Started  func(dpsgd.Config)
}

// ResumeTrain continues the training run into out whose checkpoint is in
// CheckpointPath(out) (written by Train with TrainSpec.Checkpoint) with the
// settings it kept: the same data, network and calibrated noise. Before any
// work the checkpoint is authenticated under the curator's key
// (CheckpointKeyFile), its state checked against the network, and its
// directory locked, so that an edited checkpoint or a second concurrent
// resume is refused; a refused resume keeps the checkpoint.
//
// What it charges and states (the resume rule):
//   - A seeded run re-runs the steps after the checkpoint with the same
//     sampling and noise on the same data (its digest must match the
//     checkpoint's), so it adds nothing: it ends bit for bit as the run
//     never stopped, with the same ledger. Budget files refuse seeded runs.
//   - An unseeded run re-runs those steps with fresh noise, and the curator
//     may have watched their training loss: the process it continues is
//     counted at its worst case (the budget file's reservation is settled
//     at that worst case before anything else happens, so a failed resume
//     never refunds it), and the steps the resume runs are reserved and
//     charged anew. The release states the ε of that whole lineage.
//
// The release is returned as Train returns it; the checkpoint is removed
// once the run finishes. Errors wrap ErrInvalid for a missing, edited or
// corrupt checkpoint, a missing key, or data that no longer matches it.
func ResumeTrain(ctx context.Context, out string, hooks TrainHooks) (*Release, *NotPrivateDiagnostics, error) {
	dir := CheckpointPath(out)
	if !CheckpointOf(out) {
		return nil, nil, invalidf("%s has no unfinished run to resume (no %s)", out, filepath.Join(dir, checkpointFile))
	}
	unlock, err := openCheckpointDir(dir)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	key, err := checkpointKey(false, out, CuratorDir(out))
	if err != nil {
		return nil, nil, err
	}
	ck, err := readCheckpoint(dir, key)
	if err != nil {
		return nil, nil, invalid(err)
	}
	if abs, err := filepath.Abs(dir); err != nil || abs != ck.Dir {
		return nil, nil, invalidf("%s: the checkpoint was written in %s: a copied checkpoint is not resumed", dir, ck.Dir)
	}
	t := ck.settings
	src, err := t.source()
	if err != nil {
		return nil, nil, err
	}
	sched, err := dpsgd.ParseSchedule(t.Schedule)
	if err != nil {
		return nil, nil, invalid(err)
	}
	clipping := dpsgd.FlatClipping
	if t.Clipping != "" {
		if clipping, err = dpsgd.ParseClipping(t.Clipping); err != nil {
			return nil, nil, invalid(err)
		}
	}
	s := TrainSpec{Data: src, Epsilon: t.Epsilon, Delta: t.Delta, NoiseMultiplier: t.NoiseMultiplier, ClipNorm: t.ClipNorm,
		Clipping: clipping, AutoClipGamma: t.AutoClipGamma, BatchSize: t.BatchSize, Epochs: t.Epochs, LearningRate: t.LearningRate, Momentum: t.Momentum, Schedule: sched,
		EMADecay: t.EMADecay, NonPrivate: t.NonPrivate, Accountant: t.Accountant, Seed: t.Seed, Label: t.Label,
		Progress: hooks.Progress, Warn: hooks.Warn, Started: hooks.Started, Checkpoint: dir, resume: ck, checkpointKey: key}
	if t.NonPrivate {
		s.NoiseMultiplier = 0
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

// resumeCharge is a resumed run's charge in the budget file its checkpoint
// names, if any: the reservation of the process it continues is settled
// at its worst case first (budget.Settle: whatever happens next, it never
// falls below what that process could have run), then the steps this
// process runs are reserved under a label of its own and charged whole.
// The label is s's from then on, and its checkpoints carry it. Seeded runs
// are refused, as Train refuses them with a budget file.
func (s *TrainSpec) resumeCharge(cfg dpsgd.Config) (*charge, error) {
	ck := s.resume
	s.Label = resumeLabel(ck.settings.Label)
	path := ck.settings.Budget
	if path == "" {
		return &charge{}, nil
	}
	if s.Seed != nil {
		return nil, invalidf("a budget file does not take a seeded run")
	}
	if _, err := budget.Settle(path, s.Data.Name, "train", ck.settings.Label, binding(ck.settings, ck.Start, cfg.Steps)); err != nil {
		return nil, invalid(err)
	}
	kept := ck.settings
	kept.Label = s.Label
	c, err := reserveBound(path, false, s.Data.Name, "train", s.Label, binding(kept, ck.state.Step, cfg.Steps),
		processLedger("dpsgd training (the steps a resume runs)", s.Data.Arch, cfg, ck.state.Step))
	if c != nil {
		c.whole = true
	}
	return c, err
}

// binding ties a budget reservation to the process that made it: the run's
// settings (with their noise multiplier, budget file and label, which
// names the process), the steps the process may run, and a digest of both
// (budget.ReserveBound, budget.Settle).
func binding(t TrainSettings, start, steps int) string {
	js, _ := json.Marshal(t)
	d := sha256.Sum256(js)
	return fmt.Sprintf("train checkpoint: σ %s, steps %d–%d of %d, settings %x",
		strconv.FormatFloat(t.NoiseMultiplier, 'g', -1, 64), start+1, steps, steps, d[:8])
}

// processLedger is the worst case of a process of cfg's run on arch that
// started at step start: the whole planned run for the first process
// (start 0), else the steps from start on (a resume estimates no
// privacy-spending stage again).
func processLedger(label string, arch model.Arch, cfg dpsgd.Config, start int) accounting.Ledger {
	if start == 0 {
		return plannedLedger(label, arch, cfg)
	}
	rest := cfg
	rest.Steps = cfg.Steps - start
	return trainLedger(label, accounting.Ledger{}, dpsgd.StepsEvent(rest))
}

// lineageLedger is the ledger of everything that ran for the model of a
// resumed unseeded run: prior, the worst case of every earlier process,
// then steps (the event of the steps this process ran, from start).
func lineageLedger(prior accounting.Ledger, start int, steps accounting.Event) accounting.Ledger {
	l := accounting.Ledger{Entries: slices.Clone(prior.Entries)}
	l.Add(fmt.Sprintf("dpsgd training resumed from step %d", start), steps)
	return l
}

// resumeLabel names a resume's own reservation in the budget file: the
// run's label without an earlier process's tags, "(resumed)" and a fresh
// run tag, so that only a resume of this process's checkpoint settles it.
func resumeLabel(label string) string {
	if i := strings.Index(label, " (resumed)"); i >= 0 {
		label = label[:i]
	}
	if i := strings.LastIndex(label, " [run "); i >= 0 {
		label = label[:i]
	}
	return label + " (resumed)" + runTag()
}

// runTag is a fresh " [run …]" tag for a budget label.
func runTag() string {
	k := randsrc.NewKey()
	return fmt.Sprintf(" [run %x]", k[:6])
}

// dataDigest is the SHA-256 of the shapes, examples and labels of the sets a
// run reads, for a resume to check that its data is the checkpoint's.
func dataDigest(sets ...*data.Dataset) string {
	h := sha256.New()
	buf := make([]byte, 0, 1<<16)
	for _, d := range sets {
		buf = fmt.Appendf(buf[:0], "%d %d %d %d %d %d|", d.N, d.C, d.H, d.W, d.Classes, len(d.X))
		h.Write(buf)
		for i := 0; i < len(d.X); {
			buf = buf[:0]
			for ; i < len(d.X) && len(buf) < cap(buf); i++ {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(d.X[i]))
			}
			h.Write(buf)
		}
		h.Write(d.Y)
	}
	return hex.EncodeToString(h.Sum(nil))
}
