package model

import G "gorgonia.org/gorgonia"

// FlattenSpec turns a feature map into flat features in PyTorch's
// (channel, row, column) order, torch.nn.Flatten (x.view(B, −1)); flat
// features pass unchanged. No hyperparameters.
type FlattenSpec struct{}

// Flatten is the LayerSpec of a flatten.
func Flatten() LayerSpec { return layerOf(FlattenSpec{}) }

func init() { RegisterLayer(FlattenSpec{}) }

func (FlattenSpec) Type() string   { return "flatten" }
func (FlattenSpec) prefix() string { return "flatten" }
func (FlattenSpec) check() error   { return nil }

func (FlattenSpec) shape(in Shape, first bool) (Shape, error) {
	if in.Flat {
		return in, nil
	}
	out := Shape{C: in.C * in.H * in.W, Flat: true}
	if !first && in.C > 1 && in.H*in.W > 1 {
		out.FlatC, out.FlatHW = in.C, in.H*in.W
	}
	return out, nil
}

// node defers the reshape to the next layer that needs flat features
// (graphCtx.flat).
func (FlattenSpec) node(c *graphCtx, l Layer, h, _, _ *G.Node) *G.Node {
	c.pending = l.Out
	return h
}

// onnx writes ONNX's Flatten at axis 1: [N, C, H, W] → [N, C·H·W].
func (FlattenSpec) onnx(g *onnxGraph, l Layer, in string) (string, error) {
	return g.node("Flatten", l.Name, []string{in}, attrInt("axis", 1)), nil
}
