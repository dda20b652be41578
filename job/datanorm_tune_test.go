package job_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/budget"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// A tuning of a datanorm network calibrates every run with its
// normalisation counted, and releases the selected run's model with the
// statistics that run estimated (they travel back from the run's job).
func TestTuneDataNorm(t *testing.T) {
	seed := uint64(5)
	src := tinyMNIST(600)
	a, err := model.NewArch(model.Spec{Name: "dn", Layers: []model.LayerSpec{model.DataNorm(7, 0, 0), model.Flatten(), model.Linear(10)}}, 1, 28, 28, 10)
	if err != nil {
		t.Fatal(err)
	}
	src.Arch = a
	space := tuning.Space{Name: "one", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.3}}}}
	spec := job.TuneSpec{Data: src, Tuner: "grid", Space: space, Epsilon: 4, Delta: 1e-5,
		Epochs: 1, BatchSize: 50, Validation: "private", ValSize: 100, ScoreNoise: 5, Seed: &seed}
	rel, _, err := job.Tune(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	rep := rel.Report.(*job.TuneReport)
	g := accounting.Gaussian{NoiseMultiplier: 7, Sensitivity: 1}
	run := accounting.Composed{Events: []accounting.Event{g, g, accounting.DPSGD(rep.BaseNoiseMultiplier, 50.0/500, rep.Steps),
		accounting.DiscreteGaussian{NoiseMultiplier: 5, Sensitivity: 1}}}
	e, err := accounting.RDP{}.Epsilon(run, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if e.Epsilon > 4 || math.Abs(e.Epsilon-4) > 0.01 || math.Abs(*rel.Epsilon-e.Epsilon) > 1e-9 {
		t.Errorf("one run at σ = %v with its normalisation spends ε = %v; released ε = %v; budget 4", rep.BaseNoiseMultiplier, e.Epsilon, *rel.Epsilon)
	}
	if rel.Model == nil || slices.Equal(rel.Model.Buffers, []float32{0, 1}) || len(rel.Model.Buffers) != 2 {
		t.Fatalf("released model's buffers %v: not the run's estimate", rel.Model.Buffers)
	}
}

// The doubling tuner on a datanorm network: its non-private part runs
// estimate without noise, its final run privately, and the ledger and ε
// count that estimate; private part runs refuse the network before any
// data is read.
func TestDoublingDataNorm(t *testing.T) {
	src := tinyMNIST(600)
	a, err := model.NewArch(model.Spec{Name: "dn", Layers: []model.LayerSpec{model.DataNorm(7, 0, 0), model.Flatten(), model.Linear(10)}}, 1, 28, 28, 10)
	if err != nil {
		t.Fatal(err)
	}
	src.Arch = a
	seed := uint64(2)
	space := tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.1, 0.5}}, {Name: tuning.ClipNorm, Values: []float64{1}}}}
	opts := tuning.DoublingOptions{Partitions: 2, Epsilon0: 0.2, Granularity: 0.2, MaxIterations: 4, PartEpochs: 1}
	spec := job.TuneSpec{Data: src, Tuner: "doubling", Space: space, Epsilon: 8, Delta: 1e-5, Epochs: 1, BatchSize: 50,
		ValSize: 100, Options: opts.Values(), Seed: &seed}
	rel, _, err := job.Tune(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	g := accounting.Gaussian{NoiseMultiplier: 7, Sensitivity: 1}
	found := false
	for _, e := range rel.Ledger.Entries {
		found = found || reflect.DeepEqual(e.Event, accounting.Event(accounting.Composed{Events: []accounting.Event{g, g}}))
	}
	if !found || rel.Epsilon == nil || *rel.Epsilon > 8 {
		t.Fatalf("ledger %+v, ε %v", rel.Ledger.Entries, rel.Epsilon)
	}
	if len(rel.Model.Buffers) != 2 || rel.Model.Buffers[1] == 1 {
		t.Fatalf("final model's buffers %v", rel.Model.Buffers)
	}
	opts.Private, opts.PartitionNoise = true, 2
	spec.Options = opts.Values()
	read := false
	load := src.Load
	spec.Data.Load = func() (*data.Dataset, *data.Dataset, error) { read = true; return load() }
	if _, _, err := job.Tune(context.Background(), spec); !errors.Is(err, job.ErrInvalid) || !strings.Contains(err.Error(), "datanorm") || read {
		t.Fatalf("private part runs of a datanorm network: %v (data read: %v)", err, read)
	}
}

