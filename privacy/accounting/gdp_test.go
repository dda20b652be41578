package accounting

import (
	"math"
	"testing"
)

// T Gaussian mechanisms with noise σ are exactly (√T/σ)-GDP, and the μ-GDP
// curve (Dong, Roth, Su 2022, Corollary 2.13) is the Gaussian's exact curve
// (Balle & Wang 2018).
func TestGDPGaussianExact(t *testing.T) {
	for _, c := range []struct {
		sigma float64
		steps int
	}{{1, 1}, {2, 10}, {10, 1000}} {
		ev := SelfComposed{Event: Gaussian{NoiseMultiplier: c.sigma, Sensitivity: 1}, Count: c.steps}
		mu, approx, err := GDP{}.Mu(ev)
		if err != nil || approx {
			t.Fatal(err, approx)
		}
		near(t, "μ", mu, math.Sqrt(float64(c.steps))/c.sigma, 1e-12)
		g, _ := GDP{}.Epsilon(ev, 1e-5)
		near(t, "GDP ε", g.Epsilon, exactGaussianEpsilon(c.sigma/math.Sqrt(float64(c.steps)), 1e-5), 1e-8)
	}
}

// The two CLT forms agree to first order in 1/σ² (both tend to q√T/σ), and
// the Poisson one is Bu et al.'s q√(T(e^{1/σ²} − 1)).
func TestGDPMuForms(t *testing.T) {
	near(t, "Poisson μ", GDPMuPoisson(0.01, 1, 10000), 0.01*math.Sqrt(10000*(math.E-1)), 1e-12)
	for _, sigma := range []float64{30, 100} {
		p, u := GDPMuPoisson(0.01, sigma, 1000), GDPMuUniform(0.01, sigma, 1000)
		if math.Abs(u/p-1) > 1/sigma {
			t.Errorf("σ=%v: uniform μ %v vs Poisson μ %v", sigma, u, p)
		}
	}
	mu, approx, _ := GDP{}.Mu(DPSGD(1, 0.01, 10000))
	near(t, "μ of DP-SGD", mu, GDPMuPoisson(0.01, 1, 10000), 1e-12)
	if !approx {
		t.Error("CLT μ not labelled approximate")
	}
}
