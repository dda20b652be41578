package job

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/dptune/dptune/audit"
	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// The kinds of runner jobs this package defines; a worker (`dptune worker`)
// runs them for any runner.
const (
	// KindDPSGDRun is one DP-SGD run of a candidate and its score: a
	// random-stop or DP-HyPO run, or a landscape point.
	KindDPSGDRun = "dptune.dpsgd-run"
	// KindPartitionRun is one run of the doubling tuner's subsample and
	// aggregate: a candidate on one part.
	KindPartitionRun = "dptune.partition-run"
	// KindAuditTrials is a block of an audit's trials.
	KindAuditTrials = "dptune.audit-trials"
)

func init() {
	runner.Register(KindDPSGDRun, doDPSGDRun)
	runner.Register(KindPartitionRun, doPartitionRun)
	runner.Register(KindAuditTrials, doAuditTrials)
}

// dataRef names a job's data so that any worker can load it: a built-in
// dataset (Dataset) and how the training set is cut. Its split and part
// keys are the curator's secrets (jobs travel only through the runner's
// encrypted payloads); a Subset's key is public.
type dataRef struct {
	Dataset  string `json:"dataset"`
	Dir      string `json:"dir,omitempty"`
	NominalN int    `json:"nominal_n"`
	// Subset, if not nil, keeps a fixed subset of the training set before
	// anything else (Source.WithSubset).
	Subset *Subset `json:"subset,omitempty"`
	// Validation is how the validation set is made: "private" (ValSize
	// nominal examples held out by the keyed hash with SplitKey), "public"
	// (Public's training set) or "test" (the test set, for landscapes).
	Validation string   `json:"validation"`
	ValSize    int      `json:"val_size,omitempty"`
	SplitKey   cutKey   `json:"split_key"`
	Public     *dataRef `json:"public,omitempty"`
	// Subsample q, if not 0, keeps a Poisson subsample of ratio q of the
	// training set under SubsampleKey before the validation split (a
	// tuning subset: tuning.SubsampledSelection; data.PoissonSubsampleMAC,
	// or data.PoissonSubsample when seeded).
	Subsample    float64 `json:"subsample,omitempty"`
	SubsampleKey cutKey  `json:"subsample_key"`
	// Parts > 0 cuts the training split into Parts equal keyed parts with
	// PartKey (the doubling tuner's partition).
	Parts   int    `json:"parts,omitempty"`
	PartKey cutKey `json:"part_key"`
	// FrontEnd, if not nil, is the network's fixed front end (its scatter
	// first layer): the sets are its features (of the subset, before any
	// split), as the curator's own process reads them (Source.loadCtx).
	FrontEnd *model.ScatterSpec `json:"front_end,omitempty"`
	// Folder, for an image folder, is how it is read (the curator's
	// public settings, resolved).
	Folder *folderRef `json:"folder,omitempty"`
	// Digest, for jobs on workers (runner.Remote), is the keyed digest of
	// the content of the curator's sets (before any split or front end):
	// a worker whose copy differs refuses the job (dataRef.verified).
	Digest *keyedDigest `json:"digest,omitempty"`
}

// cutKey keys a secret split of the data: a seeded run's 64-bit key
// (data.KeyedSplit: reproducible from the public seed), or a secret 256-bit
// key (data.KeyedSplitMAC: HMAC-SHA256 of each example) when unseeded.
type cutKey struct {
	Seeded uint64       `json:"seeded,omitempty"`
	MAC    *randsrc.Key `json:"mac,omitempty"`
}

// newCutKey is the key of the split for purpose: from the seed's stream;
// or a subkey of a keyed runner's invocation key; or a fresh key from
// crypto/rand.
func newCutKey(seed *uint64, key *randsrc.Key, purpose string) cutKey {
	switch {
	case seed != nil:
		return cutKey{Seeded: randsrc.Seeded(*seed, purpose).Uint64()}
	case key != nil:
		return cutKey{MAC: key.Derive(purpose)}
	}
	k := randsrc.NewKey()
	return cutKey{MAC: &k}
}

// split cuts d into parts of about the given fractions.
func (k cutKey) split(d *data.Dataset, fractions []float64) ([]*data.Dataset, error) {
	if k.MAC != nil {
		return data.KeyedSplitMAC(d, fractions, *k.MAC)
	}
	return data.KeyedSplit(d, fractions, k.Seeded)
}

