package tuning

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// TestCategoricalDimension checks a categorical dimension from JSON to a
// candidate: values are the indices, labels the names, and the GP's
// coordinates place any two choices at distance 1 (the span of an ordered
// dimension).
func TestCategoricalDimension(t *testing.T) {
	s, err := ParseSpace("c.json", []byte(`{"dims":[{"name":"learning_rate","values":[0.5,1,2]},
		{"name":"network","choices":["a","b","c"]},{"name":"lr_schedule","choices":["constant","cosine"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckDPSGDSpace(s); err != nil {
		t.Fatal(err)
	}
	if s.Size() != 18 {
		t.Fatalf("%d candidates, want 18", s.Size())
	}
	c := s.At(2*6 + 1*2 + 1) // learning rate 2, network b, cosine
	want := Candidate{Index: 15, Values: map[string]float64{LearningRate: 2, Network: 1, LRSchedule: 1},
		Labels: map[string]string{Network: "b", LRSchedule: "cosine"}}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("candidate 15 = %+v, want %+v", c, want)
	}
	dist := func(i, j int) float64 {
		a, b := s.Coords(i), s.Coords(j)
		if len(a) != 1+3+2 || len(b) != len(a) {
			t.Fatalf("coordinates %v and %v: want 6 each (1 ordered, 3 + 2 one-hot)", a, b)
		}
		var d float64
		for k := range a {
			d += (a[k] - b[k]) * (a[k] - b[k])
		}
		return math.Sqrt(d)
	}
	for _, p := range []struct {
		i, j int
		want float64
	}{{0, 2, 1}, {0, 4, 1}, {2, 4, 1}, {0, 1, 1}, {0, 12, 1}, {0, 6, 0.5}, {0, 0, 0}} {
		if d := dist(p.i, p.j); math.Abs(d-p.want) > 1e-12 {
			t.Errorf("distance between candidates %d and %d = %v, want %v", p.i, p.j, d, p.want)
		}
	}
}

// TestHyperRun checks that every dimension reaches the run: the batch size
// becomes the sampling rate over the nominal size and the divisor, the
// epochs the steps (dpsgd.StepsForEpochs), the network and schedule their
// named values.
func TestHyperRun(t *testing.T) {
	cnn, err := model.NewArch(model.MNIST.Spec, 1, 28, 28, 10)
	if err != nil {
		t.Fatal(err)
	}
	other := model.MNIST
	other.Name = "other"
	h := Hyper{Arch: cnn, Networks: map[string]model.Arch{"other": other}, NominalN: 1000, Epochs: 3,
		Config: dpsgd.Config{SamplingRate: 0.1, ExpectedBatchSize: 100, Steps: 30, LearningRate: 1, ClipNorm: 1, Momentum: 0.5}}
	c := Candidate{Index: 7, Values: map[string]float64{LearningRate: 0.25, ClipNorm: 2, Momentum: 0.9, BatchSize: 250, Epochs: 5, Network: 0, LRSchedule: 1},
		Labels: map[string]string{Network: "other", LRSchedule: "cosine"}}
	arch, cfg, err := h.Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if arch.Name != "other" || cfg.LearningRate != 0.25 || cfg.ClipNorm != 2 || cfg.Momentum != 0.9 || cfg.Schedule != dpsgd.CosineLR ||
		cfg.SamplingRate != 0.25 || cfg.ExpectedBatchSize != 250 || cfg.Steps != dpsgd.StepsForEpochs(5, 0.25) {
		t.Fatalf("run %s %+v", arch.Name, cfg)
	}
	// A batch size alone keeps the tuning's epochs.
	_, cfg, err = h.Run(Candidate{Values: map[string]float64{BatchSize: 500}})
	if err != nil || cfg.Steps != dpsgd.StepsForEpochs(3, 0.5) || cfg.LearningRate != 1 {
		t.Fatalf("batch 500: %+v (%v)", cfg, err)
	}
	for _, bad := range []Candidate{
		{Values: map[string]float64{BatchSize: 1001}},
		{Values: map[string]float64{Network: 0}, Labels: map[string]string{Network: "missing"}},
		{Values: map[string]float64{Epochs: 1e9}},
	} {
		if _, _, err := h.Run(bad); err == nil {
			t.Errorf("%+v ran", bad)
		}
	}
}

// TestHyperEventIsTheCostliest checks a tuning's per-run event against
// DP-SGD events computed independently: one event when the candidates
// share batch size and epochs, the worst of the distinct ones otherwise,
// whose ε is the largest candidate's.
func TestHyperEventIsTheCostliest(t *testing.T) {
	h := Hyper{Arch: model.MNIST, NominalN: 10000, Epochs: 2,
		Config: dpsgd.Config{SamplingRate: 0.01, ExpectedBatchSize: 100, Steps: 200}}
	plain := Space{Name: "p", Dims: []Dim{{Name: LearningRate, Values: []float64{1, 2}}, {Name: Momentum, Values: []float64{0, 0.9}}}}
	e, err := h.Event(plain, 1.3)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e, accounting.DPSGD(1.3, 0.01, 200)) {
		t.Fatalf("event of a space without batch sizes or epochs: %#v", e)
	}
	mixed := Space{Name: "m", Dims: []Dim{{Name: BatchSize, Values: []float64{100, 1000}}, {Name: Epochs, Values: []float64{2, 4}}}}
	e, err = h.Event(mixed, 1.3)
	if err != nil {
		t.Fatal(err)
	}
	w, ok := e.(accounting.WorstCase)
	if !ok || len(w.Events) != 4 {
		t.Fatalf("event of a mixed space: %#v, want the worst of 4", e)
	}
	got, err := accounting.RDP{}.Epsilon(e, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	var want float64
	for _, r := range []struct{ q, epochs float64 }{{0.01, 2}, {0.01, 4}, {0.1, 2}, {0.1, 4}} {
		g, err := accounting.RDP{}.Epsilon(accounting.DPSGD(1.3, r.q, dpsgd.StepsForEpochs(int(r.epochs), r.q)), 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		if g.Epsilon > got.Epsilon+1e-12 {
			t.Errorf("q = %v, %v epochs: ε = %v above the worst case's %v", r.q, r.epochs, g.Epsilon, got.Epsilon)
		}
		want = math.Max(want, g.Epsilon)
	}
	// The largest batch at the most epochs dominates every order here, so
	// the worst case is exactly its ε.
	if math.Abs(got.Epsilon-want) > 1e-9 {
		t.Errorf("worst case ε = %v, want the costliest candidate's %v", got.Epsilon, want)
	}
}

// A trainer refuses a candidate whose batch size, epochs or network its
// space does not hold: such a run would cost more than the trainer's
// event counts.
func TestTrainerRefusesUncountedCandidates(t *testing.T) {
	space := Space{Name: "s", Dims: []Dim{{Name: BatchSize, Values: []float64{10, 20}}, Categorical(Network, "a")}}
	tr := &DPSGDTrainer{Space: space}
	for _, c := range []Candidate{
		{Index: 1, Values: map[string]float64{BatchSize: 40}},
		{Index: 2, Values: map[string]float64{Epochs: 3}},
		{Index: 3, Values: map[string]float64{Network: 0}, Labels: map[string]string{Network: "b"}},
	} {
		if _, err := tr.Train(context.Background(), c, nil); err == nil || !strings.Contains(err.Error(), "would not be counted") {
			t.Errorf("candidate %+v: %v", c, err)
		}
	}
	ok := Candidate{Values: map[string]float64{BatchSize: 20, Network: 0}, Labels: map[string]string{Network: "a"}}
	if err := Covers(space, ok); err != nil {
		t.Errorf("a candidate of the space: %v", err)
	}
	if err := Covers(Space{}, Candidate{Values: map[string]float64{LearningRate: 1}}); err != nil {
		t.Errorf("a candidate setting no run length: %v", err)
	}
}
