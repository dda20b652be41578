package dpsgd

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dptune/dptune/model"
)

// cancellingConv is a network and one example whose convolution gradient
// cancels across positions (review 45, H1): conv 64×3×3 without padding
// on a constant 64×hw×hw input (hw = 4: 4 output positions, the shape
// that once took the ghost norm, P²·(Out + K) < Out·K), flattened into a
// linear layer whose weights alternate sign across positions, so that
// Σ_t g_t ≈ 0 while each g_t is large: the per-position terms of
// ‖Σ_t g_t a_tᵀ‖² cancel to η of their size. c is the input's value, us
// the linear weights' scale.
func cancellingConv(t *testing.T, hw int, c float32, us, eta float64) (*model.Net, []float32, []uint8) {
	t.Helper()
	const C, O = 64, 64
	arch, err := model.NewArch(model.Spec{Name: "cancel", Layers: []model.LayerSpec{model.Conv2d(O, 3, 1, 0), model.Flatten(), model.Linear(2)}}, C, hw, hw, 2)
	if err != nil {
		t.Fatal(err)
	}
	net, err := model.New(arch, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	K, P := C*9, (hw-2)*(hw-2)
	linW := O*K + O // the linear layer's weight [2, O·P], after the conv's weight and bias
	linB := linW + 2*O*P
	rng := rand.New(rand.NewPCG(3, 4))
	clear(net.Params)
	s := make([]float64, P)
	var tot float64
	for i := range s {
		s[i] = 1 - 2*float64(i%2)
		tot += s[i]
	}
	s[P-1] += eta - tot // Σ_t s_t = η
	for o := 0; o < O; o++ {
		u := rng.NormFloat64()
		for i := 0; i < P; i++ {
			net.Params[linW+o*P+i] = float32(s[i] * u * us)
		}
	}
	net.Params[linB] = 3
	x := make([]float32, C*hw*hw)
	for i := range x {
		x[i] = c
	}
	return net, x, []uint8{0}
}

// One example's clipped contribution (ClippedSum on a batch of one, no
// noise) has norm at most C under flat clipping and below 1 under
// automatic clipping, even when its convolution gradient cancels across
// positions so that a norm computed from per-position terms (the ghost
// norm's Gram matrices) loses all its digits: the factor must come from
// the norm of the vector actually added. Review 45's reproduction added
// norm 90 at C = 1 and 1171 under automatic clipping.
func TestCancellingConvClippedNormBounded(t *testing.T) {
	for _, hw := range []int{4, 8} { // 4 output positions (ghost-shaped), 36
		for _, c := range []struct {
			c       float32
			us, eta float64
		}{{1000, 1000, 1e-5}, {100, 1000, 1e-5}, {10, 10, 1e-3}} {
			net, x, y := cancellingConv(t, hw, c.c, c.us, c.eta)
			e, err := NewEngine(net, 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, clip := range []Clip{FlatClip(1), FlatClip(0.1), AutoClip(DefaultAutoClipGamma), AutoClip(MinAutoClipGamma)} {
				got := make([]float32, net.NumParams())
				if _, err := e.ClippedSum(x, y, []int{0}, clip, got); err != nil {
					t.Fatal(err)
				}
				n := math.Sqrt(sq(got))
				bound, ok := clip.Norm*(1+1e-6), false
				if clip.Automatic() {
					ok = n < 1
				} else {
					ok = n <= bound
				}
				if !ok || n == 0 {
					t.Errorf("%d×%d input, c = %g, us = %g, η = %g, %+v: one example's clipped contribution has norm %.6g", hw, hw, c.c, c.us, c.eta, clip, n)
				}
			}
		}
	}
}

// Automatic clipping's factor is finite for every finite norm, a zero
// one included, at every γ (review 45, M1: γ = 10⁻³⁰⁰ gave +Inf, and a
// zero-gradient example turned the batch's sum into NaN); the stability
// constant has a floor, MinAutoClipGamma, below which the config, the
// engine's rule and CheckAutoClipGamma refuse it; and at the floor a
// batch with a zero-gradient example sums to the same finite values as
// the batch without it.
func TestAutoClipZeroGradientFinite(t *testing.T) {
	for _, gamma := range []float64{MinAutoClipGamma, DefaultAutoClipGamma, 1e-30, 1e-300, math.SmallestNonzeroFloat64} {
		for _, norm := range []float64{0, math.SmallestNonzeroFloat64, 1e-300, 1e-40, 1e-6} {
			f := AutoClipFactor(norm, gamma)
			if math.IsInf(float64(f), 0) || math.IsNaN(float64(f)) || !(f > 0) || !(float64(f)*norm < 1) {
				t.Errorf("AutoClipFactor(%v, %v) = %v: want finite, positive, with f·‖g‖ < 1", norm, gamma, f)
			}
		}
	}
	if f := AutoClipFactor(0, MinAutoClipGamma); float64(f) > 1/MinAutoClipGamma {
		t.Errorf("AutoClipFactor(0, %v) = %v, above 1/γ", MinAutoClipGamma, f)
	}
	for _, gamma := range []float64{MinAutoClipGamma / 2, 1e-30, 1e-300} {
		if CheckAutoClipGamma(gamma) == nil {
			t.Errorf("CheckAutoClipGamma(%v) = nil, want an error (below the floor %v)", gamma, MinAutoClipGamma)
		}
	}
	if err := CheckAutoClipGamma(MinAutoClipGamma); err != nil {
		t.Errorf("CheckAutoClipGamma(%v): %v", MinAutoClipGamma, err)
	}

	// Example 0 has a zero input and a saturated softmax on its label:
	// its gradient is exactly 0. Example 1 is ordinary.
	arch, err := model.NewArch(model.Spec{Name: "zero", Layers: []model.LayerSpec{model.Flatten(), model.Linear(3)}}, 1, 2, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	net, err := model.New(arch, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	clear(net.Params)
	net.Params[12] = 200 // class 0's bias: the softmax is one-hot exactly
	x := []float32{0, 0, 0, 0, 0.3, -1.2, 0.7, 2.0}
	y := []uint8{0, 1}
	e, err := NewEngine(net, 2)
	if err != nil {
		t.Fatal(err)
	}
	alone, both := make([]float32, net.NumParams()), make([]float32, net.NumParams())
	if _, err := e.ClippedSum(x, y, []int{1}, AutoClip(MinAutoClipGamma), alone); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ClippedSum(x, y, []int{0, 1}, AutoClip(MinAutoClipGamma), both); err != nil {
		t.Fatal(err)
	}
	for k := range both {
		if math.IsNaN(float64(both[k])) || math.IsInf(float64(both[k]), 0) || both[k] != alone[k] {
			t.Fatalf("γ = %v: the sum with the zero-gradient example is %v, without it %v", MinAutoClipGamma, both, alone)
		}
	}
	if sq(alone) == 0 {
		t.Fatal("the ordinary example's clipped gradient is 0: the test checks nothing")
	}
	if _, err := e.ClippedSum(x, y, []int{0, 1}, AutoClip(1e-300), both); err == nil {
		t.Error("ClippedSum under AutoClip(1e-300): no error, want γ refused below the floor")
	}
}
