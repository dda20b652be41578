package audit

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/cpus"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// DPSGDCanary audits one DP-SGD run (Xiang et al., §4, ETCV with the Dirac
// gradient canary): X is Base (or, when Base is nil, Size examples that
// contribute no gradient: X = ∅), X′ is X with the canary z appended, whose
// clipped gradient is ClipNorm·e₁ in every step that samples it. The run is
// dptune's real dpsgd.Train path — Poisson sampling at SamplingRate,
// clipping, Gaussian noise of NoiseMultiplier·ClipNorm, division by the
// nominal expected batch size — with the canary injected by an audit-only
// engine hook. Under automatic clipping (Clipping, AutoClipGamma; ClipNorm
// must then be 1, its sensitivity) the canary's clipped gradient is
// 4/(4 + γ)·e₁ (CanaryGradientNorm) and the statistic is in units of 1. The adversary is white-box: it sees the whole trajectory and
// its statistic is the sum of the first coordinate's updates, in units of
// the clipping norm: under X ∅ it is N(0, T·σ²), under X′ the same shifted
// by the number of steps that sampled z. With SamplingRate 1 that is the
// Gaussian mechanism with μ = √T/σ (their eq. 15) and ε_L should come
// close to the claim; with Poisson sampling this statistic is far from
// optimal and a large gap is expected, not a finding.
type DPSGDCanary struct {
	// Observe is what the adversary sees: ObserveLast (or "") the last
	// iterate, whose statistic is the first coordinate's summed update;
	// ObserveAll every iterate, whose statistic is the log-likelihood ratio
	// of the per-step updates (see ObserveAll).
	Observe         string
	Arch            model.Arch
	Base            *data.Dataset // nil: Size examples without gradient
	Size            int
	NoiseMultiplier float64
	ClipNorm        float64
	// Clipping and AutoClipGamma are the run's clipping rule
	// (dpsgd.Config's): flat clipping to ClipNorm (the zero value), or
	// automatic clipping with stability constant AutoClipGamma.
	Clipping      dpsgd.Clipping
	AutoClipGamma float64
	SamplingRate  float64
	Steps         int
}

// The adversary's views of a DPSGDCanary run.
//
// With ObserveAll the adversary reads the first coordinate's update u_t of
// every step, in units of the clipping norm: N(0, σ²) on X, and on X′ the
// mixture (1−τ)·N(0, σ²) + τ·N(1, σ²), each step independently. Its
// statistic is the log-likelihood ratio of the T updates,
//
//	Σ_t log(1 − τ + τ·exp((2u_t − 1)/(2σ²))),
//
// the most powerful test between the two (Neyman–Pearson), which is how
// Nasr et al. (2023, Section 4) audit DP-SGD with every iterate seen. At
// τ = 1 it is increasing in Σ_t u_t, the last iterate's statistic, so the
// two views give the same ε_L; with Poisson sampling the sum mixes the
// steps that sampled the canary with those that did not, and the
// all-iterates statistic is far stronger.
const (
	ObserveAll  = "all"
	ObserveLast = "last"
)

// MaxCanarySize is the largest Size of a DPSGDCanary without Base: the
// size of MNIST's training set. Each trial holds its X = ∅ in memory as
// blank images of Arch's input (one float each for CanaryArch, 3 KB for
// MNIST's network: 188 MB at this bound).
const MaxCanarySize = 60000

// MaxCanaryClipNorm and MinCanarySamplingRate bound a DPSGDCanary's
// clipping norm C and sampling rate τ so that its float32 parameters stay
// finite: a step moves them by at most lr·C·(1 + 40σ)/(τ·N) with lr = 1,
// N ≥ 1 and σ ≤ accounting.MaxNoiseMultiplier (the Gaussian draws stay
// within 29σ: math/rand/v2's NormFloat64 stays below about 14.2 in
// magnitude, and the secure sampler halves a sum of four), at most
// 4·10²³ at these bounds, and
// dpsgd.MaxSteps steps at most 4.3·10³², below float32's 3.4·10³⁸. (The
// statistic divides by C, so the audit is the same at every C; 1 is as good
// as any.) Outside them a run used to end in "training diverged".
const (
	MaxCanaryClipNorm     = 1e6
	MinCanarySamplingRate = 1e-12
)

