package model

import (
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
)

// SiLUSpec is the sigmoid-weighted linear unit x·σ(x), σ(x) = 1/(1 + e⁻ˣ),
// torch.nn.SiLU (Elfwing, Uchibe & Doya 2018; "swish" with β = 1 in
// Ramachandran et al. 2017), elementwise; no hyperparameters.
type SiLUSpec struct{}

// SiLU is the LayerSpec of a SiLU.
func SiLU() LayerSpec { return layerOf(SiLUSpec{}) }

func init() { RegisterLayer(SiLUSpec{}) }

func (SiLUSpec) Type() string                          { return "silu" }
func (SiLUSpec) prefix() string                        { return "silu" }
func (SiLUSpec) check() error                          { return nil }
func (SiLUSpec) shape(in Shape, _ bool) (Shape, error) { return in, nil }
func (SiLUSpec) role() role                            { return roleActivation }
func (SiLUSpec) random(*rand.Rand, int) (LayerSpec, bool) {
	return SiLU(), true
}

func (SiLUSpec) node(_ *graphCtx, _ Layer, h, _, _ *G.Node) *G.Node {
	return G.Must(G.HadamardProd(h, G.Must(G.Sigmoid(h))))
}

// onnx writes x·σ(x) as ONNX's Sigmoid and Mul.
func (SiLUSpec) onnx(g *onnxGraph, l Layer, in string) (string, error) {
	s := g.node("Sigmoid", l.Name+"_sigmoid", []string{in})
	return g.node("Mul", l.Name, []string{in, s}), nil
}
