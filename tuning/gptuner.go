package tuning

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/runner"
)

// GPOptions are DP-HyPO's Algorithm 3 parameters, used as given (a zero τ
// is pure exploitation of the posterior mean; a zero c or β is invalid),
// and the GP tuner's options (its tags; see Option). DefaultGPOptions are
// the paper's.
type GPOptions struct {
	// MaxRatio and MinRatio are C and c: densities within [c, C] × the
	// uniform prior.
	MaxRatio float64 `option:"C" default:"2" help:"upper density bound C (× the uniform prior)"`
	MinRatio float64 `option:"c" default:"0.75" help:"lower density bound c, in (0, 1]"`
	// Tau is the UCB weight τ: score μ + τσ.
	Tau float64 `option:"tau" default:"0.1" help:"UCB weight τ ≥ 0 (0: the posterior mean alone)"`
	// Beta is the softmax inverse temperature β.
	Beta float64 `option:"beta" default:"1" help:"softmax inverse temperature β > 0"`
}

// DefaultGPOptions returns the paper's settings (Appendix E.1): C = 2,
// c = 0.75, τ = 0.1, β = 1.
func DefaultGPOptions() GPOptions { return DefaultOptions[GPOptions]() }

// Check returns an error unless 0 < c ≤ 1 ≤ C < ∞ (else no density fits),
// τ ≥ 0 and β > 0.
func (o GPOptions) Check() error {
	if !(o.MinRatio > 0 && o.MinRatio <= 1 && o.MaxRatio >= 1 && o.MaxRatio < 1e300) {
		return fmt.Errorf("tuning: DP-HyPO needs 0 < c ≤ 1 ≤ C, have c = %v, C = %v", o.MinRatio, o.MaxRatio)
	}
	if !(o.Tau >= 0 && o.Tau < 1e6) || !(o.Beta > 0 && o.Beta < 1e6) {
		return fmt.Errorf("tuning: DP-HyPO needs finite τ ≥ 0 and β > 0 (below 10⁶), have τ = %v, β = %v", o.Tau, o.Beta)
	}
	return nil
}

// gpSampler is Algorithm 3's update: after each score, the GP posterior's
// UCB μ + τσ, its softmax with inverse temperature β, projected onto
// S_{C,c}.
type gpSampler struct {
	gp   *GP
	opt  GPOptions
	dens []float64 // the projected density of the next draw
}

func newGPSampler(s Space, opt GPOptions) *gpSampler {
	n := s.Size()
	d := make([]float64, n)
	for i := range d {
		d[i] = 1 / float64(n) // π⁽⁰⁾ = Unif(Λ), already in S_{C,c}
	}
	return &gpSampler{gp: NewGP(s), opt: opt, dens: d}
}

func (g *gpSampler) next(rng *rand.Rand) int { return drawFrom(g.dens, rng) }

func (g *gpSampler) observe(i int, score float64) {
	g.gp.Observe(i, score)
	mean, sd := g.gp.Posterior()
	ucb := make([]float64, len(mean))
	for k := range ucb {
		ucb[k] = mean[k] + g.opt.Tau*sd[k]
	}
	if d := Project(softmax(ucb, g.opt.Beta), g.opt.MinRatio, g.opt.MaxRatio); finite(d) {
		g.dens = d
	} else {
		// A non-finite posterior (cannot happen with finite scores) falls
		// back to the uniform prior, which is inside S_{C,c}.
		for i := range g.dens {
			g.dens[i] = 1 / float64(len(g.dens))
		}
	}
}

func finite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return v != nil
}

// drawFrom draws an index with probability proportional to w.
func drawFrom(w []float64, rng *rand.Rand) int {
	var total float64
	for _, v := range w {
		total += v
	}
	u := rng.Float64() * total
	for i, v := range w {
		u -= v
		if u < 0 {
			return i
		}
	}
	return len(w) - 1
}

