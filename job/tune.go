package job

import (
	"context"
	"errors"
	"fmt"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/noise"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// The tuners Tune runs.
const (
	RandomStop = "randomstop" // Liu & Talwar 2019; Papernot & Steinke 2022
	GP         = "gp"         // DP-HyPO, Wang et al. 2023, Algorithm 3
	Doubling   = "doubling"   // Ding et al., Algorithm 1
	// Grid is the naive baseline (DESIGN.md): every candidate trained,
	// the runs composed, the best released.
	Grid = "grid"
)

// TuneSpec is one private hyperparameter tuning around complete DP-SGD runs:
// Epsilon (nats) and Delta are the total budget of tuning and release, and
// each run's noise multiplier (for doubling, the final run's) is calibrated
// so that the whole pipeline meets them.
type TuneSpec struct {
	Data  Source
	Tuner string       // RandomStop, GP, Doubling or Grid
	Space tuning.Space // must pass tuning.CheckDPSGDSpace
	// Epsilon and Delta are the total budget.
	Epsilon, Delta float64
	// Epochs, BatchSize and Momentum are those of each DP-SGD run.
	Epochs, BatchSize int
	Momentum          float64

	// Repetitions is the distribution of the number of runs K (random-stop:
	// TNB or Poisson; GP: TNB; ignored by Grid, whose K is the space's
	// size); GPOptions are DP-HyPO's (GP only).
	Repetitions accounting.Repetitions
	GPOptions   tuning.GPOptions

	// Validation is "private" (scores on ValSize examples held out of the
	// training data by a keyed hash, released as integer counts with
	// discrete Gaussian noise of multiplier ScoreNoise, counted) or "public"
	// (scores on PublicVal's training set, which the user declares public
	// and disjoint from the private data; not counted). Doubling always
	// holds out ValSize private examples and scores its parts on them.
	Validation string
	ValSize    int
	ScoreNoise float64
	PublicVal  *Source

	// Doubling holds the doubling tuner's settings.
	Doubling DoublingSpec

	// Accountant is "rdp" (default: Papernot & Steinke, DP-HyPO) or
	// "xiang-o": random-stop tuning counted by Xiang et al.'s Algorithm 3
	// with μ = τ√T/σ (accounting.GaussianSelect) — an APPROXIMATION,
	// labelled so in the report beside Papernot & Steinke's ε, for
	// random-stop with public validation and no budget file only.
	Accountant string

	// Seed makes the tuning reproducible (fast noise); nil: crypto/rand,
	// or, with a keyed Runner (a durable one), its invocation's secret key,
	// so that a resumed invocation repeats the same draws.
	Seed *uint64
	// Runner runs the training runs (random-stop's all at once, GP's one
	// after another, doubling's partition runs) as jobs; nil: OpenRunner's,
	// or runner.Local in this process.
	Runner runner.Runner
	// OpenRunner, if not nil and Runner is nil, opens the runner once every
	// check has passed and before the budget is charged (so that bad input
	// never reaches a cluster).
	OpenRunner func(context.Context) (runner.Runner, error)
	// Budget is the curator's budget file ("" for none); Label says what
	// the tuning is, in it.
	Budget, Label string
	// Diagnostics asks for every run's candidate and score in the
	// NotPrivateDiagnostics (random-stop and GP).
	Diagnostics bool
	// Progress, if not nil, is called as each run starts (run = 1, …,
	// runs): it shows K, which the release must not; the curator's only.
	// Doubling calls it after each partition run instead.
	Progress func(run, runs int)
	// Warn, if not nil, receives curator-side notes.
	Warn func(string)
	// Started, if not nil, is called once every check has passed and the
	// budget is charged, before the data is read.
	Started func(TuneStart)
}

// TuneStart describes a tuning that passed its checks.
type TuneStart struct {
	Tuner           string
	Candidates      int
	NoiseMultiplier float64 // each run's σ (doubling: the final run's)
}

// TuneReport is report.json of a random-stop or GP tuning: what the tuner
// released. It has no number of runs and no other run's score, and every
// size in it is nominal.
type TuneReport struct {
	Tuner           string             `json:"tuner"`
	Dataset         string             `json:"dataset"`
	NominalSize     int                `json:"nominal_size"`
	Space           string             `json:"space"`
	Selected        map[string]float64 `json:"selected"`
	ValidationScore *float64           `json:"validation_score"`
	// ValidationCount is the private score's released integer: correct
	// predictions plus discrete Gaussian noise (validation_score ×
	// validation_size).
	ValidationCount     *int64                 `json:"validation_noisy_count,omitempty"`
	Validation          string                 `json:"validation"`
	ValidationSize      int                    `json:"validation_size"` // nominal n_val of a private score; 0 when public
	TestAccuracy        *float64               `json:"test_accuracy"`
	Epsilon             float64                `json:"epsilon"`
	Delta               float64                `json:"delta"`
	Accountant          string                 `json:"accountant"`
	BaseNoiseMultiplier float64                `json:"base_noise_multiplier"`
	BaseEpsilon         float64                `json:"base_epsilon"`
	TuningOverhead      float64                `json:"tuning_overhead_epsilon"`
	Repetitions         accounting.Repetitions `json:"runs_distribution"`
	MeanRuns            float64                `json:"mean_runs"`
	Epochs              int                    `json:"epochs_per_run"`
	BatchSize           int                    `json:"batch_size"`
	SamplingRate        float64                `json:"sampling_rate"`
	Steps               int                    `json:"steps_per_run"`
	Seeded              bool                   `json:"seeded"` // the seed itself is never written: it would undo the guarantee
	SecureNoise         bool                   `json:"secure_noise"`
	Interrupted         bool                   `json:"interrupted"`
	Failed              string                 `json:"failed,omitempty"`
	// Approximate marks an ε that is not a proved bound (xiang-o), and
	// GenericEpsilon is then Papernot & Steinke's proved ε of the same run.
	Approximate    bool              `json:"approximate,omitempty"`
	GenericEpsilon *float64          `json:"papernot_steinke_epsilon,omitempty"`
	Ledger         accounting.Ledger `json:"ledger"`
}

// xiangOrders are the RDP orders of the xiang-o accountant in tuning: its
// Algorithm 3 integrates numerically at every order, so a compact set keeps
// calibration fast (the ε it gives is at least the full set's).
var xiangOrders = []float64{1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64}

// xiangEvent is the xiang-o accountant's event of random-stop tuning of
// trainer's runs at noise multiplier sigma.
func xiangEvent(t *tuning.DPSGDTrainer, rep accounting.Repetitions, sigma float64) accounting.Event {
	return accounting.GaussianSelect{Mu: accounting.XiangMu(t.SamplingRate, sigma, t.Steps), Repetitions: rep, Reduction: "xiang-o"}
}

// XiangEpsilon is the ε at r's δ of Xiang et al.'s Algorithm 3 (the
// xiang-o accountant) for a random-stop report's DP-SGD runs and selection
// at its noise multiplier — an APPROXIMATION, not a proved bound, and
// without the private scores' noise — for comparison beside the proved ε.
func XiangEpsilon(r *TuneReport) (float64, error) {
	ev := accounting.GaussianSelect{Mu: accounting.XiangMu(r.SamplingRate, r.BaseNoiseMultiplier, r.Steps), Repetitions: r.Repetitions, Reduction: "xiang-o"}
	g, err := accounting.RDP{Orders: xiangOrders}.Epsilon(ev, r.Delta)
	return g.Epsilon, err
}

// checkCommon checks what every tuner needs.
func (s TuneSpec) checkCommon() error {
	if err := s.Data.Check(); err != nil {
		return err
	}
	if err := accounting.CheckEpsilon(s.Epsilon); err != nil {
		return invalidf("epsilon: %v", err)
	}
	if err := accounting.CheckDelta(s.Delta); err != nil {
		return invalidf("delta: %v", err)
	}
	if err := tuning.CheckDPSGDSpace(s.Space); err != nil {
		return invalid(err)
	}
	if !(s.Momentum >= 0 && s.Momentum < 1) {
		return invalidf("momentum %v is outside [0, 1)", s.Momentum)
	}
	if s.BatchSize < 1 {
		return invalidf("batch size %d must be at least 1", s.BatchSize)
	}
	return nil
}

// plan checks a random-stop or GP spec and calibrates its base run, all
// from nominal sizes and before any data is read.
func (s TuneSpec) plan(ctx context.Context) (*tuning.DPSGDTrainer, *tuning.GPOptions, error) {
	if err := s.checkCommon(); err != nil {
		return nil, nil, err
	}
	n := s.Data.NominalN
	switch s.Validation {
	case "private":
		if s.PublicVal != nil {
			return nil, nil, invalidf("a public validation set needs validation \"public\"")
		}
		if s.ValSize < 100 || s.ValSize >= n/2 {
			return nil, nil, invalidf("validation size %d is outside [100, %d)", s.ValSize, n/2)
		}
		if !(s.ScoreNoise > 0 && s.ScoreNoise <= noise.MaxDiscreteSigma) {
			return nil, nil, invalidf("score noise multiplier %v must be a number in (0, %g]", s.ScoreNoise, noise.MaxDiscreteSigma)
		}
		n -= s.ValSize
	case "public":
		if s.PublicVal == nil {
			return nil, nil, invalidf("validation \"public\" needs a public validation set: data you declare disjoint from the private training data")
		}
		if err := s.PublicVal.Check(); err != nil {
			return nil, nil, err
		}
		if sameDir(s.PublicVal.Dir, s.Data.Dir) || (s.PublicVal.Dir == s.Data.Dir && s.PublicVal.Name == s.Data.Name) {
			return nil, nil, invalidf("the public validation set %s is the private training data: public validation data must be disjoint from it", s.PublicVal.Dir)
		}
	default:
		return nil, nil, invalidf("validation %q: want private or public", s.Validation)
	}
	if s.BatchSize > n {
		return nil, nil, invalidf("batch size %d is outside [1, %d]", s.BatchSize, n)
	}
	q := float64(s.BatchSize) / float64(n)
	if err := dpsgd.CheckEpochs(s.Epochs, q); err != nil {
		return nil, nil, invalidf("epochs %d: %v", s.Epochs, err)
	}
	if s.Tuner == Grid {
		s.Repetitions = accounting.FixedRepetitions(s.Space.Size())
	}
	check := s.Repetitions.CheckSampled // K is drawn: E[K] ≤ accounting.MaxMeanRuns
	if s.Tuner == Grid {
		check = s.Repetitions.Check
	}
	if err := check(); err != nil {
		return nil, nil, invalid(err)
	}
	var gp *tuning.GPOptions
	if s.Tuner == GP {
		if err := s.GPOptions.Check(); err != nil {
			return nil, nil, invalid(err)
		}
		if s.Repetitions.Distribution != accounting.TNB {
			return nil, nil, invalidf("the gp tuner needs TNB repetitions (DP-HyPO's Theorem 1)")
		}
		o := s.GPOptions
		gp = &o
	}
	t := &tuning.DPSGDTrainer{Arch: s.Data.Arch, SamplingRate: q, ExpectedBatchSize: float64(s.BatchSize),
		Steps: dpsgd.StepsForEpochs(s.Epochs, q), Momentum: s.Momentum, LearningRate: DefaultLearningRate, ClipNorm: 1}
	if s.Validation == "private" {
		t.ScoreNoise, t.ValSize = s.ScoreNoise, s.ValSize
	}
	var sigma float64
	var err error
	switch s.Accountant {
	case "", "rdp":
		if s.Tuner == Grid {
			n := s.Space.Size()
			sigma, err = accounting.CalibrateNoise(ctx, accounting.RDP{},
				func(z float64) accounting.Event { return tuning.GridEvent(t.EventFor(z), n) }, s.Epsilon, s.Delta)
			break
		}
		sigma, err = tuning.CalibrateBase(ctx, t.EventFor, s.Repetitions, gp, s.Epsilon, s.Delta)
	case "xiang-o":
		switch {
		case s.Tuner != RandomStop || s.Validation != "public":
			return nil, nil, invalidf("the xiang-o accountant counts random-stop tuning with public validation only")
		case s.Budget != "":
			return nil, nil, invalidf("the xiang-o accountant is an approximation: a budget file composes proved bounds only")
		}
		sigma, err = accounting.CalibrateNoise(ctx, accounting.RDP{Orders: xiangOrders},
			func(z float64) accounting.Event { return xiangEvent(t, s.Repetitions, z) }, s.Epsilon, s.Delta)
	default:
		return nil, nil, invalidf("unknown tuning accountant %q (want rdp or xiang-o)", s.Accountant)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, nil, err
		}
		return nil, nil, invalidWrapf(err, "ε = %g at δ = %g is too small for this tuning: %v", s.Epsilon, s.Delta, err)
	}
	t.NoiseMultiplier = sigma
	return t, gp, nil
}

