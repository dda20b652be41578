package dpsgd

import (
	"fmt"
	"math"

	"github.com/dptune/dptune/internal/randsrc"
)

// Config is one DP-SGD run's hyperparameters.
type Config struct {
	// NoiseMultiplier σ: the noise added to the clipped sum is N(0, σ²C²) per coordinate.
	NoiseMultiplier float64
	// ClipNorm C: every example's gradient is clipped to L2 norm C over all
	// parameters. Under AutomaticClipping it must be 1: the bound of every
	// clipped gradient's norm, the sum's sensitivity (see AutoClipFactor).
	ClipNorm float64
	// Clipping is how each example's gradient is bounded: FlatClipping
	// (the zero value) to ClipNorm, or AutomaticClipping, g/(‖g‖ + γ) with
	// γ = AutoClipGamma (Bu et al. 2023, AUTO-S; see AutoClipFactor).
	Clipping Clipping
	// AutoClipGamma is automatic clipping's stability constant γ > 0
	// (DefaultAutoClipGamma = 0.01 is the paper's); 0 under flat clipping.
	AutoClipGamma float64
	// SamplingRate q ∈ (0, 1]: each example is in a step's batch with probability q;
	// the expected batch size is qN.
	SamplingRate float64
	// Steps is the number of DP-SGD steps (see StepsForEpochs), at most
	// MaxSteps.
	Steps int
	// ExpectedBatchSize is the divisor of the noisy sum, qN with N the
	// training set's nominal size: a public constant fixed before training,
	// never the realised batch size nor a count of the private data (under
	// add/remove adjacency the dataset's size is itself private). Zero means
	// q·len(training set), which is right only when that size is public.
	ExpectedBatchSize float64
	// LearningRate η > 0 and Momentum μ ∈ [0, 1) of SGD.
	LearningRate, Momentum float64
	// Schedule is how the learning rate changes over the steps; the zero
	// value keeps it at LearningRate.
	Schedule Schedule
	// LRDecay γ ∈ (0, 1], if positive, also multiplies the learning rate by
	// γ per epoch: step t runs at γ^{q·t} times the scheduled rate (PyTorch's
	// ExponentialLR stepped per epoch, made continuous). Zero: no decay.
	LRDecay float64
	// EMADecay d ∈ [0, 1), if positive, makes the trained parameters an
	// exponential moving average of the iterates, θ̄_t = d_t·θ̄_{t−1} +
	// (1 − d_t)·θ_t with d_t = min(d, (1 + t)/(10 + t)) (De et al. 2022,
	// "Unlocking High-Accuracy Differentially Private Image Classification
	// through Scale", §3.2; TensorFlow's ExponentialMovingAverage with
	// num_updates). Post-processing of the noisy iterates: no privacy cost.
	EMADecay float64
	// Seed makes the run reproducible: Poisson sampling and noise come from
	// ChaCha8 streams derived from it. Nil: both are keyed from crypto/rand.
	Seed *uint64
	// Key, if not nil, is the run's secret 256-bit key (a durable runner's
	// job: randsrc.Key): Poisson sampling and noise come from its streams
	// instead, and Seed is ignored.
	Key *randsrc.Key
	// Noise chooses how the Gaussian noise is drawn; the zero value
	// (NoiseAuto) is secure noise when Seed is nil and fast noise when seeded.
	Noise NoiseMode
	// Released, if not nil, is the statistics of the network's
	// privacy-spending stages (Stages: a datanorm layer's) estimated once
	// and released before the run, counted once by whoever released them
	// (as a tuning does for all its runs): Train copies them into the
	// layers' buffers and estimates nothing, and PlannedEvent counts only
	// the steps. Nil: Train estimates each stage itself before the first
	// step, and PlannedEvent counts it.
	Released *Released
	// NonPrivate trains without noise (NoiseMultiplier must be 0): plain SGD
	// on Poisson-sampled batches, or, with ClipNorm > 0, per-example clipping
	// without noise (as the doubling tuner's partition runs use, so that the
	// clipping norm still matters). The event is NonPrivate.
	NonPrivate bool
	// Resume, if not nil, continues a run from the State a Checkpoint
	// call saved: its step, parameters, buffers, optimiser state and, for
	// a seeded or keyed run, its random streams, so that the run ends bit
	// for bit as one never stopped (an unseeded run draws fresh streams
	// from crypto/rand). The data normalisation is not estimated again.
	Resume *State
	// Checkpoint, if not nil, is called with the run's State after every
	// CheckpointEvery steps (and never after the last), and when ctx stops
	// the run between two steps (so that the state holds exactly the steps
	// taken, and a resume never repeats one); the State's slices
	// are the run's own, valid during the call only. An error stops the
	// run with it.
	Checkpoint      func(State) error
	CheckpointEvery int
}

