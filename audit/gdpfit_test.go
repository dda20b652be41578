package audit

import (
	"math"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/privacy/accounting"
)

// On exactly Gaussian statistics of shift μ the fit recovers μ, and its ε
// is the Gaussian mechanism's: what PLD computes for one Gaussian of
// noise multiplier 1/μ.
func TestGDPEstimateRecoversMu(t *testing.T) {
	const mu, n = 1.5, 200000
	rng := randsrc.Seeded(3, "gdp")
	s0, s1 := make([]float64, n), make([]float64, n)
	for i := range s0 {
		s0[i] = 10 + 3*rng.NormFloat64()
		s1[i] = 10 + 3*mu + 3*rng.NormFloat64()
	}
	gotMu, eps, err := GDPEstimate(s0, s1, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(gotMu-mu) > 0.02 { // standard error ≈ √(2/n) ≈ 0.003
		t.Errorf("μ̂ = %.4f, want %.1f", gotMu, mu)
	}
	want, err := accounting.PLD{}.Epsilon(accounting.Gaussian{NoiseMultiplier: 1 / mu, Sensitivity: 1}, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(eps-want.Epsilon) > 0.03*want.Epsilon {
		t.Errorf("ε̂ = %.4f, want ≈ %.4f (PLD)", eps, want.Epsilon)
	}
	if _, e, _ := GDPEstimate(s1, s0, 1e-5); e != 0 {
		t.Errorf("reversed sides: ε̂ = %v, want 0", e)
	}
	if _, _, err := GDPEstimate([]float64{1}, s1, 1e-5); err == nil {
		t.Error("one statistic accepted")
	}
	if _, _, err := GDPEstimate([]float64{1, math.Inf(-1)}, s1, 1e-5); err == nil {
		t.Error("an infinite statistic accepted")
	}
}
