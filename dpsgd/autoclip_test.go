package dpsgd

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/model"
)

// autoClipArchs are small networks that between them hold every layer
// kind a spec may name (TestAutoClipCoversEveryLayerType), each in the
// positions the engine treats apart: a first layer reading the raw or
// positions-major input, an activation fused into the convolution or
// linear layer before it, the fused group norm + linear first stage, a
// convolution of the shape that once took the ghost norm (a 1×1 output; it
// is instantiated now, see convStage), a front end's features, a datanorm layer's
// buffers.
func autoClipArchs(t *testing.T) []model.Arch {
	t.Helper()
	var out []model.Arch
	for _, c := range []struct {
		layers  []model.LayerSpec
		c, h, w int
	}{
		{[]model.LayerSpec{model.Conv2d(4, 3, 1, 1), model.ReLU(), model.MaxPool2d(2, 2), model.Flatten(), model.Linear(3)}, 2, 6, 6},
		{[]model.LayerSpec{model.Conv2d(4, 3, 2, 1), model.GELU(), model.AvgPool2d(2, 2), model.Conv2d(3, 2, 1, 0), model.SiLU(), model.Flatten(), model.Linear(5), model.Tanh(), model.Linear(3)}, 1, 9, 9},
		{[]model.LayerSpec{model.Conv2d(4, 3, 1, 1), model.LayerNorm(), model.SiLU(), model.Flatten(), model.LayerNorm(), model.Linear(6), model.GELU(), model.Linear(3)}, 2, 5, 5},
		{[]model.LayerSpec{model.Conv2d(4, 3, 1, 1), model.GroupNorm(2), model.Tanh(), model.Conv2d(8, 5, 1, 0), model.ReLU(), model.Flatten(), model.Linear(3)}, 2, 5, 5},
		{[]model.LayerSpec{model.GroupNorm(3), model.Flatten(), model.Linear(4), model.ReLU(), model.Linear(3)}, 6, 5, 5},
		{[]model.LayerSpec{model.Scatter(1, 2), model.GroupNorm(3), model.Flatten(), model.Linear(3)}, 1, 8, 8},
	} {
		a, err := model.NewArch(model.Spec{Name: "autoclip", Layers: c.layers}, c.c, c.h, c.w, 3)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return append(append(out, dataNormArchs(t)...), model.MNIST)
}

// The networks of the automatic-clipping tests hold every layer type, so
// that each kind's clipped sum is checked under it.
func TestAutoClipCoversEveryLayerType(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range autoClipArchs(t) {
		for _, l := range a.Spec.Layers {
			seen[l.Type] = true
		}
	}
	for _, typ := range model.LayerTypes() {
		if !seen[typ] {
			t.Errorf("no automatic-clipping test network has a %q layer", typ)
		}
	}
}

// autoClipped is Σ_i g_i/(‖g_i‖ + γ) in float64 from the per-example
// gradients g (each the reference engine's batch of one, unclipped), and
// the largest magnitude of any one term, against which a float32 sum's
// error is measured.
func autoClipped(g [][]float32, gamma float64) (sum []float64, scale float64) {
	sum = make([]float64, len(g[0]))
	for _, gi := range g {
		var n2 float64
		for _, v := range gi {
			n2 += float64(v) * float64(v)
		}
		f := 1 / (math.Sqrt(n2) + gamma)
		for k, v := range gi {
			sum[k] += f * float64(v)
			scale = math.Max(scale, math.Abs(f*float64(v)))
		}
	}
	for _, v := range sum {
		scale = math.Max(scale, math.Abs(v))
	}
	return sum, scale
}

// perExampleGrads returns each example's unclipped gradient from the
// batch-of-one reference engine (gorgonia's autodiff).
func perExampleGrads(t *testing.T, net *model.Net, x []float32, y []uint8, idx []int) [][]float32 {
	t.Helper()
	ref, err := NewReferenceEngine(net)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]float32, len(idx))
	for k, i := range idx {
		out[k] = make([]float32, net.NumParams())
		if _, err := ref.ClippedSum(x, y, []int{i}, FlatClip(math.Inf(1)), out[k]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// Automatic clipping, closed form: for every layer kind, the native
// engine's sum under AutoClip(γ) equals Σ_i g_i/(‖g_i‖ + γ) computed here
// in float64 from the per-example gradients, to 1e-5 relative — for γ =
// 0.01 (Bu et al.'s) and for γ the median gradient norm, where the
// stability constant changes every factor — for one example, a partial
// chunk and a batch split into full and partial chunks over the shards;
// and gorgonia's batch-of-one reference engine (the oracle) gives the
// same sum.
func TestAutoClipSumClosedForm(t *testing.T) {
	for _, arch := range autoClipArchs(t) {
		net, x, y := randomData(t, arch, 24, 1)
		perturbNorms(net, 2)
		if len(net.Buffers) > 0 {
			setBuffers(net, 4)
		}
		fast, err := NewEngine(net, 8)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := NewReferenceEngine(net)
		for _, n := range []int{1, 7, 19} {
			idx := make([]int, n)
			for i := range idx {
				idx[i] = (5*i + 3) % 24
			}
			g := perExampleGrads(t, net, x, y, idx)
			norms := make([]float64, n)
			for k := range g {
				norms[k] = math.Sqrt(sq(g[k]))
			}
			median := slices.Clone(norms)
			slices.Sort(median)
			for _, gamma := range []float64{DefaultAutoClipGamma, median[n/2]} {
				want, scale := autoClipped(g, gamma)
				for name, e := range map[string]Engine{"native": fast, "reference": ref} {
					got := make([]float32, net.NumParams())
					if _, err := e.ClippedSum(x, y, idx, AutoClip(gamma), got); err != nil {
						t.Fatal(err)
					}
					var d float64
					for k := range got {
						d = math.Max(d, math.Abs(float64(got[k])-want[k]))
					}
					if d/scale > 1e-5 {
						t.Errorf("%s, %s engine, %d examples, γ = %.3g: relative error %.3g against Σ g_i/(‖g_i‖ + γ)", layerNames(arch), name, n, gamma, d/scale)
					}
				}
			}
		}
	}
}

// layerNames names arch's layer types, for messages.
func layerNames(a model.Arch) string {
	var s []string
	for _, l := range a.Spec.Layers {
		s = append(s, l.Type)
	}
	return strings.Join(s, "-")
}

// Every clipped gradient has norm below 1, whatever its norm before: the
// factor f = AutoClipFactor(‖g‖, γ) has f·‖g‖ < 1 exactly, from norms far
// below γ to norms where 1/(‖g‖ + γ) rounds to the float32 above 1/‖g‖;
// and each example the engine clips alone comes out with norm
// ‖g‖/(‖g‖ + γ) < 1, for every layer kind.
func TestAutoClipNormBelowOne(t *testing.T) {
	for _, gamma := range []float64{1e-6, DefaultAutoClipGamma, 1, 100} {
		for e := -30.0; e <= 30; e += 0.01 {
			norm := math.Pow(10, e)
			if f := float64(AutoClipFactor(norm, gamma)); !(f*norm < 1) || !(f > 0) {
				t.Fatalf("γ = %v, ‖g‖ = %v: factor %v gives norm %v, not in (0, 1)", gamma, norm, f, f*norm)
			}
		}
	}
	for _, norm := range []float64{math.NaN(), math.Inf(1)} {
		if f := AutoClipFactor(norm, DefaultAutoClipGamma); f != 0 {
			t.Errorf("‖g‖ = %v: factor %v, want 0 (the example is dropped)", norm, f)
		}
	}
	for _, arch := range autoClipArchs(t) {
		net, x, y := randomData(t, arch, 6, 5)
		if len(net.Buffers) > 0 {
			setBuffers(net, 4)
		}
		e, err := NewEngine(net, 1)
		if err != nil {
			t.Fatal(err)
		}
		g := perExampleGrads(t, net, x, y, []int{0, 1, 2, 3, 4, 5})
		for i := range 6 {
			c := make([]float32, net.NumParams())
			if _, err := e.ClippedSum(x, y, []int{i}, AutoClip(DefaultAutoClipGamma), c); err != nil {
				t.Fatal(err)
			}
			n, got := math.Sqrt(sq(g[i])), math.Sqrt(sq(c))
			if want := n / (n + DefaultAutoClipGamma); !(got < 1) || math.Abs(got-want) > 1e-5*want {
				t.Errorf("%s, example %d: ‖g‖ = %v clipped to norm %v, want %v < 1", layerNames(arch), i, n, got, want)
			}
		}
	}
}

// One DP-SGD step of Train under automatic clipping, without noise (a
// non-private run, σ = 0) at sampling rate 1, moves the parameters by
// −η·Σ_i g_i/(‖g_i‖ + γ)/N: the closed form through the whole training
// path (Config.Clip).
func TestTrainStepAutoClip(t *testing.T) {
	for _, arch := range []model.Arch{model.MNIST, scatterGNLinear} {
		const n, lr, gamma = 20, 0.3, 0.05
		net, x, y := randomData(t, arch, n, 8)
		c, h, w := arch.Input()
		train := &data.Dataset{Name: "step", X: x, Y: y, N: n, C: c, H: h, W: w, Classes: arch.Classes}
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		want, scale := autoClipped(perExampleGrads(t, net, x, y, idx), gamma)
		before := slices.Clone(net.Params)
		seed := uint64(3)
		cfg := Config{NonPrivate: true, Clipping: AutomaticClipping, AutoClipGamma: gamma, ClipNorm: 1, SamplingRate: 1, Steps: 1, LearningRate: lr, Seed: &seed}
		if _, err := Train(context.Background(), net, train, cfg, nil, nil); err != nil {
			t.Fatal(err)
		}
		var d float64
		for k := range before {
			step := float64(before[k]) - float64(net.Params[k])
			d = math.Max(d, math.Abs(step-lr*want[k]/n))
		}
		if d/(lr*scale/n) > 1e-4 {
			t.Errorf("%s: the step differs from −η·Σ g_i/(‖g_i‖ + γ)/N by %.3g relative", arch.Name, d/(lr*scale/n))
		}
	}
}

// A config's clipping is checked: automatic clipping needs a stability
// constant that is finite and at least MinAutoClipGamma and a clipping
// norm of 1 (its
// sensitivity); flat clipping takes no stability constant; an unknown rule
// is refused. Clip gives the engine's rule, and its sensitivity scales the
// noise: 1 under automatic clipping.
func TestConfigClipping(t *testing.T) {
	base := Config{NoiseMultiplier: 1, ClipNorm: 1, SamplingRate: 0.1, Steps: 1, LearningRate: 1}
	for _, c := range []struct {
		clipping Clipping
		gamma    float64
		clip     float64
		ok       bool
	}{
		{AutomaticClipping, 0.01, 1, true},
		{AutomaticClipping, 0, 1, false},
		{AutomaticClipping, MinAutoClipGamma, 1, true},
		{AutomaticClipping, MinAutoClipGamma / 2, 1, false},
		{AutomaticClipping, 1e-300, 1, false},
		{AutomaticClipping, -0.01, 1, false},
		{AutomaticClipping, math.NaN(), 1, false},
		{AutomaticClipping, math.Inf(1), 1, false},
		{AutomaticClipping, 0.01, 0.1, false},
		{FlatClipping, 0.01, 1, false},
		{FlatClipping, 0, 0.1, true},
		{Clipping(2), 0, 1, false},
	} {
		cfg := base
		cfg.Clipping, cfg.AutoClipGamma, cfg.ClipNorm = c.clipping, c.gamma, c.clip
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("%v, γ = %v, C = %v: Validate %v, want ok %v", c.clipping, c.gamma, c.clip, err, c.ok)
		}
	}
	auto := base
	auto.Clipping, auto.AutoClipGamma = AutomaticClipping, 0.02
	if got := auto.Clip(); got != AutoClip(0.02) || got.Sensitivity() != 1 || !got.Automatic() {
		t.Errorf("automatic config's rule %+v", got)
	}
	flat := base
	flat.ClipNorm = 0.1
	if got := flat.Clip(); got != FlatClip(0.1) || got.Sensitivity() != 0.1 || got.Automatic() {
		t.Errorf("flat config's rule %+v", got)
	}
	for _, name := range []string{"flat", "automatic"} {
		if c, err := ParseClipping(name); err != nil || c.String() != name {
			t.Errorf("ParseClipping(%q) = %v, %v", name, c, err)
		}
	}
	if _, err := ParseClipping("auto"); err == nil {
		t.Error("ParseClipping accepted \"auto\"")
	}
}
