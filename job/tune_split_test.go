package job_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// splitSpec is a grid tuning of tinyMNIST(600) over two learning rates
// with the default (batch 50, one epoch: the tuning's own run shape) among
// the candidates and a selection share of 0.3 of ε = 4.
func splitSpec() job.TuneSpec {
	seed := uint64(5)
	return job.TuneSpec{Data: tinyMNIST(600), Tuner: tuning.GridName, Epsilon: 4, Delta: 1e-5, Epochs: 1, BatchSize: 50,
		Space:      tuning.Space{Name: "lr", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.05, 0.5}, Log: true}}},
		Validation: "private", ValSize: 100, ScoreNoise: 5, Seed: &seed, IncludeDefault: true, SelectionShare: 0.3,
		Default: &job.TrainDefaults{BatchSize: 50, Epochs: 1, LearningRate: 0.2, Momentum: 0.5, ClipNorm: 1, Source: "a test"}}
}

// A tuning with a selection share: the final run's σ is a stand-alone
// run's σ at (1 − s)·ε (the same DP-SGD run on the whole nominal training
// set, calibrated alone), the ledger holds the selection (the grid's 3 runs,
// the default included, each with its private score) and the final run,
// its ε — recomputed here from those events — meets the total ε to within
// the calibration's tolerance and never above it, the components give each
// part's ε alone, and the released model is the final run's (its σ and
// sampling rate on all 600 examples, not a selection run's on 500).
func TestSelectionShareLedger(t *testing.T) {
	spec := splitSpec()
	var started job.TuneStart
	spec.Started = func(s job.TuneStart) { started = s }
	rel, _, err := job.Tune(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	rep := rel.Report.(*job.TuneReport)
	const nWhole, nSel = 600, 500
	qf, qs := 50.0/nWhole, 50.0/nSel
	single := func(z float64) accounting.Event { return accounting.DPSGD(z, qf, dpsgd.StepsForEpochs(1, qf)) }
	alone, err := accounting.CalibrateNoise(context.Background(), accounting.RDP{}, single, 0.7*4, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if rep.FinalNoiseMultiplier != alone || started.FinalNoiseMultiplier != alone {
		t.Errorf("final run's σ = %v (announced %v), a stand-alone run at ε = 2.8 takes %v", rep.FinalNoiseMultiplier, started.FinalNoiseMultiplier, alone)
	}
	if started.Candidates != 3 {
		t.Errorf("%d candidates announced, want the space's 2 and the default", started.Candidates)
	}
	sel := accounting.SelfComposed{Event: accounting.Composed{Events: []accounting.Event{accounting.DPSGD(rep.BaseNoiseMultiplier, qs, dpsgd.StepsForEpochs(1, qs)),
		accounting.DiscreteGaussian{NoiseMultiplier: 5, Sensitivity: 1}}}, Count: 3}
	total, err := accounting.RDP{}.Epsilon(accounting.Composed{Events: []accounting.Event{sel, single(alone)}}, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(total.Epsilon-*rel.Epsilon) > 1e-9 || total.Epsilon > 4 || total.Epsilon < 4*(1-1e-3) {
		t.Errorf("released ε = %v; the selection and the final run compose to %v; want 4 within the calibration's tolerance", *rel.Epsilon, total.Epsilon)
	}
	if n := len(rel.Ledger.Entries); n != 2 || !strings.Contains(rel.Ledger.Entries[1].Label, "final DP-SGD run") {
		t.Fatalf("ledger %+v, want the selection and the final run", rel.Ledger)
	}
	cs := rep.EpsilonComponents
	if len(cs) != 2 || cs[0].Name != tuning.ComponentSelection || cs[1].Name != tuning.ComponentFinal || cs[0].Epsilon == nil || cs[1].Epsilon == nil {
		t.Fatalf("components %+v, want selection and final run", cs)
	}
	if f := *cs[1].Epsilon; f > 2.8 || f < 2.8*(1-1e-3) {
		t.Errorf("the final run's ε alone = %v, want (1 − 0.3)·4 = 2.8", f)
	}
	g, _ := accounting.RDP{}.Epsilon(sel, 1e-5)
	if math.Abs(g.Epsilon-*cs[0].Epsilon) > 1e-9 || *cs[0].Epsilon+*cs[1].Epsilon <= *rel.Epsilon {
		t.Errorf("selection's ε alone = %v, recomputed %v; the parts' sum must exceed the composed total %v", *cs[0].Epsilon, g.Epsilon, *rel.Epsilon)
	}
	if rel.Model == nil || rep.Selected == nil || rep.FinalSamplingRate != qf || rep.FinalSteps != dpsgd.StepsForEpochs(1, qf) || rep.SamplingRate != qs {
		t.Errorf("released model %v from q = %v (%d steps), want the final run's q = %v; selection runs at q = %v", rel.Model != nil, rep.FinalSamplingRate, rep.FinalSteps, qf, rep.SamplingRate)
	}
	if !rep.IncludesDefault || rep.SelectionShare != 0.3 || rep.Baseline == nil || rep.Baseline.LearningRate != 0.2 {
		t.Errorf("report: includes default %v, share %v, baseline %+v", rep.IncludesDefault, rep.SelectionShare, rep.Baseline)
	}
}

// An unsplit tuning has one component, the selection, whose ε is the total.
func TestUnsplitTuningHasOneComponent(t *testing.T) {
	spec := splitSpec()
	spec.SelectionShare, spec.IncludeDefault, spec.Default = 0, false, nil
	rel, _, err := job.Tune(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	cs := rel.Report.(*job.TuneReport).EpsilonComponents
	if len(cs) != 1 || cs[0].Name != tuning.ComponentSelection || cs[0].Epsilon == nil || math.Abs(*cs[0].Epsilon-*rel.Epsilon) > 1e-12 {
		t.Errorf("components %+v, want one selection at ε = %v", cs, *rel.Epsilon)
	}
}

// Refused before any work: a share outside (0, 1), a share no selection
// noise can meet (named in the error), a share for a tuner with its own
// final run, the default with no settings given and none published, the
// default for a tuner that cannot take it, and a weight on it without it.
func TestSplitAndDefaultRefused(t *testing.T) {
	for name, change := range map[string]func(*job.TuneSpec){
		"share 1":            func(s *job.TuneSpec) { s.SelectionShare = 1 },
		"share 1.5":          func(s *job.TuneSpec) { s.SelectionShare = 1.5 },
		"share −0.1":         func(s *job.TuneSpec) { s.SelectionShare = -0.1 },
		"share NaN":          func(s *job.TuneSpec) { s.SelectionShare = math.NaN() },
		"infeasible share":   func(s *job.TuneSpec) { s.SelectionShare = 1e-4 },
		"doubling share":     func(s *job.TuneSpec) { s.Tuner, s.IncludeDefault, s.Default = tuning.DoublingName, false, nil },
		"no default":         func(s *job.TuneSpec) { s.Default = nil },
		"gp default":         func(s *job.TuneSpec) { s.Tuner, s.SelectionShare, s.Repetitions = tuning.GPName, 0, mustTNB(t) },
		"weight alone":       func(s *job.TuneSpec) { s.IncludeDefault, s.Default, s.DefaultWeight = false, nil, 0.5 },
		"default momentum 1": func(s *job.TuneSpec) { s.Default.Momentum = 1 },
		"default batch 601":  func(s *job.TuneSpec) { s.Default.BatchSize = 601 },
	} {
		spec := splitSpec()
		change(&spec)
		loaded := false
		load := spec.Data.Load
		spec.Data.Load = func() (a, b *data.Dataset, err error) { loaded = true; return load() }
		_, _, err := job.Tune(context.Background(), spec)
		if !errors.Is(err, job.ErrInvalid) || loaded {
			t.Errorf("%s: %v (data read: %v), want an error wrapping ErrInvalid before any data is read", name, err, loaded)
		}
		if name == "infeasible share" && (err == nil || !strings.Contains(err.Error(), "selection share 0.0001")) {
			t.Errorf("infeasible share: %v, want the share named", err)
		}
	}
}

func mustTNB(t *testing.T) accounting.Repetitions {
	r, err := accounting.TNBWithMean(1, 5)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A split tuning of a network with private data normalisation: the final
// run's normalisation and steps are separate ledger entries, and the
// components add the final run's "data normalisation" with its ε alone;
// the final run's buffers are its own estimate.
func TestSelectionShareDataNorm(t *testing.T) {
	spec := splitSpec()
	spec.IncludeDefault, spec.Default, spec.SelectionShare = false, nil, 0.5
	a, err := model.NewArch(model.Spec{Name: "dn", Layers: []model.LayerSpec{model.DataNorm(7, 0, 0), model.Flatten(), model.Linear(10)}}, 1, 28, 28, 10)
	if err != nil {
		t.Fatal(err)
	}
	spec.Data.Arch = a
	rel, _, err := job.Tune(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	rep := rel.Report.(*job.TuneReport)
	g := accounting.Gaussian{NoiseMultiplier: 7, Sensitivity: 1}
	norm := accounting.Composed{Events: []accounting.Event{g, g}}
	alone, _ := accounting.RDP{}.Epsilon(norm, 1e-5)
	cs := rep.EpsilonComponents
	if len(cs) != 3 || cs[0].Name != tuning.ComponentDataNorm || cs[0].Epsilon == nil || *cs[0].Epsilon != alone.Epsilon ||
		cs[1].Name != tuning.ComponentSelection || cs[2].Name != tuning.ComponentFinal {
		t.Fatalf("components %+v, want the tuning's one data normalisation at ε = %v, the selection and the final run", cs, alone.Epsilon)
	}
	es := rel.Ledger.Entries
	if len(es) != 3 || es[0].Label != tuning.SharedDataNormLabel || !reflect.DeepEqual(es[0].Event, accounting.Event(norm)) {
		t.Fatalf("ledger %+v, want the one normalisation, the selection and the final run's steps", es)
	}
	// The final run's share (1 − 0.5)·4 = 2 holds the estimate it uses.
	f, err := accounting.RDP{}.Epsilon(accounting.Composed{Events: []accounting.Event{norm, es[2].Event}}, 1e-5)
	if err != nil || f.Epsilon > 2 || f.Epsilon < 2*(1-1e-3) || *cs[2].Epsilon >= f.Epsilon {
		t.Errorf("the final run's ε with the estimate = %v (alone %v), want (1 − 0.5)·4 = 2", f.Epsilon, *cs[2].Epsilon)
	}
	if rel.Model == nil || len(rel.Model.Buffers) != 2 || rel.Model.Buffers[1] == 1 {
		t.Errorf("released model's buffers %v: not an estimate", rel.Model.Buffers)
	}
}

// Random-stop with the default among its candidates takes the stated
// weight (tuning.DefaultWeight when none is given), labels its ledger with
// it, and counts every run as the costlier of the tuning's run and the
// default's (batch 100 here, against the tuning's 50).
func TestRandomStopWithDefault(t *testing.T) {
	spec := splitSpec()
	spec.Tuner, spec.SelectionShare, spec.Repetitions = tuning.RandomStopName, 0, accounting.PoissonRepetitions(2)
	spec.Default.BatchSize = 100
	rel, _, err := job.Tune(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	rep := rel.Report.(*job.TuneReport)
	if !rep.IncludesDefault || rep.DefaultWeight != tuning.DefaultWeight || !rep.PerCandidate {
		t.Errorf("report: includes default %v at weight %v, per-candidate runs %v", rep.IncludesDefault, rep.DefaultWeight, rep.PerCandidate)
	}
	if l := rel.Ledger.Entries[0].Label; !strings.Contains(l, "the default with probability 0.25") {
		t.Errorf("ledger label %q does not state the default's weight", l)
	}
	if _, ok := rel.Ledger.Entries[0].Event.(accounting.RepeatAndSelect).Event.(accounting.Composed).Events[0].(accounting.WorstCase); !ok {
		t.Errorf("the runs are not counted as the costlier of the tuning's and the default's: %+v", rel.Ledger.Entries[0].Event)
	}
}

// The doubling tuner with the default among its candidates scores it as
// one more candidate (its report counts 3) and calibrates its final run
// over the default's run too: with the default's batch of 100 against the
// tuning's 50, the final run is counted as the costlier.
func TestDoublingWithDefault(t *testing.T) {
	spec := splitSpec()
	spec.Tuner, spec.SelectionShare, spec.ScoreNoise, spec.Validation = tuning.DoublingName, 0, 0, ""
	spec.Options = tuning.Values{"partitions": 2, "part-epochs": 1}
	spec.Default.BatchSize = 100
	rel, _, err := job.Tune(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	rep := rel.Report.(*tuning.DoublingReport)
	if rep.Candidates != 3 {
		t.Errorf("%d candidates, want the space's 2 and the default", rep.Candidates)
	}
	last := rel.Ledger.Entries[len(rel.Ledger.Entries)-1]
	if _, ok := last.Event.(accounting.WorstCase); !ok {
		t.Errorf("final run counted as %+v, want the costlier of the tuning's run and the default's", last.Event)
	}
	if *rel.Epsilon > 4 {
		t.Errorf("ε = %v above the budget 4", *rel.Epsilon)
	}
}

// The doubling tuner's report splits its ε into the selection (its search
// at the cap) and the final run.
func TestDoublingComponents(t *testing.T) {
	spec := splitSpec()
	spec.Tuner, spec.SelectionShare, spec.ScoreNoise, spec.Validation, spec.IncludeDefault, spec.Default = tuning.DoublingName, 0, 0, "", false, nil
	spec.Options = tuning.Values{"partitions": 2, "part-epochs": 1}
	rel, _, err := job.Tune(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	rep := rel.Report.(*tuning.DoublingReport)
	cs := rep.EpsilonComponents
	if len(cs) != 2 || cs[0].Name != tuning.ComponentSelection || cs[1].Name != tuning.ComponentFinal || cs[0].Epsilon == nil || cs[1].Epsilon == nil {
		t.Fatalf("components %+v", cs)
	}
	search, _ := accounting.RDP{}.Epsilon(rel.Ledger.Entries[0].Event, 1e-5)
	final, _ := accounting.RDP{}.Epsilon(rel.Ledger.Entries[1].Event, 1e-5)
	if *cs[0].Epsilon != search.Epsilon || *cs[1].Epsilon != final.Epsilon || len(rel.Ledger.Entries) != 2 {
		t.Errorf("components %v, %v; the ledger's entries alone %v, %v", *cs[0].Epsilon, *cs[1].Epsilon, search.Epsilon, final.Epsilon)
	}
}

// The GP tuner takes a selection share too: its ledger is DP-HyPO's event
// and the final run, composing to the total ε.
func TestGPSelectionShare(t *testing.T) {
	spec := splitSpec()
	spec.Tuner, spec.IncludeDefault, spec.Default, spec.Repetitions, spec.SelectionShare = tuning.GPName, false, nil, mustTNB(t), 0.5
	spec.Epsilon, spec.ScoreNoise = 8, 20
	rel, _, err := job.Tune(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	es := rel.Ledger.Entries
	if _, ok := es[0].Event.(accounting.AdaptiveRepeatAndSelect); !ok || len(es) != 2 {
		t.Fatalf("ledger %+v, want DP-HyPO's event and the final run", es)
	}
	if *rel.Epsilon > 8 || *rel.Epsilon < 8*(1-1e-3) {
		t.Errorf("ε = %v, want 8 within the calibration's tolerance", *rel.Epsilon)
	}
}

// A selection that chooses nothing (random-stop drew K = 0) still ends
// with the final run, of the default among the candidates: a fixed
// function of the selection's empty output. The report says so and
// releases no validation score; a selection that ran releases its own.
func TestNothingSelectedTrainsTheDefault(t *testing.T) {
	empty, ran := false, false
	for seed := uint64(1); seed <= 12 && !(empty && ran); seed++ {
		spec := splitSpec()
		spec.Tuner, spec.Repetitions, spec.DefaultWeight, spec.Seed, spec.Diagnostics = tuning.RandomStopName, accounting.PoissonRepetitions(1), 0.5, &seed, true
		rel, diag, err := job.Tune(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		rep := rel.Report.(*job.TuneReport)
		if len(diag.Runs) == 0 {
			empty = true
			if !rep.NothingSelected || rel.Model == nil || rep.ValidationScore != nil || rep.Selected[tuning.LearningRate] != 0.2 || rep.FinalSteps == 0 {
				t.Errorf("seed %d, K = 0: nothing selected %v, model %v, score %v, selected %v", seed, rep.NothingSelected, rel.Model != nil, rep.ValidationScore, rep.Selected)
			}
		} else {
			ran = true
			if rep.NothingSelected || rep.ValidationScore == nil {
				t.Errorf("seed %d, K = %d: nothing selected %v, score %v", seed, len(diag.Runs), rep.NothingSelected, rep.ValidationScore)
			}
		}
	}
	if !empty || !ran {
		t.Fatalf("12 seeds of K ~ Poisson(1) gave no K = 0 (%v) or no K > 0 (%v)", empty, ran)
	}
}