// Check returns an error for settings no run can have: without Base, a
// Size outside [1, MaxCanarySize]; a noise multiplier that is not in
// (0, accounting.MaxNoiseMultiplier]; a clipping norm outside
// (0, MaxCanaryClipNorm]; a sampling rate outside
// [MinCanarySamplingRate, 1]; steps outside [1, dpsgd.MaxSteps]; automatic
// clipping with a stability constant that is not finite and at least
// dpsgd.MinAutoClipGamma (dpsgd.CheckAutoClipGamma), or
// a clipping norm other than 1; flat clipping with a stability constant.
func (p DPSGDCanary) Check() error {
	switch {
	case p.Base == nil && (p.Size < 1 || p.Size > MaxCanarySize):
		return fmt.Errorf("audit: size %d is outside [1, %d] (without a base set, X = ∅ has Size blank examples)", p.Size, MaxCanarySize)
	case !(p.NoiseMultiplier > 0 && p.NoiseMultiplier <= accounting.MaxNoiseMultiplier):
		return fmt.Errorf("audit: noise multiplier %v is outside (0, %g] (more noise leaves nothing to audit, and float32 parameters cannot hold it)", p.NoiseMultiplier, accounting.MaxNoiseMultiplier)
	case !(p.ClipNorm > 0 && p.ClipNorm <= MaxCanaryClipNorm):
		return fmt.Errorf("audit: clipping norm %v is outside (0, %g] (a larger norm overflows the float32 parameters, and the audit is the same at every norm)", p.ClipNorm, float64(MaxCanaryClipNorm))
	case !(p.SamplingRate >= MinCanarySamplingRate && p.SamplingRate <= 1):
		return fmt.Errorf("audit: sampling rate %v is outside [%g, 1] (a smaller rate overflows the float32 parameters)", p.SamplingRate, MinCanarySamplingRate)
	case p.Steps < 1 || p.Steps > dpsgd.MaxSteps:
		return fmt.Errorf("audit: steps %d is outside [1, %d]", p.Steps, dpsgd.MaxSteps)
	case p.Observe != "" && p.Observe != ObserveAll && p.Observe != ObserveLast:
		return fmt.Errorf("audit: observe %q is neither %q nor %q", p.Observe, ObserveAll, ObserveLast)
	case p.Clipping == dpsgd.AutomaticClipping && (dpsgd.CheckAutoClipGamma(p.AutoClipGamma) != nil || p.ClipNorm != 1):
		return fmt.Errorf("audit: automatic clipping needs a finite stability constant of at least %g (have %v) and clipping norm 1 (have %v)", dpsgd.MinAutoClipGamma, p.AutoClipGamma, p.ClipNorm)
	case p.Clipping != dpsgd.AutomaticClipping && (p.Clipping != dpsgd.FlatClipping || p.AutoClipGamma != 0):
		return fmt.Errorf("audit: clipping %v with stability constant %v", p.Clipping, p.AutoClipGamma)
	}
	return nil
}

// Trial runs DP-SGD on X (b = 0) or X′ (b = 1) and returns the
// adversary's statistic: the sum of the first parameter's updates over
// ClipNorm, or with ObserveAll their log-likelihood ratio.
func (p DPSGDCanary) Trial(ctx context.Context, b int, rng *rand.Rand) (float64, error) {
	if b != 0 && b != 1 {
		return 0, fmt.Errorf("audit: the coin b must be 0 or 1, have %d", b)
	}
	if err := p.Check(); err != nil {
		return 0, err
	}
	base := p.Base
	if base == nil {
		base = blank(p.Arch, p.Size)
	}
	set := base
	if b == 1 {
		set = withCanary(base)
	}
	seed := rng.Uint64()
	net, err := model.New(p.Arch, randsrc.Seeded(seed, "init"))
	if err != nil {
		return 0, err
	}
	expected := p.SamplingRate * float64(base.N) // the nominal size is X's: the same divisor in both worlds
	var inner dpsgd.Engine
	if p.Base != nil {
		if inner, err = dpsgd.NewEngineWorkers(net, max(1, int(math.Ceil(expected))), cpus.Of(ctx)); err != nil {
			return 0, err
		}
	}
	w0 := float64(net.Params[0])
	const lr = 1
	cfg := dpsgd.Config{NoiseMultiplier: p.NoiseMultiplier, ClipNorm: p.ClipNorm, Clipping: p.Clipping, AutoClipGamma: p.AutoClipGamma,
		SamplingRate: p.SamplingRate, Steps: p.Steps, ExpectedBatchSize: expected, LearningRate: lr, Seed: &seed, Noise: dpsgd.NoiseFast}
	var progress func(dpsgd.Progress)
	var llr float64
	if p.Observe == ObserveAll {
		prev, s2 := w0, p.NoiseMultiplier*p.NoiseMultiplier
		progress = func(dpsgd.Progress) {
			w := float64(net.Params[0])
			u := (prev - w) * expected / (lr * p.ClipNorm)
			prev = w
			llr += logMixture(p.SamplingRate, (2*u-1)/(2*s2))
		}
	}
	if _, err := dpsgd.Train(ctx, net, set, cfg, NewDiracCanaries(inner, base.N, []int{0}), progress); err != nil {
		return 0, err
	}
	if p.Observe == ObserveAll {
		return llr, nil
	}
	return (w0 - float64(net.Params[0])) * expected / (lr * p.ClipNorm), nil
}

// logMixture is log(1 − q + q·eˣ) for q in (0, 1], without overflow.
func logMixture(q, x float64) float64 {
	if x > 0 {
		return x + math.Log(q+(1-q)*math.Exp(-x))
	}
	return math.Log1p(q * math.Expm1(x))
}

