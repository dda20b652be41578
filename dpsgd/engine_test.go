package dpsgd

import (
	"context"
	"encoding/json"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// randomData returns n random examples for arch (standard normal pixels,
// uniform labels) and a network with PyTorch's initialisation.
func randomData(t testing.TB, arch model.Arch, n int, seed uint64) (*model.Net, []float32, []uint8) {
	t.Helper()
	net, err := model.New(arch, randsrc.Seeded(seed, "init"))
	if err != nil {
		t.Fatal(err)
	}
	rng := randsrc.Seeded(seed, "data")
	c, h, w := arch.Input()
	x := make([]float32, n*c*h*w)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	y := make([]uint8, n)
	for i := range y {
		y[i] = uint8(rng.IntN(arch.Classes))
	}
	return net, x, y
}

// relErr is ‖a − b‖∞ / ‖b‖∞.
func relErr(a, b []float32) float64 {
	var d, m float64
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
		m = math.Max(m, math.Abs(float64(b[i])))
	}
	return d / m
}

// sumErr is the largest difference between the clipped sums a and b,
// relative to the largest magnitude among b's entries and the entries of
// each example's gradient clipped to clip (norms and maxAbs from
// perExampleNorms).
func sumErr(a, b []float32, norms, maxAbs []float64, clip float64) float64 {
	var d, m float64
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
		m = math.Max(m, math.Abs(float64(b[i])))
	}
	for k, v := range maxAbs {
		m = math.Max(m, v*math.Min(1, clip/norms[k]))
	}
	return d / m
}

// perturbNorms moves every normalisation's weight and bias (a layer with
// parameters and no matrix product) away from 1 and 0, where they start,
// so that their gradients are tested in general.
func perturbNorms(net *model.Net, seed uint64) {
	rng := randsrc.Seeded(seed, "perturb")
	for _, l := range net.Layers {
		if l.HasParams() && l.MACs() == 0 {
			for k := l.WeightOffset; k < l.BiasOffset+l.BiasSize(); k++ {
				net.Params[k] += float32(0.3 * rng.NormFloat64())
			}
		}
	}
}

// perExampleNorms returns each example's gradient norm from the reference
// engine, and the largest magnitude of its entries.
func perExampleNorms(t *testing.T, net *model.Net, x []float32, y []uint8, idx []int) (norms, maxAbs []float64) {
	ref, err := NewReferenceEngine(net)
	if err != nil {
		t.Fatal(err)
	}
	norms, maxAbs = make([]float64, len(idx)), make([]float64, len(idx))
	for k, i := range idx {
		g := make([]float32, net.NumParams())
		if _, err := ref.ClippedSum(x, y, []int{i}, FlatClip(math.Inf(1)), g); err != nil {
			t.Fatal(err)
		}
		norms[k] = math.Sqrt(sq(g))
		for _, v := range g {
			maxAbs[k] = math.Max(maxAbs[k], math.Abs(float64(v)))
		}
	}
	return norms, maxAbs
}

// The native engine's clipped sum equals the batch-of-one reference to 1e-5
// relative, for every built-in network and for random specs (a new seed
// each run, logged), clipped and unclipped, for a single example, a partial
// chunk (7 examples in chunks of 8) and a batch split between workers into
// full and partial chunks (19 examples).
func TestEngineMatchesReference(t *testing.T) {
	var archs []model.Arch
	for _, s := range model.BuiltinSpecs() {
		a := model.MNIST
		if strings.Contains(s.Name, "cifar") {
			a = model.CIFAR10
		}
		a.Spec = s
		archs = append(archs, a)
	}
	// Group norm first (as on ScatterNet features, no input gradient: the
	// fused group norm + linear stage, also with an activation and a layer
	// after it) and after a convolution, with several channels per group.
	for _, layers := range [][]model.LayerSpec{
		{model.GroupNorm(2), model.Flatten(), model.Linear(3)},
		{model.GroupNorm(3), model.Flatten(), model.Linear(4), model.ReLU(), model.Linear(3)},
		{model.Conv2d(6, 3, 1, 1), model.GroupNorm(2), model.Tanh(), model.Flatten(), model.Linear(3)},
	} {
		a, err := model.NewArch(model.Spec{Name: "gn", Layers: layers}, 6, 5, 5, 3)
		if err != nil {
			t.Fatal(err)
		}
		archs = append(archs, a)
	}
	// And after a scatter front end (the engine's input is its features).
	a, err := model.NewArch(model.Spec{Name: "scatter-gn", Layers: []model.LayerSpec{model.Scatter(1, 2), model.GroupNorm(3), model.Flatten(), model.Linear(3)}}, 1, 8, 8, 3)
	if err != nil {
		t.Fatal(err)
	}
	archs = append(archs, a)
	seed := uint64(time.Now().UnixNano())
	for i := range 8 {
		a := model.RandomArch(randsrc.Seeded(seed+uint64(i), "spec"))
		js, _ := json.Marshal(a)
		t.Logf("random spec, seed %d: %s", seed+uint64(i), js)
		archs = append(archs, a)
	}
	for _, arch := range archs {
		checkAgainstReference(t, arch)
	}
}

