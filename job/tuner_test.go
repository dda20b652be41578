package job_test

import (
	"context"
	"math"
	"testing"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// firstOnly is a tuner that job does not know by name: one run of the first
// candidate, released. Its event is the base run's.
type firstOnly struct{}

func (firstOnly) Name() string                                             { return "first-only" }
func (firstOnly) Summary() string                                          { return "one run of the first candidate" }
func (firstOnly) Options() []tuning.Option                                 { return nil }
func (firstOnly) Uses() tuning.Uses                                        { return tuning.Uses{TrainerScores: true} }
func (firstOnly) Check(tuning.Spec) error                                  { return nil }
func (firstOnly) Accountant(tuning.Spec) accounting.Accountant             { return accounting.RDP{} }
func (firstOnly) Event(b accounting.Event, _ tuning.Spec) accounting.Event { return b }
func (firstOnly) Label(tuning.Spec) string                                 { return "first candidate, one run" }
func (f firstOnly) Run(ctx context.Context, s tuning.Spec, t tuning.Trainer, _ runner.Runner) (tuning.Result, error) {
	var res tuning.Result
	res.Ledger.Add(f.Label(s), t.Event())
	c := s.Space.At(0)
	r, err := t.Train(ctx, c, s.Seed)
	if err != nil {
		return res, err
	}
	res.Selected, res.Model, res.Score, res.NoisyCount = &c, r.Model, r.Score, r.NoisyCount
	return res, nil
}

func init() { tuning.Register(firstOnly{}) }

// A registered tuner runs through job.Tune by name alone: Tune calibrates
// the base run so that the tuner's event spends exactly the budget (one
// DP-SGD run and its private score, computed here from the report's σ),
// and releases what the tuner selected under the tuner's ledger.
func TestTuneRunsARegisteredTuner(t *testing.T) {
	seed := uint64(5)
	space := tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.3, 0.1}}}}
	spec := job.TuneSpec{Data: tinyMNIST(600), Tuner: "first-only", Space: space, Epsilon: 4, Delta: 1e-5,
		Epochs: 1, BatchSize: 50, Validation: "private", ValSize: 100, ScoreNoise: 5, Seed: &seed}
	sigma, err := job.CheckTune(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	rel, _, err := job.Tune(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	rep := rel.Report.(*job.TuneReport)
	if rep.BaseNoiseMultiplier != sigma || rep.Tuner != "first-only" {
		t.Errorf("report: tuner %q, σ = %v; CheckTune's σ = %v", rep.Tuner, rep.BaseNoiseMultiplier, sigma)
	}
	run := accounting.Composed{Events: []accounting.Event{accounting.DPSGD(sigma, 50.0/500, rep.Steps),
		accounting.DiscreteGaussian{NoiseMultiplier: 5, Sensitivity: 1}}}
	g, err := accounting.RDP{}.Epsilon(run, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if g.Epsilon > 4 || math.Abs(g.Epsilon-4) > 0.01 || math.Abs(*rel.Epsilon-g.Epsilon) > 1e-9 {
		t.Errorf("one run at σ = %v spends ε = %v; released ε = %v; budget 4", sigma, g.Epsilon, *rel.Epsilon)
	}
	if len(rel.Ledger.Entries) != 1 || rel.Ledger.Entries[0].Label != "first candidate, one run" {
		t.Errorf("ledger %+v", rel.Ledger.Entries)
	}
	if rel.Model == nil || rel.Selected[tuning.LearningRate] != 0.3 {
		t.Errorf("released model %v, selected %v; want the first candidate's", rel.Model != nil, rel.Selected)
	}
	if names := tuning.NamesList(nil); names != "randomstop, gp, doubling, grid, recommended, vote or first-only" {
		t.Errorf("tuning.NamesList(nil) = %q", names)
	}
}
