package dpsgd

import (
	"math"
	"testing"

	"github.com/dptune/dptune/model"
)

// The GELU agrees with gorgonia's batch-of-one autodiff first, after a
// convolution, after a flatten and after a linear layer.
func TestGELUMatchesReference(t *testing.T) {
	for _, c := range []struct {
		c, h, w int
		layers  []model.LayerSpec
	}{
		{3, 6, 6, []model.LayerSpec{model.GELU(), model.Conv2d(4, 3, 1, 0), model.GELU(), model.Flatten(), model.GELU(),
			model.Linear(6), model.GELU(), model.Linear(3)}},
		{1, 7, 7, []model.LayerSpec{model.Conv2d(3, 3, 2, 1), model.GELU(), model.LayerNorm(), model.Flatten(), model.Linear(3)}},
	} {
		a, err := model.NewArch(model.Spec{Name: "gelu", Layers: c.layers}, c.c, c.h, c.w, 3)
		if err != nil {
			t.Fatal(err)
		}
		checkAgainstReference(t, a)
	}
}

// The GELU's forward pass against values of x·Φ(x) from the normal CDF
// (Φ(1) = 0.8413447460685429, Φ(−2) = 0.022750131948179195), and its
// backward pass against central differences of the forward pass.
func TestGELUClosedForm(t *testing.T) {
	net, err := model.NewZero(model.Arch{Spec: model.Spec{Name: "g", Layers: []model.LayerSpec{
		model.Flatten(), model.GELU(), model.Linear(2)}}, C: 1, H: 1, W: 4, Classes: 2})
	if err != nil {
		t.Fatal(err)
	}
	s := &geluStage{l: net.Layers[1]}
	in := []float32{-2, 0, 1, 0.3}
	out, g, gIn := make([]float32, 4), []float32{1, 1, 1, 1}, make([]float32, 4)
	s.forward(nil, 1, in, out)
	s.backward(nil, 1, in, out, g, gIn)
	for i, want := range []float64{-2 * 0.022750131948179195, 0, 0.8413447460685429} {
		if math.Abs(float64(out[i])-want) > 1e-6 {
			t.Errorf("gelu(%v) = %v, want %v", in[i], out[i], want)
		}
	}
	f := func(x float64) float64 {
		xs, y := []float32{float32(x), 0, 0, 0}, make([]float32, 4)
		s.forward(nil, 1, xs, y)
		return float64(y[0])
	}
	for i, v := range in {
		const h = 1e-2 // float32 forward: a wide step, and a second-order-accurate difference
		x := float64(v)
		if d := (f(x+h) - f(x-h)) / (2 * h); math.Abs(float64(gIn[i])-d) > 1e-4 {
			t.Errorf("gelu'(%v) = %v, central difference %v", x, gIn[i], d)
		}
	}
}