// checkAgainstReference compares the native engine's clipped sum and loss
// on arch with the batch-of-one reference's, to 1e-5 relative.
func checkAgainstReference(t *testing.T, arch model.Arch) {
	t.Helper()
	net, x, y := randomData(t, arch, 24, 1)
	perturbNorms(net, 2)
	fast, err := NewEngine(net, 8)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := NewReferenceEngine(net)
	sizes := []int{1, 7, 19}
	if net.NumParams() > 100000 {
		sizes = []int{1, 3} // tb-cifar10: the reference takes a second an example
	}
	for _, n := range sizes {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = (5*i + 3) % 24
		}
		norms, maxAbs := perExampleNorms(t, net, x, y, idx)
		// A clipping norm between the smallest and largest gradient norm,
		// so that some examples are clipped and some are not.
		lo, hi := math.Inf(1), 0.0
		for _, v := range norms {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		for _, clip := range []float64{math.Inf(1), (lo + hi) / 2, lo / 4} {
			a := make([]float32, net.NumParams())
			b := make([]float32, net.NumParams())
			la, err := fast.ClippedSum(x, y, idx, FlatClip(clip), a)
			if err != nil {
				t.Fatal(err)
			}
			lb, _ := ref.ClippedSum(x, y, idx, FlatClip(clip), b)
			// Relative to the sum's largest entry, or to the largest entry
			// of any one example's clipped gradient when the examples
			// cancel in the sum: float32 sums are exact to a relative
			// error of the terms, not of a sum that nearly cancels (two
			// random specs in 4,071 had 19 clipped gradients of norm
			// 1.9–3.3 summing to 0.08, all per-example norms right to 7e-7).
			if e := sumErr(a, b, norms, maxAbs, clip); e > 1e-5 {
				t.Errorf("%s, %d examples, C=%v: relative error %.3g", arch.Name, n, clip, e)
			}
			if math.Abs(la-lb) > 1e-5*lb {
				t.Errorf("%s: loss %v vs reference %v", arch.Name, la, lb)
			}
			if clip == lo/4 {
				// Every example clipped: the sum's norm is at most n·C.
				if norm := math.Sqrt(sq(a)); norm > float64(n)*clip*(1+1e-5) {
					t.Errorf("clipped sum norm %v > n·C = %v", norm, float64(n)*clip)
				}
			}
		}
	}
}

// The sum of unclipped per-example gradients is the gradient of the summed
// loss, which gorgonia computes directly on the whole batch.
func TestUnclippedSumIsBatchGradient(t *testing.T) {
	net, x, y := randomData(t, model.MNIST, 16, 2)
	g, err := net.NewGraph(16, model.ParamGrads)
	if err != nil {
		t.Fatal(err)
	}
	idx := make([]int, 16)
	for i := range idx {
		idx[i] = i
	}
	g.SetBatch(x, y, idx)
	if err := g.Run(); err != nil {
		t.Fatal(err)
	}
	fast, _ := NewEngine(net, 16)
	sum := make([]float32, net.NumParams())
	if _, err := fast.ClippedSum(x, y, idx, FlatClip(math.Inf(1)), sum); err != nil {
		t.Fatal(err)
	}
	if e := relErr(sum, g.ParamGrad()); e > 1e-5 {
		t.Fatalf("relative error %.3g against the batch gradient", e)
	}
}