// Tune runs the tuner s.Tuner and releases only what its guarantee covers:
// the selected hyperparameters, the model trained with them, its released
// score and test accuracy, and the ledger — never the number of runs or the
// other runs' scores, which go to the NotPrivateDiagnostics when asked for.
//
//   - RandomStop: K ∼ s.Repetitions runs on uniformly drawn candidates, the
//     best released (tuning.RandomStop; Papernot & Steinke 2022, Theorem 2).
//   - GP: DP-HyPO (tuning.GPTune; Wang et al. 2023, Theorem 1).
//   - Doubling: Ding et al.'s doubling search on partitioned scores, then one
//     final DP-SGD run (see DoublingSpec).
//   - Grid: every candidate trained once, the best released (tuning.Grid);
//     the runs compose, so each gets the noise of a budget split |S| ways.
//
// The whole tuning's cost is known before it starts: the budget file, if
// any, is charged with it before the data is read. A refused request is an
// error wrapping ErrInvalid. Once the data is touched the release is always
// returned with the error: cancelled (ctx's error; nothing but the ledger is
// released) or failed (Release.Failed).
// Except when the budget file could not record the spending (an error
// wrapping ErrUncommitted): then nothing is returned but the error, and
// the worst case stays charged.
func Tune(ctx context.Context, s TuneSpec) (*Release, *NotPrivateDiagnostics, error) {
	return withheld(tuneRelease(ctx, s))
}

