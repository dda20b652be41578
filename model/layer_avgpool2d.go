package model

import (
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// AvgPool2dSpec is average pooling, torch.nn.AvgPool2d: a square Kernel
// and Stride (default Kernel, as in PyTorch), no padding; each channel on
// its own. No parameters.
type AvgPool2dSpec struct {
	Kernel int `json:"kernel,omitempty"`
	Stride int `json:"stride,omitempty"`
}

// AvgPool2d is the LayerSpec of an average pooling.
func AvgPool2d(kernel, stride int) LayerSpec {
	return layerOf(AvgPool2dSpec{Kernel: kernel, Stride: stride})
}

func init() { RegisterLayer(AvgPool2dSpec{}) }

func (AvgPool2dSpec) Type() string   { return "avgpool2d" }
func (AvgPool2dSpec) prefix() string { return "avgpool" }
func (AvgPool2dSpec) role() role     { return rolePool }

// Step is the stride, with PyTorch's default of the kernel size.
func (p AvgPool2dSpec) Step() int {
	if p.Stride > 0 {
		return p.Stride
	}
	return p.Kernel
}

func (p AvgPool2dSpec) check() error {
	return firstError(inRange("kernel", p.Kernel, 1, MaxKernel), inRange("stride", p.Stride, 0, MaxKernel))
}

func (p AvgPool2dSpec) shape(in Shape, _ bool) (Shape, error) {
	return window(in, p.Kernel, p.Step(), 0)
}

func (AvgPool2dSpec) random(rng *rand.Rand, _ int) (LayerSpec, bool) {
	k := 1 + rng.IntN(3)
	return AvgPool2d(k, 1+rng.IntN(k)), true
}

// node convolves every channel, on its own, with a constant k×k kernel of
// 1/k² (gorgonia v0.9 has no average pooling).
func (p AvgPool2dSpec) node(c *graphCtx, l Layer, h, _, _ *G.Node) *G.Node {
	k, s := p.Kernel, p.Step()
	one := make([]float32, k*k)
	for i := range one {
		one[i] = 1 / float32(k*k)
	}
	filter := G.NewTensor(c.g, tensor.Float32, 4, G.WithShape(1, 1, k, k), G.WithName(l.Name+".kernel"),
		G.WithValue(tensor.New(tensor.WithShape(1, 1, k, k), tensor.WithBacking(one))))
	planes := G.Must(G.Reshape(h, tensor.Shape{c.B * l.In, 1, l.InH, l.InW}))
	out := G.Must(G.Conv2d(planes, filter, tensor.Shape{k, k}, []int{0, 0}, []int{s, s}, nil))
	return G.Must(G.Reshape(out, tensor.Shape{c.B, l.Out, l.OutH, l.OutW}))
}

// onnx writes ONNX's AveragePool (no padding, floor).
func (p AvgPool2dSpec) onnx(g *onnxGraph, l Layer, in string) (string, error) {
	return g.node("AveragePool", l.Name, []string{in}, attrInts("kernel_shape", p.Kernel, p.Kernel), attrInts("strides", p.Step(), p.Step())), nil
}