// blank is n examples of zeros for arch (they never reach an engine).
func blank(a model.Arch, n int) *data.Dataset {
	return &data.Dataset{Name: "blank", N: n, C: a.C, H: a.H, W: a.W, Classes: a.Classes,
		X: make([]float32, n*a.C*a.H*a.W), Y: make([]uint8, n)}
}

// withCanary is d with one more example: the canary's slot (WithCanarySlots).
func withCanary(d *data.Dataset) *data.Dataset { return WithCanarySlots(d, 1) }

// CanaryArch is the network of the worst-case DP-SGD game: one example of
// one pixel, flattened, into a linear layer of two classes — four
// parameters, the first of which (the weight the canary's Dirac gradient
// moves) is the one the statistic reads. With X = ∅ no example ever
// reaches the network, so its size only costs noise draws, and the
// statistic's distribution is the same on any network: a trial of 50
// steps takes about 22 µs here against 26 ms on MNIST's 26,010-parameter
// network (BenchmarkDPSGDCanaryTrial), which is what makes 10⁵ trials
// take seconds. The sampling, clipping, noise and update are
// dpsgd.Train's either way.
var CanaryArch = model.Arch{Spec: model.Spec{Name: "audit-canary", Layers: []model.LayerSpec{model.Flatten(), model.Linear(2)}},
	C: 1, H: 1, W: 1, Classes: 2}

// dpsgdBounds are the ranges of a DP-SGD game's parameters: the clipping
// norm and sampling rate its float32 parameters stay finite with
// (MaxCanaryClipNorm, MinCanarySamplingRate), and a base ε that can be
// calibrated (accounting.CheckEpsilon; 0 means none).
var dpsgdBounds = []Bound{
	{Flag: "clip-norm", Check: func(label string, v float64) error {
		if !(v > 0 && v <= MaxCanaryClipNorm) {
			return fmt.Errorf("%s %v is outside (0, %g]: beyond it the float32 parameters overflow", label, v, float64(MaxCanaryClipNorm))
		}
		return nil
	}},
	{Flag: "sampling-rate", Check: func(label string, v float64) error {
		if !(v >= MinCanarySamplingRate && v <= 1) {
			return fmt.Errorf("%s %v is outside [%g, 1]: below it the float32 parameters overflow", label, v, MinCanarySamplingRate)
		}
		return nil
	}},
	{Flag: "base-epsilon", Check: func(label string, v float64) error {
		if v == 0 {
			return nil
		}
		if err := accounting.CheckEpsilon(v); err != nil {
			return fmt.Errorf("%s: %v", label, err)
		}
		return nil
	}},
}

// dpsgdFields are the Settings a DP-SGD canary game's trials depend on.
var dpsgdFields = []string{"NoiseMultiplier", "BaseEpsilon", "SamplingRate", "ClipNorm", "Steps", "Size"}

// checkCanary is the Check of the games that play a DPSGDCanary: without
// real data, X = ∅ holds 1 to MaxCanarySize examples.
func checkCanary(s Settings) error {
	if n := s.size(); !s.OnData && (n < 1 || n > MaxCanarySize) {
		return invalidf("size %d is outside [1, %d] (examples of X = ∅ besides the canary)", s.Size, MaxCanarySize)
	}
	return nil
}

// canaryRun is the DPSGDCanary of s, checked, and the event of one run.
func canaryRun(s Settings) (DPSGDCanary, accounting.Event, error) {
	run := DPSGDCanary{Arch: s.RunArch(), Size: s.size(), NoiseMultiplier: s.NoiseMultiplier, ClipNorm: s.ClipNorm,
		SamplingRate: s.SamplingRate, Steps: s.Steps, Observe: s.Observe}
	if s.OnData {
		run.Base = s.Base
	}
	if err := run.Check(); err != nil {
		return run, nil, invalid(err)
	}
	return run, dpsgd.PlannedEvent(run.Arch, dpsgd.Config{NoiseMultiplier: s.NoiseMultiplier, SamplingRate: s.SamplingRate, Steps: s.Steps}), nil
}

// The DP-SGD game, registered as "dpsgd": one DPSGDCanary run. Its claims
// are RDP and PLD of the run; beside ε_L the audit reports the μ-GDP
// fitted to its statistics (GDPEstimate), labelled an estimate.
func init() {
	Register(Game{Name: "dpsgd", Rank: 1,
		Help:   "one DP-SGD run, Dirac gradient canary, white-box (ETCV, §4)",
		Fields: append(slices.Clip(dpsgdFields), "Observe"),
		DPSGD:  true, Views: []string{ObserveAll, ObserveLast}, GDPFit: true, Bounds: dpsgdBounds,
		Check: checkCanary,
		New: func(s Settings) (Protocol, Claims, error) {
			run, base, err := canaryRun(s)
			if err != nil {
				return nil, nil, err
			}
			return run, Claims{"rdp": base, "pld": base}, nil
		},
	})
}