func tuneRelease(ctx context.Context, s TuneSpec) (*Release, *NotPrivateDiagnostics, error) {
	if s.Tuner == Doubling {
		return tuneDoubling(ctx, s)
	}
	if s.Tuner != RandomStop && s.Tuner != GP && s.Tuner != Grid {
		return nil, nil, invalidf("unknown tuner %q (want randomstop, gp, doubling or grid)", s.Tuner)
	}
	trainer, gp, err := s.plan(ctx)
	if err != nil {
		return nil, nil, err
	}
	label := "random-stop tuning, " + s.Repetitions.String() + " runs, best released"
	pipeline := tuning.Pipeline(trainer.Event(), s.Repetitions, gp)
	switch {
	case gp != nil:
		label = fmt.Sprintf("DP-HyPO (GP) tuning, %s runs, densities in [%g, %g] × prior, best released", s.Repetitions, gp.MinRatio, gp.MaxRatio)
	case s.Tuner == Grid:
		s.Repetitions = accounting.FixedRepetitions(s.Space.Size())
		label = fmt.Sprintf("grid search, all %d candidates, best released", s.Space.Size())
		pipeline = tuning.GridEvent(trainer.Event(), s.Space.Size())
	}
	if s.Runner, err = s.openRunner(ctx); err != nil {
		return nil, nil, err
	}
	resv, err := reserveFor(s.Runner, s.Budget, s.Seed != nil, s.Data.Name, "tune", s.Label, ledgerOf(label, pipeline))
	if err != nil {
		return nil, nil, err
	}
	if s.Started != nil {
		s.Started(TuneStart{Tuner: s.Tuner, Candidates: s.Space.Size(), NoiseMultiplier: trainer.NoiseMultiplier})
	}
	train, test, err := s.Data.load(s.Warn)
	if err != nil {
		return nil, nil, resv.done(accounting.Ledger{}, err)
	}
	seed, key, run := s.invocationSeed()
	trainer.Noise = s.noiseMode()
	ref := s.Data.ref()
	ref.Validation = s.Validation
	if s.Validation == "public" {
		trainer.Data = train
		if trainer.Val, _, err = s.PublicVal.Load(); err != nil {
			return nil, nil, resv.done(accounting.Ledger{}, fmt.Errorf("the public validation set: %w", err))
		}
		pub := s.PublicVal.ref()
		ref.Public = &pub
	} else {
		ref.ValSize, ref.SplitKey = s.ValSize, splitKey(seed, key)
		if trainer.Data, trainer.Val, err = keyedValidationSplit(train, s.ValSize, s.Data.NominalN, ref.SplitKey); err != nil {
			return nil, nil, resv.done(accounting.Ledger{}, err)
		}
	}
	// The jobs of this process read the data loaded here.
	cachePut(cacheKey(ref), loaded{train: trainer.Data, val: trainer.Val})
	cfg := tuning.Config{Space: s.Space, Trainer: trainer, Repetitions: s.Repetitions, Seed: seed, Key: key,
		Diagnostics: s.Diagnostics, Progress: s.Progress, Runner: run, Jobs: dpsgdJobs{t: trainer, data: ref, model: true}}
	var res tuning.Result
	var tuneErr error
	switch {
	case gp != nil:
		res, tuneErr = tuning.GPTune(ctx, cfg, *gp)
	case s.Tuner == Grid:
		res, tuneErr = tuning.Grid(ctx, cfg)
	default:
		res, tuneErr = tuning.RandomStop(ctx, cfg)
	}
	interrupted := errors.Is(tuneErr, context.Canceled)
	rep := &TuneReport{Tuner: s.Tuner, Dataset: s.Data.Name, NominalSize: s.Data.NominalN, Space: s.Space.Name, Validation: s.Validation,
		ValidationSize: trainer.ValSize, Delta: s.Delta, Accountant: "rdp", BaseNoiseMultiplier: trainer.NoiseMultiplier,
		Repetitions: s.Repetitions, MeanRuns: s.Repetitions.Mean(), Epochs: s.Epochs, BatchSize: s.BatchSize, SamplingRate: trainer.SamplingRate,
		Steps: trainer.Steps, Seeded: s.Seed != nil, SecureNoise: s.Seed == nil, Interrupted: interrupted, Ledger: res.Ledger}
	rel := &Release{Report: rep, Ledger: res.Ledger, Delta: s.Delta, Accountant: "rdp"}
	diag := &NotPrivateDiagnostics{Runs: res.Diagnostics}
	if s.Accountant == "xiang-o" {
		// The ledger says what the release claims: Algorithm 3's event
		// (approximate); Papernot & Steinke's proved ε goes beside it.
		if len(res.Ledger.Entries) > 0 {
			g, err := res.Ledger.Spent(accounting.RDP{}, s.Delta)
			rep.GenericEpsilon, _, _ = finiteEpsilon(g, err)
			rep.Ledger = ledgerOf("random-stop tuning, "+s.Repetitions.String()+" runs, best released (Xiang et al., Algorithm 3: APPROXIMATE)",
				xiangEvent(trainer, s.Repetitions, trainer.NoiseMultiplier))
		}
		rel.Ledger, rep.Accountant, rel.Accountant, rep.Approximate = rep.Ledger, "xiang-o", "xiang-o", true
	}
	acc := accounting.Accountant(accounting.RDP{})
	if s.Accountant == "xiang-o" {
		acc = accounting.RDP{Orders: xiangOrders}
	}
	if g, err := rel.Ledger.Spent(acc, s.Delta); err == nil {
		rep.Epsilon = g.Epsilon
		rel.Epsilon = &rep.Epsilon
	} else if tuneErr == nil {
		tuneErr = err
	}
	if tuneErr != nil && !interrupted {
		// The runs so far touched the data: the ledger is released alone.
		rep.Failed, rel.Failed = tuneErr.Error(), true
		return rel, diag, resv.done(res.Ledger, tuneErr)
	}
	if b, err := acc.Epsilon(trainer.Event(), s.Delta); err == nil {
		rep.BaseEpsilon, rep.TuningOverhead = b.Epsilon, rep.Epsilon-b.Epsilon
	}
	if !interrupted && res.Selected != nil && res.Model != nil {
		rep.Selected, rep.ValidationScore = res.Selected.Values, &res.Score
		if trainer.ScoreNoise > 0 {
			rep.ValidationCount = &res.NoisyCount
		}
		m, err := dpsgd.Evaluate(ctx, res.Model, test.X, test.Y)
		if err != nil && !errors.Is(err, context.Canceled) {
			return rel, diag, resv.done(res.Ledger, err)
		}
		if err == nil {
			rep.TestAccuracy = &m.Accuracy
		}
		rel.Model, rel.Selected, rel.Score = res.Model, rep.Selected, rep.ValidationScore
		rel.hyper = map[string]any{"selected": rep.Selected, "noise_multiplier": rep.BaseNoiseMultiplier,
			"sampling_rate": rep.SamplingRate, "steps": rep.Steps, "tuner": rep.Tuner}
	}
	if interrupted {
		return rel, diag, resv.done(res.Ledger, fmt.Errorf("interrupted: nothing released; the ledger still counts the whole tuning budget: %w", context.Canceled))
	}
	return rel, diag, resv.done(res.Ledger, nil)
}

