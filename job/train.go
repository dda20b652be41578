package job

import (
	"context"
	"math"
	"slices"
	"strings"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/model/features"
	"github.com/dptune/dptune/privacy/accounting"
)

// Default learning rates and momenta, chosen by the sweep described in
// docs/guide/train.md ("The CLI's default learning rates"):
// DP-SGD with C = 1 takes plain SGD at η = 0.5 (also the learning rate of a
// tuning whose space has no learning-rate dimension); non-private training
// (unclipped gradients, no noise) takes η = 0.02 with momentum 0.9.
const (
	DefaultLearningRate           = 0.5
	DefaultMomentum               = 0.0
	DefaultNonPrivateLearningRate = 0.02
	DefaultNonPrivateMomentum     = 0.9
)

// TrainDefaults are a built-in network's own DP-SGD settings on a dataset,
// which `dptune train` uses for every flag not given, with Source saying
// where they come from. For Tramèr & Boneh's ScatterNet models on MNIST
// (all with momentum 0.9 and C = 0.1, as theirs) they were chosen at
// ε = 3, δ = 1e-5 on a validation split of MNIST's training set (the first
// 50,000 examples trained, the last 10,000 scored; never the test set), by
// the mean validation accuracy of seeds 1, 2, 3:
//
//   - scatter-linear-mnist: batch 4096, 40 epochs, η = 4 (98.67%), over
//     batch 8192, 60 epochs, η = 4 (98.62%) and the same network with
//     group normalisation in 27 groups instead of data normalisation
//     (98.60%); one seed each: batch 4096 with η = 8 for 40 epochs
//     (Tramèr & Boneh's, 98.49%) or 60 (98.33%), batch 8192 with η = 8
//     (98.47%) or 80 epochs (98.66%).
//   - scatter-cnn-mnist: batch 2048, 40 epochs, η = 2 (98.54%), over
//     batch 8192, 60 epochs, η = 4 (98.50%); one seed each: batch 1024,
//     η = 1 (Tramèr & Boneh's) for 25 epochs (98.53%) or 40 (98.59%).
//   - the CIFAR-10 networks take Tramèr & Boneh's settings (their code's
//     README): batch 8192, 60 epochs, η = 4. On a validation split of
//     CIFAR-10 (the first 40,000 training images trained, the last 10,000
//     scored; seed 1) they beat η = 2 or 8, 40 or 100 epochs and batch
//     4096 for scatter-linear-cifar10 (65.26% against 64.00–64.81%); the
//     CNN was not tuned.
//   - on Fashion-MNIST every MNIST network takes Tramèr & Boneh's
//     Fashion-MNIST settings (their code's README, ftramer/Handcrafted-DP:
//     momentum 0.9, C = 0.1, 40 epochs; ScatterNet + linear batch 8192,
//     η = 16; the end-to-end CNN and ScatterNet + CNN batch 2048, η = 4),
//     unchanged: their ScatterNet models normalise with group
//     normalisation in 27 groups where dptune's built-in ones normalise
//     the data privately, and Source says so.
type TrainDefaults struct {
	BatchSize    int
	Epochs       int
	LearningRate float64
	Momentum     float64
	ClipNorm     float64
	// Source says where the settings come from, and how the network
	// differs from the source's, for reports and labels.
	Source string
	// ChosenOn is the dataset on whose training data dptune itself chose
	// these settings (not accounted: the sweep looked at the private
	// data), "" for settings a third party published (Tramèr & Boneh's),
	// which are treated as public, as the architecture is. A tuning of
	// that dataset refuses them as its default candidate: the tuners'
	// guarantees need every candidate fixed before the data is read
	// (TuneSpec.IncludeDefault).
	ChosenOn string `json:"chosen_on,omitempty"`
	// Published, for settings dptune chose (ChosenOn), is the third
	// party's published settings they were chosen around: a tuning of
	// ChosenOn's data, which refuses the chosen ones as its default
	// candidate, takes these instead.
	Published *TrainDefaults `json:"published,omitempty"`
}