// GPTune is DP-HyPO with a Gaussian process (Wang et al. 2023, Framework 1
// and Algorithm 3): K ∼ TNB(η, γ) runs; the first candidate is uniform, each
// later one is drawn from the softmax (inverse temperature β) of the GP's
// UCB μ + τσ given the scores so far, projected onto densities within
// [c, C] × the uniform prior (Project); the best run is released. Its cost
// is accounting.AdaptiveRepeatAndSelect (Theorem 1). cfg.Repetitions must be
// TNB.
func GPTune(ctx context.Context, cfg Config, opt GPOptions) (Result, error) {
	if err := opt.Check(); err != nil {
		return Result{}, err
	}
	if cfg.Repetitions.Distribution != accounting.TNB {
		return Result{}, fmt.Errorf("tuning: DP-HyPO's guarantee needs TNB repetitions, have %s", cfg.Repetitions)
	}
	if cfg.Default != nil {
		return Result{}, fmt.Errorf("tuning: the GP tuner does not take the default among its candidates")
	}
	return run(ctx, cfg, newGPSampler(cfg.Space, opt), SelectionEvent(cfg.Trainer.Event(), cfg.Repetitions, &opt), gpLabel(cfg.Repetitions, opt))
}

func gpLabel(rep accounting.Repetitions, opt GPOptions) string {
	return fmt.Sprintf("DP-HyPO (GP) tuning, %s runs, densities in [%g, %g] × prior, best released", rep, opt.MinRatio, opt.MaxRatio)
}

// gpTuner is the "gp" tuner: GPTune, with GPOptions as its options C, c,
// tau and beta.
type gpTuner struct{}

// GPName is the GP tuner's name in the registry.
const GPName = "gp"

func (gpTuner) Name() string { return GPName }
func (gpTuner) Summary() string {
	return "DP-HyPO (Wang et al. 2023): candidates from a Gaussian-process UCB softmax kept within [c, C] × the uniform prior; K ~ TNB"
}
func (gpTuner) Example() string   { return "--space mnist-dphypo --mean-runs 10 --epsilon 8" }
func (gpTuner) Options() []Option { return OptionsOf(GPOptions{}) }
func (gpTuner) Uses() Uses {
	return Uses{Repetitions: true, DefaultRuns: accounting.TNB, TrainerScores: true, Diagnostics: true}
}

// GPOptionsOf returns the GP tuner's options in s, a missing one at its
// default (one that Check refuses, at its default too).
func GPOptionsOf(s Spec) GPOptions {
	o, _ := DecodeOptions[GPOptions](GPName, s.Options)
	return o
}

// Values returns o as the GP tuner's Spec.Options.
func (o GPOptions) Values() Values { return OptionValues(o) }

// Check refuses an option it does not know or of the wrong type
// (CheckOptions), a mean of K above accounting.MaxMeanRuns, invalid
// options, repetitions other than TNB (DP-HyPO's Theorem 1) and any
// accountant but rdp.
func (g gpTuner) Check(s Spec) error {
	if err := CheckOptions(g, s); err != nil {
		return err
	}
	if err := s.Repetitions.CheckSampled(); err != nil {
		return invalid(err)
	}
	if err := GPOptionsOf(s).Check(); err != nil {
		return invalid(err)
	}
	if s.Repetitions.Distribution != accounting.TNB {
		return invalidf("the gp tuner needs TNB repetitions (DP-HyPO's Theorem 1)")
	}
	return checkRDPOnly(s)
}

func (gpTuner) Accountant(Spec) accounting.Accountant { return accounting.RDP{} }
func (gpTuner) Event(base accounting.Event, s Spec) accounting.Event {
	o := GPOptionsOf(s)
	return SelectionEvent(base, s.Repetitions, &o)
}
func (gpTuner) Label(s Spec) string { return gpLabel(s.Repetitions, GPOptionsOf(s)) }
func (gpTuner) Run(ctx context.Context, s Spec, t Trainer, r runner.Runner) (Result, error) {
	return GPTune(ctx, s.config(t, r), GPOptionsOf(s))
}
