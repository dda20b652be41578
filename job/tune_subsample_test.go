package job_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// subsampleSpec is splitSpec on a tuning subset of ratio 0.5, its private
// scores on 200 nominal validation examples (100 of them in the subset).
func subsampleSpec() job.TuneSpec {
	s := splitSpec()
	s.Subsample, s.ValSize = 0.5, 200
	return s
}

// A tuning on a subsample (Koskela & Kulkarni): the ledger's first entry is
// the whole selection amplified once, PoissonSampled{q, the grid's three
// runs with their scores}, each run at the whole set's sampling rate and
// steps; the total — recomputed here from those events and the final run —
// meets ε within the calibration's tolerance, never above; and the
// amplification buys the selection's runs less noise than the same
// tuning without a subsample.
func TestSubsampleLedger(t *testing.T) {
	spec := subsampleSpec()
	rel, _, err := job.Tune(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	rep := rel.Report.(*job.TuneReport)
	if rep.Subsample != 0.5 || rep.SubsampleRule != tuning.SubsampleRule {
		t.Errorf("report: subsample %v, rule %q", rep.Subsample, rep.SubsampleRule)
	}
	const nWhole, nSel = 600, 400
	qf, qs := 50.0/nWhole, 50.0/nSel
	if rep.SamplingRate != qs {
		t.Errorf("the selection's runs sample at %v, want the whole selection split's %v", rep.SamplingRate, qs)
	}
	run := accounting.Composed{Events: []accounting.Event{accounting.DPSGD(rep.BaseNoiseMultiplier, qs, dpsgd.StepsForEpochs(1, qs)),
		accounting.DiscreteGaussian{NoiseMultiplier: 5, Sensitivity: 1}}}
	sel := accounting.PoissonSampled{SamplingRate: 0.5, Event: accounting.SelfComposed{Event: run, Count: 3}}
	final := accounting.DPSGD(rep.FinalNoiseMultiplier, qf, dpsgd.StepsForEpochs(1, qf))
	total, err := accounting.RDP{}.Epsilon(accounting.Composed{Events: []accounting.Event{sel, final}}, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(total.Epsilon-*rel.Epsilon) > 1e-9 || total.Epsilon > 4 || total.Epsilon < 4*(1-1e-3) {
		t.Errorf("released ε = %v; the amplified selection and the final run compose to %v; want 4 within the calibration's tolerance", *rel.Epsilon, total.Epsilon)
	}
	if n := len(rel.Ledger.Entries); n != 2 || !strings.Contains(rel.Ledger.Entries[0].Label, "tuning subset of ratio 0.5") {
		t.Fatalf("ledger %+v, want the amplified selection and the final run", rel.Ledger)
	}
	if _, ok := rel.Ledger.Entries[0].Event.(accounting.PoissonSampled); !ok {
		t.Errorf("the selection's entry is %T, want one PoissonSampled event", rel.Ledger.Entries[0].Event)
	}
	without := subsampleSpec()
	without.Subsample = 0
	sigma, err := job.CheckTune(context.Background(), without)
	if err != nil {
		t.Fatal(err)
	}
	if !(rep.BaseNoiseMultiplier < sigma) {
		t.Errorf("the selection's σ on the subset is %v, without it %v: the amplification should buy less noise", rep.BaseNoiseMultiplier, sigma)
	}
	if rel.Model == nil || rep.FinalSamplingRate != qf {
		t.Errorf("released model %v at q = %v, want the final run's on the whole set (q = %v)", rel.Model != nil, rep.FinalSamplingRate, qf)
	}
}

// Refused before any data is read: a ratio outside (0, 1], a subset with
// no final run, one that leaves fewer than 100 validation examples, or a
// candidate's expected batch under one example.
func TestSubsampleRefused(t *testing.T) {
	for name, change := range map[string]func(*job.TuneSpec){
		"ratio 0 share":  func(s *job.TuneSpec) { s.SelectionShare = 0 },
		"ratio 1.5":      func(s *job.TuneSpec) { s.Subsample = 1.5 },
		"ratio −0.2":     func(s *job.TuneSpec) { s.Subsample = -0.2 },
		"ratio NaN":      func(s *job.TuneSpec) { s.Subsample = math.NaN() },
		"few validation": func(s *job.TuneSpec) { s.Subsample = 0.3 },
		"batch under one": func(s *job.TuneSpec) {
			s.Subsample, s.ValSize, s.BatchSize, s.Default.BatchSize = 0.01, 290, 50, 50
		},
	} {
		spec := subsampleSpec()
		change(&spec)
		loaded := false
		load := spec.Data.Load
		spec.Data.Load = func() (a, b *data.Dataset, err error) { loaded = true; return load() }
		_, _, err := job.Tune(context.Background(), spec)
		if !errors.Is(err, job.ErrInvalid) || loaded {
			t.Errorf("%s: %v (data read: %v), want an error wrapping ErrInvalid before any data is read", name, err, loaded)
		}
	}
}

// recommendedSpec is the recommended tuner on tinyMNIST(12000) with only
// what it does not fix: two learning rates, the default among them.
func recommendedSpec() job.TuneSpec {
	seed := uint64(3)
	return job.TuneSpec{Data: tinyMNIST(12000), Tuner: tuning.RecommendedName, Epsilon: 4, Delta: 1e-5, Epochs: 1, BatchSize: 200,
		Space: tuning.Space{Name: "lr", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.05, 0.5}, Log: true}}},
		Seed:  &seed, Default: &job.TrainDefaults{BatchSize: 200, Epochs: 1, LearningRate: 0.2, Momentum: 0.5, ClipNorm: 1, Source: "a test"}}
}

