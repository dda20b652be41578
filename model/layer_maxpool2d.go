package model

import (
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MaxPool2dSpec is max-pooling, torch.nn.MaxPool2d: a square Kernel and
// Stride (default Kernel, as in PyTorch), no padding; each channel on its
// own. No parameters.
type MaxPool2dSpec struct {
	Kernel int `json:"kernel,omitempty"`
	Stride int `json:"stride,omitempty"`
}

// MaxPool2d is the LayerSpec of a max-pooling.
func MaxPool2d(kernel, stride int) LayerSpec {
	return layerOf(MaxPool2dSpec{Kernel: kernel, Stride: stride})
}

func init() { RegisterLayer(MaxPool2dSpec{}) }

func (MaxPool2dSpec) Type() string   { return "maxpool2d" }
func (MaxPool2dSpec) prefix() string { return "maxpool" }
func (MaxPool2dSpec) role() role     { return rolePool }

// Step is the stride, with PyTorch's default of the kernel size.
func (p MaxPool2dSpec) Step() int {
	if p.Stride > 0 {
		return p.Stride
	}
	return p.Kernel
}

func (p MaxPool2dSpec) check() error {
	return firstError(inRange("kernel", p.Kernel, 1, MaxKernel), inRange("stride", p.Stride, 0, MaxKernel))
}

func (p MaxPool2dSpec) shape(in Shape, _ bool) (Shape, error) {
	return window(in, p.Kernel, p.Step(), 0)
}

func (MaxPool2dSpec) random(rng *rand.Rand, _ int) (LayerSpec, bool) {
	k := 1 + rng.IntN(3)
	return MaxPool2d(k, 1+rng.IntN(k)), true
}

func (p MaxPool2dSpec) node(_ *graphCtx, _ Layer, h, _, _ *G.Node) *G.Node {
	k, s := p.Kernel, p.Step()
	return G.Must(G.MaxPool2D(h, tensor.Shape{k, k}, []int{0, 0}, []int{s, s}))
}

// onnx writes ONNX's MaxPool (no padding, floor).
func (p MaxPool2dSpec) onnx(g *onnxGraph, l Layer, in string) (string, error) {
	return g.node("MaxPool", l.Name, []string{in}, attrInts("kernel_shape", p.Kernel, p.Kernel), attrInts("strides", p.Step(), p.Step())), nil
}