// CheckTune checks s and calibrates its noise as Tune would, without
// reading data, opening a runner or charging a budget: the σ of each run
// (doubling: of the final run), or an error wrapping ErrInvalid.
func CheckTune(ctx context.Context, s TuneSpec) (float64, error) {
	switch s.Tuner {
	case Doubling:
		p, err := s.planDoubling(ctx)
		if err != nil {
			return 0, err
		}
		return p.sigma, nil
	case RandomStop, GP, Grid:
		t, _, err := s.plan(ctx)
		if err != nil {
			return 0, err
		}
		return t.NoiseMultiplier, nil
	}
	return 0, invalidf("unknown tuner %q (want randomstop, gp, doubling or grid)", s.Tuner)
}

// invocationSeed returns what the tuning's randomness comes from — s.Seed,
// or a keyed runner's secret 256-bit key, or neither (crypto/rand) — and
// its runner (runner.Local when s.Runner is nil).
func (s TuneSpec) invocationSeed() (*uint64, *randsrc.Key, runner.Runner) {
	run := s.Runner
	if run == nil {
		run = runner.Local{}
	}
	if s.Seed != nil {
		return s.Seed, nil, run
	}
	if k, ok := run.(runner.Keyed); ok {
		key := randsrc.Key(k.Key())
		return nil, &key, run
	}
	return nil, nil, run
}

