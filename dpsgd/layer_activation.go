package dpsgd

import (
	"math"

	"github.com/dptune/dptune/internal/vec"
	"github.com/dptune/dptune/model"
)

// activation is an elementwise nonlinearity, applied on its own (a ReLU or
// tanh layer that follows no convolution or linear layer) or fused into
// the layer before it (biasAct).
type activation int

const (
	noActivation activation = iota
	reluActivation
	tanhActivation
)

func activationOf(k model.LayerKind) (activation, bool) {
	switch k {
	case model.ReLULayer:
		return reluActivation, true
	case model.TanhLayer:
		return tanhActivation, true
	}
	return noActivation, false
}

// biasAct adds bias (length C) to every row of z ([rows, C]) and applies
// the activation in place.
func biasAct(z, bias []float32, a activation) {
	switch a {
	case reluActivation:
		biasReLU(z, bias)
		return
	}
	C := len(bias)
	for r := 0; r+C <= len(z); r += C {
		vec.Add(z[r:r+C], bias)
	}
	if a == tanhActivation {
		vec.Tanh(z)
	}
}

// apply applies the activation to in, writing out.
func (a activation) apply(in, out []float32) {
	switch a {
	case reluActivation:
		for i, v := range in[:len(out)] {
			out[i] = max(v, 0)
		}
	case tanhActivation:
		copy(out, in)
		vec.Tanh(out)
	default:
		copy(out, in)
	}
}

// mask multiplies g by the activation's derivative, read off its output y:
// 1[y > 0] for the ReLU, 1 − y² for tanh.
func (a activation) mask(g, y []float32) {
	switch a {
	case reluActivation:
		maskReLU(g, y)
	case tanhActivation:
		vec.TanhGrad(g, y)
	}
}

// biasReLU adds bias (length C) to every row of z ([rows, C]) and applies
// the ReLU in place. Branch-free: the signs are random, and mispredicted
// branches cost more than the arithmetic.
func biasReLU(z, bias []float32) {
	C := len(bias)
	for r := 0; r+C <= len(z); r += C {
		row := z[r : r+C]
		for c, b := range bias {
			row[c] = max(row[c]+b, 0) // +0 for −0: Go's max(−0, 0) is +0
		}
	}
}

// maskReLU zeroes g where the ReLU output a is not positive (its gradient),
// branch-free: a ≥ +0 always (biasReLU), and a > 0 iff its bits are > 0.
func maskReLU(g, a []float32) {
	a = a[:len(g)]
	for i, v := range a {
		keep := uint32(-b2i(math.Float32bits(v) != 0))
		g[i] = math.Float32frombits(math.Float32bits(g[i]) & keep)
	}
}

// activationStage is a ReLU or tanh that does not follow a convolution or
// linear layer (those fuse it).
type activationStage struct {
	l   model.Layer
	act activation
}

func (s *activationStage) layer() model.Layer { return s.l }
func (s *activationStage) newBuffers(int) any { return nil }
func (s *activationStage) prepare([]float32)  {}
func (s *activationStage) exampleFloats() int { return 0 }
func (s *activationStage) forward(_ any, n int, in, out []float32) {
	s.act.apply(in[:n*s.l.InSize()], out[:n*s.l.OutSize()])
}
func (s *activationStage) backward(_ any, n int, in, out, gOut, gIn []float32) {
	if gIn == nil {
		return
	}
	m := n * s.l.OutSize()
	copy(gIn[:m], gOut[:m])
	s.act.mask(gIn[:m], out[:m])
}