// tbMNISTLinear and tbMNISTCNN are Tramèr & Boneh's published MNIST
// settings for ScatterNet + linear and ScatterNet + CNN (their code's
// README, ftramer/Handcrafted-DP), whose networks normalise with group
// normalisation where dptune's built-in ones normalise the data privately.
var (
	tbMNISTLinear = &TrainDefaults{BatchSize: 4096, Epochs: 40, LearningRate: 8, Momentum: 0.9, ClipNorm: 0.1,
		Source: "Tramèr & Boneh's MNIST ScatterNet + linear settings (their code's README), whose network normalises with group normalisation, not private data normalisation"}
	tbMNISTCNN = &TrainDefaults{BatchSize: 1024, Epochs: 25, LearningRate: 1, Momentum: 0.9, ClipNorm: 0.1,
		Source: "Tramèr & Boneh's MNIST ScatterNet + CNN settings (their code's README), whose network normalises with group normalisation, not private data normalisation"}
)

// tbFashion names Tramèr & Boneh's Fashion-MNIST settings.
const tbFashion = "Tramèr & Boneh's Fashion-MNIST settings (their code's README)"

// networkDefaults are the built-in networks that carry their own settings,
// by network and dataset.
var networkDefaults = map[string]map[string]TrainDefaults{
	model.ScatterLinearMNIST.Name: {
		"mnist":         {BatchSize: 4096, Epochs: 40, LearningRate: 4, Momentum: 0.9, ClipNorm: 0.1, Source: "chosen on a validation split of MNIST's training data (not accounted) around Tramèr & Boneh's MNIST settings", ChosenOn: "mnist", Published: tbMNISTLinear},
		"fashion-mnist": {BatchSize: 8192, Epochs: 40, LearningRate: 16, Momentum: 0.9, ClipNorm: 0.1, Source: tbFashion + " for ScatterNet + linear, whose network normalises with group normalisation in 27 groups, not private data normalisation"},
	},
	model.ScatterGNLinearMNIST.Name: {
		"fashion-mnist": {BatchSize: 8192, Epochs: 40, LearningRate: 16, Momentum: 0.9, ClipNorm: 0.1, Source: tbFashion + " for ScatterNet + linear, with their network (this group norm also learns a per-channel scale and shift)"},
	},
	model.ScatterCNNMNIST.Name: {
		"mnist":         {BatchSize: 2048, Epochs: 40, LearningRate: 2, Momentum: 0.9, ClipNorm: 0.1, Source: "chosen on a validation split of MNIST's training data (not accounted) around Tramèr & Boneh's MNIST settings", ChosenOn: "mnist", Published: tbMNISTCNN},
		"fashion-mnist": {BatchSize: 2048, Epochs: 40, LearningRate: 4, Momentum: 0.9, ClipNorm: 0.1, Source: tbFashion + " for ScatterNet + CNN, whose network normalises with group normalisation in 27 groups, not private data normalisation"},
	},
	model.TBMNIST.Name: {
		"fashion-mnist": {BatchSize: 2048, Epochs: 40, LearningRate: 4, Momentum: 0.9, ClipNorm: 0.1, Source: tbFashion + " for the end-to-end CNN"},
	},
	model.ScatterLinearCIFAR10.Name: {
		"cifar10": {BatchSize: 8192, Epochs: 60, LearningRate: 4, Momentum: 0.9, ClipNorm: 0.1, Source: "Tramèr & Boneh's CIFAR-10 settings (their code's README)"},
	},
	model.ScatterCNNCIFAR10.Name: {
		"cifar10": {BatchSize: 8192, Epochs: 60, LearningRate: 4, Momentum: 0.9, ClipNorm: 0.1, Source: "Tramèr & Boneh's CIFAR-10 settings (their code's README)"},
	},
}

// NetworkDefaults returns the training settings of the built-in network
// spec is (same name and layers) on the dataset it was made for (the
// dataset its name ends with), and false for any other network or one
// without settings there.
func NetworkDefaults(spec model.Spec) (TrainDefaults, bool) {
	return NetworkDefaultsOn(spec, madeFor(spec))
}

// NetworkDefaultsOn returns the training settings of the built-in network
// spec is (same name and layers) on dataset: its settings published for
// that dataset, else those of the dataset it was made for (an image folder
// of MNIST-like digits trains as MNIST does); false for any other network
// or when there are none.
func NetworkDefaultsOn(spec model.Spec, dataset string) (TrainDefaults, bool) {
	byData, ok := networkDefaults[spec.Name]
	if !ok {
		return TrainDefaults{}, false
	}
	b, err := model.SpecByName(spec.Name)
	if err != nil || !slices.Equal(b.Layers, spec.Layers) {
		return TrainDefaults{}, false
	}
	if d, ok := byData[dataset]; ok {
		return d, true
	}
	d, ok := byData[madeFor(spec)]
	return d, ok
}

