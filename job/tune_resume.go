package job

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/budget"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// TuneCheckpointDir is the directory, inside a tuning's curator directory,
// where a resumable tuning keeps its state and finished runs.
const TuneCheckpointDir = "tuning"

// TuneCheckpointPath is where a tuning into out keeps what a resume needs:
// CuratorDir(out)/tuning.
func TuneCheckpointPath(out string) string {
	return filepath.Join(CuratorDir(out), TuneCheckpointDir)
}

// TuneCheckpointOf reports whether out has an unfinished tuning kept in
// TuneCheckpointPath(out) (or a vote tuning that was stopped).
func TuneCheckpointOf(out string) bool {
	_, err := os.Stat(filepath.Join(TuneCheckpointPath(out), tuneStateFile))
	return err == nil
}

const (
	tuneStateFile   = "state.json"
	tuneStateFormat = "dptune-tuning/1"
	tuneRunFormat   = "dptune-tuning-run/1"
	tuneRunExt      = ".run"
	// maxTuneFile bounds a file read back: a run's output holds its
	// model's parameters and buffers in base64.
	maxTuneFile = 16*model.MaxParams + 1<<20
)

// tuneCheckpointWritten, if not nil, is called with the path of each file
// a tuning writes into its checkpoint directory, once it is in place
// (tests copy the directory there: what a kill at that moment leaves).
var tuneCheckpointWritten func(path string)

// tuneState is state.json: the tuning, as a resume rebuilds it.
type tuneState struct {
	Format string `json:"format"`
	Tuner  string `json:"tuner"`
	// Settings are nil for a vote tuning's mark (MarkVoteTuning).
	Settings *tuneSettings     `json:"settings,omitempty"`
	Plan     *tunePlanFacts    `json:"plan,omitempty"`
	Notes    map[string]string `json:"caller_notes,omitempty"`
	// Build names the build of dptune that started the tuning (buildID).
	Build string `json:"build"`
	// ID names the tuning: every run file carries it.
	ID string `json:"id"`
	// Key is the invocation key, sealed (sealKey); absent for a mark.
	Key string `json:"sealed_key,omitempty"`
	// Data and PublicData are the digests of the data the tuning read
	// (dataDigest of the training and test sets as loaded; of the public
	// validation set's), empty until it read them.
	Data       string `json:"data_digest,omitempty"`
	PublicData string `json:"public_data_digest,omitempty"`
	// Dir is the absolute directory the state was written in: a state
	// copied elsewhere is not resumed there.
	Dir string `json:"dir"`

	raw []byte // the authenticated bytes, as read or written
}

// tunePlanFacts are what the plan derived from the settings: a resume that
// derives other values (another calibration) is refused.
type tunePlanFacts struct {
	NoiseMultiplier      float64 `json:"noise_multiplier"`
	FinalNoiseMultiplier float64 `json:"final_noise_multiplier,omitempty"`
	Candidates           int     `json:"candidates"`
}

// facts are p's tunePlanFacts.
func (p *tunePlan) facts() tunePlanFacts {
	f := tunePlanFacts{NoiseMultiplier: p.trainer.NoiseMultiplier, Candidates: p.spec.Candidates()}
	if p.final != nil {
		f.FinalNoiseMultiplier = p.final.Config.NoiseMultiplier
	}
	return f
}

// sourceSettings are a Source as a tuning's state keeps it (the fields of
// TrainSettings that name the data).
type sourceSettings struct {
	Dataset      string          `json:"dataset"`
	DataDir      string          `json:"data_dir,omitempty"`
	Folder       *FolderSettings `json:"folder,omitempty"`
	Model        model.Spec      `json:"model"`
	NominalN     int             `json:"nominal_size"`
	FeatureCache string          `json:"feature_cache,omitempty"`
}

// absPath is p made absolute ("" stays ""): a resume may run elsewhere.
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func sourceSettingsOf(src Source) sourceSettings {
	t := sourceSettings{Dataset: src.Name, DataDir: absPath(src.Dir), Folder: src.folder, Model: src.Arch.Spec, NominalN: src.NominalN,
		FeatureCache: absPath(src.Features.Dir)}
	if t.Folder != nil {
		t.Dataset = FolderName
	}
	return t
}

// source rebuilds the Source (TrainSettings.source).
func (t sourceSettings) source() (Source, error) {
	return TrainSettings{Dataset: t.Dataset, DataDir: t.DataDir, Folder: t.Folder, Model: t.Model, NominalN: t.NominalN,
		FeatureCache: t.FeatureCache}.source()
}

