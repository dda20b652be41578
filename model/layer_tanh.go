package model

import (
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
)

// TanhSpec is the hyperbolic tangent, torch.nn.Tanh, elementwise; no
// hyperparameters.
type TanhSpec struct{}

// Tanh is the LayerSpec of a hyperbolic tangent.
func Tanh() LayerSpec { return layerOf(TanhSpec{}) }

func init() { RegisterLayer(TanhSpec{}) }

func (TanhSpec) Type() string                          { return "tanh" }
func (TanhSpec) prefix() string                        { return "tanh" }
func (TanhSpec) check() error                          { return nil }
func (TanhSpec) shape(in Shape, _ bool) (Shape, error) { return in, nil }
func (TanhSpec) role() role                            { return roleActivation }
func (TanhSpec) random(*rand.Rand, int) (LayerSpec, bool) {
	return Tanh(), true
}

func (TanhSpec) node(_ *graphCtx, _ Layer, h, _, _ *G.Node) *G.Node { return G.Must(G.Tanh(h)) }

// onnx writes ONNX's Tanh.
func (TanhSpec) onnx(g *onnxGraph, l Layer, in string) (string, error) {
	return g.node("Tanh", l.Name, []string{in}), nil
}
