package dpsgd

import (
	"github.com/dptune/dptune/internal/vec"
	"github.com/dptune/dptune/model"
)

// activation is an elementwise nonlinearity whose derivative can be read
// off its output, so that the matrix-product layer before it can
// apply it in place (fused) and keep no pre-activation copy. A kind
// registers one with registerActivation; it then also runs on its own
// (activationStage) where no such layer precedes it.
type activation interface {
	// biasApply adds bias (length C) to every row of z ([rows, C]) and
	// applies the activation in place.
	biasApply(z, bias []float32)
	// apply writes the activation of in to out.
	apply(in, out []float32)
	// mask multiplies g by the activation's derivative, read off its
	// output y.
	mask(g, y []float32)
}

var activations = map[string]activation{}

// registerActivation registers a as the activation of layer type typ, and
// the rule of a layer of that type on its own.
func registerActivation(typ string, a activation) {
	register(typ, rule{build: func(ls []model.Layer, _ bool) (stage, int) {
		return &activationStage{l: ls[0], act: a}, 1
	}})
	activations[typ] = a
}

// fused returns the activation after ls[0], if ls[1] is one, and the
// number of layers the stage of ls[0] then takes.
func fused(ls []model.Layer) (activation, int) {
	if len(ls) > 1 {
		if a, ok := activations[ls[1].Kind.Type()]; ok {
			return a, 2
		}
	}
	return nil, 1
}

// biasAct adds bias (length C) to every row of z ([rows, C]) and applies
// a (none if nil) in place.
func biasAct(z, bias []float32, a activation) {
	if a != nil {
		a.biasApply(z, bias)
		return
	}
	addBias(z, bias)
}

// addBias adds bias (length C) to every row of z ([rows, C]).
func addBias(z, bias []float32) {
	C := len(bias)
	for r := 0; r+C <= len(z); r += C {
		vec.Add(z[r:r+C], bias)
	}
}

// maskAct multiplies g by a's derivative read off y (nothing if a is nil).
func maskAct(a activation, g, y []float32) {
	if a != nil {
		a.mask(g, y)
	}
}

// activationStage is an activation that follows no layer that fuses it.
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
