package job

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// A grid with the default among its candidates runs |S| + 1 times, and its
// report says so: runs_distribution Fixed(K = 3) and mean_runs 3 for two
// learning rates and the default, as its ledger counts.
func TestGridWithDefaultReportsItsRuns(t *testing.T) {
	seed := uint64(2)
	s := tuneLRs(&seed)
	s.IncludeDefault = true
	s.Default = &TrainDefaults{BatchSize: 50, Epochs: 1, LearningRate: 0.2, Momentum: 0.5, ClipNorm: 1, Source: "a test"}
	rel, _, err := Tune(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	rep := rel.Report.(*TuneReport)
	if rep.Repetitions != accounting.FixedRepetitions(3) || rep.MeanRuns != 3 {
		t.Errorf("runs_distribution %+v, mean_runs %v; want Fixed(K = 3), 3: the space's 2 and the default", rep.Repetitions, rep.MeanRuns)
	}
	if l := rel.Ledger.Entries[0].Label; !strings.Contains(l, "all 3 candidates") {
		t.Errorf("ledger label %q", l)
	}
}

// trainFinalLedger trains the final run of s (with a selection share) for
// candidate c under ctx and returns what it added to a ledger, its error,
// and the planned final event.
func trainFinalLedger(t *testing.T, ctx context.Context, s TuneSpec, c tuning.Candidate) (accounting.Ledger, error, accounting.Event) {
	t.Helper()
	p, err := s.plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	train, _, err := s.Data.loadCtx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var l accounting.Ledger
	_, _, err = trainFinal(ctx, *p.final, s.Space, c, train, s.Seed, nil, s.noiseMode(), &l)
	return l, err, finalEvent(*p.final, s.Space, p.final.Config.NoiseMultiplier)
}

// A final run that does not finish — interrupted, or diverged at a step
// that depends on its noisy iterates — is recorded at its whole planned
// run, as the budget file charges it and as `dptune train` records a run
// stopped early; never at the steps it completed.
func TestFinalRunUnfinishedCountsWhole(t *testing.T) {
	seed := uint64(3)
	s := tuneLRs(&seed)
	s.SelectionShare = 0.3
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	diverging := tuning.Candidate{Index: 0, Values: map[string]float64{tuning.LearningRate: 1e39}}
	for name, c := range map[string]struct {
		ctx  context.Context
		cand tuning.Candidate
		want error
	}{
		"interrupted": {cancelled, s.Space.At(0), context.Canceled},
		"diverged":    {context.Background(), diverging, dpsgd.ErrDiverged},
	} {
		l, err, planned := trainFinalLedger(t, c.ctx, s, c.cand)
		if !errors.Is(err, c.want) {
			t.Fatalf("%s: error %v, want %v", name, err, c.want)
		}
		if len(l.Entries) != 1 {
			t.Fatalf("%s: ledger %+v, want one entry", name, l.Entries)
		}
		a, _ := accounting.MarshalEvent(l.Entries[0].Event)
		b, _ := accounting.MarshalEvent(planned)
		if string(a) != string(b) || !strings.Contains(l.Entries[0].Label, "planned") {
			t.Errorf("%s: ledger %s (%+v), want the planned final run %s", name, a, l.Entries, b)
		}
	}
	// A finished run is recorded as it ran (here: the planned steps).
	l, err, planned := trainFinalLedger(t, context.Background(), s, s.Space.At(0))
	if err != nil || len(l.Entries) != 1 {
		t.Fatalf("finished: %v, ledger %+v", err, l.Entries)
	}
	a, _ := accounting.MarshalEvent(l.Entries[0].Event)
	b, _ := accounting.MarshalEvent(planned)
	if string(a) != string(b) || strings.Contains(l.Entries[0].Label, "planned") {
		t.Errorf("finished: %v, ledger %s (%+v), want %s", err, a, l.Entries, b)
	}
}

// An interrupted tuning with a selection share releases a ledger that
// counts the final run too (the budget file's worst case), even when the
// interruption came before it.
func TestSplitTuningInterruptedCountsFinal(t *testing.T) {
	seed := uint64(3)
	s := tuneLRs(&seed)
	s.SelectionShare = 0.3
	ctx, cancel := context.WithCancel(context.Background())
	s.Started = func(TuneStart) { cancel() }
	rel, _, err := Tune(ctx, s)
	if !errors.Is(err, context.Canceled) || rel == nil {
		t.Fatalf("%v, release %v; want an interrupted release", err, rel != nil)
	}
	p, err := s.plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rel.Ledger.Entries); n != 2 || !strings.Contains(rel.Ledger.Entries[1].Label, finalLabel) {
		t.Fatalf("ledger %+v, want the selection and the planned final run", rel.Ledger.Entries)
	}
	a, _ := accounting.MarshalEvent(rel.Ledger.Entries[1].Event)
	b, _ := accounting.MarshalEvent(finalEvent(*p.final, s.Space, p.final.Config.NoiseMultiplier))
	if string(a) != string(b) {
		t.Errorf("final entry %s, want the planned %s", a, b)
	}
}

