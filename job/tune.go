package job

import (
	"context"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// TuneSpec is one private hyperparameter tuning around complete DP-SGD runs:
// Epsilon (nats) and Delta are the total budget of tuning and release, and
// each run's noise multiplier (for a partitioned tuner, the final run's) is
// calibrated so that the whole pipeline meets them.
type TuneSpec struct {
	Data  Source
	Tuner string       // a registered tuner's name (tuning.Names)
	Space tuning.Space // must pass tuning.CheckDPSGDSpace
	// Epsilon and Delta are the total budget.
	Epsilon, Delta float64
	// Epochs, BatchSize and Momentum are those of each DP-SGD run. Its
	// learning rate and clipping norm are the candidate's; one the space
	// leaves out is the built-in network's own (NetworkDefaults), or else
	// DefaultLearningRate and a clipping norm of 1.
	Epochs, BatchSize int
	Momentum          float64
	// Clipping is every run's clipping rule: dpsgd.FlatClipping (the zero
	// value), or dpsgd.AutomaticClipping with stability constant AutoClipGamma
	// γ > 0 (Bu et al. 2023, AUTO-S; see TrainSpec), whose runs have no
	// clipping norm: the space must have no clip_norm dimension, and a
	// network's own learning rate η at C stands as η·C.
	Clipping      dpsgd.Clipping
	AutoClipGamma float64

	// Repetitions is the distribution of the number of runs K, for a
	// tuner that draws K (tuning.Uses.Repetitions; a tuner that does not
	// trains every candidate once: K is the number of candidates, the
	// space's size plus one with the default among them).
	Repetitions accounting.Repetitions
	// Options are the tuner's own settings (tuning.Tuner.Options); a
	// missing one takes its default.
	Options tuning.Values

	// IncludeDefault puts the published default settings among the
	// candidates (tuning.DefaultCandidate), for a tuner that can take them
	// (tuning.Uses.Default: grid trains them once more; random-stop draws
	// them at each run with probability DefaultWeight, 0 standing for
	// none given: tuning.DefaultWeight; a caller that can tell a given 0
	// refuses it, as the CLI does): Default, or else the network's own
	// (NetworkDefaultsOn). Refused with neither, for any other tuner, and
	// for settings dptune chose on this dataset's training data
	// (TrainDefaults.ChosenOn), which no tuner's guarantee covers. Every
	// run is then counted as the costliest of the space's runs and the
	// default's.
	IncludeDefault bool
	Default        *TrainDefaults
	DefaultWeight  float64
	// SelectionShare s ∈ (0, 1), if not 0, splits the budget between a
	// selection and a final run: the tuner releases only the selected
	// hyperparameters (and the selected run's score), and one final
	// DP-SGD run of them on the whole training set (validation split
	// included) is the released model. The share is defined by the final
	// run: its noise multiplier is calibrated so that the final run alone
	// meets ε_final = (1 − s)·Epsilon at Delta; then the selection's base
	// noise multiplier so that the RDP composition of the selection and
	// the final run meets (Epsilon, Delta). So s is what the final run
	// gives up: the selection's ε alone is at most Epsilon and usually
	// well above s·Epsilon, since composing in RDP and converting once
	// costs less than adding the parts' ε. For a tuning.Runner tuner
	// under the rdp accountant only.
	SelectionShare float64
	// Subsample q ∈ (0, 1], if not 0, runs the selection on a tuning
	// subset (Koskela & Kulkarni 2023; tuning.SubsampledSelection): a
	// Poisson subsample of the training set of ratio q under a secret key
	// (the seed's stream when seeded), drawn once, its private validation
	// split inside it; the selected settings carry over to the final run
	// on the whole set by tuning.SubsampleRule. It needs a SelectionShare
	// (the final run), and is refused where tuning.CheckSubsample refuses
	// it.
	Subsample float64

	// Validation is "private" (scores on ValSize examples held out of the
	// training data by a keyed hash, released as integer counts with
	// discrete Gaussian noise of multiplier ScoreNoise, counted) or "public"
	// (scores on PublicVal's training set, which the user declares public
	// and disjoint from the private data; not counted), for a tuner whose
	// scores are the trainer's (tuning.Uses.TrainerScores); any other
	// tuner holds out ValSize private examples and scores on them itself.
	Validation string
	ValSize    int
	ScoreNoise float64
	PublicVal  *Source

	// Accountant is "rdp" (default: proved bounds) or one the tuner adds
	// (tuning.Tuner.Accountant): an approximate one's ε is labelled so in
	// the report, beside the proved ε of the tuner's ledger.
	Accountant string

	// Seed makes the tuning reproducible (fast noise); nil: crypto/rand,
	// or, with a keyed Runner (a durable one), its invocation's secret key,
	// so that a resumed invocation repeats the same draws.
	Seed *uint64
	// Runner runs the training runs (or part runs) as jobs; nil:
	// OpenRunner's, or runner.Local in this process.
	Runner runner.Runner
	// OpenRunner, if not nil and Runner is nil, opens the runner once every
	// check has passed and before the budget is charged (so that bad input
	// never reaches a cluster).
	OpenRunner func(context.Context) (runner.Runner, error)
	// Budget is the curator's budget file ("" for none); Label says what
	// the tuning is, in it.
	Budget, Label string
	// Diagnostics asks for every run's candidate and score in the
	// NotPrivateDiagnostics (tuning.Uses.Diagnostics).
	Diagnostics bool
	// Progress, if not nil, is called as each run starts (run = 1, …,
	// runs): it shows K, which the release must not; the curator's only.
	// A partitioned tuner calls it after each part run instead.
	Progress func(run, runs int)
	// Warn, if not nil, receives curator-side notes.
	Warn func(string)
	// Started, if not nil, is called once every check has passed and the
	// budget is charged, before the data is read.
	Started func(TuneStart)

	// Checkpoint, if not "", makes a central tuning on this process's
	// runner resumable after it is killed or interrupted: the directory
	// (TuneCheckpointPath(out), beside the release directory, never in
	// it) where it keeps its state and every finished run, authenticated
	// under the curator's checkpoint key, until it finishes or fails;
	// ResumeTuneSpec continues it. A new tuning into a directory holding
	// an unfinished one is refused. A tuning on another runner (a durable
	// one keeps its runs itself) ignores it.
	Checkpoint string
	// CallerNotes are kept with a Checkpoint (authenticated) and given
	// back by ResumeTuneSpec: what the caller needs to finish a resumed
	// tuning as the first process would have (the command line keeps its
	// --diagnostics file here). They do not change the tuning.
	CallerNotes map[string]string
	// resume is the authenticated state of the tuning a resume continues
	// (ResumeTuneSpec).
	resume *tuneState

	// Federation serves a federated tuner (tuning.Federated), whose
	// clients hold the data; nil: a loopback server and clients in this
	// process. The fields above that concern DP-SGD runs (Epochs,
	// Momentum, Repetitions, the validation, the runner, the budget file)
	// do not apply to it.
	Federation *Federation
}

// TuneStart describes a tuning that passed its checks.
type TuneStart struct {
	Tuner           string
	Candidates      int
	NoiseMultiplier float64 // each run's σ (a partitioned tuner: the final run's)
	// FinalNoiseMultiplier is the final run's σ of a tuning with a
	// selection share, else 0.
	FinalNoiseMultiplier float64
	// SelectionShare and Subsample are the tuning's, a preset tuner's
	// filled in (TuneSpec.SelectionShare, Subsample; 0: none).
	SelectionShare, Subsample float64
}

// TuneReport is report.json of a tuning around whole runs (a
// tuning.Runner): what the tuner
// released. It has no number of runs and no other run's score, and every
// size in it is nominal.
type TuneReport struct {
	Tuner       string             `json:"tuner"`
	Dataset     string             `json:"dataset"`
	NominalSize int                `json:"nominal_size"`
	Space       string             `json:"space"`
	Selected    map[string]float64 `json:"selected"`
	// SelectedChoices names the selected choice of each categorical
	// dimension (a network, a schedule), whose Selected value is its index.
	SelectedChoices map[string]string `json:"selected_choices,omitempty"`
	// Fixed is the built-in network's own learning rate or clipping norm
	// (NetworkDefaults), by dimension name, that every run took because
	// the space has no such dimension; absent for any other network (whose
	// runs then take DefaultLearningRate and a clipping norm of 1).
	Fixed map[string]float64 `json:"fixed,omitempty"`
	// Clipping is "automatic" when every run clipped automatically, with
	// AutoClipGamma its stability constant γ; both are absent under flat
	// clipping.
	Clipping      string  `json:"clipping,omitempty"`
	AutoClipGamma float64 `json:"auto_clip_gamma,omitempty"`
	// Baseline is what the tuning is measured against: one run of the
	// network's published settings at the same (ε, δ), and whether the
	// tuning selected them; absent for a network without such settings.
	Baseline        *Baseline `json:"baseline,omitempty"`
	ValidationScore *float64  `json:"validation_score"`
	// ValidationCount is the private score's released integer: correct
	// predictions plus discrete Gaussian noise (validation_score ×
	// validation_size).
	ValidationCount     *int64                 `json:"validation_noisy_count,omitempty"`
	Validation          string                 `json:"validation"`
	ValidationSize      int                    `json:"validation_size"` // nominal n_val of a private score, the divisor of its count (on a tuning subset, round(q·ValSize)); 0 when public
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
	// PerCandidate marks a space whose candidates set the batch size, the
	// epochs or the network, or a default candidate whose run differs in
	// them from the space's (IncludesDefault): Epochs, BatchSize, SamplingRate and Steps
	// above are then only the runs of candidates that set none, and every
	// run is counted as the costliest candidate's (tuning.Hyper.Event).
	PerCandidate bool   `json:"per_candidate_runs,omitempty"`
	Seeded       bool   `json:"seeded"` // the seed itself is never written: it would undo the guarantee
	SecureNoise  bool   `json:"secure_noise"`
	Interrupted  bool   `json:"interrupted"`
	Failed       string `json:"failed,omitempty"`
	// Approximate marks an ε that is not a proved bound (xiang-o), and
	// GenericEpsilon is then Papernot & Steinke's proved ε of the same run.
	Approximate    bool     `json:"approximate,omitempty"`
	GenericEpsilon *float64 `json:"papernot_steinke_epsilon,omitempty"`
	// IncludesDefault says the default settings were among the
	// candidates (TuneSpec.IncludeDefault), with DefaultWeight, random-stop's
	// prior weight on them.
	IncludesDefault bool    `json:"includes_default,omitempty"`
	DefaultWeight   float64 `json:"default_weight,omitempty"`
	// SelectionShare is TuneSpec.SelectionShare: the released model is
	// then the final run's, at FinalNoiseMultiplier, FinalSamplingRate
	// and FinalSteps on the whole training set (0 when nothing was
	// selected).
	SelectionShare       float64 `json:"selection_share,omitempty"`
	FinalNoiseMultiplier float64 `json:"final_noise_multiplier,omitempty"`
	FinalSamplingRate    float64 `json:"final_sampling_rate,omitempty"`
	FinalSteps           int     `json:"final_steps,omitempty"`
	// NothingSelected says the selection chose nothing (K = 0, or every
	// run failed) and the final run trained the default among the
	// candidates (TuneSpec.IncludeDefault with a SelectionShare): no
	// validation score is released.
	NothingSelected bool `json:"nothing_selected,omitempty"`
	// Subsample is TuneSpec.Subsample: the selection ran on a Poisson
	// tuning subset of this ratio, and SubsampleRule says how its
	// settings carried over to the final run.
	Subsample     float64 `json:"subsample,omitempty"`
	SubsampleRule string  `json:"subsample_rule,omitempty"`
	// EpsilonComponents are the parts of the ledger, each with its ε
	// alone at Delta: for a network with private data normalisation
	// first the tuning's one "data normalisation" (estimated once before
	// the runs and used by every run and the final run), then "selection"
	// (the tuner's event; without a selection share the released model is
	// the selected run's, so it is the whole beside the normalisation),
	// and with a selection share "final run". They do not add up to
	// Epsilon: the total is the RDP composition of the parts converted to
	// (ε, δ) once, which is less than the sum of the parts' ε.
	EpsilonComponents []tuning.EpsilonComponent `json:"epsilon_components,omitempty"`
	Ledger            accounting.Ledger         `json:"ledger"`
}

// XiangEpsilon is the ε at r's δ of Xiang et al.'s Algorithm 3 (the
// xiang-o accountant, tuning.XiangEvent) for a report's K DP-SGD runs and
// selection at its noise multiplier — an APPROXIMATION, not a proved bound,
// and without the private scores' noise — for comparison beside the proved
// ε.
func XiangEpsilon(r *TuneReport) (float64, error) {
	ev := tuning.XiangEvent(accounting.DPSGD(r.BaseNoiseMultiplier, r.SamplingRate, r.Steps), r.Repetitions)
	g, err := tuning.XiangAccountant().Epsilon(ev, r.Delta)
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

// fixed is the learning rate and clipping norm of every run whose
// candidate has none: the built-in network's own (NetworkDefaults), or
// DefaultLearningRate and 1. Under automatic clipping the clipping norm is
// 1 (its sensitivity) and the network's η at C stands as η·C.
func (s TuneSpec) fixed() (lr, clip float64) {
	if d, ok := NetworkDefaultsOn(s.Data.Arch.Spec, s.Data.Name); ok {
		if s.Clipping == dpsgd.AutomaticClipping {
			return autoClipLearningRate(d.LearningRate, d.ClipNorm), 1
		}
		return d.LearningRate, d.ClipNorm
	}
	return DefaultLearningRate, 1
}

// fixedReport is TuneReport.Fixed: the network's own settings that stand
// for the dimensions s.Space leaves out; nil for a network without them.
func (s TuneSpec) fixedReport() map[string]float64 {
	if _, ok := NetworkDefaultsOn(s.Data.Arch.Spec, s.Data.Name); !ok {
		return nil
	}
	return s.fixedUsed()
}

// Tune runs the tuner s.Tuner and releases only what its guarantee covers:
// the selected hyperparameters, the model trained with them, its released
// score and test accuracy, and the ledger — never the number of runs or the
// other runs' scores, which go to the NotPrivateDiagnostics when asked for.
// A tuning.Runner tunes around whole DP-SGD runs (tuning.DPSGDTrainer) on a
// keyed private validation split or public validation data; a
// tuning.Partitioned tuner gets the training data cut into keyed disjoint
// parts (see tunePartitioned); a tuning.Federated tuner serves its job to
// clients that hold the data, over s.Federation (tuneFederated), with no
// NotPrivateDiagnostics.
//
// The whole tuning's cost, the tuner's Event, is known before it starts:
// the budget file, if any, is charged with it before the data is read. A
// refused request is an error wrapping ErrInvalid. Once the data is touched
// the release is always returned with the error: cancelled (ctx's error;
// nothing but the ledger is released) or failed (Release.Failed) — except
// when the budget file could not record the spending (an error wrapping
// ErrUncommitted): then nothing is returned but the error, and the worst
// case stays charged.
func Tune(ctx context.Context, s TuneSpec) (*Release, *NotPrivateDiagnostics, error) {
	s, err := s.withPreset()
	if err != nil {
		return nil, nil, err
	}
	if tu, err := tuning.Lookup(s.Tuner); err == nil {
		if fed, ok := tu.(tuning.Federated); ok {
			if s.IncludeDefault || s.SelectionShare != 0 || s.Subsample != 0 {
				if err := s.checkShare(); err != nil {
					return nil, nil, err
				}
				return nil, nil, invalidf("the %s tuner takes neither the default among its candidates, nor a selection share, nor a tuning subset", s.Tuner)
			}
			if s.Clipping != dpsgd.FlatClipping || s.AutoClipGamma != 0 {
				return nil, nil, invalidf("the %s tuner clips with its clipping norm option only: automatic clipping is not built for its final training", s.Tuner)
			}
			return withInput(s.Data)(s.tuneFederated(ctx, fed))
		}
	}
	return withInput(s.Data)(withheld(tuneRelease(ctx, s)))
}

// CheckTune checks s and calibrates its noise as Tune would, without
// reading data, opening a runner or charging a budget: the σ of each run
// (a partitioned tuner: of the final run), or an error wrapping ErrInvalid.
func CheckTune(ctx context.Context, s TuneSpec) (float64, error) {
	s, err := s.withPreset()
	if err != nil {
		return 0, err
	}
	p, err := s.plan(ctx)
	if err != nil {
		return 0, err
	}
	return p.trainer.NoiseMultiplier, nil
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

// TunerInfo describes a registered tuner for a command line: its name, one
// line of help, its own options (flags), the common settings it reads,
// whether it trains on disjoint parts of the data (its progress counts part
// runs), and whether clients that each hold a share of the data run it
// (tuning.Federated: Tune serves it over a Federation).
type TunerInfo struct {
	Name, Summary string
	// Example is the tuner's example settings for help text, "" for none
	// (tuning.Exampler).
	Example     string
	Options     []tuning.Option
	Uses        tuning.Uses
	Partitioned bool
	Federated   bool
	// Preset says the tuner fixes the tuning's other settings
	// (tuning.Presetter): the flags that set them are refused.
	Preset bool
}

// Tuners describes the registered tuners, in registration order.
func Tuners() []TunerInfo {
	var out []TunerInfo
	for _, t := range tuning.Tuners() {
		_, parts := t.(tuning.Partitioned)
		_, fed := t.(tuning.Federated)
		_, preset := t.(tuning.Presetter)
		info := TunerInfo{Name: t.Name(), Summary: t.Summary(), Options: t.Options(), Uses: t.Uses(), Partitioned: parts, Federated: fed, Preset: preset}
		if e, ok := t.(tuning.Exampler); ok {
			info.Example = e.Example()
		}
		out = append(out, info)
	}
	return out
}
