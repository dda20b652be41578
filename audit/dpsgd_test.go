package audit

import (
	"context"
	"math"
	"testing"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// tightAudit plays the worst-case DP-SGD game (X = ∅, Dirac canary, every
// example in every step, all iterates) for 50 steps, 10⁴ trials, claiming
// the σ that RDP calibrates to ε = claimed at δ = 1e-5 but running at
// scale·σ, under flat clipping at C = 1, and returns ε_L and the claim.
func tightAudit(t *testing.T, claimed, scale float64) (lower, claim float64) {
	t.Helper()
	return tightAuditClipped(t, claimed, scale, dpsgd.FlatClipping, 0)
}

// tightAuditClipped is tightAudit under the clipping rule clipping (with
// stability constant gamma when automatic).
func tightAuditClipped(t *testing.T, claimed, scale float64, clipping dpsgd.Clipping, gamma float64) (lower, claim float64) {
	t.Helper()
	const steps, trials = 50, 10000
	sigma, err := accounting.CalibrateNoise(context.Background(), accounting.RDP{}, func(s float64) accounting.Event { return accounting.DPSGD(s, 1, steps) }, claimed, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	c, err := accounting.RDP{}.Epsilon(accounting.DPSGD(sigma, 1, steps), 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	p := DPSGDCanary{Arch: CanaryArch, Size: 1, NoiseMultiplier: scale * sigma, ClipNorm: 1, Clipping: clipping, AutoClipGamma: gamma, SamplingRate: 1, Steps: steps}
	s0, s1, err := Run(context.Background(), p, Config{Trials: trials, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	lb, err := EpsilonLower(s0, s1, 1e-5, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v clipping: σ %.4f claimed (ε %.3f), %.4f run: ε_L = %.3f (%d trials of %d steps)", clipping, sigma, c.Epsilon, scale*sigma, lb.EpsilonLower, trials, steps)
	return lb.EpsilonLower, c.Epsilon
}

// The standing check for DP-SGD: the tight audit's ε_L stays below the
// claimed ε, and is not far below what 10⁴ trials can certify (0.57 of the
// claimed 2 with this seed; 10⁵ trials certify about 1); a run whose σ is
// a quarter of the claimed one's is caught. Built with a planted bug in
// dpsgd, TestPlantedBugCaught requires ε_L above the claim of a correct σ.
func TestDPSGDCanaryAudit(t *testing.T) {
	lower, claim := tightAudit(t, 2, 1)
	if lower > claim {
		t.Errorf("ε_L %.3f above the claim %.3f", lower, claim)
	}
	if lower < 0.5 {
		t.Errorf("ε_L %.3f: the worst-case audit is far looser than its trial count allows", lower)
	}
	if broken, claim := tightAudit(t, 2, 0.25); broken <= claim {
		t.Errorf("σ/4 run at claimed σ not caught: ε_L %.3f ≤ claim %.3f", broken, claim)
	}
}

// The standing check under automatic clipping (Bu et al. 2023, AUTO-S,
// γ = 0.01): the ledger counts it as flat clipping at C = 1 (sensitivity
// 1), and the tight audit's ε_L stays below that claim, and close to what
// its trials certify (the canary's clipped gradient is 4/(4 + γ) of the
// sensitivity, so the game is as tight as flat clipping's); a run at σ/4
// is caught as under flat clipping.
func TestDPSGDCanaryAuditAutoClip(t *testing.T) {
	lower, claim := tightAuditClipped(t, 2, 1, dpsgd.AutomaticClipping, dpsgd.DefaultAutoClipGamma)
	if lower > claim {
		t.Errorf("automatic clipping: ε_L %.3f above the claim %.3f", lower, claim)
	}
	if lower < 0.5 {
		t.Errorf("automatic clipping: ε_L %.3f: the worst-case audit is far looser than its trial count allows", lower)
	}
	if broken, claim := tightAuditClipped(t, 2, 0.25, dpsgd.AutomaticClipping, dpsgd.DefaultAutoClipGamma); broken <= claim {
		t.Errorf("automatic clipping: σ/4 run at claimed σ not caught: ε_L %.3f ≤ claim %.3f", broken, claim)
	}
	bad := DPSGDCanary{Arch: CanaryArch, Size: 1, NoiseMultiplier: 1, ClipNorm: 0.5, Clipping: dpsgd.AutomaticClipping, AutoClipGamma: 0.01, SamplingRate: 1, Steps: 1}
	if bad.Check() == nil {
		t.Error("automatic clipping with clipping norm 0.5 accepted")
	}
	bad.ClipNorm, bad.AutoClipGamma = 1, 0
	if bad.Check() == nil {
		t.Error("automatic clipping with γ = 0 accepted")
	}
	bad.AutoClipGamma = 1e-300
	if bad.Check() == nil {
		t.Error("automatic clipping with γ = 1e-300 (below dpsgd.MinAutoClipGamma) accepted")
	}
}

// The statistic is exactly the summed noise plus the canary's sampled
// steps, on any network.
func TestDPSGDCanaryStatistic(t *testing.T) {
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

// At τ = 1 the all-iterates statistic (the updates' log-likelihood ratio)
// is increasing in the last iterate's (their sum): the two order the same
// trials the same way, so they give the same ε_L. Below τ = 1 they differ.
func TestObserveAllAtRateOne(t *testing.T) {
	stats := func(observe string, q float64) []float64 {
		p := DPSGDCanary{Observe: observe, Arch: CanaryArch, Size: 4, NoiseMultiplier: 3, ClipNorm: 1, SamplingRate: q, Steps: 20}
		s0, s1, err := Run(context.Background(), p, Config{Trials: 200, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		return append(s0, s1...)
	}
	all, last := stats(ObserveAll, 1), stats(ObserveLast, 1)
	for i := range all {
		for j := range all {
			if (all[i] < all[j]) != (last[i] < last[j]) && math.Abs(last[i]-last[j]) > 1e-6 {
				t.Fatalf("trials %d, %d: all-iterates %v, %v but last iterate %v, %v", i, j, all[i], all[j], last[i], last[j])
			}
		}
	}
	allQ, lastQ := stats(ObserveAll, 0.3), stats(ObserveLast, 0.3)
	differ := false
	for i := range allQ {
		for j := range allQ {
			differ = differ || (allQ[i] < allQ[j]) != (lastQ[i] < lastQ[j])
		}
	}
	if !differ {
		t.Error("at τ = 0.3 the two statistics order every pair of trials alike")
	}
	if err := (DPSGDCanary{Observe: "first", Arch: CanaryArch, Size: 1, NoiseMultiplier: 1, ClipNorm: 1, SamplingRate: 1, Steps: 1}).Check(); err == nil {
		t.Error("an unknown view was accepted")
	}
}
