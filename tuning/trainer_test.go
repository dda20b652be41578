package tuning

import (
	"context"
	"math"
	"testing"

	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// A private score is an integer noisy count over the nominal validation
// size, counted as a discrete Gaussian of sensitivity 1; a run whose
// parameters stop being finite fails and has no model.
func TestDPSGDTrainerScoreAndFailure(t *testing.T) {
	tr := &DPSGDTrainer{Arch: model.MNIST, Data: tinyMNIST(64, 1), Val: tinyMNIST(50, 2), ValSize: 40,
		NoiseMultiplier: 1, SamplingRate: 0.25, ExpectedBatchSize: 16, Steps: 2, LearningRate: 0.1, ClipNorm: 1, ScoreNoise: 3}
	if err := tr.Check(); err != nil {
		t.Fatal(err)
	}
	seed := uint64(7)
	c := Candidate{Values: map[string]float64{LearningRate: 0.1, ClipNorm: 1}}
	r, err := tr.Train(context.Background(), c, &seed)
	if err != nil {
		t.Fatal(err)
	}
	if r.Failed || r.Model == nil {
		t.Fatal("run failed")
	}
	if r.Score*40 != float64(r.NoisyCount) || r.Score != float64(r.NoisyCount)/40 {
		t.Errorf("score %v is not the noisy count %d over the nominal 40", r.Score, r.NoisyCount)
	}
	ev, ok := tr.Event().(accounting.Composed)
	if !ok || len(ev.Events) != 2 || ev.Events[1] != (accounting.DiscreteGaussian{NoiseMultiplier: 3, Sensitivity: 1}) {
		t.Errorf("event %#v", tr.Event())
	}
	c.Values[LearningRate] = 1e300
	r, err = tr.Train(context.Background(), c, &seed)
	if err != nil || !r.Failed || r.Model != nil || !math.IsInf(r.Score, -1) {
		t.Errorf("diverging run: %+v, %v", r, err)
	}
}

// A tuner never releases a failed run: when every run fails, nothing but the
// ledger is released.
func TestFailedRunsAreNeverSelected(t *testing.T) {
	tr := &DPSGDTrainer{Arch: model.MNIST, Data: tinyMNIST(64, 1), Val: tinyMNIST(20, 2), NoiseMultiplier: 1,
		SamplingRate: 0.25, Steps: 2, LearningRate: 0.1, ClipNorm: 1}
	space := Space{Name: "diverging", Dims: []Dim{{Name: LearningRate, Values: []float64{1e300}}}}
	seed := uint64(3)
	res, err := RandomStop(context.Background(), Config{Space: space, Trainer: tr, Repetitions: accounting.PoissonRepetitions(3), Seed: &seed, Diagnostics: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Selected != nil || res.Model != nil || len(res.Ledger.Entries) != 1 {
		t.Errorf("released %+v from failed runs", res)
	}
	for _, d := range res.Diagnostics {
		if !d.Failed {
			t.Errorf("run %+v not marked failed", d)
		}
	}
}
