package dpsgd

import (
	"math"
	"testing"

	"github.com/dptune/dptune/model"
)

// The SiLU agrees with gorgonia's batch-of-one autodiff first, after a
// convolution, after a flatten and after a linear layer.
func TestSiLUMatchesReference(t *testing.T) {
	for _, c := range []struct {
		c, h, w int
		layers  []model.LayerSpec
	}{
		{3, 6, 6, []model.LayerSpec{model.SiLU(), model.Conv2d(4, 3, 1, 0), model.SiLU(), model.Flatten(), model.SiLU(),
			model.Linear(6), model.SiLU(), model.Linear(3)}},
		{1, 7, 7, []model.LayerSpec{model.Conv2d(3, 3, 2, 1), model.SiLU(), model.AvgPool2d(2, 1), model.Flatten(), model.Linear(3)}},
	} {
		a, err := model.NewArch(model.Spec{Name: "silu", Layers: c.layers}, c.c, c.h, c.w, 3)
		if err != nil {
			t.Fatal(err)
		}
		checkAgainstReference(t, a)
	}
}

// The SiLU's forward and backward passes against its closed form:
// silu(x) = x/(1 + e⁻ˣ), and the backward pass against central differences
// of it.
func TestSiLUClosedForm(t *testing.T) {
	net, err := model.NewZero(model.Arch{Spec: model.Spec{Name: "s", Layers: []model.LayerSpec{
		model.Flatten(), model.SiLU(), model.Linear(2)}}, C: 1, H: 1, W: 5, Classes: 2})
	if err != nil {
		t.Fatal(err)
	}
	s := &siluStage{l: net.Layers[1]}
	in := []float32{-6, -1, 0, 0.5, 3}
	out, g, gIn := make([]float32, 5), []float32{1, 1, 1, 1, 1}, make([]float32, 5)
	s.forward(nil, 1, in, out)
	s.backward(nil, 1, in, out, g, gIn)
	for i, v := range in {
		x := float64(v)
		f := func(x float64) float64 { return x / (1 + math.Exp(-x)) }
		if math.Abs(float64(out[i])-f(x)) > 1e-6 {
			t.Errorf("silu(%v) = %v, want %v", x, out[i], f(x))
		}
		const h = 1e-6
		if d := (f(x+h) - f(x-h)) / (2 * h); math.Abs(float64(gIn[i])-d) > 1e-5 {
			t.Errorf("silu'(%v) = %v, central difference %v", x, gIn[i], d)
		}
	}
}