// tuneSettings are a TuneSpec as its state keeps it: every field that
// decides what the tuning computes and charges.
type tuneSettings struct {
	Data           sourceSettings         `json:"data"`
	Tuner          string                 `json:"tuner"`
	Space          tuning.Space           `json:"space"`
	Epsilon        float64                `json:"epsilon"`
	Delta          float64                `json:"delta"`
	Epochs         int                    `json:"epochs"`
	BatchSize      int                    `json:"batch_size"`
	Momentum       float64                `json:"momentum"`
	Clipping       string                 `json:"clipping"`
	AutoClipGamma  float64                `json:"auto_clip_gamma"`
	Repetitions    accounting.Repetitions `json:"repetitions"`
	Options        []keptOption           `json:"options"`
	IncludeDefault bool                   `json:"include_default"`
	Default        *TrainDefaults         `json:"default"`
	DefaultWeight  float64                `json:"default_weight"`
	SelectionShare float64                `json:"selection_share"`
	Subsample      float64                `json:"subsample"`
	Validation     string                 `json:"validation"`
	ValSize        int                    `json:"val_size"`
	ScoreNoise     float64                `json:"score_noise"`
	PublicVal      *sourceSettings        `json:"public_validation"`
	Accountant     string                 `json:"accountant"`
	Seed           *uint64                `json:"seed"`
	Budget         string                 `json:"budget"`
	Label          string                 `json:"label"`
	Diagnostics    bool                   `json:"diagnostics"`
}

// keptOption is one of a tuner's options with its Go type, which JSON
// alone would lose (an int read back as a float64 is refused by
// tuning.CheckOptions).
type keptOption struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

// settings are s as its state keeps it. A tuner's file option (one with a
// curator file, the doubling tuner's score cache) is kept as an absolute
// path.
func (s TuneSpec) settings() (tuneSettings, error) {
	t := tuneSettings{Data: sourceSettingsOf(s.Data), Tuner: s.Tuner, Space: s.Space, Epsilon: s.Epsilon, Delta: s.Delta, Epochs: s.Epochs,
		BatchSize: s.BatchSize, Momentum: s.Momentum, Clipping: s.Clipping.String(), AutoClipGamma: s.AutoClipGamma, Repetitions: s.Repetitions,
		IncludeDefault: s.IncludeDefault, Default: s.Default, DefaultWeight: s.DefaultWeight, SelectionShare: s.SelectionShare,
		Subsample: s.Subsample, Validation: s.Validation, ValSize: s.ValSize, ScoreNoise: s.ScoreNoise, Accountant: s.Accountant,
		Seed: s.Seed, Budget: absPath(s.Budget), Label: s.Label, Diagnostics: s.Diagnostics}
	if s.PublicVal != nil {
		pv := sourceSettingsOf(*s.PublicVal)
		t.PublicVal = &pv
	}
	files := map[string]bool{}
	if tu, err := tuning.Lookup(s.Tuner); err == nil {
		for _, o := range tu.Options() {
			files[o.Name] = o.CuratorFile != ""
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Options)) {
		o, err := keepOption(name, s.Options[name])
		if err != nil {
			return t, err
		}
		if files[name] && o.Type == "string" {
			o.Value = absPath(o.Value)
		}
		t.Options = append(t.Options, o)
	}
	return t, nil
}

func keepOption(name string, v any) (keptOption, error) {
	o := keptOption{Name: name}
	switch x := v.(type) {
	case int:
		o.Type, o.Value = "int", strconv.Itoa(x)
	case float64:
		o.Type, o.Value = "float64", strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		o.Type, o.Value = "bool", strconv.FormatBool(x)
	case string:
		o.Type, o.Value = "string", x
	case time.Duration:
		o.Type, o.Value = "duration", strconv.FormatInt(int64(x), 10)
	default:
		return o, invalidf("option %s: a %T cannot be kept for a resume", name, v)
	}
	return o, nil
}

func (o keptOption) value() (any, error) {
	switch o.Type {
	case "int":
		return strconv.Atoi(o.Value)
	case "float64":
		return strconv.ParseFloat(o.Value, 64)
	case "bool":
		return strconv.ParseBool(o.Value)
	case "string":
		return o.Value, nil
	case "duration":
		n, err := strconv.ParseInt(o.Value, 10, 64)
		return time.Duration(n), err
	}
	return nil, fmt.Errorf("option %s of unknown type %q", o.Name, o.Type)
}