// keep is the indices of a Poisson subsample of ratio q of d under k.
func (k cutKey) keep(d *data.Dataset, q float64) ([]int, error) {
	if k.MAC != nil {
		return data.PoissonKeepMAC(d, q, *k.MAC)
	}
	return data.PoissonKeep(d, q, k.Seeded)
}

// subsampleKey is the key of a tuning subset (newCutKey).
func subsampleKey(seed *uint64, key *randsrc.Key) cutKey {
	return newCutKey(seed, key, "tuning subset")
}

// id names the split (e.g. in a cache's header) without revealing its key.
func (k cutKey) id() string {
	if k.MAC != nil {
		return fmt.Sprintf("%016x", k.MAC.Stream("split id").Uint64())
	}
	return fmt.Sprintf("%016x", randsrc.Seeded(k.Seeded, "split id").Uint64())
}

// loaded is a dataRef's data.
type loaded struct {
	train, val *data.Dataset
	parts      []*data.Dataset
}

// workerDirs are the data directories a worker was given, by dataset.
var workerDirs sync.Map

// WorkerDataDir makes this process's jobs read dataset name (FolderName:
// any image folder) from dir instead of the directory the curator named: a
// worker on a machine whose copy of the data lives elsewhere (`dptune
// worker --data-dir`).
func WorkerDataDir(name, dir string) { workerDirs.Store(name, dir) }

// workerFeatures is the feature cache directory of this process's jobs
// ("" computes the features in memory, once per process and dataset).
var workerFeatures atomic.Value

// WorkerFeatureCache makes this process's jobs keep the features of a
// network with a fixed front end in the curator directory dir (FeatureCache):
// a worker (`dptune worker --feature-cache`) computes them once per dataset,
// not once per process; "" computes them in memory.
func WorkerFeatureCache(dir string) { workerFeatures.Store(dir) }

// loadMu serialises loads, so that concurrent jobs read a dataset once.
var loadMu sync.Mutex

// rawRef is a dataset as read: its training and test sets.
type rawRef struct{ Dataset, Dir string }

// loadRaw reads the registered dataset name, or the image folder read as
// folder says, from dir (or the worker's directory for it, WorkerDataDir),
// from this process's cache unless fresh; cached says it came from there.
func loadRaw(name, dir string, folder *folderRef, fresh bool) (train, test *data.Dataset, cached bool, err error) {
	kind := name
	if folder != nil {
		kind = FolderName
	}
	if d, ok := workerDirs.Load(kind); ok {
		dir = d.(string)
	}
	key := cacheKey(rawRef{name, dir})
	if folder != nil {
		key = cacheKey(struct {
			Raw    rawRef
			Folder *folderRef
		}{rawRef{name, dir}, folder})
	}
	if l, ok := cacheGet(key); ok && !fresh {
		return l.train, l.val, true, nil
	}
	if folder != nil {
		train, test, err = loadFolderRef(dir, *folder)
	} else {
		var src Source
		if src, err = Dataset(name, dir); err == nil {
			train, test, err = src.Load()
		}
	}
	if err != nil {
		return nil, nil, false, err
	}
	cachePut(key, loaded{train: train, val: test})
	return train, test, false, nil
}

// raw loads r's dataset, its training set cut to r.Subset when set (and
// its test set the rest of the training set for a development split): the
// images before any split, checked against r's digest when it has one
// (verified).
func (r dataRef) raw() (train, test *data.Dataset, err error) {
	train, test, _, err = r.rawSum()
	return train, test, err
}

// rawSum is raw with the content sum of the sets checked against r's
// digest (zero without one).
func (r dataRef) rawSum() (train, test *data.Dataset, sum [32]byte, err error) {
	return r.verified(func(fresh bool) (*data.Dataset, *data.Dataset, bool, error) {
		return loadRaw(r.Dataset, r.Dir, r.Folder, fresh)
	}, func(train, test *data.Dataset) (*data.Dataset, *data.Dataset, error) {
		switch {
		case r.Subset == nil:
			return train, test, nil
		case r.Subset.Dev:
			// A development split: the rest of the training set is the
			// test set (Source.WithDevSplit).
			return r.Subset.cut(train)
		}
		train, err := r.Subset.apply(train)
		return train, test, err
	})
}

