package accounting

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
)

// LaplaceRDP against the Rényi divergence of Lap(0, 1) from Lap(ε0, 1) by
// numerical integration, piecewise between the kinks at 0 and ε0.
func TestLaplaceRDPAgreesWithNumericalIntegration(t *testing.T) {
	for _, c := range []struct{ eps0, alpha float64 }{{0.1, 2}, {1, 1.5}, {1, 10}, {2, 3.3}, {0.5, 32}} {
		logp := func(x float64) float64 { return -math.Abs(x) - math.Ln2 }
		logq := func(x float64) float64 { return -math.Abs(x-c.eps0) - math.Ln2 }
		f := func(x float64) float64 { return math.Exp(c.alpha*logp(x) + (1-c.alpha)*logq(x)) }
		// Outside [0, ε0] the integrand is an exponential in x: integrate far
		// enough that the rest is below 1e-30.
		far := 80.0 / math.Min(1, c.alpha)
		integral := quad.Fixed(f, -far, 0, 2000, quad.Legendre{}, 0) +
			quad.Fixed(f, 0, c.eps0, 200, quad.Legendre{}, 0) +
			quad.Fixed(f, c.eps0, c.eps0+far, 2000, quad.Legendre{}, 0)
		want := math.Log(integral) / (c.alpha - 1)
		got := LaplaceRDP(c.eps0, c.alpha)
		if math.Abs(got-want) > 1e-6*want {
			t.Errorf("ε0=%v α=%v: %.12g, integration %.12g", c.eps0, c.alpha, got, want)
		}
	}
	near(t, "Laplace at α = ∞", LaplaceRDP(0.7, math.Inf(1)), 0.7, 0)
	if LaplaceRDP(0.7, 512) > 0.7 {
		t.Error("Laplace RDP above its pure ε")
	}
}

// PureDPRDP is the Rényi divergence of randomised response, computed here
// directly from its two distributions, and obeys Bun & Steinke's bound
// min(ε, αε²/2).
func TestPureDPRDP(t *testing.T) {
	for _, eps := range []float64{0.01, 0.1, 1, 3} {
		for _, a := range []float64{1.5, 2, 10, 100} {
			p := math.Exp(eps) / (1 + math.Exp(eps))
			want := math.Log(math.Pow(p, a)*math.Pow(1-p, 1-a)+math.Pow(1-p, a)*math.Pow(p, 1-a)) / (a - 1)
			got := PureDPRDP(eps, a)
			if math.Abs(got-want) > 1e-9*want {
				t.Errorf("ε=%v α=%v: %v, want %v", eps, a, got, want)
			}
			if got > math.Min(eps, a*eps*eps/2)*(1+1e-12) {
				t.Errorf("ε=%v α=%v: %v above min(ε, αε²/2)", eps, a, got)
			}
		}
	}
}

// The Gaussian's RDP is α/(2z²) for noise multiplier z = σ/Δ (Mironov 2017,
// Proposition 7), whatever its sensitivity; the discrete Gaussian's is the
// same (Canonne, Kamath, Steinke 2020, Theorem 4); and a vote with ℓ votes
// per client and noise standard deviation σ is α·ℓ/σ² (L2 sensitivity √(2ℓ) under
// replace-one-client adjacency).
func TestGaussianSensitivityAndVote(t *testing.T) {
	acc := RDP{Orders: []float64{2, 7.5, 64}}
	g, err := acc.RDP(Gaussian{NoiseMultiplier: 3, Sensitivity: 2})
	if err != nil {
		t.Fatal(err)
	}
	v, err := acc.RDP(Vote{NoiseStddev: 3, VotesPerClient: 5})
	if err != nil {
		t.Fatal(err)
	}
	d, err := acc.RDP(DiscreteGaussian{NoiseMultiplier: 3, Sensitivity: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range acc.Orders {
		near(t, "Gaussian", g[i], a/18, 1e-12)
		near(t, "discrete Gaussian", d[i], a/18, 1e-12)
		near(t, "vote", v[i], a*5/9, 1e-12)
	}
	for _, bad := range []Event{Gaussian{NoiseMultiplier: 1}, Gaussian{NoiseMultiplier: -1, Sensitivity: 1}, Vote{NoiseStddev: 1}, Laplace{Scale: 1},
		DiscreteGaussian{NoiseMultiplier: 1, Sensitivity: 0.5}, DiscreteGaussian{NoiseMultiplier: 1}} {
		if _, err := acc.RDP(bad); err == nil {
			t.Errorf("%#v accepted", bad)
		}
	}
}