// spec rebuilds the TuneSpec of t (without its hooks and runner).
func (t tuneSettings) spec() (TuneSpec, error) {
	src, err := t.Data.source()
	if err != nil {
		return TuneSpec{}, err
	}
	clipping := dpsgd.FlatClipping
	if t.Clipping != "" {
		if clipping, err = dpsgd.ParseClipping(t.Clipping); err != nil {
			return TuneSpec{}, invalid(err)
		}
	}
	s := TuneSpec{Data: src, Tuner: t.Tuner, Space: t.Space, Epsilon: t.Epsilon, Delta: t.Delta, Epochs: t.Epochs, BatchSize: t.BatchSize,
		Momentum: t.Momentum, Clipping: clipping, AutoClipGamma: t.AutoClipGamma, Repetitions: t.Repetitions, IncludeDefault: t.IncludeDefault,
		Default: t.Default, DefaultWeight: t.DefaultWeight, SelectionShare: t.SelectionShare, Subsample: t.Subsample, Validation: t.Validation,
		ValSize: t.ValSize, ScoreNoise: t.ScoreNoise, Accountant: t.Accountant, Seed: t.Seed, Budget: t.Budget, Label: t.Label,
		Diagnostics: t.Diagnostics}
	if len(t.Options) > 0 {
		s.Options = tuning.Values{}
		for _, o := range t.Options {
			if s.Options[o.Name], err = o.value(); err != nil {
				return s, invalid(err)
			}
		}
	}
	if t.PublicVal != nil {
		pv, err := t.PublicVal.source()
		if err != nil {
			return s, err
		}
		s.PublicVal = &pv
	}
	return s, nil
}

// firstDifference is the dotted path of the first field (in sorted order)
// where the JSON values a and b differ, "" when they do not.
func firstDifference(path string, a, b any) string {
	ma, oka := a.(map[string]any)
	mb, okb := b.(map[string]any)
	if !oka || !okb {
		if reflect.DeepEqual(a, b) {
			return ""
		}
		return path
	}
	var keys []string
	for k := range ma {
		keys = append(keys, k)
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := k
		if path != "" {
			p = path + "." + k
		}
		if d := firstDifference(p, ma[k], mb[k]); d != "" {
			return d
		}
	}
	return ""
}

// differs names the first field where kept and have (JSON-encodable
// values of one type) differ, with both values, or returns "".
func differs(kept, have any) string {
	var a, b any
	ka, _ := json.Marshal(kept)
	hb, _ := json.Marshal(have)
	if json.Unmarshal(ka, &a) != nil || json.Unmarshal(hb, &b) != nil {
		return "the settings"
	}
	path := firstDifference("", a, b)
	if path == "" {
		return ""
	}
	at := func(v any) string {
		for _, k := range strings.Split(path, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				break
			}
			v = m[k]
		}
		js, _ := json.Marshal(v)
		if s := string(js); len(s) <= 60 {
			return s
		}
		return string(js[:57]) + "..."
	}
	return fmt.Sprintf("%s (%s in the tuning it continues, %s here)", path, at(a), at(b))
}

// buildID names this build of dptune: its vcs.revision, and the SHA-256 of
// the executable when the build has no revision or was modified (a test
// binary, a build of uncommitted changes).
var buildID = sync.OnceValue(func() string {
	rev, modified := "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	id := "vcs.revision " + rev
	if rev == "" {
		id = "no vcs.revision"
	} else if modified {
		id += " (modified)"
	}
	if rev == "" || modified {
		if exe, err := os.Executable(); err == nil {
			if f, err := os.Open(exe); err == nil {
				h := sha256.New()
				if _, err := io.Copy(h, f); err == nil {
					id += fmt.Sprintf(", executable sha256 %x", h.Sum(nil)[:12])
				}
				f.Close()
			}
		}
	}
	return id
})

// tuneMAC is HMAC-SHA256 under key of a domain tag and payload.
func tuneMAC(key []byte, domain string, payload []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(domain))
	m.Write([]byte{0})
	m.Write(payload)
	return hex.EncodeToString(m.Sum(nil))
}

// writeSealed writes the line mac (of domain and payload) and payload to
// path atomically, mode 0600.
func writeSealed(path string, key []byte, domain string, payload []byte) error {
	b := append([]byte(tuneMAC(key, domain, payload)+"\n"), payload...)
	if err := fsx.WriteFileAtomic(path, b, 0o600); err != nil {
		return err
	}
	if tuneCheckpointWritten != nil {
		tuneCheckpointWritten(path)
	}
	return nil
}

// readSealed reads path written by writeSealed and returns its payload,
// or an error naming the file for one that is missing, truncated or does
// not authenticate under key.
func readSealed(path string, key []byte, domain string) ([]byte, error) {
	b, err := fsx.ReadFile(path, maxTuneFile)
	if err != nil {
		return nil, err
	}
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return nil, fmt.Errorf("%s: not a file of a dptune tuning", path)
	}
	if want := tuneMAC(key, domain, b[i+1:]); !hmac.Equal([]byte(want), b[:i]) {
		return nil, fmt.Errorf("%s: its authentication code does not match under the checkpoint key %s: the file was edited, damaged, or written under another key; it is kept, not resumed", path, keyName())
	}
	return b[i+1:], nil
}

const stateDomain = "dptune tuning state"

func writeTuneState(dir string, key []byte, st *tuneState) error {
	js, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := writeSealed(filepath.Join(dir, tuneStateFile), key, stateDomain, js); err != nil {
		return err
	}
	st.raw = js
	return nil
}

