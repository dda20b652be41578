package model

import (
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
)

// ReLUSpec is the rectifier max(x, 0), torch.nn.ReLU, elementwise; no
// hyperparameters.
type ReLUSpec struct{}

// ReLU is the LayerSpec of a rectifier.
func ReLU() LayerSpec { return layerOf(ReLUSpec{}) }

func init() { RegisterLayer(ReLUSpec{}) }

func (ReLUSpec) Type() string                          { return "relu" }
func (ReLUSpec) prefix() string                        { return "relu" }
func (ReLUSpec) check() error                          { return nil }
func (ReLUSpec) shape(in Shape, _ bool) (Shape, error) { return in, nil }
func (ReLUSpec) role() role                            { return roleActivation }
func (ReLUSpec) random(*rand.Rand, int) (LayerSpec, bool) {
	return ReLU(), true
}

func (ReLUSpec) node(_ *graphCtx, _ Layer, h, _, _ *G.Node) *G.Node { return G.Must(G.Rectify(h)) }

// onnx writes ONNX's Relu.
func (ReLUSpec) onnx(g *onnxGraph, l Layer, in string) (string, error) {
	return g.node("Relu", l.Name, []string{in}), nil
}