// sets is raw, or, with a front end, the features of raw's sets (kept in
// this process's cache, and in the worker's feature cache if it has one):
// the sets before any split, as the network reads them.
func (r dataRef) sets(ctx context.Context) (train, test *data.Dataset, err error) {
	if r.FrontEnd == nil {
		return r.raw()
	}
	key := cacheKey(struct{ Features dataRef }{dataRef{Dataset: r.Dataset, Dir: r.Dir, Subset: r.Subset, FrontEnd: r.FrontEnd, Folder: r.Folder}})
	if r.Digest != nil {
		// The features of the images checked now, not of a copy read
		// before the files changed: kept under their content.
		var sum [32]byte
		if train, test, sum, err = r.rawSum(); err != nil {
			return nil, nil, err
		}
		key = cacheKey(struct {
			Features dataRef
			Content  [32]byte
		}{dataRef{Dataset: r.Dataset, Dir: r.Dir, Subset: r.Subset, FrontEnd: r.FrontEnd, Folder: r.Folder}, sum})
	}
	if l, ok := cacheGet(key); ok {
		return l.train, l.val, nil
	}
	if train == nil {
		if train, test, err = r.raw(); err != nil {
			return nil, nil, err
		}
	}
	a, err := model.NewArch(model.Spec{Name: "front end", Layers: []model.LayerSpec{model.Scatter(r.FrontEnd.J, r.FrontEnd.L), model.Flatten(), model.Linear(train.Classes)}},
		train.C, train.H, train.W, train.Classes)
	if err != nil {
		return nil, nil, fmt.Errorf("job: front end of %s: %v: %w", r.Dataset, err, runner.ErrInvalidInput)
	}
	dir, _ := workerFeatures.Load().(string)
	src := Source{Arch: a, Features: FeatureCache{Dir: dir}}
	if train, err = src.inputs(ctx, "train", train, nil); err != nil {
		return nil, nil, err
	}
	if test, err = src.inputs(ctx, "test", test, nil); err != nil {
		return nil, nil, err
	}
	cachePut(key, loaded{train: train, val: test})
	return train, test, nil
}

// resolve loads r's data in this process, from the cache when it can.
func (r dataRef) resolve(ctx context.Context) (loaded, error) {
	if err := r.digestRequired(ctx); err != nil {
		return loaded{}, err
	}
	key := cacheKey(r)
	if l, ok := cacheGet(key); ok {
		return l, nil
	}
	loadMu.Lock()
	defer loadMu.Unlock()
	if l, ok := cacheGet(key); ok {
		return l, nil
	}
	train, test, err := r.sets(ctx)
	if err != nil {
		return loaded{}, err
	}
	raw := train
	if r.Subsample != 0 && r.FrontEnd != nil {
		// The tuning subset is drawn on the images as read (cached by
		// loadRaw), as the curator draws it.
		if raw, _, err = r.raw(); err != nil {
			return loaded{}, err
		}
	}
	var l loaded
	switch r.Validation {
	case "private":
		if l.train, l.val, err = r.cut(raw, train); err != nil {
			return loaded{}, err
		}
	case "public":
		if r.Public == nil {
			return loaded{}, fmt.Errorf("job: public validation without its data: %w", runner.ErrInvalidInput)
		}
		pub, _, err := r.Public.sets(ctx)
		if err != nil {
			return loaded{}, err
		}
		if l.train, err = r.subset(raw, train); err != nil {
			return loaded{}, err
		}
		l.val = pub
	case "test":
		l.train, l.val = train, test
	default:
		return loaded{}, fmt.Errorf("job: unknown validation %q: %w", r.Validation, runner.ErrInvalidInput)
	}
	if r.Parts > 0 {
		if l.parts, err = partition(l.train, r.Parts, r.PartKey); err != nil {
			return loaded{}, err
		}
	}
	cachePut(key, l)
	return l, nil
}

