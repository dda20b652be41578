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

// Layers infers every layer's shapes from the input, and returns the layers
// and the parameter tensors (weight then bias of each layer with
// parameters, in order, as PyTorch's named_parameters lists them). It
// returns an error naming the first layer that does not fit its input (as
// its kind's file says: a kernel larger than its padded input, flat
// features where a feature map is needed, …), sizes beyond the limits, or
// a last layer whose output is not one feature per class.
func (a Arch) Layers() ([]Layer, []Tensor, error) {
	if err := a.Spec.Check(); err != nil {
		return nil, nil, err
	}
	if a.C < 1 || a.H < 1 || a.W < 1 || a.Classes < 2 || a.C > MaxWidth || a.H > 1<<12 || a.W > 1<<12 || a.Classes > MaxWidth {
		return nil, nil, fmt.Errorf("model: input %d×%d×%d with %d classes is outside the limits", a.C, a.H, a.W, a.Classes)
	}
	var layers []Layer
	var tensors []Tensor
	in := Shape{C: a.C, H: a.H, W: a.W}
	count := map[string]int{}
	params, buffers := 0, 0
	inputLayer := "" // the layer that must read the network's input (inputKind)
	for i, s := range a.Spec.Layers {
		kind := s.Kind
		count[s.Type]++
		l := Layer{Name: fmt.Sprintf("%s%d", kind.prefix(), count[s.Type]), Kind: kind, In: in.C,
			InH: in.H, InW: in.W, Flat: in.Flat, FlatC: in.FlatC, FlatHW: in.FlatHW}
		fail := func(format string, args ...any) error {
			return fmt.Errorf("model: %s, layer %d (%s %s): %s", a.Name, i+1, s.Type, l.Name, fmt.Sprintf(format, args...))
		}
		if _, ok := kind.(inputKind); ok {
			if inputLayer != "" {
				return nil, nil, fail("a network takes one %s layer (%s is the first)", s.Type, inputLayer)
			}
			if _, scatter := a.Spec.Layers[0].Kind.(ScatterSpec); !(i == 0 || i == 1 && scatter) {
				return nil, nil, fail("must be the first layer, or the second right after the scatter front end: its statistics are those of the network's input")
			}
			inputLayer = l.Name
		}
		out, err := kind.shape(in, i == 0)
		if err != nil {
			return nil, nil, fail("%v", err)
		}
		if out.Flat {
			out.H, out.W = 1, 1
		}
		l.Out, l.OutH, l.OutW = out.C, out.H, out.W
		if int64(l.Out)*int64(l.OutH)*int64(l.OutW) > MaxActivation {
			return nil, nil, fail("its output, %d×%d×%d, is over %d floats per example", l.Out, l.OutH, l.OutW, MaxActivation)
		}
		if pk, ok := kind.(paramKind); ok {
			l.WeightShape, l.BiasShape = pk.params(l)
			if int64(params)+int64(l.WeightSize())+int64(l.BiasSize()) > MaxParams {
				return nil, nil, fail("the network has over %d parameters", MaxParams)
			}
			l.WeightOffset = params
			tensors = append(tensors, Tensor{Name: l.Name + ".weight", Shape: l.WeightShape, Offset: params})
			params += l.WeightSize()
			l.BiasOffset = params
			tensors = append(tensors, Tensor{Name: l.Name + ".bias", Shape: l.BiasShape, Offset: params})
			params += l.BiasSize()
		}
		if bk, ok := kind.(bufferKind); ok {
			for _, t := range bk.buffers(l) {
				l.BufferSize += t.Size()
			}
			l.BufferOffset = buffers
			buffers += l.BufferSize
		}
		layers = append(layers, l)
		in = out
	}
	if !in.Flat || in.C != a.Classes {
		shape := fmt.Sprintf("%d×%d×%d", in.C, in.H, in.W)
		if in.Flat {
			shape = fmt.Sprintf("%d features", in.C)
		}
		return nil, nil, fmt.Errorf("model: %s ends in %s; it must end in %d features, one per class (end with a linear layer of %d)", a.Name, shape, a.Classes, a.Classes)
	}
	if len(tensors) == 0 {
		return nil, nil, fmt.Errorf("model: %s has no layer with parameters", a.Name)
	}
	return layers, tensors, nil
}
