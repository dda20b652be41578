package audit

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// TunerCanary audits private tuning (e.g. Xiang et al., Algorithm 2, and
// DP-HyPO) on real DP-SGD runs in their ETCV setting with the score
// manipulation "first coordinate of w₀ − w_N": one of dptune's own tuners
// (Tuner, a tuning.Runner with its Options) runs K ∼ Repetitions
// trainings (grid search: one per candidate of TunerSpace), each a DPSGDCanary trial in the same world whose score is its
// own statistic, and releases the best; the adversary's statistic is the
// released score (−Inf when nothing is released). The candidates (a small
// grid of learning rates) do not change a canary run, so only the selection
// matters — which is what the audit tests.
type TunerCanary struct {
	Run         DPSGDCanary
	Repetitions accounting.Repetitions
	Tuner       tuning.Runner
	Options     tuning.Values
}

// TunerSpace is the space a TunerCanary tunes over: four learning rates,
// which a canary run does not read (grid search trains all four).
func TunerSpace() tuning.Space {
	return tuning.Space{Name: "audit", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.1, 0.2, 0.4, 0.8}, Log: true}}}
}

// canaryTrainer is a tuning.Trainer whose every run is a canary trial.
type canaryTrainer struct {
	run DPSGDCanary
	b   int
}

func (t canaryTrainer) Event() accounting.Event {
	return dpsgd.PlannedEvent(dpsgd.Config{NoiseMultiplier: t.run.NoiseMultiplier, SamplingRate: t.run.SamplingRate, Steps: t.run.Steps,
		DataNorm: dpsgd.DataNormOf(t.run.Arch)})
}

func (t canaryTrainer) Train(ctx context.Context, _ tuning.Candidate, seed *uint64) (tuning.Run, error) {
	if seed == nil {
		return tuning.Run{}, fmt.Errorf("audit: canary runs are seeded")
	}
	s, err := t.run.Trial(ctx, t.b, randsrc.Seeded(*seed, "canary run"))
	return tuning.Run{Score: s}, err
}

// Trial plays the tuning once on X (b = 0) or X′ (b = 1).
func (p TunerCanary) Trial(ctx context.Context, b int, rng *rand.Rand) (float64, error) {
	seed := rng.Uint64()
	space := TunerSpace()
	if p.Tuner == nil {
		return 0, fmt.Errorf("audit: a tuner canary needs a tuner")
	}
	spec := tuning.Spec{Space: space, Repetitions: p.Repetitions, Seed: &seed, Options: p.Options}
	res, err := p.Tuner.Run(ctx, spec, canaryTrainer{p.Run, b}, nil)
	if err != nil {
		return 0, err
	}
	if res.Selected == nil {
		return math.Inf(-1), nil
	}
	return res.Score, nil
}