func TestIm2colMatchesDirectIndexing(t *testing.T) {
	net, _ := model.NewZero(model.MNIST)
	l := newConvStage(net.Layers[0], nil, true).l // 1→16, 8×8, stride 2, padding 3, 28×28 → 14×14
	in := make([]float32, 28*28)
	for i := range in {
		in[i] = float32(i + 1)
	}
	col := make([]float32, l.Positions()*l.FanIn())
	im2colNCHW(l, 1, in, col)
	for _, c := range []struct{ oh, ow, ki, kj int }{{0, 0, 0, 0}, {0, 0, 3, 3}, {5, 7, 2, 6}, {13, 13, 7, 7}, {13, 0, 4, 1}} {
		r, q := c.oh*2-3+c.ki, c.ow*2-3+c.kj
		want := float32(0)
		if r >= 0 && q >= 0 && r < 28 && q < 28 {
			want = in[r*28+q]
		}
		if got := col[(c.oh*14+c.ow)*64+c.ki*8+c.kj]; got != want {
			t.Errorf("%+v: %v, want %v", c, got, want)
		}
	}
}

// col2imNHWC is the adjoint of im2colNHWC: ⟨im2col(x), d⟩ = ⟨x, col2im(d)⟩;
// and permuteKernel's inverse undoes it.
func TestCol2imIsAdjointOfIm2col(t *testing.T) {
	net, _ := model.NewZero(model.CIFAR10)
	l := newConvStage(model.ParamLayers(net.Layers)[1], nil, false).l
	l.Pad = 1 // exercise the padding branch too
	l.OutH, l.OutW = (l.InH+2-l.Kernel)/l.Stride+1, (l.InW+2-l.Kernel)/l.Stride+1
	rng := randsrc.Seeded(9, "test")
	n := 2
	x := make([]float32, n*l.InH*l.InW*l.In)
	d := make([]float32, n*l.Positions()*l.FanIn())
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i := range d {
		d[i] = float32(rng.NormFloat64())
	}
	cols := make([]float32, len(d))
	im2colNHWC(l, n, x, cols)
	back := make([]float32, len(x))
	col2imNHWC(l, n, d, back)
	var lhs, rhs float64
	for i := range d {
		lhs += float64(cols[i]) * float64(d[i])
	}
	for i := range x {
		rhs += float64(x[i]) * float64(back[i])
	}
	if math.Abs(lhs-rhs) > 1e-4*math.Abs(lhs) {
		t.Fatalf("⟨im2col x, d⟩ = %v, ⟨x, col2im d⟩ = %v", lhs, rhs)
	}
	w := make([]float32, l.WeightSize())
	for i := range w {
		w[i] = float32(i)
	}
	p, q := make([]float32, len(w)), make([]float32, len(w))
	permuteKernel(l, w, p, false)
	permuteKernel(l, p, q, true)
	if relErr(q, w) != 0 {
		t.Fatal("permuteKernel's inverse does not undo it")
	}
}

// The non-private engine's sum equals the per-example engine's unclipped sum
// across split and padded passes, and it refuses to clip.
func TestBatchGradEngine(t *testing.T) {
	net, x, y := randomData(t, model.MNIST, 40, 4)
	idx := make([]int, 37)
	for i := range idx {
		idx[i] = i
	}
	bg, err := NewBatchGradEngine(net, 16)
	if err != nil {
		t.Fatal(err)
	}
	fast, _ := NewEngine(net, 16)
	a := make([]float32, net.NumParams())
	b := make([]float32, net.NumParams())
	if _, err := bg.ClippedSum(x, y, idx, FlatClip(math.Inf(1)), a); err != nil {
		t.Fatal(err)
	}
	fast.ClippedSum(x, y, idx, FlatClip(math.Inf(1)), b)
	if e := relErr(a, b); e > 1e-5 {
		t.Fatalf("relative error %.3g", e)
	}
	if _, err := bg.ClippedSum(x, y, idx, FlatClip(1), a); err == nil {
		t.Fatal("batch-gradient engine clipped")
	}
}