// dptune's own MNIST settings for the ScatterNet models were chosen on
// MNIST's training data: refused as the default candidate of a tuning of
// MNIST (or of an image folder, which may hold MNIST), taken on a
// dataset they were not chosen on, and third-party settings (Tramèr &
// Boneh's, ChosenOn "") are taken everywhere.
func TestDefaultChosenOnTheDataRefused(t *testing.T) {
	spec, err := model.SpecByName(model.ScatterLinearMNIST.Name)
	if err != nil {
		t.Fatal(err)
	}
	mnist, ok := NetworkDefaultsOn(spec, "mnist")
	if !ok || mnist.ChosenOn != "mnist" {
		t.Fatalf("scatter-linear-mnist on mnist: %+v, want chosen on mnist", mnist)
	}
	if fm, _ := NetworkDefaultsOn(spec, "fashion-mnist"); fm.ChosenOn != "" {
		t.Errorf("Tramèr & Boneh's Fashion-MNIST settings marked chosen on %q", fm.ChosenOn)
	}
	for _, name := range []string{model.ScatterLinearCIFAR10.Name, model.ScatterCNNCIFAR10.Name} {
		sp, _ := model.SpecByName(name)
		if d, _ := NetworkDefaultsOn(sp, "cifar10"); d.ChosenOn != "" {
			t.Errorf("%s: Tramèr & Boneh's CIFAR-10 settings marked chosen on %q", name, d.ChosenOn)
		}
	}
	with := func(dataset string, d TrainDefaults) error {
		s := TuneSpec{Data: Source{Name: dataset, Arch: model.Arch{Spec: spec}}}
		return s.dataIndependent(d)
	}
	for _, ds := range []string{"mnist", "folder:digits"} {
		if err := with(ds, mnist); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "--default-settings") {
			t.Errorf("%s: %v, want refused", ds, err)
		}
	}
	if err := with("fashion-mnist", mnist); err != nil {
		t.Errorf("settings chosen on mnist, tuning fashion-mnist: %v", err)
	}
	tb := mnist
	tb.ChosenOn = ""
	if err := with("mnist", tb); err != nil {
		t.Errorf("third-party settings: %v", err)
	}
}

// withField is the JSON object b with one more field.
func withField(t *testing.T, b []byte, name string, v any) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m[name] = v
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A worker refuses a job input with a field its binary does not know — a
// curator newer than the worker, e.g. one that added automatic clipping or
// the default candidate — before it reads any data (the input names a
// dataset no worker has), and the runner does not retry it; the inputs
// this binary writes, automatic clipping and the default included, decode.
func TestWorkerRefusesUnknownInputFields(t *testing.T) {
	seed := uint64(2)
	s := withAutoClip(tuneLRs(&seed))
	s.IncludeDefault = true
	s.Default = &TrainDefaults{BatchSize: 50, Epochs: 1, LearningRate: 0.2, Momentum: 0.5, ClipNorm: 1, Source: "a test"}
	p, err := s.plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	run, err := dpsgdJobs{t: p.trainer, data: dataRef{Dataset: "no-such-dataset", NominalN: 600}}.Task("run 1", s.Space.At(0), &seed, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := withAutoClip(tuneLRs(&seed))
	d.Tuner, d.Validation, d.ScoreNoise, d.Options = tuning.DoublingName, "", 0, tuning.Values{"partitions": 2}
	pd, err := d.plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	scorer := pd.tuner.(tuning.Partitioned).Plan(pd.spec, pd.trainer.Hyper(), pd.trainer.NoiseMultiplier).Scorer()
	part, err := partitionTask(scorer, dataRef{Dataset: "no-such-dataset", NominalN: 600, Parts: 2})(d.Space.At(0), 0)
	if err != nil {
		t.Fatal(err)
	}
	audit, err := json.Marshal(auditInput{Data: &dataRef{Dataset: "no-such-dataset"}, Trials: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	for kind, in := range map[string][]byte{KindDPSGDRun: run.Input, KindPartitionRun: part.Input, KindAuditTrials: audit} {
		var v any
		switch kind {
		case KindDPSGDRun:
			v = &runInput{}
		case KindPartitionRun:
			v = &partInput{}
		default:
			v = &auditInput{}
		}
		if err := decodeInput(in, v); err != nil {
			t.Errorf("%s: this binary's own input: %v", kind, err)
		}
		_, err := runner.Do(context.Background(), kind, withField(t, in, "future_setting", 1))
		if !errors.Is(err, runner.ErrInvalidInput) || !strings.Contains(err.Error(), `unknown field "future_setting"`) {
			t.Errorf("%s: %v, want the unknown field refused as invalid input", kind, err)
		}
	}
	// Nested too: a field of the data reference this binary does not know.
	var m map[string]json.RawMessage
	if err := json.Unmarshal(run.Input, &m); err != nil {
		t.Fatal(err)
	}
	m["data"] = withField(t, m["data"], "future_cut", true)
	b, _ := json.Marshal(m)
	if _, err := runner.Do(context.Background(), KindDPSGDRun, b); !errors.Is(err, runner.ErrInvalidInput) || !strings.Contains(err.Error(), "future_cut") {
		t.Errorf("a nested unknown field: %v", err)
	}
}
