package dpsgd

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// dataNormArchs are networks with a datanorm layer: first, on a 3-channel
// input (which the engine reads positions-major), and after a scatter
// front end.
func dataNormArchs(t *testing.T) []model.Arch {
	t.Helper()
	var out []model.Arch
	for _, c := range []struct {
		layers  []model.LayerSpec
		c, h, w int
	}{
		{[]model.LayerSpec{model.DataNorm(0, 0, 0), model.Conv2d(4, 3, 1, 1), model.Tanh(), model.MaxPool2d(2, 2), model.Flatten(), model.Linear(3)}, 3, 6, 6},
		{[]model.LayerSpec{model.Scatter(1, 2), model.DataNorm(0, 0, 0), model.Flatten(), model.Linear(3)}, 1, 8, 8},
	} {
		a, err := model.NewArch(model.Spec{Name: "dn", Layers: c.layers}, c.c, c.h, c.w, 3)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// setBuffers draws a datanorm layer's μ and v at random, one channel's
// variance 0.
func setBuffers(net *model.Net, seed uint64) {
	rng := randsrc.Seeded(seed, "buffers")
	n := len(net.Buffers) / 2
	for c := range n {
		net.Buffers[c], net.Buffers[n+c] = float32(rng.NormFloat64()), float32(0.2+rng.Float64())
	}
	net.Buffers[n+1] = 0
}

// The native engine's clipped sums and evaluation of a datanorm network
// agree with gorgonia's batch-of-one reference and graph.
func TestDataNormEngineMatchesReference(t *testing.T) {
	for _, arch := range dataNormArchs(t) {
		net, x, y := randomData(t, arch, 12, 3)
		setBuffers(net, 4)
		fast, err := NewEngine(net, 4)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := NewReferenceEngine(net)
		idx := []int{0, 3, 4, 7, 9, 10, 11}
		for _, clip := range []float64{math.Inf(1), 0.05} {
			a, b := make([]float32, net.NumParams()), make([]float32, net.NumParams())
			la, err := fast.ClippedSum(x, y, idx, FlatClip(clip), a)
			if err != nil {
				t.Fatal(err)
			}
			lb, _ := ref.ClippedSum(x, y, idx, FlatClip(clip), b)
			if e := relErr(a, b); e > 1e-5 || math.Abs(la-lb) > 1e-5*lb {
				t.Errorf("%v, C = %v: relative error %.3g, loss %v vs %v", arch.Spec.Layers[0].Type, clip, e, la, lb)
			}
		}
		m1, err := Evaluate(context.Background(), net, x, y)
		if err != nil {
			t.Fatal(err)
		}
		m2, _ := net.Evaluate(context.Background(), x, y)
		if m1.Correct != m2.Correct || math.Abs(m1.Loss-m2.Loss) > 1e-5*m2.Loss {
			t.Errorf("evaluate: native %+v, graph %+v", m1, m2)
		}
	}
}

// exactStats is the clipped estimate without noise, computed directly from
// its definition: per example the vectors of channel means and channel
// mean squares, each scaled to norm at most its clip, summed, divided by
// nominal; v = E[x²] − μ² floored at 0.
func exactStats(x []float32, n, C, P int, clipM, clipS, nominal float64) (mu, v []float64) {
	mu, e2 := make([]float64, C), make([]float64, C)
	for i := range n {
		m, s := make([]float64, C), make([]float64, C)
		for c := range C {
			for p := range P {
				f := float64(x[(i*C+c)*P+p])
				m[c] += f / float64(P)
				s[c] += f * f / float64(P)
			}
		}
		norm := func(v []float64) float64 {
			var t float64
			for _, e := range v {
				t = math.Hypot(t, e)
			}
			return t
		}
		km, ks := math.Min(1, clipM/norm(m)), math.Min(1, clipS/norm(s))
		for c := range C {
			mu[c] += km * m[c] / nominal
			e2[c] += ks * s[c] / nominal
		}
	}
	v = make([]float64, C)
	for c := range C {
		v[c] = math.Max(e2[c]-mu[c]*mu[c], 0)
	}
	return mu, v
}

func near(got []float32, want []float64, tol float64) bool {
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > tol*(1+math.Abs(want[i])) {
			return false
		}
	}
	return true
}

// With σ = 0 the estimate is the exact clipped mean and variance, divided
// by the nominal size (not the count); with clips no example reaches, it is
// the data's own mean and variance over examples and positions.
func TestDataNormStatsExact(t *testing.T) {
	const n, C, P = 40, 3, 5
	rng := randsrc.Seeded(7, "x")
	x := make([]float32, n*C*P)
	for i := range x {
		x[i] = float32(1 + 2*rng.NormFloat64())
		if i/(C*P)%5 == 0 {
			x[i] *= 10 // every fifth example is clipped
		}
	}
	x[3*C*P] = float32(math.NaN()) // example 3 counts as zero vectors
	ctx := context.Background()
	d := DataNorm{MeanClipNorm: 4, SquareClipNorm: 30}
	mean, variance, err := DataNormStats(ctx, x, n, C, P, d, n+10, false, randsrc.Seeded(1, "noise"))
	if err != nil {
		t.Fatal(err)
	}
	clean := slices.Clone(x)
	clear(clean[3*C*P : 4*C*P])
	mu, v := exactStats(clean, n, C, P, 4, 30, n+10)
	if !near(mean, mu, 1e-5) || !near(variance, v, 1e-5) {
		t.Fatalf("μ %v v %v, want %v %v", mean, variance, mu, v)
	}

	// Clips far above every norm: the plain mean and variance.
	d = DataNorm{MeanClipNorm: 1e6, SquareClipNorm: 1e6}
	mean, variance, err = DataNormStats(ctx, clean, n, C, P, d, n, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for c := range C {
		var s, s2 float64
		for i := range n {
			for p := range P {
				f := float64(clean[(i*C+c)*P+p])
				s, s2 = s+f, s2+f*f
			}
		}
		m := s / (n * P)
		if want := s2/(n*P) - m*m; math.Abs(float64(mean[c])-m) > 1e-5*(1+math.Abs(m)) || math.Abs(float64(variance[c])-want) > 1e-4*want {
			t.Errorf("channel %d: μ %v v %v, want %v %v", c, mean[c], variance[c], m, want)
		}
	}
}

// The noise on each channel's sum is N(0, σ²C²): on all-zero data with
// nominal size 1, μ's 2,000 channels have standard deviation σ·C_m (to 5%),
// in fast and in secure mode.
func TestDataNormStatsNoiseScale(t *testing.T) {
	const C = 2000
	d := DataNorm{NoiseMultiplier: 3, MeanClipNorm: 0.5, SquareClipNorm: 2}
	for _, secure := range []bool{false, true} {
		mean, _, err := DataNormStats(context.Background(), make([]float32, 4*C), 4, C, 1, d, 1, secure, randsrc.Seeded(2, "noise"))
		if err != nil {
			t.Fatal(err)
		}
		var ss float64
		for _, m := range mean {
			ss += float64(m) * float64(m)
		}
		if sd := math.Sqrt(ss / C); math.Abs(sd-1.5) > 0.075 {
			t.Errorf("secure %v: noise sd %v, want σ·C_m = 1.5", secure, sd)
		}
	}
}

// A datanorm layer is a privacy-spending stage (Stages) whose mechanism
// is its spec's, absent keys at their defaults; Train estimates it before
// the first step from its own "datanorm" stream, reports its event in
// Result.Stages apart from the steps', and PlannedEvent composes the two.
// A network without the layer has no stage and spends on its steps alone.
func TestTrainEstimatesDataNorm(t *testing.T) {
	arch := dataNormArchs(t)[1]
	net, x, y := randomData(t, arch, 30, 5)
	train := &data.Dataset{Name: "features", X: x, Y: y, N: 30, C: 3, H: 4, W: 4, Classes: 3}
	seed := uint64(9)
	stages := Stages(arch)
	want := DataNorm{NoiseMultiplier: model.DefaultDataNormNoiseMultiplier, MeanClipNorm: model.DefaultDataNormMeanClip, SquareClipNorm: model.DefaultDataNormSquareClip}
	if len(stages) != 1 || stages[0].Layer != 1 || stages[0].Type != "datanorm" || stages[0].Mechanism != Mechanism(want) {
		t.Fatalf("Stages: %+v", stages)
	}
	d := want
	cfg := Config{NoiseMultiplier: 1, ClipNorm: 1, SamplingRate: 0.5, Steps: 2, ExpectedBatchSize: 20, LearningRate: 0.1, Seed: &seed}
	res, err := Train(context.Background(), net, train, cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// nominal size: expected batch size / q = 40, not the 30 loaded.
	mean, variance, _ := DataNormStats(context.Background(), x, 30, 3, 16, d, 40, false, randsrc.Seeded(seed, "datanorm"))
	if !slices.Equal(net.Buffers, append(mean, variance...)) {
		t.Fatalf("buffers %v, want %v %v", net.Buffers, mean, variance)
	}
	es := res.Stages.Entries
	if len(es) != 1 || es[0].Label != d.Label() || !eventEqual(es[0].Event, d.Event()) || !eventEqual(res.Event, accounting.DPSGD(1, 0.5, 2)) {
		t.Fatalf("events %+v, %v", es, res.Event)
	}
	if !eventEqual(PlannedEvent(arch, cfg), accounting.Composed{Events: []accounting.Event{d.Event(), accounting.DPSGD(1, 0.5, 2)}}) {
		t.Fatalf("planned %v", PlannedEvent(arch, cfg))
	}
	if !eventEqual(StagesEvent(arch, cfg), d.Event()) {
		t.Fatalf("stages' event %v", StagesEvent(arch, cfg))
	}

	// A non-private run estimates without noise and spends nothing on it.
	np := cfg
	np.NoiseMultiplier, np.NonPrivate = 0, true
	res, err = Train(context.Background(), net, train, np, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	free := d
	free.NoiseMultiplier = 0
	mean, variance, _ = DataNormStats(context.Background(), x, 30, 3, 16, free, 40, false, randsrc.Seeded(seed, "datanorm"))
	if !slices.Equal(net.Buffers, append(mean, variance...)) || len(res.Stages.Entries) != 0 || StagesEvent(arch, np) != nil {
		t.Fatalf("non-private: buffers %v, want %v %v; stages %+v", net.Buffers, mean, variance, res.Stages)
	}

	plain, px, py := randomData(t, model.MNIST, 4, 1)
	res, err = Train(context.Background(), plain, &data.Dataset{Name: "p", X: px, Y: py, N: 4, C: 1, H: 28, W: 28, Classes: 10}, cfg, nil, nil)
	if err != nil || len(res.Stages.Entries) != 0 || Stages(model.MNIST) != nil || !eventEqual(PlannedEvent(model.MNIST, cfg), accounting.DPSGD(1, 0.5, 2)) {
		t.Errorf("a network without the layer: %v, stages %+v, planned %v", err, res.Stages, PlannedEvent(model.MNIST, cfg))
	}
}

// A private datanorm run resumed from a checkpoint does not estimate
// again, and still reports the estimate its first process made (the
// state's Normalised); a state that says otherwise is refused.
func TestResumeKeepsDataNorm(t *testing.T) {
	arch := dataNormArchs(t)[1]
	net, x, y := randomData(t, arch, 30, 5)
	train := &data.Dataset{Name: "features", X: x, Y: y, N: 30, C: 3, H: 4, W: 4, Classes: 3}
	cfg := Config{NoiseMultiplier: 1, ClipNorm: 1, SamplingRate: 0.5, Steps: 3, LearningRate: 0.1, Seed: seed(3)}
	var saved []State
	full := cfg
	full.CheckpointEvery = 1
	full.Checkpoint = func(s State) error { saved = append(saved, copyState(s)); return nil }
	res, err := Train(context.Background(), net, train, full, nil, nil)
	if err != nil || len(saved) != 2 || !saved[0].Normalised {
		t.Fatalf("Train: %v; %d checkpoints", err, len(saved))
	}
	resumed := cfg
	resumed.Resume = &saved[0]
	r, err := Train(context.Background(), net, train, resumed, nil, nil)
	if err != nil || !eventEqual(r.Stages.Event(), res.Stages.Event()) || len(r.Stages.Entries) != 1 {
		t.Fatalf("resumed: %v, stages %+v, want %+v", err, r.Stages, res.Stages)
	}
	bad := saved[0]
	bad.Normalised = false
	resumed.Resume = &bad
	if _, err := Train(context.Background(), net, train, resumed, nil, nil); err == nil || !strings.Contains(err.Error(), "normalisation ran") {
		t.Errorf("a state without the estimate: %v", err)
	}
	// A non-private run's checkpoint resumes too: its exact statistics
	// ran (and count nothing).
	np := cfg
	np.NonPrivate, np.NoiseMultiplier, np.CheckpointEvery, saved = true, 0, 1, nil
	np.Checkpoint = func(s State) error { saved = append(saved, copyState(s)); return nil }
	if _, err := Train(context.Background(), net, train, np, nil, nil); err != nil || len(saved) != 2 {
		t.Fatalf("non-private Train: %v; %d checkpoints", err, len(saved))
	}
	np.Checkpoint, np.CheckpointEvery, np.Resume = nil, 0, &saved[0]
	if _, err := Train(context.Background(), net, train, np, nil, nil); err != nil {
		t.Errorf("a non-private run resumed: %v", err)
	}
}

func eventEqual(a, b accounting.Event) bool {
	x, err1 := accounting.MarshalEvent(a)
	y, err2 := accounting.MarshalEvent(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// The stage's forward pass is x·scale + shift per channel on
// positions-major maps and its input gradient g·scale (the engine never
// asks for it while the layer is first, so it is checked here).
func TestDataNormStageBackward(t *testing.T) {
	arch := dataNormArchs(t)[1]
	net, _, _ := randomData(t, arch, 1, 1)
	setBuffers(net, 2)
	l, _ := dataNormLayer(net)
	s := &dataNormStage{l: l}
	s.prepareBuffers(net.Buffers)
	scale, shift := model.DataNormAffine(net.Buffers[:3], net.Buffers[3:])
	n, P := 2, 16
	in, out, g, gIn := make([]float32, n*P*3), make([]float32, n*P*3), make([]float32, n*P*3), make([]float32, n*P*3)
	for i := range in {
		in[i], g[i] = float32(i%11)-5, float32(i%7)-3
	}
	s.forward(nil, n, in, out)
	s.backward(nil, n, in, out, g, gIn)
	for i := range in {
		c := i % 3
		if out[i] != in[i]*scale[c]+shift[c] || gIn[i] != g[i]*scale[c] {
			t.Fatalf("value %d (channel %d): out %v, gIn %v", i, c, out[i], gIn[i])
		}
	}
}

// EstimateDataNorm releases what a run would estimate from the same
// stream; a run given it (Config.Released) copies it into the layer's
// buffers, touches no data for it and counts only its steps; a release
// still missing, or mismatched, is refused.
func TestTrainTakesReleasedDataNorm(t *testing.T) {
	arch := dataNormArchs(t)[1]
	net, x, y := randomData(t, arch, 30, 5)
	train := &data.Dataset{Name: "features", X: x, Y: y, N: 30, C: 3, H: 4, W: 4, Classes: 3}
	seed := uint64(9)
	d := Stages(arch)[0].Mechanism.(DataNorm)
	est, err := EstimateDataNorm(context.Background(), arch, train, d, 40, &seed, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	mean, variance, _ := DataNormStats(context.Background(), x, 30, 3, 16, d, 40, false, randsrc.Seeded(seed, "datanorm"))
	if !slices.Equal(est.Mean, mean) || !slices.Equal(est.Variance, variance) {
		t.Fatalf("released %+v, want %v %v", est, mean, variance)
	}
	cfg := Config{NoiseMultiplier: 1, ClipNorm: 1, SamplingRate: 0.5, Steps: 2, ExpectedBatchSize: 20, LearningRate: 0.1, Seed: &seed, Released: &Released{Estimates: []Estimate{est}}}
	res, err := Train(context.Background(), net, train, cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(net.Buffers, append(slices.Clone(mean), variance...)) {
		t.Fatalf("buffers %v, want the released %v %v", net.Buffers, mean, variance)
	}
	if len(res.Stages.Entries) != 0 || !eventEqual(res.Event, accounting.DPSGD(1, 0.5, 2)) || !eventEqual(PlannedEvent(arch, cfg), accounting.DPSGD(1, 0.5, 2)) {
		t.Fatalf("events %+v, %v, planned %v: want the steps alone", res.Stages, res.Event, PlannedEvent(arch, cfg))
	}
	for _, c := range []struct {
		cfg  func(Config) Config
		net  model.Arch
		want string
	}{
		{func(c Config) Config { c.Released = &Released{}; return c }, arch, "not yet estimated"},
		{func(c Config) Config {
			c.Released = &Released{Estimates: []Estimate{&DataNormEstimate{Mean: []float32{0}, Variance: []float32{1}}}}
			return c
		}, arch, "channels"},
		{func(c Config) Config {
			c.Released = &Released{Estimates: []Estimate{&DataNormEstimate{Mean: []float32{0, 0, 0}, Variance: []float32{1, -1, 1}}}}
			return c
		}, arch, "variance"},
		{func(c Config) Config { return c }, model.MNIST, "privacy-spending layers"},
	} {
		n, err := model.NewZero(c.net)
		if err != nil {
			t.Fatal(err)
		}
		tr := train
		if c.net.Name != arch.Name {
			_, px, py := randomData(t, c.net, 4, 1)
			tr = &data.Dataset{Name: "p", X: px, Y: py, N: 4, C: 1, H: 28, W: 28, Classes: 10}
		}
		if _, err := Train(context.Background(), n, tr, c.cfg(cfg), nil, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error with %q, have %v", c.want, err)
		}
	}
	if _, err := EstimateDataNorm(context.Background(), model.MNIST, train, d, 40, &seed, nil, false); err == nil {
		t.Error("estimated a network without a datanorm layer")
	}
}
