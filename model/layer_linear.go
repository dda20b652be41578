package model

import (
	"fmt"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LinearSpec is a fully connected layer, torch.nn.Linear: Out output
// features from a flat input (a flatten after any feature map). Weight
// [Out, In], bias [Out], both initialised from U(−1/√In, 1/√In).
type LinearSpec struct {
	Out int `json:"out,omitempty"`
}

// Linear is the LayerSpec of a linear layer.
func Linear(out int) LayerSpec { return layerOf(LinearSpec{Out: out}) }

func init() { RegisterLayer(LinearSpec{}) }

func (LinearSpec) Type() string   { return "linear" }
func (LinearSpec) prefix() string { return "fc" }

func (p LinearSpec) check() error { return inRange("out", p.Out, 1, MaxWidth) }

func (p LinearSpec) shape(in Shape, _ bool) (Shape, error) {
	if !in.Flat {
		return Shape{}, fmt.Errorf("needs flat features, but its input is a %d×%d×%d feature map: add a flatten layer before it", in.C, in.H, in.W)
	}
	return Shape{C: p.Out, Flat: true}, nil
}

func (p LinearSpec) params(l Layer) (weight, bias []int) { return []int{p.Out, l.In}, []int{p.Out} }

func (p LinearSpec) init(l Layer, w, b []float32, rng *rand.Rand) { uniformInit(w, b, l.In, rng) }

func (p LinearSpec) macs(l Layer) int { return l.In * p.Out }

func (p LinearSpec) node(c *graphCtx, l Layer, h, w, b *G.Node) *G.Node {
	z := G.Must(G.Mul(c.flat(h), G.Must(G.Transpose(w))))
	return G.Must(G.BroadcastAdd(z, G.Must(G.Reshape(b, tensor.Shape{1, l.Out})), nil, []byte{0}))
}

// onnx writes the linear layer as ONNX's Gemm, x·Wᵀ + b (weight [out, in]).
func (LinearSpec) onnx(g *onnxGraph, l Layer, in string) (string, error) {
	w, b := g.param(l)
	return g.node("Gemm", l.Name, []string{in, w, b}, attrInt("transB", 1)), nil
}