// subset is train, or its tuning subset when r.Subsample is set: the
// examples whose images raw (train itself, or the images train holds the
// front end's features of, in the same order) a Poisson subsample keeps.
// Drawn on the images, the subset is the same on every machine, even one
// whose features differ from the curator's in the last bits.
func (r dataRef) subset(raw, train *data.Dataset) (*data.Dataset, error) {
	if r.Subsample == 0 {
		return train, nil
	}
	if !(r.Subsample > 0 && r.Subsample <= 1) {
		return nil, fmt.Errorf("job: tuning subset ratio %v is outside (0, 1]: %w", r.Subsample, runner.ErrInvalidInput)
	}
	if raw.N != train.N {
		return nil, fmt.Errorf("job: the tuning subset's %d images do not match the %d examples read", raw.N, train.N)
	}
	keep, err := r.SubsampleKey.keep(raw, r.Subsample)
	if err != nil {
		return nil, err
	}
	return train.Subset(train.Name+"/subsample", keep), nil
}

// cut is train cut for a private validation: to its tuning subset (if
// any; drawn on raw, see subset), then into the fit and validation splits
// (keyedValidationSplit).
func (r dataRef) cut(raw, train *data.Dataset) (fit, val *data.Dataset, err error) {
	if train, err = r.subset(raw, train); err != nil {
		return nil, nil, err
	}
	return keyedValidationSplit(train, r.ValSize, r.NominalN, r.SplitKey)
}

// partition cuts fit into k equal keyed parts (Ding et al.'s partition).
func partition(fit *data.Dataset, k int, key cutKey) ([]*data.Dataset, error) {
	fracs := make([]float64, k)
	for i := range fracs {
		fracs[i] = 1
	}
	return key.split(fit, fracs)
}

// decodeInput reads a job's JSON input strictly (runner.DecodeInput): a
// malformed one, or one with a field this binary does not know (a worker
// older than its curator), fails before any data is read and is never
// retried.
func decodeInput(b []byte, v any) error {
	if err := runner.DecodeInput(b, v); err != nil {
		return fmt.Errorf("job: %w", err)
	}
	return nil
}

// runInput is a KindDPSGDRun job: the trainer's settings without its
// data, the candidate and the run's seed.
type runInput struct {
	Data              dataRef        `json:"data"`
	Arch              model.Arch     `json:"arch"`
	NoiseMultiplier   float64        `json:"noise_multiplier"`
	SamplingRate      float64        `json:"sampling_rate"`
	ExpectedBatchSize float64        `json:"expected_batch_size"`
	Steps             int            `json:"steps"`
	Momentum          float64        `json:"momentum"`
	LearningRate      float64        `json:"learning_rate"`
	ClipNorm          float64        `json:"clip_norm"`
	Clipping          dpsgd.Clipping `json:"clipping,omitempty"`
	AutoClipGamma     float64        `json:"auto_clip_gamma,omitempty"`
	Schedule          dpsgd.Schedule `json:"lr_schedule,omitempty"`
	NominalN          int            `json:"nominal_n,omitempty"`
	Epochs            int            `json:"epochs,omitempty"`
	// Networks are the resolved choices of the space's network dimension.
	Networks map[string]model.Arch `json:"networks,omitempty"`
	// Space is the tuning's, whose runs the ledger counts: the worker's
	// trainer refuses a candidate outside it (tuning.Covers).
	Space tuning.Space `json:"space"`
	// Default is the default candidate the tuning may run beside the
	// space's (tuning.DPSGDTrainer.Default).
	Default *tuning.Candidate `json:"default,omitempty"`
	// DataNorm is the tuning's one data normalisation with its released
	// estimate (tuning.DPSGDTrainer.Norm), absent when the runs estimate
	// their own or the network has none.
	DataNorm *tuning.SharedDataNorm `json:"data_norm,omitempty"`
	// Subsample is the ratio of the tuning subset the run trains on
	// (tuning.DPSGDTrainer.Subsample), 0 for none.
	Subsample  float64          `json:"subsample,omitempty"`
	ScoreNoise float64          `json:"score_noise"`
	ValSize    int              `json:"val_size"`
	Noise      dpsgd.NoiseMode  `json:"noise"`
	Candidate  tuning.Candidate `json:"candidate"`
	Seed       *uint64          `json:"seed"`
	// Key is the run's secret key (a keyed invocation's run), instead of
	// Seed; it travels only inside sealed payloads.
	Key *randsrc.Key `json:"key,omitempty"`
	// Model asks for the trained parameters in the output (a tuning run
	// may be selected; a landscape point never is).
	Model bool `json:"model"`
}