// madeFor is the registered dataset a built-in network's name ends with
// ("scatter-linear-mnist" → "mnist"), or "".
func madeFor(spec model.Spec) string {
	for _, name := range data.Names() {
		if strings.HasSuffix(spec.Name, "-"+name) {
			return name
		}
	}
	return ""
}

// TrainSpec is one DP-SGD training run (Abadi et al. 2016: Poisson sampling
// at rate q = BatchSize / Data.NominalN, per-example clipping to ClipNorm,
// Gaussian noise of NoiseMultiplier × ClipNorm, divided by the nominal
// expected batch size), or with automatic clipping (Bu et al. 2023, AUTO-S:
// each example's gradient g scaled to g/(‖g‖ + γ), norm below 1, and noise
// of NoiseMultiplier × 1; dpsgd.AutoClipFactor).
type TrainSpec struct {
	Data Source
	// Epsilon (nats) and Delta are the target of the whole run: the noise
	// multiplier is calibrated to meet them (never above Epsilon), unless
	// NoiseMultiplier is set.
	Epsilon, Delta  float64
	NoiseMultiplier float64        // σ; 0: calibrate from Epsilon
	ClipNorm        float64        // C of flat clipping; 0 under automatic clipping
	Clipping        dpsgd.Clipping // dpsgd.FlatClipping (the zero value: to ClipNorm) or dpsgd.AutomaticClipping: sensitivity 1, σ and ε as flat clipping's at C = 1
	AutoClipGamma   float64        // automatic clipping's stability constant γ > 0 (dpsgd.DefaultAutoClipGamma: Bu et al.'s 0.01); 0 under flat clipping
	BatchSize       int            // expected batch size qN
	Epochs          int            // one epoch is ⌈1/q⌉ steps
	LearningRate    float64
	Momentum        float64
	Schedule        dpsgd.Schedule // of the learning rate; zero: constant
	EMADecay        float64        // > 0: release the moving average of the iterates (dpsgd.Config.EMADecay)
	// NonPrivate trains with plain SGD: no clipping, no noise, ε = ∞.
	NonPrivate bool
	// Accountant is "rdp" (default) or "pld" (tighter, slower).
	Accountant string
	// Seed makes the run reproducible, with fast noise; nil: crypto/rand
	// and secure noise.
	Seed *uint64
	// Budget is the curator's budget file ("" for none): the run is refused
	// if its worst case does not fit, and recorded in it.
	Budget string
	// Label says what the run is, in the budget file.
	Label string
	// Progress, if not nil, is called after every step (curator-side).
	Progress func(TrainProgress)
	// Warn, if not nil, receives curator-side notes (e.g. a loaded count
	// that differs from the nominal size).
	Warn func(string)
	// Started, if not nil, is called once the data is read, the noise
	// calibrated and the budget charged, before the first step.
	Started func(dpsgd.Config)

	// arrange, if not nil, replaces the sets the network reads (images, or
	// a front end's features) before training: AuditOneRun adds its
	// canaries to the training set and takes them out of the test set.
	arrange func(train, test *data.Dataset) (*data.Dataset, *data.Dataset, error)
	// engine, if not nil, is the engine the run trains with (an audit's
	// canary hook), made for the freshly initialised net.
	engine func(net *model.Net, cfg dpsgd.Config) (dpsgd.Engine, error)

	// Checkpoint, if not "", is the directory where the run keeps its
	// checkpoint (CheckpointPath(OUT): OUT-curator/checkpoint, never inside
	// the release directory), written atomically at the end of every epoch,
	// authenticated under the curator's key (CheckpointKeyFile) and removed
	// once the run finishes, so that a killed or failed run loses at most
	// one epoch (ResumeTrain). The run holds the directory's lock: a second
	// process training into it is refused.
	Checkpoint string
	// resume is the authenticated checkpoint a resumed run continues from
	// (ResumeTrain), checkpointKey the key its checkpoints are written
	// under.
	resume        *checkpoint
	checkpointKey []byte
}

