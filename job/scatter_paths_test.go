package job

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/dptune/dptune/audit"
	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// tinyScatter is a network with a scatter front end small enough for
// tests: 8×8 images give 3×4×4 features (J = 1, L = 2).
var tinyScatter = model.Spec{Name: "tiny-scatter", Layers: []model.LayerSpec{model.Scatter(1, 2), model.GroupNorm(3), model.Flatten(), model.Linear(10)}}

// scatterImages is n random 8×8 images whose label shows in their mean
// brightness, so that a network can learn something from them.
func scatterImages(n int, seed uint64) *data.Dataset {
	rng := rand.New(rand.NewPCG(seed, 5))
	d := &data.Dataset{Name: "tiny8", N: n, C: 1, H: 8, W: 8, Classes: 10, X: make([]float32, n*64), Y: make([]uint8, n)}
	for i := range d.Y {
		d.Y[i] = uint8(rng.IntN(10))
		for k := range 64 {
			d.X[i*64+k] = float32(rng.NormFloat64()*0.3) + float32(d.Y[i])/5
		}
	}
	return d
}

// scatterSource is a Source of tinyScatter on n training and 40 test
// images, named as the built-in mnist in the directory dir, whose raw
// images this process's cache holds (as a worker that read them would).
func scatterSource(t *testing.T, n int, dir string) Source {
	train, test := scatterImages(n, 1), scatterImages(40, 2)
	cachePut(cacheKey(rawRef{"mnist", dir}), loaded{train: train, val: test})
	arch, err := model.NewArch(tinyScatter, 1, 8, 8, 10)
	if err != nil {
		t.Fatal(err)
	}
	return Source{Name: "mnist", Dir: dir, Arch: arch, NominalN: n, Load: func() (*data.Dataset, *data.Dataset, error) { return train, test, nil }}
}

// transformed is the front end's features of d, image by image, from the
// front end's own transform.
func transformed(t *testing.T, a model.Arch, d *data.Dataset) []float32 {
	f, ok := a.FrontEnd()
	if !ok {
		t.Fatal("no front end")
	}
	tr, err := f.Transformer()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, d.N*f.OutSize)
	for i := range d.N {
		if err := tr(out[i*f.OutSize:(i+1)*f.OutSize], d.X[i*f.InSize:(i+1)*f.InSize]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// The natural-canary audit of a network with a scatter front end trains
// on the features of the first Size training images with the features of
// the checkerboard canary, and plays its trials.
func TestNaturalAuditOfAScatterNetwork(t *testing.T) {
	src := scatterSource(t, 60, t.TempDir())
	s := AuditSpec{Protocol: AuditNatural, Trials: 4, Seed: 1, Delta: 1e-5, Data: src, Size: 20, NoiseMultiplier: 1, SamplingRate: 0.5, ClipNorm: 1, Steps: 3, LearningRate: 0.5}
	p, _, err := s.protocol(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	nc := p.(audit.NaturalCanary)
	train, _, _ := src.Load()
	first := train.Subset("first", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19})
	if !slices.Equal(nc.Base.X, transformed(t, src.Arch, first)) || !slices.Equal(nc.Base.Y, first.Y) {
		t.Error("the base set is not the features of the first Size training images")
	}
	checker := &data.Dataset{N: 1, C: 1, H: 8, W: 8, X: audit.CheckerCanary(src.Arch), Y: []uint8{0}}
	if !slices.Equal(nc.Image, transformed(t, src.Arch, checker)) {
		t.Error("the canary is not the features of the checkerboard")
	}
	if _, err := Audit(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// A tuning of a built-in ScatterNet model whose space leaves out the
// clipping norm and the learning rate runs with the network's own (as
// train does); any other network keeps DefaultLearningRate and C = 1.
func TestTuneTakesTheNetworksDefaults(t *testing.T) {
	d, ok := NetworkDefaults(model.ScatterLinearMNIST)
	if !ok {
		t.Fatal("scatter-linear-mnist has no defaults")
	}
	for _, c := range []struct {
		spec     model.Spec
		lr, clip float64
	}{{model.ScatterLinearMNIST, d.LearningRate, d.ClipNorm}, {model.TBMNIST, DefaultLearningRate, 1}} {
		src, err := smallMNIST(1000).WithModel(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		s := TuneSpec{Data: src, Tuner: tuning.GridName, Space: tuning.Space{Name: "momentless", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{1}}}},
			Epsilon: 8, Delta: 1e-5, Epochs: 1, BatchSize: 100, Validation: "private", ValSize: 100, ScoreNoise: 5}
		p, err := s.plan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if p.trainer.LearningRate != c.lr || p.trainer.ClipNorm != c.clip {
			t.Errorf("%s: fixed learning rate %v and clipping norm %v, want %v and %v", c.spec.Name, p.trainer.LearningRate, p.trainer.ClipNorm, c.lr, c.clip)
		}
		// The report names the network's own setting it used, and
		// nothing for another network (whose report stays as it was).
		want := map[string]float64{tuning.ClipNorm: d.ClipNorm}
		if c.spec.Name != model.ScatterLinearMNIST.Name {
			want = nil
		}
		if got := s.fixedReport(); !maps.Equal(got, want) || (got == nil) != (want == nil) {
			t.Errorf("%s: fixed %v in the report, want %v", c.spec.Name, got, want)
		}
	}
}

// freshWorker runs jobs as a worker process that has read the raw images
// only: this process's cache is emptied of everything else before each
// batch of jobs.
type freshWorker struct {
	runner.Local
	raw string
}

func (w freshWorker) Run(ctx context.Context, ts []runner.Task, done func(int, []byte) error) error {
	dataCache.Lock()
	l := dataCache.m[w.raw]
	dataCache.keys, dataCache.m = []string{w.raw}, map[string]loaded{w.raw: l}
	dataCache.Unlock()
	return w.Local.Run(ctx, ts, done)
}

// A seeded tuning of a network with a scatter front end gives the same
// release whether its runs go to this process (which holds the features)
// or to a worker that read the images alone: the worker computes the same
// features and cuts the same validation split from them.
func TestScatterTuneOnAWorker(t *testing.T) {
	dir := t.TempDir()
	src := scatterSource(t, 400, dir)
	seed := uint64(4)
	space := tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.5, 2}}}}
	tune := func(r runner.Runner) *Release {
		rel, _, err := Tune(context.Background(), TuneSpec{Data: src, Tuner: tuning.GridName, Space: space, Epsilon: 8, Delta: 1e-5,
			Epochs: 1, BatchSize: 50, Validation: "private", ValSize: 100, ScoreNoise: 5, Seed: &seed, Runner: r})
		if err != nil {
			t.Fatal(err)
		}
		if rel.Model == nil {
			t.Fatal("no model released")
		}
		return rel
	}
	here := tune(runner.Local{})
	there := tune(freshWorker{raw: cacheKey(rawRef{"mnist", dir})})
	if !slices.Equal(here.Model.Params, there.Model.Params) || *here.Score != *there.Score {
		t.Errorf("the worker's release differs: score %v, here %v", *there.Score, *here.Score)
	}
}

