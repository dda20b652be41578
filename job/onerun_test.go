package job

import (
	"context"
	"errors"
	"testing"

	"github.com/dptune/dptune/audit"
)

// TestAuditOneRunRefuses: settings no one-run audit can run with wrap
// ErrInvalid, before training.
func TestAuditOneRunRefuses(t *testing.T) {
	seed := uint64(1)
	base := TrainSpec{Data: randomImages(40, 20), Epsilon: 4, Delta: 1e-5, ClipNorm: 1, BatchSize: 10, Epochs: 1, LearningRate: 0.1, Seed: &seed}
	for name, s := range map[string]OneRunSpec{
		"one canary":          {Train: base, Canaries: 1, Confidence: 0.95},
		"more than the test":  {Train: base, Canaries: 21, Confidence: 0.95},
		"guess count 0":       {Train: base, Canaries: 10, Guesses: []int{0}, Confidence: 0.95},
		"guess count above m": {Train: base, Canaries: 10, Guesses: []int{11}, Confidence: 0.95},
		"confidence 1":        {Train: base, Canaries: 10, Confidence: 1},
		"unknown canary kind": {Train: base, Canaries: 10, Confidence: 0.95, Canary: "pixel"},
		"more than the parameters": {Train: TrainSpec{Data: Source{Name: "tiny", Arch: audit.CanaryArch, NominalN: 40, Load: base.Data.Load}, Epsilon: 4,
			Delta: 1e-5, ClipNorm: 1, BatchSize: 10, Epochs: 1, LearningRate: 0.1, Seed: &seed}, Canaries: 5, Confidence: 0.95},
		"non-private training": {Train: TrainSpec{Data: base.Data, NonPrivate: true, BatchSize: 10, Epochs: 1, LearningRate: 0.1}, Canaries: 10, Confidence: 0.95},
	} {
		if _, err := AuditOneRun(context.Background(), s); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// TestAuditOneRunBounds: a run with little noise memorises its mislabelled
// canaries, and the black-box audit says so (ε_L > 0) without ever
// exceeding the run's ε (Steinke et al., Theorem 3.1); the test metrics
// leave the canaries out.
func TestAuditOneRunBounds(t *testing.T) {
	seed := uint64(3)
	s := OneRunSpec{Train: TrainSpec{Data: randomImages(100, 300), NoiseMultiplier: 0.3, Delta: 1e-5, ClipNorm: 1, BatchSize: 100,
		Epochs: 40, LearningRate: 0.5, Momentum: 0.9, Seed: &seed}, Canaries: 200, Guesses: []int{20, 60}, Confidence: 0.95, Canary: OneRunInput}
	res, err := AuditOneRun(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	eps := res.EpsilonUpper["rdp"]
	t.Logf("ε_L = %.3f, ε = %.1f, guesses %+v", res.EpsilonLower, eps, res.Guesses)
	if !(res.EpsilonLower > 0 && res.EpsilonLower <= eps) {
		t.Errorf("ε_L = %v against ε = %v", res.EpsilonLower, eps)
	}
	if res.Run.TestAccuracy == nil || res.Trials != 1 || res.Canaries != 200 || len(res.Guesses) != 2 {
		t.Errorf("result %+v", res)
	}
}

// TestAuditOneRunGradient: white-box Dirac canaries at sampling rate 1
// and a moderate ε. Each canary's coordinate moves by T·η·C/B plus
// Gaussian noise of standard deviation √T·σ·η·C/B (momentum 0), so the
// scores of included and excluded canaries are two Gaussians μ = √T/σ
// apart; the audit finds ε_L > 0 and, by the theorem, ε_L ≤ ε.
func TestAuditOneRunGradient(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		s := OneRunSpec{Train: TrainSpec{Data: randomImages(50, 1000), Epsilon: 6, Delta: 1e-5, ClipNorm: 1, BatchSize: 50,
			Epochs: 5, LearningRate: 0.1, Seed: &seed}, Canaries: 1000, Confidence: 0.95}
		res, err := AuditOneRun(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		eps := res.EpsilonUpper["rdp"]
		t.Logf("seed %d: ε_L = %.3f, ε = %.2f, guesses %+v", seed, res.EpsilonLower, eps, res.Guesses)
		if !(res.EpsilonLower > 0.5 && res.EpsilonLower <= eps) || res.Canary != OneRunGradient {
			t.Errorf("ε_L = %v against ε = %v (%s)", res.EpsilonLower, eps, res.Canary)
		}
	}
}
