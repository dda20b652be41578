package model

import (
	"fmt"
	"slices"
)

// Arch is a network on an input: a Spec (its name and layers) and the
// input's channels, height and width, and the number of classes.
//
// It serialises as {"name", "layers", "channels", "height", "width",
// "classes"}; a checkpoint written before specs existed has no "layers" and
// the name "mnist-cnn" or "cifar10-cnn", which Resolve maps to the
// opacus-mnist and opacus-cifar10 specs.
type Arch struct {
	Spec
	C       int `json:"channels"`
	H       int `json:"height"`
	W       int `json:"width"`
	Classes int `json:"classes"`
}

// The default networks on MNIST's and CIFAR-10's inputs.
var (
	MNIST   = Arch{Spec: OpacusMNIST, C: 1, H: 28, W: 28, Classes: 10}
	CIFAR10 = Arch{Spec: OpacusCIFAR10, C: 3, H: 32, W: 32, Classes: 10}
)

// NewArch returns spec on a c×h×w input with the given classes, or an
// error naming the first layer whose shape does not work on that input.
func NewArch(spec Spec, c, h, w, classes int) (Arch, error) {
	a := Arch{Spec: spec, C: c, H: h, W: w, Classes: classes}
	_, _, err := a.Layers()
	return a, err
}

// Resolve fills in the layers of an Arch read from an old checkpoint (no
// layers, a legacy name) and checks the result.
func (a Arch) Resolve() (Arch, error) {
	if len(a.Spec.Layers) == 0 {
		s, ok := legacyNames[a.Name]
		if !ok {
			return Arch{}, fmt.Errorf("model: network %q has no layers", a.Name)
		}
		a.Spec = s
	}
	_, _, err := a.Layers()
	return a, err
}

// Equal reports whether a and b are the same network on the same input.
func (a Arch) Equal(b Arch) bool {
	return a.Name == b.Name && a.C == b.C && a.H == b.H && a.W == b.W && a.Classes == b.Classes &&
		slices.Equal(a.Spec.Layers, b.Spec.Layers)
}

// SameInput reports whether a and b read the same inputs and classes.
func (a Arch) SameInput(b Arch) bool {
	return a.C == b.C && a.H == b.H && a.W == b.W && a.Classes == b.Classes
}

// LayerKind is the kind of a layer.
type LayerKind int

const (
	ConvLayer LayerKind = iota
	LinearLayer
	GroupNormLayer
	ReLULayer
	TanhLayer
	MaxPoolLayer
	AvgPoolLayer
	FlattenLayer
)

var kindNames = map[string]LayerKind{TypeConv2d: ConvLayer, TypeLinear: LinearLayer, TypeGroupNorm: GroupNormLayer,
	TypeReLU: ReLULayer, TypeTanh: TanhLayer, TypeMaxPool2d: MaxPoolLayer, TypeAvgPool2d: AvgPoolLayer, TypeFlatten: FlattenLayer}

// prefixes name the layers of each kind: conv1, conv2, …, fc1, …
var prefixes = map[LayerKind]string{ConvLayer: "conv", LinearLayer: "fc", GroupNormLayer: "gn", ReLULayer: "relu",
	TanhLayer: "tanh", MaxPoolLayer: "maxpool", AvgPoolLayer: "avgpool", FlattenLayer: "flatten"}

// GroupNormEpsilon is the ε added to the variance by a group norm, PyTorch's.
const GroupNormEpsilon = 1e-5