// recordingRunner runs tasks in this process and keeps their inputs.
type recordingRunner struct {
	mu     sync.Mutex
	inputs [][]byte
}

func (r *recordingRunner) Run(ctx context.Context, tasks []runner.Task, done func(int, []byte) error) error {
	r.mu.Lock()
	for _, t := range tasks {
		r.inputs = append(r.inputs, t.Input)
	}
	r.mu.Unlock()
	return runner.Local{}.Run(ctx, tasks, done)
}

// A grid of K = 3 candidates on a datanorm network estimates the
// normalisation once, before its runs: the ledger holds one estimate
// (formerly one inside each of the K runs' events), the grid's event is
// the runs' without it, every run gets the same released statistics (as
// does the released model), and at the same σ the tuning spends less than
// K estimates would, while the calibrated total meets the asked ε.
func TestTuneDataNormOnce(t *testing.T) {
	seed := uint64(5)
	src := tinyMNIST(600)
	a, err := model.NewArch(model.Spec{Name: "dn", Layers: []model.LayerSpec{model.DataNorm(7, 0, 0), model.Flatten(), model.Linear(10)}}, 1, 28, 28, 10)
	if err != nil {
		t.Fatal(err)
	}
	src.Arch = a
	space := tuning.Space{Name: "three", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.1, 0.3, 0.6}}}}
	rec := &recordingRunner{}
	spec := job.TuneSpec{Data: src, Tuner: "grid", Space: space, Epsilon: 4, Delta: 1e-5,
		Epochs: 1, BatchSize: 50, Validation: "private", ValSize: 100, ScoreNoise: 5, Seed: &seed, Runner: rec}
	rel, _, err := job.Tune(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	rep := rel.Report.(*job.TuneReport)
	g := accounting.Gaussian{NoiseMultiplier: 7, Sensitivity: 1}
	norm := accounting.Event(accounting.Composed{Events: []accounting.Event{g, g}})
	score := accounting.DiscreteGaussian{NoiseMultiplier: 5, Sensitivity: 1}
	steps := accounting.DPSGD(rep.BaseNoiseMultiplier, rep.SamplingRate, rep.Steps)

	// One estimate event, first; the grid's event is the runs' without it.
	es := rel.Ledger.Entries
	if len(es) != 2 || es[0].Label != tuning.SharedDataNormLabel || !reflect.DeepEqual(es[0].Event, norm) {
		t.Fatalf("ledger %+v: want the one data normalisation, then the grid", es)
	}
	without := tuning.GridEvent(accounting.Composed{Events: []accounting.Event{steps, score}}, 3)
	if !reflect.DeepEqual(es[1].Event, without) {
		t.Fatalf("the grid's event %+v, want %+v: the per-run event without the estimate", es[1].Event, without)
	}
	perRun := dpsgd.PlannedEvent(a, dpsgd.Config{NoiseMultiplier: rep.BaseNoiseMultiplier, SamplingRate: rep.SamplingRate, Steps: rep.Steps})
	if pr, ok := perRun.(accounting.Composed); !ok || len(pr.Events) != 2 || !reflect.DeepEqual(pr.Events[0], norm) || !reflect.DeepEqual(pr.Events[1], accounting.Event(steps)) {
		t.Fatalf("a run's own event %+v is not its estimate and its steps", perRun)
	}

	// ε before (an estimate in each of the K runs) and after, at the same σ.
	before, err := accounting.RDP{}.Epsilon(tuning.GridEvent(accounting.Composed{Events: []accounting.Event{perRun, score}}, 3), 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	after, err := accounting.RDP{}.Epsilon(rel.Ledger.Event(), 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if !(after.Epsilon < before.Epsilon) || math.Abs(after.Epsilon-*rel.Epsilon) > 1e-9 {
		t.Errorf("at σ = %v: ε with one estimate %v, with K = 3 estimates %v; released %v", rep.BaseNoiseMultiplier, after.Epsilon, before.Epsilon, *rel.Epsilon)
	}
	// And at the same ε = 4 the runs' σ is lower than with K estimates.
	oldSigma, err := accounting.CalibrateNoise(context.Background(), accounting.RDP{}, func(z float64) accounting.Event {
		run := dpsgd.PlannedEvent(a, dpsgd.Config{NoiseMultiplier: z, SamplingRate: rep.SamplingRate, Steps: rep.Steps})
		return tuning.GridEvent(accounting.Composed{Events: []accounting.Event{run, score}}, 3)
	}, 4, 1e-5)
	if err != nil || !(rep.BaseNoiseMultiplier < oldSigma) {
		t.Errorf("σ with one estimate %v, with K = 3 estimates %v (%v)", rep.BaseNoiseMultiplier, oldSigma, err)
	}
	t.Logf("σ = %.4f: ε with K = 3 estimates %.4f, with one %.4f; at ε = 4, σ with K estimates %.4f", rep.BaseNoiseMultiplier, before.Epsilon, after.Epsilon, oldSigma)
	if *rel.Epsilon > 4 || *rel.Epsilon < 4*(1-1e-2) {
		t.Errorf("released ε = %v, want the asked 4 (met from below)", *rel.Epsilon)
	}
	cs := rep.EpsilonComponents
	alone, _ := accounting.RDP{}.Epsilon(norm, 1e-5)
	if len(cs) != 2 || cs[0].Name != tuning.ComponentDataNorm || cs[0].Epsilon == nil || *cs[0].Epsilon != alone.Epsilon || cs[1].Name != tuning.ComponentSelection {
		t.Errorf("components %+v, want the data normalisation at ε = %v and the selection", cs, alone.Epsilon)
	}

	// Every run received the same released statistics, and the released
	// model holds them.
	var first *dpsgd.DataNormEstimate
	for i, b := range rec.inputs {
		var in struct {
			DataNorm *tuning.SharedDataNorm `json:"data_norm"`
		}
		if err := json.Unmarshal(b, &in); err != nil || in.DataNorm == nil || in.DataNorm.Estimate == nil {
			t.Fatalf("run %d's input has no released normalisation (%v): %s", i, err, b)
		}
		if first == nil {
			first = in.DataNorm.Estimate
		} else if !reflect.DeepEqual(first, in.DataNorm.Estimate) {
			t.Fatalf("run %d's statistics %+v differ from run 0's %+v", i, in.DataNorm.Estimate, first)
		}
	}
	if len(rec.inputs) != 3 {
		t.Fatalf("%d runs, want 3", len(rec.inputs))
	}
	if want := append(slices.Clone(first.Mean), first.Variance...); !slices.Equal(rel.Model.Buffers, want) {
		t.Errorf("released model's buffers %v, want the one estimate %v", rel.Model.Buffers, want)
	}
}

// Random-stop, GP and a grid with the default and a selection share, on a
// datanorm network: each ledger opens with the one estimate and no other
// entry holds it, the total meets the asked ε, and the budget file is
// charged once for both, the ledger's composition.
func TestTuneDataNormOnceTuners(t *testing.T) {
	a, err := model.NewArch(model.Spec{Name: "dn", Layers: []model.LayerSpec{model.DataNorm(7, 0, 0), model.Flatten(), model.Linear(10)}}, 1, 28, 28, 10)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := accounting.MarshalEvent(accounting.Gaussian{NoiseMultiplier: 7, Sensitivity: 1})
	tnb, err := accounting.TNBWithMean(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	for name, set := range map[string]func(*job.TuneSpec){
		"randomstop": func(s *job.TuneSpec) {
			s.Tuner, s.Repetitions = tuning.RandomStopName, accounting.PoissonRepetitions(2)
		},
		"gp": func(s *job.TuneSpec) { s.Tuner, s.Repetitions, s.Epsilon, s.ScoreNoise = tuning.GPName, tnb, 8, 20 },
		"grid split": func(s *job.TuneSpec) {
			s.IncludeDefault, s.SelectionShare = true, 0.4
			s.Default = &job.TrainDefaults{BatchSize: 50, Epochs: 1, LearningRate: 0.2, ClipNorm: 1, Source: "a test"}
		},
	} {
		t.Run(name, func(t *testing.T) {
			src := tinyMNIST(600)
			src.Arch = a
			file := filepath.Join(t.TempDir(), "b.budget")
			if err := budget.Init(file, 100, 1e-5, "tiny"); err != nil {
				t.Fatal(err)
			}
			spec := job.TuneSpec{Data: src, Tuner: tuning.GridName, Epsilon: 4, Delta: 1e-5, Epochs: 1, BatchSize: 50,
				Space:      tuning.Space{Name: "lr", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.05, 0.5}, Log: true}}},
				Validation: "private", ValSize: 100, ScoreNoise: 5, Budget: file} // unseeded: a budget file takes no seed
			set(&spec)
			rel, _, err := job.Tune(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			es := rel.Ledger.Entries
			if len(es) < 2 || es[0].Label != tuning.SharedDataNormLabel {
				t.Fatalf("ledger %+v: want the one data normalisation first", es)
			}
			for i, e := range es[1:] {
				if b, _ := accounting.MarshalEvent(e.Event); strings.Contains(string(b), string(g)) {
					t.Errorf("ledger entry %d (%s) holds the estimate again: %s", i+1, e.Label, b)
				}
			}
			if *rel.Epsilon > spec.Epsilon || *rel.Epsilon < spec.Epsilon*(1-1e-2) {
				t.Errorf("ε = %v, want the asked %v", *rel.Epsilon, spec.Epsilon)
			}
			if cs := rel.Report.(*job.TuneReport).EpsilonComponents; len(cs) < 2 || cs[0].Name != tuning.ComponentDataNorm || cs[1].Name != tuning.ComponentSelection {
				t.Errorf("components %+v", cs)
			}
			b, err := budget.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			want, err := accounting.RDP{Orders: b.Orders}.RDP(rel.Ledger.Event())
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Releases) != 1 || !reflect.DeepEqual(b.Releases[0].RDP, want) {
				t.Fatalf("budget charged %+v, want the ledger's one composition %v", b.Releases, want)
			}
		})
	}
}