func readTuneState(dir string, key []byte) (*tuneState, error) {
	path := filepath.Join(dir, tuneStateFile)
	js, err := readSealed(path, key, stateDomain)
	if err != nil {
		return nil, err
	}
	var st tuneState
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil || st.Format != tuneStateFormat {
		return nil, fmt.Errorf("%s: format %q, not %q (written by another version of dptune): it cannot be resumed", path, st.Format, tuneStateFormat)
	}
	st.raw = js
	return &st, nil
}

// stateHolds reports whether dir holds a tuning's state that a new tuning
// must not replace: any state but a vote tuning's mark (which cannot be
// resumed, so a new tuning may take its place).
func stateHolds(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, tuneStateFile))
	if err != nil {
		return false
	}
	var st struct {
		Settings json.RawMessage `json:"settings"`
	}
	if i := bytes.IndexByte(b, '\n'); i < 0 || json.Unmarshal(b[i+1:], &st) != nil {
		return true
	}
	return len(st.Settings) > 0 && string(st.Settings) != "null"
}

// keyAD is the additional data that binds a sealed invocation key to its
// tuning.
func keyAD(id, dir string) []byte { return []byte("dptune tuning key\x00" + id + "\x00" + dir) }

func keyAEAD(curator []byte) (cipher.AEAD, error) {
	wrap, err := hkdf.Key(sha256.New, curator, nil, "dptune tuning invocation key wrap", 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(wrap)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sealKey seals the invocation key k with AES-256-GCM under the HKDF of
// the curator's key, bound to the tuning's id and directory.
func sealKey(curator []byte, id, dir string, k randsrc.Key) (string, error) {
	aead, err := keyAEAD(curator)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return hex.EncodeToString(aead.Seal(nonce, nonce, k[:], keyAD(id, dir))), nil
}

func unsealKey(curator []byte, st *tuneState) (randsrc.Key, error) {
	var k randsrc.Key
	aead, err := keyAEAD(curator)
	if err != nil {
		return k, err
	}
	b, err := hex.DecodeString(st.Key)
	if err != nil || len(b) < aead.NonceSize() {
		return k, fmt.Errorf("the tuning's sealed key is malformed")
	}
	plain, err := aead.Open(nil, b[:aead.NonceSize()], b[aead.NonceSize():], keyAD(st.ID, st.Dir))
	if err != nil || len(plain) != len(k) {
		return k, fmt.Errorf("the tuning's key does not unseal under the checkpoint key %s", keyName())
	}
	copy(k[:], plain)
	return k, nil
}

// tuneRunHeader is the first line of a run file's payload; the job's
// output follows it.
type tuneRunHeader struct {
	Format string `json:"format"`
	Tuning string `json:"tuning"` // tuneState.ID
	Task   string `json:"task"`   // runner.Task.ID
	Kind   string `json:"kind"`
	// Input is the SHA-256 of the job's input: the file serves that job
	// alone (its input holds its seed or secret subkey).
	Input string `json:"input_sha256"`
}

const runDomain = "dptune tuning run"

// runFile is the file of the job with id in dir.
func runFile(dir, id string) string {
	h := sha256.Sum256([]byte(id))
	return filepath.Join(dir, fmt.Sprintf("task-%x%s", h[:8], tuneRunExt))
}

func inputDigest(t runner.Task) string {
	h := sha256.New()
	h.Write([]byte(t.Kind))
	h.Write([]byte{0})
	h.Write(t.Input)
	return hex.EncodeToString(h.Sum(nil))
}

// readRun reads and authenticates a run file, returning its header and the
// job's output.
func readRun(path string, key []byte, tuningID string) (tuneRunHeader, []byte, error) {
	var h tuneRunHeader
	payload, err := readSealed(path, key, runDomain)
	if err != nil {
		return h, nil, err
	}
	i := bytes.IndexByte(payload, '\n')
	if i < 0 || json.Unmarshal(payload[:i], &h) != nil || h.Format != tuneRunFormat {
		return h, nil, fmt.Errorf("%s: not a run of a dptune tuning of this version", path)
	}
	if h.Tuning != tuningID {
		return h, nil, fmt.Errorf("%s: a run of another tuning (copied here?): it is kept, not resumed", path)
	}
	return h, payload[i+1:], nil
}

// checkRuns authenticates every run file in dir (a resume refuses an
// edited one before any work) and removes the temporary files a killed
// write left.
func checkRuns(dir string, key []byte, tuningID string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp"):
			os.Remove(filepath.Join(dir, name)) // a write a kill cut short
		case strings.HasSuffix(name, tuneRunExt):
			if _, _, err := readRun(filepath.Join(dir, name), key, tuningID); err != nil {
				return err
			}
		}
	}
	return nil
}