// Evaluate agrees with the gorgonia graph's model.Net.Evaluate.
func TestEvaluateMatchesGraph(t *testing.T) {
	scatterLinear := model.Arch{Spec: model.ScatterLinearMNIST, C: 1, H: 28, W: 28, Classes: 10}
	for _, arch := range []model.Arch{model.MNIST, model.CIFAR10, scatterLinear} {
		net, x, y := randomData(t, arch, 37, 5)
		got, err := Evaluate(context.Background(), net, x, y)
		if err != nil {
			t.Fatal(err)
		}
		want, err := net.Evaluate(context.Background(), x, y)
		if err != nil {
			t.Fatal(err)
		}
		if got.Accuracy != want.Accuracy || got.N != want.N || math.Abs(got.Loss-want.Loss) > 1e-5*want.Loss {
			t.Errorf("%s: %+v, graph %+v", arch.Name, got, want)
		}
		// Logits: their cross-entropy and argmax are the graph's loss and
		// accuracy.
		logits, err := Logits(context.Background(), net, x)
		if err != nil {
			t.Fatal(err)
		}
		var loss float64
		var correct int
		for i, l := range y {
			row := logits[i*arch.Classes : (i+1)*arch.Classes]
			loss += model.CrossEntropy(row, int(l))
			best := 0
			for o, v := range row {
				if v > row[best] {
					best = o
				}
			}
			if best == int(l) {
				correct++
			}
		}
		if loss /= float64(len(y)); correct != want.Correct || math.Abs(loss-want.Loss) > 1e-5*want.Loss {
			t.Errorf("%s: logits give loss %v and %d correct, graph %v and %d", arch.Name, loss, correct, want.Loss, want.Correct)
		}
	}
	net, x, y := randomData(t, model.MNIST, 4, 5)
	if _, err := Evaluate(context.Background(), net, x[:10], y); err == nil {
		t.Error("short x accepted")
	}
}

