package tuning

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dptune/dptune/privacy/accounting"
)

// GPOptions are DP-HyPO's Algorithm 3 parameters, used as given (a zero τ
// is pure exploitation of the posterior mean; a zero c or β is invalid).
// DefaultGPOptions are the paper's.
type GPOptions struct {
	MaxRatio, MinRatio float64 // C and c: densities within [c, C] × the uniform prior
	Tau                float64 // UCB weight τ: score μ + τσ
	Beta               float64 // softmax inverse temperature β
}

// DefaultGPOptions returns the paper's settings (Appendix E.1): C = 2,
// c = 0.75, τ = 0.1, β = 1.
func DefaultGPOptions() GPOptions { return GPOptions{MaxRatio: 2, MinRatio: 0.75, Tau: 0.1, Beta: 1} }

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
	ev := accounting.AdaptiveRepeatAndSelect{Event: cfg.Trainer.Event(), Repetitions: cfg.Repetitions,
		MaxRatio: opt.MaxRatio, MinRatio: opt.MinRatio}
	return run(ctx, cfg, newGPSampler(cfg.Space, opt), ev,
		fmt.Sprintf("DP-HyPO (GP) tuning, %s runs, densities in [%g, %g] × prior, best released", cfg.Repetitions, opt.MinRatio, opt.MaxRatio))
}

// CalibrateBase returns the noise multiplier σ of the base run such that the
// whole tuning pipeline — K runs of base(σ), best released, adaptive with
// density bounds [c, C] when opt is not nil — is (eps, delta)-DP under the
// RDP accountant, never above eps. Pipeline gives that pipeline's event.
func CalibrateBase(ctx context.Context, base func(sigma float64) accounting.Event, rep accounting.Repetitions, opt *GPOptions, eps, delta float64) (float64, error) {
	if err := rep.Check(); err != nil {
		return 0, err
	}
	if opt != nil {
		if err := opt.Check(); err != nil {
			return 0, err
		}
	}
	return accounting.CalibrateNoise(ctx, accounting.RDP{}, func(s float64) accounting.Event { return Pipeline(base(s), rep, opt) }, eps, delta)
}

// Pipeline is the event of a random-stop tuning (opt nil) or DP-HyPO tuning
// whose every run is base: the whole tuning's cost, known before it starts.
func Pipeline(base accounting.Event, rep accounting.Repetitions, opt *GPOptions) accounting.Event {
	if opt != nil {
		return accounting.AdaptiveRepeatAndSelect{Event: base, Repetitions: rep, MaxRatio: opt.MaxRatio, MinRatio: opt.MinRatio}
	}
	return accounting.RepeatAndSelect{Event: base, Repetitions: rep}
}
