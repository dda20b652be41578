package job_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// writeNetworks writes two small network specs and returns their paths.
func writeNetworks(t *testing.T) (linear, mlp string) {
	dir := t.TempDir()
	linear, mlp = filepath.Join(dir, "linear.json"), filepath.Join(dir, "mlp.json")
	for path, text := range map[string]string{
		linear: `{"name":"linear","layers":[{"type":"flatten"},{"type":"linear","out":10}]}`,
		mlp:    `{"name":"mlp","layers":[{"type":"flatten"},{"type":"linear","out":16},{"type":"relu"},{"type":"linear","out":10}]}`,
	} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return linear, mlp
}

// A grid search over batch size, epochs, momentum, schedule and network
// trains each candidate as it says, and counts every run as the costliest:
// the released ε is the grid's 8 runs at the largest batch and the most
// epochs, computed here from the DP-SGD events alone; the selected
// network and schedule are released by name, and the model is the
// selected network.
func TestTuneOverBatchEpochsAndNetworks(t *testing.T) {
	linear, mlp := writeNetworks(t)
	seed := uint64(3)
	space := tuning.Space{Name: "mixed", Dims: []tuning.Dim{
		{Name: tuning.LearningRate, Values: []float64{0.5}},
		{Name: tuning.BatchSize, Values: []float64{50, 100}},
		{Name: tuning.Epochs, Values: []float64{1, 2}},
		{Name: tuning.Momentum, Values: []float64{0.5}},
		tuning.Categorical(tuning.LRSchedule, "cosine"),
		tuning.Categorical(tuning.Network, linear, mlp),
	}}
	spec := job.TuneSpec{Data: tinyMNIST(600), Tuner: tuning.GridName, Space: space, Epsilon: 8, Delta: 1e-5,
		Epochs: 1, BatchSize: 50, Validation: "private", ValSize: 100, ScoreNoise: 5, Seed: &seed}
	spec.Diagnostics = true
	rel, diag, err := job.Tune(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	rep := rel.Report.(*job.TuneReport)
	sigma := rep.BaseNoiseMultiplier
	const n = 500 // nominal training size after the validation split
	costliest := accounting.Composed{Events: []accounting.Event{accounting.DPSGD(sigma, 100.0/n, dpsgd.StepsForEpochs(2, 100.0/n)),
		accounting.DiscreteGaussian{NoiseMultiplier: 5, Sensitivity: 1}}}
	g, err := accounting.RDP{}.Epsilon(accounting.SelfComposed{Event: costliest, Count: 8}, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(g.Epsilon-*rel.Epsilon) > 1e-9 || g.Epsilon > 8 || g.Epsilon < 7.9 {
		t.Errorf("released ε = %v; 8 runs of the costliest candidate at σ = %v spend %v; budget 8", *rel.Epsilon, sigma, g.Epsilon)
	}
	if !rep.PerCandidate {
		t.Error("the report does not say the runs differ per candidate")
	}
	if len(diag.Runs) != 8 {
		t.Fatalf("%d runs, want 8", len(diag.Runs))
	}
	net := rep.SelectedChoices[tuning.Network]
	if (net != linear && net != mlp) || rep.SelectedChoices[tuning.LRSchedule] != "cosine" || rel.Model == nil {
		t.Fatalf("selected %v %v, model %v", rep.Selected, rep.SelectedChoices, rel.Model != nil)
	}
	wantParams := 784*10 + 10
	if net == mlp {
		wantParams = 784*16 + 16 + 16*10 + 10
	}
	if len(rel.Model.Params) != wantParams {
		t.Errorf("selected %s, released a model of %d parameters, want %d", net, len(rel.Model.Params), wantParams)
	}
	if o := tuning.OtherSettings(rep.Selected, rep.SelectedChoices); !strings.Contains(o, "network "+net) || !strings.Contains(o, "lr_schedule cosine") {
		t.Errorf("OtherSettings = %q", o)
	}
}

// Spaces that cannot run are refused before any data is read: a network
// that is no network, one that reads other inputs, a batch size above the
// training set, epochs past the step limit.
func TestTuneRefusesImpossibleSpaces(t *testing.T) {
	linear, _ := writeNetworks(t)
	src := tinyMNIST(600)
	loaded := false
	load := src.Load
	src.Load = func() (*data.Dataset, *data.Dataset, error) { loaded = true; return load() }
	for name, dims := range map[string][]tuning.Dim{
		"no such network": {tuning.Categorical(tuning.Network, linear, "no-such-network")},
		"other inputs":    {tuning.Categorical(tuning.Network, "scatter-linear-mnist")},
		"batch too large": {{Name: tuning.BatchSize, Values: []float64{50, 501}}},
		"too many epochs": {{Name: tuning.Epochs, Values: []float64{1, 1e9}}},
	} {
		spec := job.TuneSpec{Data: src, Tuner: tuning.RandomStopName, Space: tuning.Space{Name: name, Dims: dims}, Epsilon: 8, Delta: 1e-5,
			Epochs: 1, BatchSize: 50, Validation: "private", ValSize: 100, ScoreNoise: 5,
			Repetitions: accounting.PoissonRepetitions(2)}
		if _, _, err := job.Tune(context.Background(), spec); !errors.Is(err, job.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if loaded {
		t.Error("a refused tuning read the data")
	}
}

// The doubling tuner over a space of batch sizes and networks: the part
// runs train each candidate's network, and the final run, whose candidate
// the search chose from the data, is counted as the costliest candidate's
// run, whichever was selected.
func TestDoublingCountsTheCostliestFinalRun(t *testing.T) {
	linear, mlp := writeNetworks(t)
	seed := uint64(4)
	space := tuning.Space{Name: "mixed", Dims: []tuning.Dim{
		{Name: tuning.LearningRate, Values: []float64{0.1, 0.5}},
		{Name: tuning.BatchSize, Values: []float64{25, 100}},
		tuning.Categorical(tuning.Network, linear, mlp),
	}}
	rel, _, err := job.Tune(context.Background(), job.TuneSpec{
		Data: tinyMNIST(600), Tuner: "doubling", Space: space, Epsilon: 8, Delta: 1e-5, Epochs: 1, BatchSize: 50, ValSize: 100, Seed: &seed,
		Options: tuning.DoublingOptions{Partitions: 2, Epsilon0: 0.2, Granularity: 0.2, MaxIterations: 4, PartEpochs: 1}.Values(),
	})
	if err != nil {
		t.Fatal(err)
	}
	last := rel.Ledger.Entries[len(rel.Ledger.Entries)-1]
	w, ok := last.Event.(accounting.WorstCase)
	if !ok || len(w.Events) != 2 {
		t.Fatalf("final run's ledger entry %q: %#v, want the worst of two batch sizes", last.Label, last.Event)
	}
	rep := rel.Report.(*tuning.DoublingReport)
	sigma := rep.BaseNoiseMultiplier
	const n = 500
	want := accounting.DPSGD(sigma, 100.0/n, dpsgd.StepsForEpochs(1, 100.0/n))
	worst, err := accounting.RDP{}.Epsilon(last.Event, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	g, err := accounting.RDP{}.Epsilon(want, 1e-5)
	if err != nil || math.Abs(g.Epsilon-worst.Epsilon) > 1e-9 {
		t.Errorf("final run counted at ε = %v, the batch-100 run alone %v (%v)", worst.Epsilon, g.Epsilon, err)
	}
	if rel.Model == nil || rep.SelectedChoices[tuning.Network] == "" {
		t.Errorf("released model %v, selected %v %v", rel.Model != nil, rep.Selected, rep.SelectedChoices)
	}
}
