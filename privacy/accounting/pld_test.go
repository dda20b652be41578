package accounting

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
)

func deltaOf(p privacyProfile) func(float64) float64 {
	return func(e float64) float64 { d, _ := p.profile(e); return d }
}

// bisect returns the smallest ε ∈ [0, 200] with f(ε) ≤ delta, for f
// decreasing.
func bisect(f func(float64) float64, delta float64) float64 {
	lo, hi := 0.0, 200.0
	if f(0) <= delta {
		return 0
	}
	for range 200 {
		m := (lo + hi) / 2
		if f(m) > delta {
			lo = m
		} else {
			hi = m
		}
	}
	return hi
}

// exactGaussianEpsilon is the exact ε of the Gaussian mechanism with noise
// ratio s at delta (Balle & Wang 2018, Theorem 8):
// δ(ε) = Φ(1/(2s) − εs) − e^ε·Φ(−1/(2s) − εs).
func exactGaussianEpsilon(s, delta float64) float64 {
	return bisect(func(e float64) float64 {
		return normCDF(1/(2*s)-e*s) - math.Exp(e)*normCDF(-1/(2*s)-e*s)
	}, delta)
}

// T Gaussian mechanisms with noise σ are one with σ/√T: the PLD accountant's
// composed ε must be an upper bound within 0.1% of the exact one.
func TestPLDGaussianClosedForm(t *testing.T) {
	for _, c := range []struct {
		sigma float64
		steps int
		delta float64
	}{{1, 1, 1e-5}, {0.5, 1, 1e-5}, {0.2, 1, 1e-5}, {0.1, 1, 1e-5}, {0.3, 4, 1e-5}, {2, 10, 1e-5},
		{5, 100, 1e-6}, {10, 1000, 1e-5}, {30, 10000, 1e-5}, {3, 50, 1e-3}} {
		g, err := PLD{}.Epsilon(SelfComposed{Event: Gaussian{NoiseMultiplier: c.sigma, Sensitivity: 1}, Count: c.steps}, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		want := exactGaussianEpsilon(c.sigma/math.Sqrt(float64(c.steps)), c.delta)
		if g.Epsilon < want || g.Epsilon > want*1.001 {
			t.Errorf("σ=%v, %d steps, δ=%v: PLD ε = %.8g, exact %.8g", c.sigma, c.steps, c.delta, g.Epsilon, want)
		}
	}
}

// The subsampled Gaussian's privacy profiles in both directions against
// δ(ε) = ∫ (p(x) − e^ε q(x))₊ dx by numerical integration.
func TestSubsampledGaussianProfileNumerical(t *testing.T) {
	for _, c := range []struct{ q, sigma, eps float64 }{{0.01, 1, 0.01}, {0.1, 0.8, 0.5}, {0.004, 1.1, 0.001}, {0.5, 2, 0.2}, {0.2, 0.5, 1}} {
		pdf := func(x, m float64) float64 {
			return math.Exp(-(x-m)*(x-m)/(2*c.sigma*c.sigma)) / (c.sigma * math.Sqrt(2*math.Pi))
		}
		mix := func(x float64) float64 { return (1-c.q)*pdf(x, 0) + c.q*pdf(x, 1) }
		// ∫ over the half-line where p > e^ε q, its end found by bisection
		// (p/q is monotone in x for these pairs), so the integrand is smooth.
		hs := func(p, q func(float64) float64, upper bool) float64 {
			lo, hi := -20*c.sigma, 1+20*c.sigma
			a, b := lo, hi
			for range 200 {
				m := (a + b) / 2
				if (p(m)-math.Exp(c.eps)*q(m) > 0) == upper {
					b = m
				} else {
					a = m
				}
			}
			if upper {
				lo = b
			} else {
				hi = a
			}
			return quad.Fixed(func(x float64) float64 { return p(x) - math.Exp(c.eps)*q(x) }, lo, hi, 2000, quad.Legendre{}, 0)
		}
		n0 := func(x float64) float64 { return pdf(x, 0) }
		near(t, "remove profile", deltaOf(gaussianRemove{c.q, c.sigma})(c.eps), hs(mix, n0, true), 1e-12)
		near(t, "add profile", deltaOf(gaussianAdd{c.q, c.sigma})(c.eps), hs(n0, mix, false), 1e-12)
	}
}

// One subsampled Gaussian step: the PLD ε against the exact one, the larger
// of the two directions' profile inverses (checked above by integration).
func TestPLDSingleSubsampledStep(t *testing.T) {
	for _, c := range []struct{ q, sigma float64 }{{0.01, 0.5}, {0.1, 0.8}, {0.5, 1}} {
		want := math.Max(bisect(deltaOf(gaussianRemove{c.q, c.sigma}), 1e-5), bisect(deltaOf(gaussianAdd{c.q, c.sigma}), 1e-5))
		g, err := PLD{}.Epsilon(PoissonSampled{SamplingRate: c.q, Event: Gaussian{NoiseMultiplier: c.sigma, Sensitivity: 1}}, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		if g.Epsilon < want || g.Epsilon > want*1.001+1e-4 {
			t.Errorf("q=%v σ=%v: PLD ε = %.8g, exact %.8g", c.q, c.sigma, g.Epsilon, want)
		}
	}
}

// k-fold composition of ε0-randomised response: the loss is ε0(2i − k) with
// i ∼ Binomial(k, e^ε0/(1+e^ε0)), so δ(ε) is a finite sum (Kairouz, Oh,
// Viswanath 2015). The PLD accountant must bound it tightly; AboveThreshold
// is counted as that composition.
func TestPLDPureComposition(t *testing.T) {
	eps0, k := 0.5, 20
	p := math.Exp(eps0) / (1 + math.Exp(eps0))
	exact := func(e float64) float64 {
		var d float64
		for i := 0; i <= k; i++ {
			lc, _ := math.Lgamma(float64(k + 1))
			a, _ := math.Lgamma(float64(i + 1))
			b, _ := math.Lgamma(float64(k - i + 1))
			w := math.Exp(lc - a - b + float64(i)*math.Log(p) + float64(k-i)*math.Log(1-p))
			d += w * math.Max(0, 1-math.Exp(e-eps0*float64(2*i-k)))
		}
		return d
	}
	want := bisect(exact, 1e-5)
	for _, ev := range []Event{SelfComposed{Event: EpsilonDelta{Epsilon: eps0}, Count: k}, AboveThreshold{Epsilon: eps0, MaxIterations: k}} {
		g, err := PLD{}.Epsilon(ev, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		if g.Epsilon < want || g.Epsilon > want*1.001 {
			t.Errorf("%T: PLD ε = %.8g, exact %.8g", ev, g.Epsilon, want)
		}
	}
	// One Laplace mechanism: δ(ε) = 1 − e^{(ε−ε0)/2}, so ε = ε0 + 2·log(1−δ).
	g, err := PLD{}.Epsilon(Laplace{Scale: 2, Sensitivity: 1}, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if w := 0.5 + 2*math.Log1p(-1e-5); g.Epsilon < w || g.Epsilon > w+1e-3 {
		t.Errorf("Laplace: PLD ε = %v, exact %v", g.Epsilon, w)
	}
}

// Properties for DP-SGD: PLD ≤ RDP (both are upper bounds, PLD the tight
// one); ε grows with steps and shrinks with σ; the GDP central-limit
// approximation is close to PLD when there are many steps (Bu et al. 2020).
func TestPLDDPSGDProperties(t *testing.T) {
	q := 256.0 / 60000
	prev := 0.0
	for _, steps := range []int{100, 1000, 10000} {
		g, err := PLD{}.Epsilon(DPSGD(1.1, q, steps), 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := RDP{}.Epsilon(DPSGD(1.1, q, steps), 1e-5)
		if g.Epsilon > r.Epsilon || g.Epsilon <= prev {
			t.Errorf("%d steps: PLD %v, RDP %v, previous PLD %v", steps, g.Epsilon, r.Epsilon, prev)
		}
		prev = g.Epsilon
	}
	prev = math.Inf(1)
	for _, sigma := range []float64{0.8, 1.1, 2} {
		g, _ := PLD{}.Epsilon(DPSGD(sigma, q, 2000), 1e-5)
		if g.Epsilon >= prev {
			t.Errorf("σ=%v: ε = %v not below %v", sigma, g.Epsilon, prev)
		}
		prev = g.Epsilon
	}
	for _, c := range []struct {
		sigma, q float64
		steps    int
	}{{1.1, 0.01, 100000}, {4, 0.01, 10000}} {
		p, _ := PLD{}.Epsilon(DPSGD(c.sigma, c.q, c.steps), 1e-5)
		g, _ := GDP{}.Epsilon(DPSGD(c.sigma, c.q, c.steps), 1e-5)
		if math.Abs(g.Epsilon/p.Epsilon-1) > 0.02 || !g.Approximate {
			t.Errorf("σ=%v q=%v T=%d: GDP %v, PLD %v", c.sigma, c.q, c.steps, g.Epsilon, p.Epsilon)
		}
	}
}

// The profiles' δ and 1 − δ add up to 1 (each is computed separately, to
// avoid cancellation where it is small).
func TestProfilesComplement(t *testing.T) {
	for _, p := range []privacyProfile{gaussianRemove{0.01, 1}, gaussianAdd{0.01, 1}, gaussianRemove{1, 0.3},
		laplaceProfile{2}, randomisedResponse{1, 1e-3}} {
		for _, e := range []float64{-15, -3, -0.5, 0, 0.001, 0.7, 2, 5} {
			d, om := p.profile(e)
			if math.Abs(d+om-1) > 1e-12 || d < 0 || om < 0 {
				t.Errorf("%#v at ε=%v: δ = %v, 1 − δ = %v", p, e, d, om)
			}
		}
	}
}

// Mechanisms with enormous ε: a Laplace mechanism with ε0 = 1000 must not be
// reported as cheap (above 700 nats the PLD accountant counts the mass as
// +∞), and one with ε0 = 60 gets ε ≥ 60 − 2δ. A vote with little noise
// (sensitivity √20 against σ = 0.5) is within 0.1% of its exact ε.
func TestPLDHugeEpsilon(t *testing.T) {
	g, err := PLD{}.Epsilon(Laplace{Scale: 1e-3, Sensitivity: 1}, 1e-5)
	if err != nil || !math.IsInf(g.Epsilon, 1) {
		t.Errorf("ε0 = 1000: %v %v", g.Epsilon, err)
	}
	g, err = PLD{}.Epsilon(Laplace{Scale: 1.0 / 60, Sensitivity: 1}, 1e-5)
	if err != nil || g.Epsilon < 60-1e-4 || g.Epsilon > 60.01 {
		t.Errorf("ε0 = 60: %v %v", g.Epsilon, err)
	}
	g, err = PLD{}.Epsilon(Vote{NoiseStddev: 0.5, VotesPerClient: 10}, 1e-5)
	if want := exactGaussianEpsilon(0.5/math.Sqrt(20), 1e-5); err != nil || g.Epsilon < want || g.Epsilon > want*1.001 {
		t.Errorf("vote σ = 0.5, ℓ = 10: %v, exact %v (%v)", g.Epsilon, want, err)
	}
}