// ResumeTuneSpec returns the spec of the unfinished tuning into out whose
// state is kept in TuneCheckpointPath(out): Tune of it continues the
// tuning, reusing every finished run, with the settings it kept; set its
// hooks (Progress, Warn, Started) first. CallerNotes are what the first
// caller kept with it. What is kept, and what a resume charges:
//
// A central tuning on this process's runner (runner.Local: grid,
// random-stop, GP, the recommended preset and the doubling tuner's part
// runs) with a Checkpoint keeps in that directory, OUT-curator/tuning
// (TuneCheckpointPath), never in the release directory OUT:
//
//   - state.json: the tuning's settings (tuneSettings), the plan's noise
//     multipliers, the build of dptune that started it (buildID: its
//     vcs.revision), a random id, the digest of the data it read, and its
//     invocation key — a secret 256-bit key drawn from crypto/rand at the
//     start, from which everything random in an unseeded tuning is derived
//     (the number of runs K, the candidates, the validation split, the
//     tuning subset, the data normalisation's and every run's noise, the
//     final run), as a durable runner's invocation key is
//     (runner.Keyed). The key is sealed with AES-256-GCM under a key
//     derived from the curator's checkpoint key (HKDF-SHA256), bound to
//     the tuning's id and directory.
//   - one file per finished job (a DP-SGD run's score, noisy count and
//     model; a part run's accuracy), written whole and atomically before
//     the tuner sees its output: the private outputs of the runs, mode
//     0600 in a 0700 directory, never released.
//
// Every file is authenticated with HMAC-SHA256 under the curator's
// checkpoint key (CheckpointKeyFile, as training checkpoints are): an
// edited, damaged or foreign file is refused, never trusted, and a run file
// names the tuning's id, its job and a digest of the job's input, so that
// it serves only that job of that tuning.
//
// A resume (ResumeTuneSpec, then Tune) repeats the tuning with the same key
// (or seed) on the same data: it draws the same K and the same candidates,
// gets each finished job's output back from its file instead of running
// it, and runs the others with the noise they would have had. So it is the
// same mechanism as the tuning never stopped — a seeded resume ends with
// the same release, ε and ledger, bit for bit — and no job's output is
// ever drawn twice with fresh noise. An unseeded resume could not be sound
// without the key: fresh draws of K, the candidates or the subsets would
// make a second selection from the same data, which the ledger of one
// tuning does not count; so the key is kept (sealed), and a resume whose
// key cannot be unsealed is refused.
//
// The budget file (the resume rule of ResumeTrain: a charge never falls
// below what ran): the first process charges the whole tuning's worst case
// (selection and final run) before the data is read, under a label naming
// its invocation (invocationTag). A resume first settles that reservation
// at its worst case (budget.Settle), whatever happens next, so a killed
// tuning is never refunded; since the resume draws nothing afresh, that
// one charge covers everything the two processes run, and the resume adds
// none. A tuning whose first process never got to charge the budget (killed
// before) is charged by its resume as a new tuning is. The file thus never
// holds less than an uninterrupted tuning's charge.
//
// A resume is refused, before any work and with the tuning's files kept,
// for a directory with no unfinished tuning, a state or run file that does
// not authenticate, a state copied from another directory, another build of
// dptune (its vcs.revision, or the executable's digest when it has none or
// was modified: another build may calibrate or train differently), settings
// other than the kept ones (the first field that differs is named), a
// second process on the same tuning (a lock), a vote tuning (it cannot be
// resumed: MarkVoteTuning); and, once the data is read, data whose digest
// differs.
//
// The tuning's files are removed when it finishes, and when it fails (its
// failed report says what it spent, and the budget file charges that: it
// is not resumed); they are kept when it is killed or interrupted (charged
// at its worst case), when its charge could not be recorded, and when a
// resume is refused. So a resume that finds its process's charge recorded
// finds it at the tuning's worst case.
//
// A tuning on a durable runner (Temporal) keeps none of this: its workflow
// keeps the key and the finished jobs' outputs, and running the same
// command again attaches to it (reserveFor takes over its reservation).
//
// Every refusal is one line wrapping ErrInvalid. ResumeTuneSpec refuses
// an out with no unfinished tuning, a vote, a state or run file that does
// not authenticate, a copied state and another build; Tune refuses other
// settings (a caller that changed the spec), a second process, and other
// data.
func ResumeTuneSpec(out string) (TuneSpec, error) {
	dir := TuneCheckpointPath(out)
	if !TuneCheckpointOf(out) {
		return TuneSpec{}, invalidf("%s has no unfinished tuning to resume (no %s; a --runner temporal tuning resumes when its command is run again)",
			out, filepath.Join(dir, tuneStateFile))
	}
	key, err := checkpointKey(false, out, CuratorDir(out))
	if err != nil {
		return TuneSpec{}, err
	}
	st, err := readTuneState(dir, key)
	if err != nil {
		return TuneSpec{}, invalid(err)
	}
	if st.Settings == nil {
		return TuneSpec{}, invalidf("%s: the %s tuning kept there was stopped before it finished, and a %s tuning cannot be resumed (its clients' training and noise shares ended with it): what it spent stays spent, nothing is refunded; start it again", dir, st.Tuner, st.Tuner)
	}
	if abs, err := filepath.Abs(dir); err != nil || abs != st.Dir {
		return TuneSpec{}, invalidf("%s: the tuning's state was written in %s: a copied tuning is not resumed", dir, st.Dir)
	}
	if b := buildID(); b != st.Build {
		return TuneSpec{}, invalidf("%s: build differs: the tuning was started by dptune %s, this is %s: resume it with the build that started it", dir, st.Build, b)
	}
	if err := checkRuns(dir, key, st.ID); err != nil {
		return TuneSpec{}, invalid(err)
	}
	s, err := st.Settings.spec()
	if err != nil {
		return s, err
	}
	s.Checkpoint, s.CallerNotes, s.resume = dir, st.Notes, st
	return s, nil
}