// The recommended tuner fills in what it fixes — the default among the
// candidates with its weight, the selection share, the tuning subset, K's
// distribution and the private validation (a sixth of the nominal size) —
// and its report says so; a request that sets one of them otherwise is
// refused before any data is read, naming it.
func TestRecommendedPreset(t *testing.T) {
	spec := recommendedSpec()
	var started job.TuneStart
	spec.Started = func(s job.TuneStart) { started = s }
	rel, _, err := job.Tune(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if started.SelectionShare != 0.1 || started.Subsample != 0.1 || started.FinalNoiseMultiplier == 0 {
		t.Errorf("announced %+v, want the preset's share and subset", started)
	}
	rep := rel.Report.(*job.TuneReport)
	if rep.Tuner != tuning.RecommendedName || !rep.IncludesDefault || rep.DefaultWeight != 0.75 || rep.SelectionShare != 0.1 ||
		rep.Subsample != 0.1 || rep.Repetitions != accounting.PoissonRepetitions(3) || rep.ValidationSize != 200 || rep.Validation != "private" {
		t.Errorf("report: tuner %s, default %v (weight %v), share %v, subsample %v, K %v, validation %s of %d",
			rep.Tuner, rep.IncludesDefault, rep.DefaultWeight, rep.SelectionShare, rep.Subsample, rep.Repetitions, rep.Validation, rep.ValidationSize)
	}
	if *rel.Epsilon > 4 || len(rep.EpsilonComponents) != 2 {
		t.Errorf("ε = %v, components %+v", *rel.Epsilon, rep.EpsilonComponents)
	}
	for name, change := range map[string]func(*job.TuneSpec){
		"share":   func(s *job.TuneSpec) { s.SelectionShare = 0.3 },
		"ratio":   func(s *job.TuneSpec) { s.Subsample = 0.2 },
		"weight":  func(s *job.TuneSpec) { s.DefaultWeight = 0.25 },
		"K":       func(s *job.TuneSpec) { s.Repetitions = accounting.PoissonRepetitions(20) },
		"noise":   func(s *job.TuneSpec) { s.ScoreNoise = 5 },
		"val":     func(s *job.TuneSpec) { s.ValSize = 500 },
		"public":  func(s *job.TuneSpec) { s.Validation = "public" },
		"too few": func(s *job.TuneSpec) { s.Data = tinyMNIST(3000) },
	} {
		spec := recommendedSpec()
		change(&spec)
		loaded := false
		load := spec.Data.Load
		spec.Data.Load = func() (a, b *data.Dataset, err error) { loaded = true; return load() }
		_, _, err := job.Tune(context.Background(), spec)
		if !errors.Is(err, job.ErrInvalid) || loaded {
			t.Errorf("%s: %v (data read: %v), want an error wrapping ErrInvalid before any data is read", name, err, loaded)
		}
	}
}

// The recommended tuner on a network with no published settings and none
// given is refused before any data is read, saying how to go on.
func TestRecommendedNeedsADefault(t *testing.T) {
	spec := recommendedSpec()
	spec.Default = nil
	_, _, err := job.Tune(context.Background(), spec)
	if !errors.Is(err, job.ErrInvalid) || !strings.Contains(err.Error(), "give them, or tune with a tuner that needs none") {
		t.Errorf("%v", err)
	}
}
