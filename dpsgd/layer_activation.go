package dpsgd

import (
	"math"

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
	case tanhActivation:
		C := len(bias)
		for r := 0; r+C <= len(z); r += C {
			row := z[r : r+C]
			for c, b := range bias {
				row[c] = tanh32(row[c] + b)
			}
		}
		return
	}
	C := len(bias)
	for r := 0; r+C <= len(z); r += C {
		row := z[r : r+C]
		for c, b := range bias {
			row[c] += b
		}
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
		for i, v := range in[:len(out)] {
			out[i] = tanh32(v)
		}
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
		y = y[:len(g)]
		for i, v := range y {
			g[i] *= 1 - v*v
		}
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

// The coefficients of tanh32's rational approximation, from Eigen's
// generic_fast_tanh_float (a 13/6 odd/even minimax fit on [−9, 9]).
const (
	tanhA1  = 4.89352455891786e-03
	tanhA3  = 6.37261928875436e-04
	tanhA5  = 1.48572235717979e-05
	tanhA7  = 5.12229709037114e-08
	tanhA9  = -8.60467152213735e-11
	tanhA11 = 2.00018790482477e-13
	tanhA13 = -2.76076847742355e-16
	tanhB0  = 4.89352518554385e-03
	tanhB2  = 2.26843463243900e-03
	tanhB4  = 1.18534705686654e-04
	tanhB6  = 1.19825839466702e-06
)

// tanh32 is tanh in float32 by a rational approximation on [−9, 9] (outside
// it tanh is ±1 in float32), within a few float32 ulps of math.Tanh
// (TestTanh32): about 15 times faster than math.Tanh, and branch-free.
func tanh32(x float32) float32 {
	x = min(max(x, -9), 9)
	x2 := x * x
	p := x2*tanhA13 + tanhA11
	p = x2*p + tanhA9
	p = x2*p + tanhA7
	p = x2*p + tanhA5
	p = x2*p + tanhA3
	p = x2*p + tanhA1
	p *= x
	q := x2*tanhB6 + tanhB4
	q = x2*q + tanhB2
	q = x2*q + tanhB0
	return p / q
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