// A tuning cancelled as its data is read stops in the estimate, before
// any run: the ledger counts that one estimate, and nothing else is
// released.
func TestTuneDataNormCancelledEstimate(t *testing.T) {
	seed := uint64(5)
	src := tinyMNIST(600)
	a, err := model.NewArch(model.Spec{Name: "dn", Layers: []model.LayerSpec{model.DataNorm(7, 0, 0), model.Flatten(), model.Linear(10)}}, 1, 28, 28, 10)
	if err != nil {
		t.Fatal(err)
	}
	src.Arch = a
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	load := src.Load
	src.Load = func() (*data.Dataset, *data.Dataset, error) { cancel(); return load() }
	ran := false
	spec := job.TuneSpec{Data: src, Tuner: "grid", Epsilon: 4, Delta: 1e-5, Epochs: 1, BatchSize: 50,
		Space:      tuning.Space{Name: "one", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.3}}}},
		Validation: "private", ValSize: 100, ScoreNoise: 5, Seed: &seed, Progress: func(int, int) { ran = true }}
	rel, _, err := job.Tune(ctx, spec)
	if !errors.Is(err, context.Canceled) || rel == nil || rel.Model != nil || ran {
		t.Fatalf("Tune: %v (release %v, a run started: %v)", err, rel, ran)
	}
	if es := rel.Ledger.Entries; len(es) != 1 || es[0].Label != tuning.SharedDataNormLabel {
		t.Fatalf("ledger %+v, want the one estimate", es)
	}
}
