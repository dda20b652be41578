package dpsgd

import (
	"math"
	"strings"
	"testing"

	"github.com/dptune/dptune/model"
)

// Every layer type a spec may name has engine rules.
func TestEveryLayerTypeHasRules(t *testing.T) {
	for _, typ := range model.LayerTypes() {
		if _, ok := rules[typ]; !ok {
			t.Errorf("layer type %q has no engine rules", typ)
		}
	}
}

// Registering a type twice is a programming error: it panics.
func TestRegisterTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a second registration of relu did not panic")
		}
	}()
	register("relu", rules["relu"])
}

// NewEngine names the first layer whose type has no rules.
func TestNewEngineNamesLayerWithoutRules(t *testing.T) {
	net, err := model.NewZero(model.Arch{Spec: model.Spec{Name: "s", Layers: []model.LayerSpec{
		model.Flatten(), model.Linear(4), model.SiLU(), model.Linear(2)}}, C: 1, H: 2, W: 2, Classes: 2})
	if err != nil {
		t.Fatal(err)
	}
	saved := rules["silu"]
	delete(rules, "silu")
	defer func() { rules["silu"] = saved }()
	if _, err := NewEngine(net, 1); err == nil || !strings.Contains(err.Error(), `layer silu1: the native engine has no rules for layer type "silu"`) {
		t.Fatalf("NewEngine without silu rules: %v", err)
	}
}

// An example whose gradient is not finite gets clipping factor 0 and is
// left out: the clipped sum with it equals the clipped sum without it,
// even when its activations are not finite either (a layer's product of
// scaled output gradients and inputs must not see 0·∞ = NaN), so the
// sum's sensitivity stays C — under flat and automatic clipping alike.
func TestNonFiniteExampleLeftOut(t *testing.T) {
	for _, layers := range [][]model.LayerSpec{
		{model.Conv2d(4, 3, 1, 1), model.LayerNorm(), model.SiLU(), model.Flatten(), model.LayerNorm(), model.Linear(6), model.GELU(), model.Linear(3)},
		// conv2's output is one position (the shape that once took the ghost norm).
		{model.Conv2d(4, 3, 1, 1), model.GroupNorm(2), model.Tanh(), model.Conv2d(8, 5, 1, 0), model.ReLU(), model.Flatten(), model.Linear(3)},
	} {
		a, err := model.NewArch(model.Spec{Name: "nf", Layers: layers}, 2, 5, 5, 3)
		if err != nil {
			t.Fatal(err)
		}
		net, x, y := randomData(t, a, 4, 3)
		x[2*50+7] = float32(math.Inf(1)) // example 2
		e, err := NewEngine(net, 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, clip := range []Clip{FlatClip(1), AutoClip(DefaultAutoClipGamma)} {
			with, without := make([]float32, net.NumParams()), make([]float32, net.NumParams())
			if _, err := e.ClippedSum(x, y, []int{0, 1, 2, 3}, clip, with); err != nil {
				t.Fatal(err)
			}
			if _, err := e.ClippedSum(x, y, []int{0, 1, 3}, clip, without); err != nil {
				t.Fatal(err)
			}
			if e := relErr(with, without); !(e < 1e-6) {
				t.Errorf("%v, %+v: relative difference %v with the non-finite example", a.Spec.Layers, clip, e)
			}
		}
	}
}