// noiseMode is how the runs draw their noise: secure unless the user gave a
// seed, also when every run is seeded from a durable runner's secret key.
func (s TuneSpec) noiseMode() dpsgd.NoiseMode {
	if s.Seed == nil {
		return dpsgd.NoiseSecure
	}
	return dpsgd.NoiseFast
}

// openRunner returns s.Runner, or OpenRunner's runner.
func (s TuneSpec) openRunner(ctx context.Context) (runner.Runner, error) {
	if s.Runner != nil || s.OpenRunner == nil {
		return s.Runner, nil
	}
	return s.OpenRunner(ctx)
}

// splitKey is the key of the keyed validation split (newCutKey).
func splitKey(seed *uint64, key *randsrc.Key) cutKey { return newCutKey(seed, key, "validation split") }

// keyedValidationSplit holds out about nVal of the nominal examples of
// train for scoring, by a keyed hash of each example with key (splitKey:
// data.KeyedSplit when seeded, data.KeyedSplitMAC otherwise), so that
// adding or removing one example changes either the training split or the
// validation split, never both. The fraction is nVal/nominal — public.
func keyedValidationSplit(train *data.Dataset, nVal, nominal int, key cutKey) (fit, val *data.Dataset, err error) {
	v := float64(nVal) / float64(nominal)
	parts, err := key.split(train, []float64{1 - v, v})
	if err != nil {
		return nil, nil, err
	}
	return parts[0], parts[1], nil
}