// A tuning of a network with a scatter front end scored on public
// validation data scores on that data's features.
func TestScatterTuneWithPublicValidation(t *testing.T) {
	src := scatterSource(t, 300, t.TempDir())
	pub := scatterSource(t, 100, t.TempDir())
	pub.Arch = model.MNIST // the public set's own default network plays no part
	seed := uint64(5)
	rel, _, err := Tune(context.Background(), TuneSpec{Data: src, Tuner: tuning.GridName, Epsilon: 8, Delta: 1e-5, Epochs: 1, BatchSize: 50,
		Space:      tuning.Space{Name: "one", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{1}}}},
		Validation: "public", PublicVal: &pub, Seed: &seed, Runner: runner.Local{}})
	if err != nil {
		t.Fatal(err)
	}
	if rel.Score == nil || *rel.Score < 0 || *rel.Score > 1 {
		t.Fatalf("released score %v", rel.Score)
	}
}

// The vote tunes a network with a scatter front end: each client trains
// on the features of its images, computed by the job's front end, and the
// server scores the final model on the test images' features.
func TestVoteOfAScatterNetwork(t *testing.T) {
	src := scatterSource(t, 300, t.TempDir())
	seed := uint64(7)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rel, _, err := Tune(ctx, TuneSpec{Data: src, Tuner: tuning.VoteName, Space: tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{1e-3, 0.5}}}},
		Epsilon: 20, Delta: 1e-5, BatchSize: 32, Seed: &seed,
		Options: tuning.Values{"clients": 2, "votes-per-client": 1, "vote-epsilon": 5.0, "fedavg-rounds": 1}})
	if err != nil {
		t.Fatal(err)
	}
	rep, ok := rel.Report.(*VoteReport)
	if !ok || rel.Model == nil || rep.Survivors != 2 {
		t.Fatalf("release %+v, report %+v", rel, rel.Report)
	}
	_, test, _ := src.Load()
	m, err := Evaluate(ctx, rel.Model, test.X, test.Y)
	if err != nil {
		t.Fatal(err)
	}
	if rep.TestAccuracy != m.Accuracy {
		t.Errorf("reported test accuracy %v, the test images' %v", rep.TestAccuracy, m.Accuracy)
	}
}
