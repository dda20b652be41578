package accounting

import (
	"fmt"
	"math"
)

// GDP is the Gaussian-DP accountant (Dong, Roth, Su 2022, "Gaussian
// Differential Privacy"). A Gaussian mechanism with noise multiplier σ and
// sensitivity Δ is exactly (Δ/σ)-GDP, and μ-GDP mechanisms compose to
// √(Σμ²)-GDP (their Corollary 3.3). A Poisson-subsampled Gaussian step is
// counted by the central limit theorem of Bu, Dong, Long, Su 2020, "Deep
// Learning with Gaussian Differential Privacy", Section 3: T steps are
// approximately μ-GDP with μ = q·√(T(e^{1/σ²} − 1)) (GDPMuPoisson).
//
// The CLT is a limit, not a bound: for finite T it can under-report ε
// (Gopi, Lee, Wutschitz 2021, Figure 1). Guarantees are labelled
// Approximate, as Opacus labels its GDP accountant. Use PLD or RDP for a
// number to report.
type GDP struct{}

// Name returns "gdp".
func (GDP) Name() string { return "gdp" }

func init() {
	Register(Named{Name: "gdp", New: func() Accountant { return GDP{} }, Approximation: "a central-limit approximation",
		Help: "central-limit approximation", Rank: 2,
		Describe: func(float64) string { return "gdp accountant: central-limit approximation, not a bound" }})
}

// Mu returns the μ of e, and whether it comes from the CLT approximation.
func (GDP) Mu(e Event) (mu float64, approximate bool, err error) {
	mu2, approximate, err := gdpMu2(e)
	return math.Sqrt(mu2), approximate, err
}

// Epsilon converts the μ of e to (ε, delta) by GDPEpsilon.
func (g GDP) Epsilon(e Event, delta float64) (Guarantee, error) {
	if err := CheckDelta(delta); err != nil {
		return Guarantee{}, fmt.Errorf("accounting: %w", err)
	}
	mu, approx, err := g.Mu(e)
	if err != nil {
		return Guarantee{}, err
	}
	return Guarantee{Epsilon: GDPEpsilon(mu, delta), Delta: delta, Accountant: "gdp", Approximate: approx}, nil
}

// gdpMu2 is μ² of e.
func gdpMu2(e Event) (float64, bool, error) {
	switch v := e.(type) {
	case Gaussian:
		r, err := v.ratio()
		return 1 / (r * r), false, err
	case Vote:
		g, err := v.gaussian()
		if err != nil {
			return 0, false, err
		}
		return gdpMu2(g)
	case PoissonSampled:
		g, ok := v.Event.(Gaussian)
		if !ok {
			return 0, false, fmt.Errorf("accounting: the gdp accountant cannot count Poisson subsampling of a %q event: %w", v.Event.Type(), ErrUnsupported)
		}
		r, err := g.ratio()
		if err != nil {
			return 0, false, err
		}
		if !(v.SamplingRate >= 0 && v.SamplingRate <= 1) {
			return 0, false, fmt.Errorf("accounting: sampling rate %v is outside [0, 1]", v.SamplingRate)
		}
		if v.SamplingRate == 1 {
			return 1 / (r * r), false, nil
		}
		mu := GDPMuPoisson(v.SamplingRate, r, 1)
		return mu * mu, true, nil
	case SelfComposed:
		if v.Count < 0 {
			return 0, false, fmt.Errorf("accounting: composition count %d < 0", v.Count)
		}
		if v.Count == 0 {
			return 0, false, nil
		}
		m, approx, err := gdpMu2(v.Event)
		return float64(v.Count) * m, approx, err
	case Composed:
		var sum float64
		var any bool
		for _, ev := range v.Events {
			m, approx, err := gdpMu2(ev)
			if err != nil {
				return 0, false, err
			}
			sum += m
			any = any || approx
		}
		return sum, any, nil
	case WorstCase:
		var worst float64
		var any bool
		for _, ev := range v.Events {
			m, approx, err := gdpMu2(ev)
			if err != nil {
				return 0, false, err
			}
			worst = math.Max(worst, m)
			any = any || approx
		}
		if len(v.Events) == 0 {
			return 0, false, fmt.Errorf("accounting: a worst case of no events")
		}
		return worst, any, nil
	case NonPrivate:
		return math.Inf(1), false, nil
	}
	return 0, false, unsupported("gdp", e)
}

// GDPMuPoisson is the CLT μ of steps DP-SGD steps with Poisson sampling rate
// q and noise multiplier σ: q·√(steps·(e^{1/σ²} − 1)) (Bu, Dong, Long, Su
// 2020, Section 3; Opacus's compute_mu_poisson).
func GDPMuPoisson(q, sigma float64, steps int) float64 {
	return q * math.Sqrt(float64(steps)*math.Expm1(1/(sigma*sigma)))
}

// GDPMuUniform is the CLT μ of steps noisy-SGD steps on batches drawn
// uniformly without replacement with rate q (Dong, Roth, Su 2022, Section
// 5.2, Corollary 5.4; Opacus's compute_mu_uniform):
//
//	μ = √2 · q · √(steps · (e^{1/σ²}·Φ(1.5/σ) + 3·Φ(−0.5/σ) − 2)).
//
// dptune samples with Poisson sampling, so its ledgers never need this form;
// it is here to compare with results that use it.
func GDPMuUniform(q, sigma float64, steps int) float64 {
	s := math.Exp(1/(sigma*sigma))*normCDF(1.5/sigma) + 3*normCDF(-0.5/sigma) - 2
	return math.Sqrt2 * q * math.Sqrt(float64(steps)*s)
}

// GDPDelta is the δ(ε) of a μ-GDP mechanism (Dong, Roth, Su 2022, Corollary
// 2.13): Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2).
func GDPDelta(mu, eps float64) float64 {
	if mu == 0 {
		return 0
	}
	if math.IsInf(mu, 1) {
		return 1
	}
	return normCDF(-eps/mu+mu/2) - math.Exp(eps+logNormCDF(-eps/mu-mu/2))
}

// GDPEpsilon is the smallest ε ≥ 0, to within 1e-10, with GDPDelta(μ, ε) ≤
// delta, found by bisection (δ(ε) decreases in ε). μ = 0 gives 0 and
// μ = +∞ gives +∞.
func GDPEpsilon(mu, delta float64) float64 {
	if mu == 0 || GDPDelta(mu, 0) <= delta {
		return 0
	}
	if math.IsInf(mu, 1) || math.IsNaN(mu) {
		return math.Inf(1)
	}
	lo, hi := 0.0, 1.0
	for GDPDelta(mu, hi) > delta {
		lo, hi = hi, 2*hi
		if hi > 1e6 {
			return math.Inf(1)
		}
	}
	for hi-lo > 1e-10*math.Max(1, hi) {
		mid := (lo + hi) / 2
		if GDPDelta(mu, mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// normCDF is the standard normal CDF Φ.
func normCDF(x float64) float64 { return math.Erfc(-x/math.Sqrt2) / 2 }

// normSF is the standard normal survival function 1 − Φ, accurate in the
// upper tail.
func normSF(x float64) float64 { return math.Erfc(x/math.Sqrt2) / 2 }

// logNormCDF is log Φ(x), accurate far into the lower tail.
func logNormCDF(x float64) float64 { return logErfc(-x/math.Sqrt2) - math.Ln2 }