// runOutput is a KindDPSGDRun job's output.
type runOutput struct {
	Score      float64 `json:"score"` // 0 when Failed
	Failed     bool    `json:"failed,omitempty"`
	NoisyCount int64   `json:"noisy_count,omitempty"`
	Params     []byte  `json:"params,omitempty"` // little-endian float32
	// Buffers are the model's buffers (model.Net.Buffers: a datanorm
	// layer's estimated statistics), little-endian float32; none for a
	// network without.
	Buffers []byte `json:"buffers,omitempty"`
}

// floatBytes is v as little-endian float32s.
func floatBytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// readFloats fills dst from b, little-endian float32s, or says what it
// holds instead.
func readFloats(what string, b []byte, dst []float32) error {
	if len(b) != 4*len(dst) {
		return fmt.Errorf("run output has %d bytes of %s, want %d", len(b), what, 4*len(dst))
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return nil
}

func doDPSGDRun(ctx context.Context, b []byte) ([]byte, error) {
	var in runInput
	if err := decodeInput(b, &in); err != nil {
		return nil, err
	}
	if in.Subsample != in.Data.Subsample {
		// A run on the whole set counted as one on a subset, or the
		// reverse: never trained.
		return nil, fmt.Errorf("job: the run's tuning subset ratio %v is not its data's %v: %w", in.Subsample, in.Data.Subsample, runner.ErrInvalidInput)
	}
	l, err := in.Data.resolve(ctx)
	if err != nil {
		return nil, err
	}
	t := &tuning.DPSGDTrainer{Arch: in.Arch, Data: l.train, Val: l.val, ValSize: in.ValSize, NoiseMultiplier: in.NoiseMultiplier,
		SamplingRate: in.SamplingRate, ExpectedBatchSize: in.ExpectedBatchSize, Steps: in.Steps, Momentum: in.Momentum,
		LearningRate: in.LearningRate, ClipNorm: in.ClipNorm, Clipping: in.Clipping, AutoClipGamma: in.AutoClipGamma,
		Schedule: in.Schedule, NominalN: in.NominalN, Epochs: in.Epochs,
		Networks: in.Networks, Space: in.Space, Default: in.Default, Norm: in.DataNorm, Subsample: in.Subsample, ScoreNoise: in.ScoreNoise, Noise: in.Noise, Key: in.Key}
	if err := t.Check(); err != nil {
		return nil, fmt.Errorf("%v: %w", err, runner.ErrInvalidInput)
	}
	r, err := t.Train(ctx, in.Candidate, in.Seed)
	if err != nil {
		return nil, err
	}
	out := runOutput{Score: r.Score, Failed: r.Failed, NoisyCount: r.NoisyCount}
	if r.Failed {
		out.Score = 0 // −∞ has no JSON
	} else if in.Model {
		out.Params = floatBytes(r.Model.Params)
		if len(r.Model.Buffers) > 0 {
			out.Buffers = floatBytes(r.Model.Buffers)
		}
	}
	return json.Marshal(out)
}

// dpsgdJobs describes a DPSGDTrainer's runs as KindDPSGDRun jobs
// (tuning.Jobs).
type dpsgdJobs struct {
	t     *tuning.DPSGDTrainer
	data  dataRef
	model bool
}

// Task implements tuning.Jobs.
func (j dpsgdJobs) Task(id string, c tuning.Candidate, seed *uint64, key *randsrc.Key) (runner.Task, error) {
	t := j.t
	b, err := json.Marshal(runInput{Data: j.data, Arch: t.Arch, NoiseMultiplier: t.NoiseMultiplier, SamplingRate: t.SamplingRate,
		ExpectedBatchSize: t.ExpectedBatchSize, Steps: t.Steps, Momentum: t.Momentum, LearningRate: t.LearningRate,
		ClipNorm: t.ClipNorm, Clipping: t.Clipping, AutoClipGamma: t.AutoClipGamma,
		Schedule: t.Schedule, NominalN: t.NominalN, Epochs: t.Epochs, Networks: t.Networks, Space: t.Space, Default: t.Default,
		DataNorm: t.Norm, Subsample: t.Subsample, ScoreNoise: t.ScoreNoise, ValSize: t.ValSize, Noise: t.Noise, Candidate: c, Seed: seed, Key: key, Model: j.model})
	return runner.Task{ID: id, Kind: KindDPSGDRun, Input: b}, err
}

// Decode implements tuning.Jobs: the parameters are read into c's
// network.
func (j dpsgdJobs) Decode(c tuning.Candidate, b []byte) (tuning.Run, error) {
	var out runOutput
	if err := json.Unmarshal(b, &out); err != nil {
		return tuning.Run{}, fmt.Errorf("malformed run output: %w", err)
	}
	if out.Failed {
		return tuning.Run{Score: math.Inf(-1), Failed: true}, nil
	}
	r := tuning.Run{Score: out.Score, NoisyCount: out.NoisyCount}
	if j.model {
		arch, _, err := j.t.Hyper().Run(c)
		if err != nil {
			return tuning.Run{}, err
		}
		net, err := model.NewZero(arch)
		if err != nil {
			return tuning.Run{}, err
		}
		if err := readFloats("parameters", out.Params, net.Params); err != nil {
			return tuning.Run{}, err
		}
		if err := readFloats("buffers", out.Buffers, net.Buffers); err != nil {
			return tuning.Run{}, err
		}
		r.Model = net
	}
	return r, nil
}

// LandscapeJobs describes DP-SGD runs of t on src's training set, scored on
// its test set, as runner jobs (bench's landscapes): the jobs load src by
// name wherever they run; in this process they use train and test, src's
// sets as the caller loaded them with Source.LoadInputs (for a network
// with a fixed front end, the features).
func LandscapeJobs(src Source, train, test *data.Dataset, t *tuning.DPSGDTrainer) tuning.Jobs {
	ref := src.inputRef()
	ref.Validation = "test"
	cachePut(cacheKey(ref), loaded{train: train, val: test})
	return dpsgdJobs{t: t, data: ref}
}

// partInput is a KindPartitionRun job.
type partInput struct {
	Data            dataRef               `json:"data"` // with Parts and PartKey
	Arch            model.Arch            `json:"arch"`
	ValSize         int                   `json:"val_size"`
	Epochs          int                   `json:"epochs"`
	BatchSize       int                   `json:"batch_size"`
	SamplingRate    float64               `json:"sampling_rate"`
	Momentum        float64               `json:"momentum"`
	LearningRate    float64               `json:"learning_rate,omitempty"`
	ClipNorm        float64               `json:"clip_norm,omitempty"`
	Clipping        dpsgd.Clipping        `json:"clipping,omitempty"`
	AutoClipGamma   float64               `json:"auto_clip_gamma,omitempty"`
	Schedule        dpsgd.Schedule        `json:"lr_schedule,omitempty"`
	Networks        map[string]model.Arch `json:"networks,omitempty"`
	Private         bool                  `json:"private"`
	NoiseMultiplier float64               `json:"noise_multiplier"`
	Noise           dpsgd.NoiseMode       `json:"noise"`
	Seed            uint64                `json:"seed"`
	Key             *randsrc.Key          `json:"key,omitempty"` // instead of Seed when not nil
	Candidate       tuning.Candidate      `json:"candidate"`
	Part            int                   `json:"part"`
}

func doPartitionRun(ctx context.Context, b []byte) ([]byte, error) {
	var in partInput
	if err := decodeInput(b, &in); err != nil {
		return nil, err
	}
	if in.Data.Parts < 1 || in.Part < 0 || in.Part >= in.Data.Parts {
		return nil, fmt.Errorf("job: part %d of %d: %w", in.Part, in.Data.Parts, runner.ErrInvalidInput)
	}
	l, err := in.Data.resolve(ctx)
	if err != nil {
		return nil, err
	}
	p := &tuning.PartitionScorer{Arch: in.Arch, Parts: l.parts, Val: l.val, ValSize: in.ValSize, Epochs: in.Epochs,
		BatchSize: in.BatchSize, SamplingRate: in.SamplingRate, Momentum: in.Momentum, LearningRate: in.LearningRate, ClipNorm: in.ClipNorm,
		Clipping: in.Clipping, AutoClipGamma: in.AutoClipGamma,
		Schedule: in.Schedule, Networks: in.Networks, Private: in.Private,
		NoiseMultiplier: in.NoiseMultiplier, Noise: in.Noise, Seed: in.Seed, Key: in.Key}
	acc, err := p.TrainPart(ctx, in.Candidate, in.Part)
	if err != nil {
		return nil, err
	}
	return json.Marshal(acc)
}

// partitionTask returns the job maker of scorer's part runs on ref.
func partitionTask(scorer *tuning.PartitionScorer, ref dataRef) func(tuning.Candidate, int) (runner.Task, error) {
	return func(c tuning.Candidate, part int) (runner.Task, error) {
		b, err := json.Marshal(partInput{Data: ref, Arch: scorer.Arch, ValSize: scorer.ValSize, Epochs: scorer.Epochs,
			BatchSize: scorer.BatchSize, SamplingRate: scorer.SamplingRate, Momentum: scorer.Momentum, LearningRate: scorer.LearningRate,
			ClipNorm: scorer.ClipNorm, Clipping: scorer.Clipping, AutoClipGamma: scorer.AutoClipGamma,
			Schedule: scorer.Schedule, Networks: scorer.Networks, Private: scorer.Private,
			NoiseMultiplier: scorer.NoiseMultiplier, Noise: scorer.Noise, Seed: scorer.Seed, Key: scorer.Key, Candidate: c, Part: part})
		return runner.Task{ID: fmt.Sprintf("candidate %d part %d", c.Index, part), Kind: KindPartitionRun, Input: b}, err
	}
}

// auditInput is a KindAuditTrials job: the audit's spec (its data by
// name) and the trials to play.
type auditInput struct {
	Spec   AuditSpec   `json:"spec"`
	Data   *dataRef    `json:"data,omitempty"` // a game on real data (audit.Game.OnData)
	Arch   *model.Arch `json:"arch,omitempty"` // a game on real data
	Trials []int       `json:"trials"`
}

// protocols keeps the last audit protocol this process built, so that a
// worker builds it (and calibrates σ, loads data) once per audit.
var protocols = struct {
	sync.Mutex
	key string
	p   audit.Protocol
}{}

func doAuditTrials(ctx context.Context, b []byte) ([]byte, error) {
	var in auditInput
	if err := decodeInput(b, &in); err != nil {
		return nil, err
	}
	if err := in.Data.digestRequired(ctx); err != nil {
		return nil, err
	}
	spec := in.Spec
	key := cacheKey(struct {
		S AuditSpec
		D *dataRef
		A *model.Arch
	}{spec, in.Data, in.Arch})
	protocols.Lock()
	p := protocols.p
	if protocols.key != key {
		p = nil
	}
	protocols.Unlock()
	if p == nil {
		if in.Data != nil {
			src, err := in.Data.source()
			if err != nil {
				return nil, fmt.Errorf("%v: %w", err, runner.ErrInvalidInput)
			}
			if in.Arch != nil {
				src.Arch = *in.Arch
			}
			src.Load, src.NominalN, src.Subset = in.Data.raw, in.Data.NominalN, in.Data.Subset
			spec.Data = src
		}
		var err error
		if p, _, err = spec.protocol(ctx); err != nil {
			return nil, err
		}
		protocols.Lock()
		protocols.key, protocols.p = key, p
		protocols.Unlock()
	}
	stats, err := audit.Trials(ctx, p, spec.Seed, in.Trials)
	if err != nil {
		return nil, err
	}
	return audit.EncodeStats(stats)
}

// auditTask returns the job maker of s's blocks of trials.
func auditTask(s AuditSpec) func([]int) (runner.Task, error) {
	in := auditInput{Spec: s}
	if g, ok := audit.Lookup(s.Protocol); ok && g.OnData(s.Data.Load != nil) {
		// A game that trains on real data (the natural game, and any
		// other given a dataset): the workers load the same data.
		ref, err := s.Data.workerRef(s.Runner)
		if err != nil {
			return func([]int) (runner.Task, error) { return runner.Task{}, err }
		}
		in.Data = &ref
		a := s.Data.Arch
		in.Arch = &a
	}
	return func(trials []int) (runner.Task, error) {
		in := in
		in.Trials = trials
		b, err := json.Marshal(in)
		return runner.Task{ID: fmt.Sprintf("trials %d-%d", trials[0], trials[len(trials)-1]), Kind: KindAuditTrials, Input: b}, err
	}
}

// LandscapeJobsFor is LandscapeJobs with the data bound, in the form the
// landscape benchmark takes (bench.LandscapeConfig's Jobs).
func LandscapeJobsFor(src Source, train, test *data.Dataset) func(*tuning.DPSGDTrainer) tuning.Jobs {
	return func(t *tuning.DPSGDTrainer) tuning.Jobs { return LandscapeJobs(src, train, test, t) }
}