// tuneCheckpoint is a resumable tuning's directory while a process runs
// the tuning: locked, its state read or written.
type tuneCheckpoint struct {
	dir, out string
	key      []byte // the curator's checkpoint key
	state    *tuneState
	unlock   func()
	fresh    bool // not a resume
	mu       sync.Mutex
}

// openCheckpoint makes s's tuning resumable when it has a Checkpoint and
// runs on this process's runner, after s's plan p passed every check: it
// opens the runner (a tuning on another runner returns s with it and no
// checkpoint), locks the directory and writes the state (a new tuning) or
// checks it (a resume: settings, plan, build, and settles the budget).
// The returned spec runs its jobs through the journal (tuneJournal) and
// checks its data against the state.
func (s TuneSpec) openCheckpoint(ctx context.Context, p *tunePlan) (*tuneCheckpoint, TuneSpec, error) {
	if s.Checkpoint == "" {
		return nil, s, nil
	}
	dir := s.Checkpoint
	if s.resume == nil && stateHolds(dir) {
		return nil, s, invalidf("%s holds an unfinished tuning: continue it with --resume, or remove it to start over", dir)
	}
	run, err := s.openRunner(ctx)
	if err != nil {
		return nil, s, err
	}
	s.Runner, s.OpenRunner = run, nil
	local, isLocal := run.(runner.Local)
	if run == nil {
		isLocal = true
	}
	if !isLocal {
		if s.resume != nil {
			return nil, s, invalidf("%s: a tuning resumes on the local runner only", dir)
		}
		return nil, s, nil // a durable runner keeps the runs itself
	}
	if s.Data.Subset != nil || s.PublicVal != nil && s.PublicVal.Subset != nil {
		return nil, s, invalidf("a resumable tuning (a checkpoint directory) takes a dataset without a subset")
	}
	settings, err := s.settings()
	if err != nil {
		return nil, s, err
	}
	ck := &tuneCheckpoint{dir: dir, fresh: s.resume == nil}
	outside := []string{dir}
	if curator := filepath.Dir(dir); strings.HasSuffix(curator, "-curator") {
		ck.out = strings.TrimSuffix(curator, "-curator")
		outside = []string{curator, ck.out}
	}
	if ck.key, err = checkpointKey(ck.fresh, outside...); err != nil {
		return nil, s, err
	}
	if ck.unlock, err = openCheckpointDir(dir); err != nil {
		return nil, s, err
	}
	var key randsrc.Key
	if ck.fresh {
		key, err = ck.start(s, settings, p)
	} else {
		key, err = ck.resume(&s, settings, p)
	}
	if err != nil {
		ck.unlock()
		return nil, s, err
	}
	s.Runner = &tuneJournal{local: local, ck: ck, key: key, resumed: !ck.fresh}
	s.Data = s.Data.checkedBy(func(train, test *data.Dataset) error {
		return ck.checkData("data", &ck.state.Data, train, test)
	})
	if s.PublicVal != nil {
		pv := s.PublicVal.checkedBy(func(train, test *data.Dataset) error {
			return ck.checkData("public validation data", &ck.state.PublicData, train, test)
		})
		s.PublicVal = &pv
	}
	p.spec.Invocation = ck.state.ID
	return ck, s, nil
}

// start writes a new tuning's state, with a fresh invocation key, and
// returns the key.
func (ck *tuneCheckpoint) start(s TuneSpec, settings tuneSettings, p *tunePlan) (randsrc.Key, error) {
	key := randsrc.NewKey()
	if stateHolds(ck.dir) {
		// Written by a tuning that held the lock until a moment ago.
		return key, invalidf("%s holds an unfinished tuning: continue it with --resume, or remove it to start over", ck.dir)
	}
	abs, err := filepath.Abs(ck.dir)
	if err != nil {
		return key, err
	}
	id := randsrc.NewKey()
	facts := p.facts()
	st := &tuneState{Format: tuneStateFormat, Tuner: s.Tuner, Settings: &settings, Plan: &facts, Notes: s.CallerNotes, Build: buildID(),
		ID: hex.EncodeToString(id[:16]), Dir: abs}
	if st.Key, err = sealKey(ck.key, st.ID, abs, key); err != nil {
		return key, err
	}
	if err := writeTuneState(ck.dir, ck.key, st); err != nil {
		return key, err
	}
	ck.state = st
	return key, nil
}