// Layer is one layer of an Arch with its shapes inferred: its kind,
// geometry and, for a layer with parameters, where its weight and bias sit
// in Net.Params.
type Layer struct {
	Name string // conv1, fc2, gn1, tanh3, maxpool1, flatten1, …
	Kind LayerKind
	// In, Out: input and output channels (convolution, pooling, group
	// norm, activation: In = Out for all but the convolution) or features
	// (linear, or any layer on a flat input).
	In, Out int
	// Kernel, Stride, Pad: convolution and pooling geometry (square).
	// Linear: Kernel = Stride = 1.
	Kernel, Stride, Pad int
	// Groups of a group norm.
	Groups int
	// InH, InW, OutH, OutW: spatial sizes; 1 on a flat input.
	InH, InW, OutH, OutW int
	// Flat: the input is a feature vector (after a flatten or linear
	// layer).
	Flat bool
	// FlatC, FlatHW: for a linear layer whose input is the flatten of a
	// feature map computed inside the network (not the network's input)
	// with more than one channel and position, the map's channels and
	// positions (PyTorch flattens in (channel, row, column) order); else 0.
	FlatC, FlatHW int
	// WeightOffset, BiasOffset: where the weight and bias start in
	// Net.Params (layers with parameters only).
	WeightOffset, BiasOffset int
}

// HasParams reports whether the layer has a weight and a bias.
func (l Layer) HasParams() bool {
	return l.Kind == ConvLayer || l.Kind == LinearLayer || l.Kind == GroupNormLayer
}

// FanIn is the number of inputs of one output unit: In·Kernel² (linear: In).
func (l Layer) FanIn() int { return l.In * l.Kernel * l.Kernel }

// WeightSize is the number of weights: Out·FanIn for a convolution or
// linear layer, Out for a group norm, 0 for a layer without parameters.
func (l Layer) WeightSize() int {
	switch l.Kind {
	case ConvLayer, LinearLayer:
		return l.Out * l.FanIn()
	case GroupNormLayer:
		return l.Out
	}
	return 0
}

// Positions is the number of output positions per example: OutH·OutW.
func (l Layer) Positions() int { return l.OutH * l.OutW }

// InSize and OutSize are the floats of one example's input and output.
func (l Layer) InSize() int  { return l.In * l.InH * l.InW }
func (l Layer) OutSize() int { return l.Out * l.OutH * l.OutW }

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
// ⌊(n + 2·pad − kernel) / stride⌋ + 1 (0 or less: the input is too small).
func convOut(n, kernel, stride, pad int) int {
	if n+2*pad < kernel {
		return 0
	}
	return (n+2*pad-kernel)/stride + 1
}

// ParamLayers returns the layers of ls that have parameters, in order.
func ParamLayers(ls []Layer) []Layer {
	var out []Layer
	for _, l := range ls {
		if l.HasParams() {
			out = append(out, l)
		}
	}
	return out
}

