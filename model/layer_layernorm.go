package model

import (
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LayerNormSpec is layer normalisation over all of an example's features,
// torch.nn.LayerNorm(input.shape[1:]) (Ba, Kiros & Hinton 2016, "Layer
// Normalization"): each example's C·H·W values (or F flat features) are
// normalised by their own mean μ and biased variance σ²,
// x̂ = (x − μ)/√(σ² + ε) with ε = LayerNormEpsilon, then scaled and
// shifted elementwise: y = γ⊙x̂ + β. γ (weight, initialised to 1) and β
// (bias, 0) have the input's shape, [C, H, W] or [F], and are trained by
// DP-SGD like any weight. No statistic crosses examples, so each example's
// gradient is its own and DP-SGD's analysis holds. No hyperparameters.
type LayerNormSpec struct{}

// LayerNorm is the LayerSpec of a layer norm.
func LayerNorm() LayerSpec { return layerOf(LayerNormSpec{}) }

// LayerNormEpsilon is the ε added to the variance by a layer norm, PyTorch's.
const LayerNormEpsilon = 1e-5

func init() { RegisterLayer(LayerNormSpec{}) }

func (LayerNormSpec) Type() string                          { return "layernorm" }
func (LayerNormSpec) prefix() string                        { return "ln" }
func (LayerNormSpec) role() role                            { return roleNorm }
func (LayerNormSpec) check() error                          { return nil }
func (LayerNormSpec) shape(in Shape, _ bool) (Shape, error) { return in, nil }

func (LayerNormSpec) params(l Layer) (weight, bias []int) {
	if l.Flat {
		return []int{l.In}, []int{l.In}
	}
	return []int{l.In, l.InH, l.InW}, []int{l.In, l.InH, l.InW}
}

func (LayerNormSpec) init(_ Layer, w, b []float32, _ *rand.Rand) {
	for i := range w {
		w[i], b[i] = 1, 0
	}
}

// random needs at least 4 channels or features (so at least 4 values):
// with fewer the normalisation is ill-conditioned, and float32 rounding
// alone moves its input gradient by more than the 10⁻⁵ dpsgd's engine is
// held to.
func (LayerNormSpec) random(_ *rand.Rand, c int) (LayerSpec, bool) { return LayerNorm(), c >= 4 }

// node normalises the rows of h reshaped to [B, M], M = C·H·W in
// PyTorch's (channel, row, column) order (graphCtx.standardize), scales
// and shifts them, broadcast by a product with a constant vector of ones,
// and returns h's shape.
func (LayerNormSpec) node(c *graphCtx, l Layer, h, w, b *G.Node) *G.Node {
	B, M := c.B, l.InSize()
	xhat := c.standardize(l.Name, G.Must(G.Reshape(h, tensor.Shape{B, M})), M, LayerNormEpsilon)
	rows := func(v *G.Node) *G.Node { // [M] spread over the batch: [B, M]
		return G.Must(G.Mul(c.constant(l.Name+".batch", B, 1, 1), G.Must(G.Reshape(v, tensor.Shape{1, M}))))
	}
	out := G.Must(G.Add(G.Must(G.HadamardProd(xhat, rows(w))), rows(b)))
	return G.Must(G.Reshape(out, h.Shape().Clone()))
}

// onnx writes ONNX's LayerNormalization over every axis after the batch
// (γ and β of the input's shape).
func (LayerNormSpec) onnx(g *onnxGraph, l Layer, in string) (string, error) {
	w, b := g.param(l)
	return g.node("LayerNormalization", l.Name, []string{in, w, b}, attrInt("axis", 1), attrFloat("epsilon", LayerNormEpsilon)), nil
}