// State is a DP-SGD run between two steps: everything Train needs to
// continue it (Config.Resume). It holds the private run's internals —
// parameters mid-training and, for a seeded or keyed run, its streams —
// and is for the curator only.
type State struct {
	Step     int       `json:"step"` // steps done
	Params   []float32 `json:"-"`
	Buffers  []float32 `json:"-"`
	Velocity []float32 `json:"-"`
	EMA      []float32 `json:"-"` // nil without EMADecay
	// Sampling and Noise are the ChaCha8 states of the batch sampling and
	// the noise (math/rand/v2's MarshalBinary), nil for an unseeded run.
	Sampling []byte `json:"sampling,omitempty"`
	Noise    []byte `json:"noise,omitempty"`
	// Normalised records that the privacy-spending stages' estimates ran
	// (Stages: the data normalisation; their events are the run's).
	Normalised bool    `json:"normalised"`
	Batches    float64 `json:"batches"` // sum of the realised batch sizes so far (curator-side)
}

// Schedule is a learning-rate schedule: the step size of step t of T.
type Schedule int

const (
	// ConstantLR keeps η at every step.
	ConstantLR Schedule = iota
	// CosineLR decays η to 0 along half a cosine, η_t = η·(1 + cos(πt/T))/2
	// for steps t = 0…T−1 (Loshchilov & Hutter 2017, "SGDR", eq. (5)
	// without restarts; torch.optim.lr_scheduler.CosineAnnealingLR).
	CosineLR
)

// ParseSchedule reads a schedule's name: "constant" or "cosine".
func ParseSchedule(name string) (Schedule, error) {
	for s := ConstantLR; s <= CosineLR; s++ {
		if s.String() == name {
			return s, nil
		}
	}
	return 0, fmt.Errorf("unknown learning-rate schedule %q (constant or cosine)", name)
}

func (s Schedule) String() string {
	switch s {
	case ConstantLR:
		return "constant"
	case CosineLR:
		return "cosine"
	}
	return fmt.Sprintf("Schedule(%d)", int(s))
}

// Rate is the learning rate of step t (0-based) of steps under s, for base
// rate lr.
func (s Schedule) Rate(lr float64, t, steps int) float64 {
	if s == CosineLR && steps > 0 {
		return lr * (1 + math.Cos(math.Pi*float64(t)/float64(steps))) / 2
	}
	return lr
}

// Clipping is the rule DP-SGD bounds each example's gradient by.
type Clipping int

const (
	// FlatClipping clips each example's gradient g to L2 norm C:
	// g·min(1, C/(‖g‖ + 10⁻⁶)) (Abadi et al. 2016; ClipFactor).
	FlatClipping Clipping = iota
	// AutomaticClipping normalises it: g/(‖g‖ + γ), norm below 1 for every
	// g, so the sum's sensitivity is 1 and the noise is N(0, σ²) — no
	// clipping norm to choose (Bu et al. 2023, AUTO-S; AutoClipFactor).
	AutomaticClipping
)