// TrainProgress is reported after every step of a training run.
type TrainProgress struct {
	Step, Steps   int // steps done, steps planned
	Epoch, Epochs int // the current epoch, 1-based
	StepInEpoch   int // 1-based
	StepsPerEpoch int
	Loss          float64 // this step's mean training loss: NOT PRIVATE
	// EpsilonBefore is the ε spent before this epoch began (nil when not
	// private or unbounded); computed once per epoch.
	EpsilonBefore *float64
}

// TrainReport is report.json of a training run: its public settings, the
// guarantee, the test metrics and the ledger.
type TrainReport struct {
	Dataset         string   `json:"dataset"`
	NominalSize     int      `json:"nominal_size"` // the public training-set size q is computed from
	Private         bool     `json:"private"`
	Epsilon         *float64 `json:"epsilon"` // null when not private or unbounded; the full planned run's when interrupted early
	EpsilonNote     string   `json:"epsilon_note,omitempty"`
	Delta           float64  `json:"delta"`
	Accountant      string   `json:"accountant"`
	RDPOrder        float64  `json:"rdp_order,omitempty"`
	NoiseMultiplier float64  `json:"noise_multiplier"`
	// NormNoiseMultiplier is the noise multiplier of the private data
	// normalisation of a network with a datanorm layer (its
	// privacy-spending stage, dpsgd.Stages; 0: none), and NormEpsilon its
	// ε alone at Delta under Accountant (its share of the budget, as
	// Tramèr & Boneh report ε_norm); the ledger composes it with the
	// DP-SGD steps.
	NormNoiseMultiplier float64           `json:"norm_noise_multiplier,omitempty"`
	NormEpsilon         *float64          `json:"norm_epsilon,omitempty"`
	ClipNorm            float64           `json:"clip_norm"`                 // flat clipping's C; 1 under automatic clipping, the bound the noise is scaled to
	Clipping            string            `json:"clipping,omitempty"`        // "automatic" (Bu et al. 2023, AUTO-S: g/(‖g‖ + γ)); absent under flat clipping
	AutoClipGamma       float64           `json:"auto_clip_gamma,omitempty"` // automatic clipping's stability constant γ
	SamplingRate        float64           `json:"sampling_rate"`
	BatchSize           int               `json:"batch_size"`
	Steps               int               `json:"steps"`
	PlannedSteps        int               `json:"planned_steps"`
	Epochs              float64           `json:"epochs"`
	LearningRate        float64           `json:"learning_rate"`
	Momentum            float64           `json:"momentum"`
	Schedule            string            `json:"lr_schedule"`
	EMADecay            float64           `json:"ema_decay"`
	Seeded              bool              `json:"seeded"` // the seed itself is never written: it would undo the guarantee
	SecureNoise         bool              `json:"secure_noise"`
	TestAccuracy        *float64          `json:"test_accuracy"`
	TestLoss            *float64          `json:"test_loss"`
	Interrupted         bool              `json:"interrupted"`
	Failed              string            `json:"failed,omitempty"`
	Ledger              accounting.Ledger `json:"ledger"`
}