// Layers infers every layer's shapes from the input, and returns the layers
// and the parameter tensors (weight then bias of each layer with
// parameters, in order, as PyTorch's named_parameters lists them). It
// returns an error naming the first layer that does not fit: a kernel
// larger than its padded input, a linear layer on a feature map (a flatten
// is missing), a convolution, pooling or group norm that cannot take its
// input, sizes beyond the limits, or a last layer whose output is not one
// feature per class.
func (a Arch) Layers() ([]Layer, []Tensor, error) {
	if err := a.Spec.Check(); err != nil {
		return nil, nil, err
	}
	if a.C < 1 || a.H < 1 || a.W < 1 || a.Classes < 2 || a.C > MaxWidth || a.H > 1<<12 || a.W > 1<<12 || a.Classes > MaxWidth {
		return nil, nil, fmt.Errorf("model: input %d×%d×%d with %d classes is outside the limits", a.C, a.H, a.W, a.Classes)
	}
	var layers []Layer
	var tensors []Tensor
	c, h, w, flat, permuted := a.C, a.H, a.W, false, false
	var flatC, flatHW int
	count := map[LayerKind]int{}
	params := 0
	for i, s := range a.Spec.Layers {
		kind := kindNames[s.Type]
		count[kind]++
		l := Layer{Name: fmt.Sprintf("%s%d", prefixes[kind], count[kind]), Kind: kind, In: c, Out: c,
			Kernel: 1, Stride: 1, InH: h, InW: w, OutH: h, OutW: w, Flat: flat}
		fail := func(format string, args ...any) error {
			return fmt.Errorf("model: %s, layer %d (%s %s): %s", a.Name, i+1, s.Type, l.Name, fmt.Sprintf(format, args...))
		}
		spatial := func() error {
			if flat {
				return fail("needs a feature map (channels × height × width), but its input is %d flat features", c)
			}
			return nil
		}
		switch kind {
		case ConvLayer, MaxPoolLayer, AvgPoolLayer:
			if err := spatial(); err != nil {
				return nil, nil, err
			}
			l.Kernel, l.Stride, l.Pad = s.Kernel, s.stride(), s.Padding
			if kind == ConvLayer {
				l.Out = s.Out
			}
			l.OutH, l.OutW = convOut(h, l.Kernel, l.Stride, l.Pad), convOut(w, l.Kernel, l.Stride, l.Pad)
			if l.OutH < 1 || l.OutW < 1 {
				return nil, nil, fail("its %d×%d input (padding %d) is smaller than its %d×%d kernel", h, w, l.Pad, l.Kernel, l.Kernel)
			}
			if kind == ConvLayer && int64(l.Positions())*int64(l.FanIn()) > MaxActivation {
				return nil, nil, fail("its unfolded input, %d positions × %d, is over %d floats per example", l.Positions(), l.FanIn(), MaxActivation)
			}
		case LinearLayer:
			if !flat {
				return nil, nil, fail("needs flat features, but its input is a %d×%d×%d feature map: add a flatten layer before it", c, h, w)
			}
			l.Out = s.Out
			if permuted {
				l.FlatC, l.FlatHW = flatC, flatHW
			}
			permuted = false
		case GroupNormLayer:
			if permuted {
				return nil, nil, fail("cannot follow the flatten of a feature map (normalise before the flatten)")
			}
			if c%s.Groups != 0 {
				return nil, nil, fail("%d groups do not divide %d channels", s.Groups, c)
			}
			l.Groups = s.Groups
		case FlattenLayer:
			if !flat {
				if i > 0 && c > 1 && h*w > 1 {
					permuted, flatC, flatHW = true, c, h*w
				}
				l.Out, l.OutH, l.OutW = c*h*w, 1, 1
			}
		}
		if int64(l.Out)*int64(l.OutH)*int64(l.OutW) > MaxActivation {
			return nil, nil, fail("its output, %d×%d×%d, is over %d floats per example", l.Out, l.OutH, l.OutW, MaxActivation)
		}
		if l.HasParams() {
			if int64(params)+int64(l.WeightSize())+int64(l.Out) > MaxParams {
				return nil, nil, fail("the network has over %d parameters", MaxParams)
			}
			wshape := []int{l.Out}
			switch kind {
			case ConvLayer:
				wshape = []int{l.Out, l.In, l.Kernel, l.Kernel}
			case LinearLayer:
				wshape = []int{l.Out, l.In}
			}
			l.WeightOffset = params
			tensors = append(tensors, Tensor{Name: l.Name + ".weight", Shape: wshape, Offset: params})
			params += l.WeightSize()
			l.BiasOffset = params
			tensors = append(tensors, Tensor{Name: l.Name + ".bias", Shape: []int{l.Out}, Offset: params})
			params += l.Out
		}
		layers = append(layers, l)
		c, h, w = l.Out, l.OutH, l.OutW
		flat = flat || kind == FlattenLayer || kind == LinearLayer
	}
	if !flat || c != a.Classes {
		shape := fmt.Sprintf("%d×%d×%d", c, h, w)
		if flat {
			shape = fmt.Sprintf("%d features", c)
		}
		return nil, nil, fmt.Errorf("model: %s ends in %s; it must end in %d features, one per class (end with a linear layer of %d)", a.Name, shape, a.Classes, a.Classes)
	}
	if len(tensors) == 0 {
		return nil, nil, fmt.Errorf("model: %s has no layer with parameters", a.Name)
	}
	return layers, tensors, nil
}