// ParseClipping reads a clipping rule's name: "flat" or "automatic".
func ParseClipping(name string) (Clipping, error) {
	for c := FlatClipping; c <= AutomaticClipping; c++ {
		if c.String() == name {
			return c, nil
		}
	}
	return 0, fmt.Errorf("unknown clipping %q (flat or automatic)", name)
}

func (c Clipping) String() string {
	switch c {
	case FlatClipping:
		return "flat"
	case AutomaticClipping:
		return "automatic"
	}
	return fmt.Sprintf("Clipping(%d)", int(c))
}

// MinAutoClipGamma is the smallest stability constant automatic clipping
// takes, γ ≥ 10⁻⁶: the factor 1/(‖g‖ + γ) is then at most 10⁶, far inside
// float32, for every gradient including a zero one. (A γ below about
// 3·10⁻³⁹ made a zero gradient's factor +Inf and the batch's sum NaN, so
// that one example decided whether the run diverged: review 45, M1.)
// Bu et al. use γ = 0.01 (DefaultAutoClipGamma); γ far below the gradient
// norms is AUTO-V, g/‖g‖, in all but name.
const MinAutoClipGamma = 1e-6

// CheckAutoClipGamma returns an error unless gamma is a stability constant
// automatic clipping can take: finite and at least MinAutoClipGamma.
func CheckAutoClipGamma(gamma float64) error {
	if !(gamma >= MinAutoClipGamma) || math.IsInf(gamma, 1) {
		return fmt.Errorf("automatic clipping's stability constant γ = %v must be finite and at least %g", gamma, MinAutoClipGamma)
	}
	return nil
}

// Clip is the rule an Engine applies in a run of c: AutoClip(AutoClipGamma)
// under automatic clipping, else FlatClip(ClipNorm), with ClipNorm 0 of a
// non-private run meaning none (+Inf).
func (c Config) Clip() Clip {
	if c.Clipping == AutomaticClipping {
		return AutoClip(c.AutoClipGamma)
	}
	if c.NonPrivate && c.ClipNorm == 0 {
		return FlatClip(math.Inf(1))
	}
	return FlatClip(c.ClipNorm)
}

// NoiseMode says how DP-SGD draws its Gaussian noise.
type NoiseMode int

const (
	// NoiseAuto is NoiseSecure for unseeded runs and NoiseFast for seeded
	// ones (whose noise is recomputable from the seed anyway).
	NoiseAuto NoiseMode = iota
	// NoiseSecure draws each coordinate's noise as the sum of four Gaussian
	// draws from a cryptographically strong generator, divided by two
	// (noise.SecureNormal; Holohan & Braghin 2021, as Opacus's secure_mode),
	// so that the low bits of the noisy sum do not reveal it.
	NoiseSecure
	// NoiseFast draws one NormFloat64 per coordinate: reproducible and
	// cheaper, but open to floating-point attacks on its low bits (Mironov
	// 2012); for seeded experiments.
	NoiseFast
)

// Secure reports whether mode m draws secure noise for a run seeded (or not)
// as seed says.
func (m NoiseMode) Secure(seed *uint64) bool {
	return m == NoiseSecure || (m == NoiseAuto && seed == nil)
}

// MaxSteps is the largest number of steps a run may have (2³⁰): far beyond
// any useful DP-SGD run, and small enough that step counts, epochs and the
// accountants' arithmetic never overflow.
const MaxSteps = 1 << 30

// StepsForEpochs is the number of steps in epochs passes over n examples at
// sampling rate q: epochs·⌈1/q⌉, i.e. ⌈n / expected batch size⌉ steps per
// epoch, as Opacus's Poisson data loader and the reference PyTorch benchmark
// do. Check the inputs with CheckEpochs first: out of its range the result
// is meaningless.
func StepsForEpochs(epochs int, q float64) int {
	return epochs * int(math.Ceil(1/q-1e-9))
}

