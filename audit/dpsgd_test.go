package audit

import (
	"context"
	"math"
	"testing"

	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// The standing check for DP-SGD: with every example in every step (τ = 1)
// and X = ∅, the white-box statistic is the Gaussian mechanism with
// μ = √T/σ, so ε_L stays below the claimed ε (RDP) — and a run whose noise
// is secretly half what the ledger says (σ/2 run, σ claimed) is caught:
// ε_L exceeds the claim.
func TestDPSGDCanaryAudit(t *testing.T) {
	const steps, sigma, trials = 2, 2.0, 3000
	claim, err := accounting.RDP{}.Epsilon(accounting.DPSGD(sigma, 1, steps), 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		run    float64
		broken bool
	}{{sigma, false}, {sigma / 4, true}} {
		p := DPSGDCanary{Arch: CanaryArch, Size: 1, NoiseMultiplier: c.run, ClipNorm: 1, SamplingRate: 1, Steps: steps}
		s0, s1, err := Run(context.Background(), p, Config{Trials: trials, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		lb, err := EpsilonLower(s0, s1, 1e-5, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("σ run %v, claimed ε %.3f: ε_L = %.3f", c.run, claim.Epsilon, lb.EpsilonLower)
		if !c.broken && lb.EpsilonLower > claim.Epsilon {
			t.Errorf("ε_L %.3f above the claim %.3f", lb.EpsilonLower, claim.Epsilon)
		}
		if c.broken && lb.EpsilonLower <= claim.Epsilon {
			t.Errorf("broken noise not caught: ε_L %.3f ≤ claim %.3f", lb.EpsilonLower, claim.Epsilon)
		}
	}
	// The statistic is exactly the summed noise plus the canary's steps.
	p := DPSGDCanary{Arch: model.MNIST, Size: 3, NoiseMultiplier: 1e-9, ClipNorm: 0.5, SamplingRate: 1, Steps: 5}
	s0, s1, err := Run(context.Background(), p, Config{Trials: 4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range s0 {
		if math.Abs(v) > 1e-3 {
			t.Errorf("X: statistic %v, want ≈ 0", v)
		}
	}
	for _, v := range s1 {
		if math.Abs(v-5) > 1e-3 {
			t.Errorf("X′: statistic %v, want ≈ 5 sampled steps", v)
		}
	}
}
