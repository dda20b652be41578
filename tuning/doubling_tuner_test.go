package tuning

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

func tinyMNIST(n int, seed uint64) *data.Dataset {
	rng := randsrc.Seeded(seed, "tiny")
	d := &data.Dataset{Name: "tiny", X: make([]float32, n*784), Y: make([]uint8, n), N: n, C: 1, H: 28, W: 28, Classes: 10}
	for i := range d.Y {
		d.Y[i] = uint8(rng.IntN(10))
		for j := 0; j < 784; j++ {
			// The label shows in the image, so that training can learn it.
			d.X[i*784+j] = float32(rng.NormFloat64() * 0.3)
			if j%10 == int(d.Y[i]) {
				d.X[i*784+j]++
			}
		}
	}
	return d
}

// The doubling tuner's ledger counts the search at its cap and the final
// run; its partition scores resume from the cache without retraining.
func TestDoublingTunerLedgerAndResume(t *testing.T) {
	train, val := tinyMNIST(600, 1), tinyMNIST(100, 2)
	parts, err := data.Partition(train, 2, randsrc.Seeded(3, "p"))
	if err != nil {
		t.Fatal(err)
	}
	space := Space{Name: "two", Dims: []Dim{{Name: LearningRate, Values: []float64{0.1, 0.5}}, {Name: ClipNorm, Values: []float64{1}}}}
	cache := filepath.Join(t.TempDir(), "scores.csv")
	runs := 0
	scorer := &PartitionScorer{Arch: model.MNIST, Parts: parts, Val: val, ValSize: 100, Epochs: 1, BatchSize: 64, SamplingRate: 64.0 / 300, Seed: 5, Cache: cache,
		Progress: func(int, int) { runs++ }}
	seed := uint64(9)
	q := 64.0 / 600
	tuner := &DoublingTuner{Space: space, Scorer: scorer, Train: train, Seed: &seed,
		Search: CappedSearchConfig{Partitions: 2, Epsilon0: 0.5, Granularity: 0.05, MaxIterations: 7},
		Final:  Hyper{Arch: model.MNIST, Config: dpsgd.Config{NoiseMultiplier: 1, SamplingRate: q, Steps: 5}}}
	res, err := tuner.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if runs != 4 || res.Selected == nil || res.Iterations > 7 {
		t.Fatalf("%d part runs, selected %v, T = %d", runs, res.Selected, res.Iterations)
	}
	if len(res.Ledger.Entries) != 2 {
		t.Fatalf("ledger %+v", res.Ledger)
	}
	at, ok := res.Ledger.Entries[0].Event.(accounting.AboveThreshold)
	if !ok || at.MaxIterations != 7 || at.Epsilon < 0.5 || at.Epsilon > 0.5*(1+1e-9) {
		t.Errorf("search event %+v", res.Ledger.Entries[0].Event)
	}
	want, _ := accounting.RDP{}.Epsilon(accounting.Composed{Events: []accounting.Event{
		accounting.SelfComposed{Event: accounting.EpsilonDelta{Epsilon: at.Epsilon}, Count: 7}, accounting.DPSGD(1, q, 5)}}, 1e-5)
	got, _ := res.Ledger.Spent(accounting.RDP{}, 1e-5)
	if got.Epsilon != want.Epsilon {
		t.Errorf("ledger ε %v, cap and final run %v", got.Epsilon, want.Epsilon)
	}
	// The cache recorded the search it served; a rerun on it reports it as
	// an earlier search.
	if s, err := scorer.Searches(); err != nil || len(s) != 1 || s[0].Epsilon != 7*at.Epsilon || s[0].MaxIterations != 7 {
		t.Fatalf("searches %+v, %v", s, err)
	}
	res2, err := tuner.Run(context.Background())
	if err != nil || len(res2.EarlierSearches) != 1 {
		t.Fatalf("rerun: %d earlier searches, %v", len(res2.EarlierSearches), err)
	}
	// A rerun reads every part score from the cache.
	runs = 0
	u1, _, err := scorer.Scores(context.Background(), space)
	if err != nil || runs != 0 || len(u1) != 2 {
		t.Fatalf("rerun trained %d times: %v", runs, err)
	}
	// Another configuration refuses the cache instead of mixing scores.
	other := *scorer
	other.Epochs = 2
	if _, _, err := other.Scores(context.Background(), space); err == nil {
		t.Error("cache of other settings accepted")
	}
}

// A part run's batch is the final run's, or the whole part when a part is
// smaller — so that hundreds of parts fit a network trained at batch 4,096
// — or --part-batch; the sampling rate of a part run follows from it, and
// settings that leave a part smaller than its batch, or parts empty, are
// refused.
func TestDoublingPartBatch(t *testing.T) {
	space := Space{Name: "s", Dims: []Dim{{Name: LearningRate, Values: []float64{0.1, 1}}}}
	spec := func(k, partBatch int) Spec {
		o := DoublingOptions{Partitions: k, Epsilon0: 0.1, Granularity: 0.01, PartEpochs: 30, PartBatch: partBatch, PartitionNoise: 1}
		return Spec{Space: space, TrainN: 55000, ValSize: 1000, BatchSize: 4096, Epochs: 40, Delta: 1e-5, Options: o.Values()}
	}
	var d doublingTuner
	for _, c := range []struct {
		k, partBatch, batch int
		q                   float64
	}{{10, 0, 4096, 4096.0 / 5500}, {500, 0, 110, 1}, {500, 55, 55, 0.5}} {
		s := spec(c.k, c.partBatch)
		if err := d.Check(s); err != nil {
			t.Errorf("k = %d, part batch %d: %v", c.k, c.partBatch, err)
		}
		sc := NewDoubling(s, Hyper{}).Scorer
		if sc.BatchSize != c.batch || math.Abs(sc.SamplingRate-c.q) > 1e-12 {
			t.Errorf("k = %d, part batch %d: batch %d at q = %v, want %d at %v", c.k, c.partBatch, sc.BatchSize, sc.SamplingRate, c.batch, c.q)
		}
	}
	for _, s := range []Spec{spec(500, 200), spec(60000, 0), spec(500, -1)} {
		if err := d.Check(s); err == nil {
			t.Errorf("%v accepted", s.Options)
		}
	}
}