// CheckEpochs returns an error unless epochs ≥ 1, q ∈ (0, 1] and
// StepsForEpochs(epochs, q) is at most MaxSteps (so that it cannot overflow).
func CheckEpochs(epochs int, q float64) error {
	if !(q > 0 && q <= 1) {
		return fmt.Errorf("sampling rate %v is outside (0, 1]", q)
	}
	if epochs < 1 {
		return fmt.Errorf("epochs %d must be at least 1", epochs)
	}
	if per := math.Ceil(1/q - 1e-9); per*float64(epochs) > MaxSteps {
		return fmt.Errorf("%d epochs at sampling rate %v are %.4g steps, more than the %d allowed", epochs, q, per*float64(epochs), MaxSteps)
	}
	return nil
}

// Validate returns an error describing the first out-of-range field.
func (c Config) Validate() error {
	switch {
	case !(c.SamplingRate > 0 && c.SamplingRate <= 1):
		return fmt.Errorf("sampling rate %v is outside (0, 1]", c.SamplingRate)
	case c.Steps < 0 || c.Steps > MaxSteps:
		return fmt.Errorf("steps %d is outside [0, %d]", c.Steps, MaxSteps)
	case c.ExpectedBatchSize < 0 || math.IsNaN(c.ExpectedBatchSize) || math.IsInf(c.ExpectedBatchSize, 1):
		return fmt.Errorf("expected batch size %v must be positive and finite (or 0: q·N)", c.ExpectedBatchSize)
	case c.Noise < NoiseAuto || c.Noise > NoiseFast:
		return fmt.Errorf("unknown noise mode %d", c.Noise)
	case !(c.LearningRate > 0) || math.IsInf(c.LearningRate, 1):
		return fmt.Errorf("learning rate %v must be positive and finite", c.LearningRate)
	case !(c.Momentum >= 0 && c.Momentum < 1):
		return fmt.Errorf("momentum %v is outside [0, 1)", c.Momentum)
	case c.Schedule < ConstantLR || c.Schedule > CosineLR:
		return fmt.Errorf("unknown learning-rate schedule %d", c.Schedule)
	case !(c.LRDecay >= 0 && c.LRDecay <= 1):
		return fmt.Errorf("learning-rate decay %v is outside (0, 1] (or 0: none)", c.LRDecay)
	case !(c.EMADecay >= 0 && c.EMADecay < 1):
		return fmt.Errorf("EMA decay %v is outside [0, 1)", c.EMADecay)
	}
	if c.Released != nil {
		for _, e := range c.Released.Estimates {
			if e == nil {
				return fmt.Errorf("a released estimate is missing")
			}
			if err := e.Validate(); err != nil {
				return err
			}
		}
	}
	switch c.Clipping {
	case FlatClipping:
		if c.AutoClipGamma != 0 {
			return fmt.Errorf("flat clipping takes no stability constant (γ = %v is automatic clipping's)", c.AutoClipGamma)
		}
	case AutomaticClipping:
		if err := CheckAutoClipGamma(c.AutoClipGamma); err != nil {
			return err
		}
		if c.ClipNorm != 1 {
			return fmt.Errorf("automatic clipping bounds every gradient's norm by 1: the clipping norm must be 1, not %v", c.ClipNorm)
		}
	default:
		return fmt.Errorf("unknown clipping %d", c.Clipping)
	}
	if c.NonPrivate {
		if c.NoiseMultiplier != 0 {
			return fmt.Errorf("non-private training takes no noise multiplier")
		}
		if !(c.ClipNorm >= 0) || math.IsInf(c.ClipNorm, 1) {
			return fmt.Errorf("clipping norm %v must be 0 (none) or positive and finite", c.ClipNorm)
		}
		return nil
	}
	switch {
	case !(c.NoiseMultiplier > 0) || math.IsInf(c.NoiseMultiplier, 1):
		return fmt.Errorf("noise multiplier %v must be positive and finite (use non-private training for none)", c.NoiseMultiplier)
	case !(c.ClipNorm > 0) || math.IsInf(c.ClipNorm, 1):
		return fmt.Errorf("clipping norm %v must be positive and finite", c.ClipNorm)
	}
	return nil
}