// resume checks, under the lock, that the state is the one ResumeTuneSpec
// read and that s (settings, and p derived from them) and this build are
// the state's; then settles the budget file's reservation of the process
// it continues (s.Budget is cleared when that charge covers the tuning)
// and returns the invocation key.
func (ck *tuneCheckpoint) resume(s *TuneSpec, settings tuneSettings, p *tunePlan) (randsrc.Key, error) {
	var key randsrc.Key
	st, err := readTuneState(ck.dir, ck.key)
	if err != nil {
		return key, invalid(err)
	}
	if !bytes.Equal(st.raw, s.resume.raw) {
		return key, invalidf("%s: the tuning's state changed since it was read (another resume?): resume refused", ck.dir)
	}
	ck.state = st
	if abs, err := filepath.Abs(ck.dir); err != nil || abs != st.Dir {
		return key, invalidf("%s: the tuning's state was written in %s: a copied tuning is not resumed", ck.dir, st.Dir)
	}
	if b := buildID(); b != st.Build {
		return key, invalidf("%s: build differs: the tuning was started by dptune %s, this is %s: resume it with the build that started it", ck.dir, st.Build, b)
	}
	if d := differs(st.Settings, settings); d != "" {
		return key, invalidf("%s: resume refused: its settings differ in %s", ck.dir, d)
	}
	if d := differs(st.Plan, p.facts()); d != "" {
		return key, invalidf("%s: resume refused: this build plans the tuning differently: %s", ck.dir, d)
	}
	if key, err = unsealKey(ck.key, st); err != nil {
		return key, invalidf("%s: %v: resume refused", ck.dir, err)
	}
	if s.Budget == "" {
		return key, nil
	}
	label := s.Label + " [invocation " + invocationTag(key) + "]"
	found, err := budget.Settle(s.Budget, s.Data.Name, "tune", label, "")
	if err != nil {
		return key, invalid(err)
	}
	if !found {
		b, err := budget.Load(s.Budget)
		if err != nil {
			return key, invalid(err)
		}
		found = slices.ContainsFunc(b.Releases, func(r budget.Release) bool { return r.Command == "tune" && r.Label == label })
	}
	if found {
		// Charged at its worst case by the process it continues, which
		// covers what the resume runs: the same draws, never fresh ones.
		s.Budget = ""
	}
	return key, nil
}

// checkData records the digest of sets (what, the tuning's data or its
// public validation data) in the state on a tuning's first reading, and
// refuses other data on a resume's.
func (ck *tuneCheckpoint) checkData(what string, kept *string, sets ...*data.Dataset) error {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	d := dataDigest(sets...)
	switch {
	case *kept == "":
		*kept = d
		return writeTuneState(ck.dir, ck.key, ck.state)
	case *kept != d:
		return invalidf("%s: the %s is not what the tuning it continues read (its digest differs): resume refused, the tuning's files are kept", ck.dir, what)
	}
	return nil
}

// close ends the process's hold on the tuning's directory after the tuning
// returned rel and err. It keeps the directory for a resume, and says so in
// err, when the tuning was interrupted (charged at its worst case), when
// its charge could not be recorded (the reservation stays at its worst
// case), and when a resume was refused (the process it continues was
// settled at its worst case); it removes it otherwise: the tuning
// finished, or failed (its charge is what it spent: a failed tuning is not
// resumed, so a resume never finds a charge below the tuning's worst
// case), or was refused before it started. It returns err. A nil ck
// returns err.
func (ck *tuneCheckpoint) close(rel *Release, err error) error {
	if ck == nil {
		return err
	}
	defer ck.unlock()
	interrupted, uncommitted := errors.Is(err, context.Canceled), errors.Is(err, ErrUncommitted)
	refused := !ck.fresh && errors.Is(err, ErrInvalid)
	if err == nil || rel != nil && rel.Failed || !interrupted && !uncommitted && !refused {
		removeCheckpoint(ck.dir, nil)
		return err
	}
	if interrupted || uncommitted {
		where := ck.out
		if where == "" {
			where = ck.dir
		}
		return fmt.Errorf("%w (the finished runs are kept in %s: tune --resume %s continues the tuning)", err, ck.dir, where)
	}
	return err
}

