package model

import (
	"fmt"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Conv2dSpec is a 2-D convolution, torch.nn.Conv2d: Out output channels,
// a square Kernel, Stride (default 1) and zero Padding (default 0), and a
// bias per output channel. Weight [Out, In, Kernel, Kernel], bias [Out],
// both initialised from U(−1/√fan_in, 1/√fan_in), fan_in = In·Kernel².
type Conv2dSpec struct {
	Out     int `json:"out,omitempty"`
	Kernel  int `json:"kernel,omitempty"`
	Stride  int `json:"stride,omitempty"`
	Padding int `json:"padding,omitempty"`
}

// Conv2d is the LayerSpec of a convolution.
func Conv2d(out, kernel, stride, padding int) LayerSpec {
	return layerOf(Conv2dSpec{Out: out, Kernel: kernel, Stride: stride, Padding: padding})
}

func init() { RegisterLayer(Conv2dSpec{}) }

func (Conv2dSpec) Type() string   { return "conv2d" }
func (Conv2dSpec) prefix() string { return "conv" }

// Step is the stride, with PyTorch's default of 1.
func (p Conv2dSpec) Step() int {
	if p.Stride > 0 {
		return p.Stride
	}
	return 1
}

// FanIn is the inputs of one output unit on in channels: in·Kernel².
func (p Conv2dSpec) FanIn(in int) int { return in * p.Kernel * p.Kernel }

func (p Conv2dSpec) check() error {
	return firstError(inRange("out", p.Out, 1, MaxWidth), inRange("kernel", p.Kernel, 1, MaxKernel),
		inRange("stride", p.Stride, 0, MaxKernel), inRange("padding", p.Padding, 0, MaxKernel))
}

func (p Conv2dSpec) shape(in Shape, _ bool) (Shape, error) {
	out, err := window(in, p.Kernel, p.Step(), p.Padding)
	if err != nil {
		return Shape{}, err
	}
	if P := out.H * out.W; int64(P)*int64(p.FanIn(in.C)) > MaxActivation {
		return Shape{}, fmt.Errorf("its unfolded input, %d positions × %d, is over %d floats per example", P, p.FanIn(in.C), MaxActivation)
	}
	out.C = p.Out
	return out, nil
}

func (p Conv2dSpec) params(l Layer) (weight, bias []int) {
	return []int{p.Out, l.In, p.Kernel, p.Kernel}, []int{p.Out}
}

func (p Conv2dSpec) init(l Layer, w, b []float32, rng *rand.Rand) {
	uniformInit(w, b, p.FanIn(l.In), rng)
}

func (p Conv2dSpec) macs(l Layer) int { return l.Positions() * p.FanIn(l.In) * p.Out }

func (p Conv2dSpec) node(_ *graphCtx, l Layer, h, w, b *G.Node) *G.Node {
	k, s := p.Kernel, p.Step()
	c := G.Must(G.Conv2d(h, w, tensor.Shape{k, k}, []int{p.Padding, p.Padding}, []int{s, s}, nil))
	return G.Must(G.BroadcastAdd(c, G.Must(G.Reshape(b, tensor.Shape{1, l.Out, 1, 1})), nil, []byte{0, 2, 3}))
}

// onnx writes the convolution as ONNX's Conv (weight [out, in, k, k]).
func (p Conv2dSpec) onnx(g *onnxGraph, l Layer, in string) (string, error) {
	w, b := g.param(l)
	return g.node("Conv", l.Name, []string{in, w, b}, attrInts("kernel_shape", p.Kernel, p.Kernel),
		attrInts("strides", p.Step(), p.Step()), attrInts("pads", p.Padding, p.Padding, p.Padding, p.Padding)), nil
}