// plan is a validated TrainSpec: the DP-SGD configuration and accountant.
func (s TrainSpec) plan() (dpsgd.Config, accounting.Accountant, error) {
	var cfg dpsgd.Config
	if err := s.Data.Check(); err != nil {
		return cfg, nil, err
	}
	acc, err := Accountant(s.Accountant, false)
	if err != nil {
		return cfg, nil, err
	}
	switch {
	case s.BatchSize < 1 || s.BatchSize > s.Data.NominalN:
		return cfg, nil, invalidf("batch size %d is outside [1, %d], the nominal size of %s", s.BatchSize, s.Data.NominalN, s.Data.Name)
	case !(s.LearningRate > 0) || math.IsInf(s.LearningRate, 1):
		return cfg, nil, invalidf("learning rate %v must be positive and finite", s.LearningRate)
	case !(s.Momentum >= 0 && s.Momentum < 1):
		return cfg, nil, invalidf("momentum %v is outside [0, 1)", s.Momentum)
	case s.Schedule != dpsgd.ConstantLR && s.Schedule != dpsgd.CosineLR:
		return cfg, nil, invalidf("unknown learning-rate schedule %v", s.Schedule)
	case !(s.EMADecay >= 0 && s.EMADecay < 1):
		return cfg, nil, invalidf("EMA decay %v is outside [0, 1)", s.EMADecay)
	}
	q := float64(s.BatchSize) / float64(s.Data.NominalN)
	if err := dpsgd.CheckEpochs(s.Epochs, q); err != nil {
		return cfg, nil, invalidf("epochs %d: %v", s.Epochs, err)
	}
	cfg = dpsgd.Config{SamplingRate: q, ExpectedBatchSize: float64(s.BatchSize), Steps: dpsgd.StepsForEpochs(s.Epochs, q),
		LearningRate: s.LearningRate, Momentum: s.Momentum, Schedule: s.Schedule, EMADecay: s.EMADecay, NonPrivate: s.NonPrivate, Seed: s.Seed}
	if s.NonPrivate {
		if s.NoiseMultiplier != 0 {
			return cfg, nil, invalidf("non-private training takes no noise multiplier")
		}
		if s.Clipping != dpsgd.FlatClipping || s.AutoClipGamma != 0 {
			return cfg, nil, invalidf("non-private training clips nothing: it takes no clipping rule")
		}
		return cfg, acc, nil
	}
	if err := accounting.CheckDelta(s.Delta); err != nil {
		return cfg, nil, invalidf("delta: %v", err)
	}
	if cfg.ClipNorm, err = checkClipping(s.Clipping, s.ClipNorm, s.AutoClipGamma); err != nil {
		return cfg, nil, err
	}
	cfg.Clipping, cfg.AutoClipGamma, cfg.NoiseMultiplier = s.Clipping, s.AutoClipGamma, s.NoiseMultiplier
	if s.NoiseMultiplier != 0 {
		if !(s.NoiseMultiplier > 0 && s.NoiseMultiplier <= accounting.MaxNoiseMultiplier) {
			return cfg, nil, invalidf("noise multiplier %.4g is outside (0, %g]", s.NoiseMultiplier, accounting.MaxNoiseMultiplier)
		}
	} else if err := accounting.CheckEpsilon(s.Epsilon); err != nil {
		return cfg, nil, invalidf("epsilon: %v", err)
	} else if err := checkStagesShare(s.Data.Arch, cfg, acc, s.Epsilon, s.Delta); err != nil {
		return cfg, nil, err
	}
	return cfg, acc, nil
}

// checkClipping checks a run's clipping rule — flat clipping to clip > 0
// with no stability constant, or automatic clipping with stability
// constant gamma > 0 and no clipping norm (0) — and returns the
// dpsgd.Config's ClipNorm: clip, or 1 under automatic clipping (its
// sensitivity). Its errors wrap ErrInvalid.
func checkClipping(c dpsgd.Clipping, clip, gamma float64) (float64, error) {
	switch c {
	case dpsgd.FlatClipping:
		if gamma != 0 {
			return 0, invalidf("flat clipping takes no stability constant (γ = %v is automatic clipping's)", gamma)
		}
		if !(clip > 0) || math.IsInf(clip, 1) {
			return 0, invalidf("clipping norm %v must be positive and finite", clip)
		}
		return clip, nil
	case dpsgd.AutomaticClipping:
		if clip != 0 {
			return 0, invalidf("automatic clipping takes no clipping norm (have %v): every clipped gradient has norm below 1, its sensitivity", clip)
		}
		if err := dpsgd.CheckAutoClipGamma(gamma); err != nil {
			return 0, invalid(err)
		}
		return 1, nil
	}
	return 0, invalidf("unknown clipping %v", c)
}

// clippingFacts are what a release states of cfg's clipping beside its
// clipping norm: "automatic" and γ under automatic clipping, nothing (""
// and 0) under flat clipping, whose releases stay as they were.
func clippingFacts(cfg dpsgd.Config) (string, float64) {
	if cfg.Clipping == dpsgd.AutomaticClipping {
		return cfg.Clipping.String(), cfg.AutoClipGamma
	}
	return "", 0
}

// checkStagesShare refuses privacy-spending stages (dpsgd.Stages: a
// datanorm layer's estimate) of a private run of cfg on arch that alone
// spend the whole target ε at delta under acc: no DP-SGD noise multiplier
// could then meet it.
func checkStagesShare(arch model.Arch, cfg dpsgd.Config, acc accounting.Accountant, eps, delta float64) error {
	e := dpsgd.StagesEvent(arch, cfg)
	if e == nil {
		return nil
	}
	st := dpsgd.OwnStages(arch, cfg)[0]
	g, err := acc.Epsilon(e, delta)
	if err != nil {
		return invalidf("%s: %v", st.Mechanism.Label(), err)
	}
	if g.Epsilon >= eps {
		return invalidf("the %s layer's noise multiplier %g alone spends ε = %.4g of the target ε = %g at δ = %g: raise its noise_multiplier", st.Type, st.Mechanism.Sigma(), g.Epsilon, eps, delta)
	}
	return nil
}

