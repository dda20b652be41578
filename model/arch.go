package model

import "fmt"

// Arch names an input shape for the CNN: channels, height, width and classes.
type Arch struct {
	Name    string `json:"name"`
	C       int    `json:"channels"`
	H       int    `json:"height"`
	W       int    `json:"width"`
	Classes int    `json:"classes"`
}

// The two architectures dptune ships.
var (
	MNIST   = Arch{Name: "mnist-cnn", C: 1, H: 28, W: 28, Classes: 10}
	CIFAR10 = Arch{Name: "cifar10-cnn", C: 3, H: 32, W: 32, Classes: 10}
)

// ArchByName returns the architecture called name ("mnist-cnn" or "cifar10-cnn").
func ArchByName(name string) (Arch, error) {
	for _, a := range []Arch{MNIST, CIFAR10} {
		if a.Name == name {
			return a, nil
		}
	}
	return Arch{}, fmt.Errorf("unknown architecture %q (want mnist-cnn or cifar10-cnn)", name)
}

// LayerKind is the kind of a layer with parameters.
type LayerKind int

const (
	ConvLayer LayerKind = iota
	LinearLayer
)

// Layer describes one layer with parameters: its geometry and where its
// weight and bias sit in Net.Params.
type Layer struct {
	Name string
	Kind LayerKind
	// In, Out: input and output channels (conv) or features (linear).
	In, Out int
	// Conv geometry: square kernel, stride, zero padding; input and output
	// spatial sizes. For a linear layer Kernel = InH = InW = OutH = OutW = 1.
	Kernel, Stride, Pad      int
	InH, InW, OutH, OutW     int
	WeightOffset, BiasOffset int
}

// FanIn is the number of inputs of one output unit: In·Kernel².
func (l Layer) FanIn() int { return l.In * l.Kernel * l.Kernel }

// WeightSize is the number of weights: Out·FanIn.
func (l Layer) WeightSize() int { return l.Out * l.FanIn() }

// Positions is the number of output positions per example: OutH·OutW.
func (l Layer) Positions() int { return l.OutH * l.OutW }

// Tensor is one named parameter tensor inside the flat parameter vector.
type Tensor struct {
	Name   string `json:"name"`
	Shape  []int  `json:"shape"`
	Offset int    `json:"offset"`
}

// Size is the number of elements of the tensor.
func (t Tensor) Size() int {
	n := 1
	for _, s := range t.Shape {
		n *= s
	}
	return n
}

// convOut is PyTorch's output size of a convolution or pooling:
// ⌊(n + 2·pad − kernel) / stride⌋ + 1.
func convOut(n, kernel, stride, pad int) int { return (n+2*pad-kernel)/stride + 1 }

// Layers returns the four layers with parameters of the CNN for a, and the
// parameter tensors in PyTorch's named_parameters order. It returns an error
// if the input is too small for the network.
func (a Arch) Layers() ([]Layer, []Tensor, error) {
	if a.C <= 0 || a.Classes < 2 {
		return nil, nil, fmt.Errorf("architecture %s: %d channels, %d classes", a.Name, a.C, a.Classes)
	}
	var layers []Layer
	h, w := a.H, a.W
	conv := func(name string, in, out, k, s, p int) {
		l := Layer{Name: name, Kind: ConvLayer, In: in, Out: out, Kernel: k, Stride: s, Pad: p, InH: h, InW: w}
		l.OutH, l.OutW = convOut(h, k, s, p), convOut(w, k, s, p)
		layers = append(layers, l)
		// ReLU, then max-pool 2×2 stride 1.
		h, w = convOut(l.OutH, 2, 1, 0), convOut(l.OutW, 2, 1, 0)
	}
	conv("conv1", a.C, 16, 8, 2, 3)
	conv("conv2", 16, 32, 4, 2, 0)
	if h < 1 || w < 1 {
		return nil, nil, fmt.Errorf("architecture %s: %d×%d input is too small for the CNN", a.Name, a.H, a.W)
	}
	flat := 32 * h * w
	linear := func(name string, in, out int) {
		layers = append(layers, Layer{Name: name, Kind: LinearLayer, In: in, Out: out,
			Kernel: 1, Stride: 1, InH: 1, InW: 1, OutH: 1, OutW: 1})
	}
	linear("fc1", flat, 32)
	linear("fc2", 32, a.Classes)
	var tensors []Tensor
	off := 0
	for i := range layers {
		l := &layers[i]
		wshape := []int{l.Out, l.In, l.Kernel, l.Kernel}
		if l.Kind == LinearLayer {
			wshape = []int{l.Out, l.In}
		}
		l.WeightOffset = off
		tensors = append(tensors, Tensor{Name: l.Name + ".weight", Shape: wshape, Offset: off})
		off += l.WeightSize()
		l.BiasOffset = off
		tensors = append(tensors, Tensor{Name: l.Name + ".bias", Shape: []int{l.Out}, Offset: off})
		off += l.Out
	}
	return layers, tensors, nil
}
