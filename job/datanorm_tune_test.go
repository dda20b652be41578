package job_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
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