// trainLedger is the ledger of a run: the entries of its privacy-spending
// stages (stages: dpsgd.PlannedStages or dpsgd.Result.Stages, such as its
// data normalisation), then its DP-SGD steps under label.
func trainLedger(label string, stages accounting.Ledger, steps accounting.Event) accounting.Ledger {
	l := accounting.Ledger{Entries: slices.Clone(stages.Entries)}
	l.Add(label, steps)
	return l
}

// plannedLedger is trainLedger of cfg's whole planned run on arch.
func plannedLedger(label string, arch model.Arch, cfg dpsgd.Config) accounting.Ledger {
	return trainLedger(label, dpsgd.PlannedStages(arch, cfg), dpsgd.StepsEvent(cfg))
}

// Train trains s.Data's network with DP-SGD (or plain SGD when NonPrivate)
// and releases the model, its test metrics and the ledger. Every size it
// uses is nominal. The noise multiplier is calibrated before the data is
// read when that is quick (RDP), else right after reading it (PLD), and the
// budget file, if any, is charged with the run's worst case at the same
// point — so a run the budget cannot afford is refused before its data is
// read under RDP.
//
// A refused request is an error wrapping ErrInvalid, returned before any
// work. Once the data is touched the release is always returned, with the
// error: cancelled (ctx's error; the model so far is released, marked
// interrupted), or failed (Release.Failed: only the ledger). A private run
// cancelled before its last step releases, and is charged, the ledger and
// ε of the whole planned run (TrainReport.EpsilonNote says so): the
// curator may have stopped it on the non-private training loss shown by
// Progress, so the stopping time is not independent of the data.
// Except when the budget file could not record the spending (an error
// wrapping ErrUncommitted): then nothing is returned but the error, and
// the worst case stays charged.
func Train(ctx context.Context, s TrainSpec) (*Release, *NotPrivateDiagnostics, error) {
	return withInput(s.Data)(withheld(trainRelease(ctx, s)))
}

// progress turns dpsgd's per-step progress into TrainProgress, with the ε
// spent before each epoch (and before a resumed run's first step): that of
// spent(steps done).
func (s TrainSpec) progress(acc accounting.Accountant, cfg dpsgd.Config, spent func(steps int) accounting.Event) func(dpsgd.Progress) {
	if s.Progress == nil {
		return nil
	}
	perEpoch := cfg.Steps / s.Epochs
	var before *float64
	first := true
	return func(p dpsgd.Progress) {
		inEpoch := (p.Step-1)%perEpoch + 1
		if (inEpoch == 1 || first) && !cfg.NonPrivate {
			g, err := acc.Epsilon(spent(p.Step-1), s.Delta)
			before, _, _ = finiteEpsilon(g, err)
		}
		first = false
		s.Progress(TrainProgress{Step: p.Step, Steps: p.Steps, Epoch: (p.Step-1)/perEpoch + 1, Epochs: s.Epochs,
			StepInEpoch: inEpoch, StepsPerEpoch: perEpoch, Loss: p.Loss, EpsilonBefore: before})
	}
}

// Evaluate returns net's accuracy and mean cross-entropy on the examples x
// (shape [N, C, H, W], row-major) with labels y (dpsgd.Evaluate); a test
// set is public, so its metrics are released without noise. It stops with
// ctx's error when ctx is cancelled.
//
// For a network with a fixed front end (a scatter first layer) x may hold
// the images, whose features are then computed first, or the features.
func Evaluate(ctx context.Context, net *model.Net, x []float32, y []uint8) (model.Metrics, error) {
	if f, ok := net.Arch.FrontEnd(); ok && len(x) == len(y)*f.InSize && f.InSize != f.OutSize {
		a := net.Arch
		feat, err := features.Compute(ctx, f, &data.Dataset{Name: "evaluation set", X: x, Y: y, N: len(y), C: a.C, H: a.H, W: a.W, Classes: a.Classes}, nil)
		if err != nil {
			return model.Metrics{}, err
		}
		x = feat.X
	}
	return dpsgd.Evaluate(ctx, net, x, y)
}
