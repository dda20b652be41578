package job_test

import (
	"context"
	"math"
	"testing"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// Every candidate is trained once at the whole budget: each run's own σ
// spends ε (its steps, from its epochs and the training split's nominal
// size) within 0.01 below the target, so a candidate of twice the epochs
// takes more noise; the clean scores are accuracies.
func TestEveryCandidateSpendsTheWholeBudgetEach(t *testing.T) {
	seed := uint64(2)
	space := tuning.Space{Name: "four", Dims: []tuning.Dim{
		{Name: tuning.LearningRate, Values: []float64{0.3, 0.1}},
		{Name: tuning.Epochs, Values: []float64{1, 2}}}}
	s := job.TuneSpec{Data: tinyMNIST(600), Space: space, Epsilon: 4, Delta: 1e-5, Epochs: 1, BatchSize: 50, ValSize: 100, Seed: &seed}
	runs, err := job.EveryCandidate(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 4 {
		t.Fatalf("%d runs of 4 candidates", len(runs))
	}
	q := 50.0 / 500 // the training split's nominal size: 600 − 100
	for _, r := range runs {
		steps := int(r.Candidate[tuning.Epochs]) * 10
		g, err := accounting.RDP{}.Epsilon(accounting.DPSGD(r.NoiseMultiplier, q, steps), 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		if g.Epsilon > 4 || math.Abs(g.Epsilon-4) > 0.01 {
			t.Errorf("%v: σ = %v spends ε = %v over %d steps, want 4", r.Candidate, r.NoiseMultiplier, g.Epsilon, steps)
		}
		if r.Failed || r.ValidationAccuracy < 0 || r.ValidationAccuracy > 1 || r.TestAccuracy < 0 || r.TestAccuracy > 1 {
			t.Errorf("%v: scores %v, %v", r.Candidate, r.ValidationAccuracy, r.TestAccuracy)
		}
	}
	if !(runs[1].NoiseMultiplier > runs[0].NoiseMultiplier) {
		t.Errorf("2 epochs at σ = %v, 1 epoch at σ = %v", runs[1].NoiseMultiplier, runs[0].NoiseMultiplier)
	}
}
