package dpsgd

import "github.com/dptune/dptune/internal/vec"

// tanhAct is the hyperbolic tangent; its derivative is 1 − y².
type tanhAct struct{}

func init() { registerActivation("tanh", tanhAct{}) }

func (tanhAct) biasApply(z, bias []float32) {
	addBias(z, bias)
	vec.Tanh(z)
}

func (tanhAct) apply(in, out []float32) {
	copy(out, in)
	vec.Tanh(out)
}

func (tanhAct) mask(g, y []float32) { vec.TanhGrad(g, y) }