// checkedBy is s with check called on the training and test sets as soon
// as they are read (before any use), its error that of the reading.
func (s Source) checkedBy(check func(train, test *data.Dataset) error) Source {
	if load := s.Load; load != nil {
		s.Load = func() (*data.Dataset, *data.Dataset, error) {
			train, test, err := load()
			if err == nil {
				err = check(train, test)
			}
			if err != nil {
				return nil, nil, err
			}
			return train, test, nil
		}
	}
	if load := s.loadContext; load != nil {
		s.loadContext = func(ctx context.Context, warn func(string)) (*data.Dataset, *data.Dataset, error) {
			train, test, err := load(ctx, warn)
			if err == nil {
				err = check(train, test)
			}
			if err != nil {
				return nil, nil, err
			}
			return train, test, nil
		}
	}
	return s
}

// tuneJournal is runner.Local that keeps each finished job's output in the
// tuning's directory (written whole and authenticated before the tuner
// sees it) and, on a resume, gives a kept output back instead of running
// its job again. It is keyed (runner.Keyed) with the tuning's invocation
// key, so an unseeded tuning derives all its randomness from it and a
// resume repeats the same jobs.
type tuneJournal struct {
	local   runner.Local
	ck      *tuneCheckpoint
	key     randsrc.Key
	resumed bool
}

// Key implements runner.Keyed.
func (j *tuneJournal) Key() [32]byte { return j.key }

// Resumed implements runner.Keyed.
func (j *tuneJournal) Resumed() bool { return j.resumed }

// Run implements runner.Runner as runner.Local does, with the same tasks
// (so each gets the share of the cores it had in the first process), a
// kept output given back for a job that finished before. A kept file that
// does not authenticate, or holds another job under the same id (the
// resume did not repeat the first process's draws), is an error before
// any job runs.
func (j *tuneJournal) Run(ctx context.Context, tasks []runner.Task, done func(i int, output []byte) error) error {
	kept := make([][]byte, len(tasks))
	have := make([]bool, len(tasks))
	for i, t := range tasks {
		path := runFile(j.ck.dir, t.ID)
		h, out, err := readRun(path, j.ck.key, j.ck.state.ID)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if h.Task != t.ID || h.Kind != t.Kind || h.Input != inputDigest(t) {
			return fmt.Errorf("%s holds another job than %s: the resumed tuning did not repeat its draws; refused, the file is kept", path, t.ID)
		}
		kept[i], have[i] = out, true
	}
	var mu sync.Mutex // serialises done
	return runner.ForEach(ctx, j.local.Workers, len(tasks), func(ctx context.Context, i int) error {
		t, out := tasks[i], kept[i]
		if !have[i] {
			var err error
			if out, err = runner.Do(ctx, t.Kind, t.Input); err != nil {
				return fmt.Errorf("runner: task %s: %w", t.ID, err)
			}
			if err := j.keep(t, out); err != nil {
				return err
			}
		}
		mu.Lock()
		defer mu.Unlock()
		return done(i, out)
	})
}

// keep writes the output of the finished task t.
func (j *tuneJournal) keep(t runner.Task, out []byte) error {
	h, err := json.Marshal(tuneRunHeader{Format: tuneRunFormat, Tuning: j.ck.state.ID, Task: t.ID, Kind: t.Kind, Input: inputDigest(t)})
	if err != nil {
		return err
	}
	payload := append(append(h, '\n'), out...)
	if err := writeSealed(runFile(j.ck.dir, t.ID), j.ck.key, runDomain, payload); err != nil {
		return fmt.Errorf("keeping the output of %s for a resume: %w", t.ID, err)
	}
	return nil
}

// MarkVoteTuning records in TuneCheckpointPath(out) that a vote tuning (a
// federated tuner, named tuner) runs into out, and locks it, so that a
// resume of out after the vote was killed is refused and says why: a vote
// cannot be resumed. It refuses (ErrInvalid) an out holding an unfinished
// central tuning, or in use. end, called with the vote's error once it is
// over, removes the mark unless the vote was interrupted, and unlocks.
func MarkVoteTuning(out, tuner string) (end func(error), err error) {
	dir := TuneCheckpointPath(out)
	if stateHolds(dir) {
		return nil, invalidf("%s holds an unfinished tuning: continue it with --resume, or remove it to start over", dir)
	}
	key, err := checkpointKey(true, out, CuratorDir(out))
	if err != nil {
		return nil, err
	}
	unlock, err := openCheckpointDir(dir)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		id := randsrc.NewKey()
		err = writeTuneState(dir, key, &tuneState{Format: tuneStateFormat, Tuner: tuner, Build: buildID(), ID: hex.EncodeToString(id[:16]), Dir: abs})
	}
	if err != nil {
		unlock()
		removeCheckpoint(dir, nil)
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return func(err error) {
		if !errors.Is(err, context.Canceled) {
			removeCheckpoint(dir, nil)
		}
		unlock()
	}, nil
}