// TestEngineWorkersStopWhenGarbage: an engine nobody holds is collected and
// its helper goroutines exit, so code that builds one engine per training
// run (tuners, benchmarks) does not accumulate goroutines and buffers.
func TestEngineWorkersStopWhenGarbage(t *testing.T) {
	net, _, _ := randomData(t, model.MNIST, 1, 1)
	before := runtime.NumGoroutine()
	for range 20 {
		e, err := newEngineWorkers(net, 3)
		if err != nil {
			t.Fatal(err)
		}
		_ = e
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		n := runtime.NumGoroutine()
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after dropping 20 engines of 2 helpers each, %d before", n, before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The fused group norm + linear stage's ghost norm holds where the affine
// shift dominates (β ≫ γ·x̂, so that ‖γ⊙x̂ + β‖² is a sum of large terms),
// and on inputs at a large offset, whose float32 sums round by more than
// their spread (a constant 1000001 normalises to x̂ = ±1, which a norm
// built from the raw sums took for mean 0 and under-estimated by √2):
// each example clipped to a fraction of its own gradient norm comes out
// with norm at most the clipping norm.
func TestFusedGroupNormLinearClipsUnderLargeShift(t *testing.T) {
	clipsAtNorm := func(t *testing.T, net *model.Net, x []float32, y []uint8, n int) {
		t.Helper()
		e, err := NewEngine(net, 1)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			g := make([]float32, net.NumParams())
			if _, err := e.ClippedSum(x, y, []int{i}, FlatClip(math.Inf(1)), g); err != nil {
				t.Fatal(err)
			}
			clip := math.Sqrt(sq(g)) / 100
			c := make([]float32, net.NumParams())
			if _, err := e.ClippedSum(x, y, []int{i}, FlatClip(clip), c); err != nil {
				t.Fatal(err)
			}
			if got := math.Sqrt(sq(c)); got > clip*(1+1e-6) || got < clip*(1-1e-4) {
				t.Errorf("example %d clipped to %v has norm %v (%.4f×)", i, clip, got, got/clip)
			}
		}
	}
	t.Run("large offset", func(t *testing.T) {
		a, err := model.NewArch(model.Spec{Name: "gn", Layers: []model.LayerSpec{model.GroupNorm(4), model.Flatten(), model.Linear(3)}}, 4, 8, 8, 3)
		if err != nil {
			t.Fatal(err)
		}
		net, x, y := randomData(t, a, 6, 1)
		gn := net.Layers[0]
		for c := 0; c < gn.Out; c++ {
			net.Params[gn.WeightOffset+c], net.Params[gn.BiasOffset+c] = 1, 1
		}
		rng := randsrc.Seeded(3, "offset")
		for i := range x {
			switch i / (4 * 64) {
			case 0, 1:
				x[i] = 1000001 // constant
			default:
				x[i] = 1e6 + float32(0.06*rng.NormFloat64())
			}
		}
		clipsAtNorm(t, net, x, y, 6)
	})
	t.Run("large shift", func(t *testing.T) {
		a, err := model.NewArch(model.Spec{Name: "gn", Layers: []model.LayerSpec{model.GroupNorm(2), model.Flatten(), model.Linear(3)}}, 6, 5, 5, 3)
		if err != nil {
			t.Fatal(err)
		}
		net, x, y := randomData(t, a, 8, 1)
		gn := net.Layers[0]
		for c := 0; c < gn.Out; c++ {
			net.Params[gn.WeightOffset+c] = 0.01
			net.Params[gn.BiasOffset+c] = 300
		}
		fc := net.Layers[2] // small weights, so that the logits do not saturate
		for k := fc.WeightOffset; k < fc.WeightOffset+fc.WeightSize(); k++ {
			net.Params[k] *= 0.003
		}
		clipsAtNorm(t, net, x, y, 8)
	})
}

// The clipped sum and the loss are the same float values whatever the
// number of workers (the fixed shards of shardsFor), clipped or not, so a
// seeded run gives the same model on one core as on sixty-four: for a
// batch of 8 shards and one of 23.
func TestEngineSumIndependentOfWorkers(t *testing.T) {
	for _, tc := range []struct {
		arch model.Arch
		n    int // not a multiple of the shards or the chunk
	}{{model.MNIST, 150}, {scatterGNLinear, 150}, {scatterGNLinear, 1500}} {
		arch := tc.arch
		net, x, y := randomData(t, arch, 200, 5)
		idx := make([]int, tc.n)
		for i := range idx {
			idx[i] = (7 * i) % 200
		}
		for _, clip := range []float64{0.5, math.Inf(1)} {
			var want []float32
			var wantLoss float64
			for _, nw := range []int{1, 2, 3, 8, 16, 64} {
				e, err := newEngineWorkers(net, nw)
				if err != nil {
					t.Fatal(err)
				}
				sum := make([]float32, net.NumParams())
				loss, err := e.ClippedSum(x, y, idx, FlatClip(clip), sum)
				if err != nil {
					t.Fatal(err)
				}
				if want == nil {
					want, wantLoss = sum, loss
					continue
				}
				if loss != wantLoss {
					t.Errorf("%s, clip %v: %d workers' loss %v, one worker's %v", arch.Name, clip, nw, loss, wantLoss)
				}
				for k := range sum {
					if sum[k] != want[k] {
						t.Errorf("%s, clip %v: %d workers' sum[%d] = %v, one worker's %v", arch.Name, clip, nw, k, sum[k], want[k])
						break
					}
				}
			}
		}
	}
}

// The shard count depends on the batch size alone: 8 up to 575 examples
// (as when it was fixed), one per 64 examples above, at most 64.
func TestShardsFor(t *testing.T) {
	for n, want := range map[int]int{0: 8, 1: 8, 256: 8, 575: 8, 576: 9, 1024: 16, 1500: 23, 4096: 64, 8192: 64, 1 << 20: 64} {
		if got := shardsFor(n); got != want {
			t.Errorf("shardsFor(%d) = %d, want %d", n, got, want)
		}
	}
}
