package model

import (
	"fmt"

	"github.com/dptune/dptune/model/scatter"
	G "gorgonia.org/gorgonia"
)

// ScatterSpec is the 2-D scattering transform of order 2 with J scales and
// L orientations, kymatio's Scattering2D (package model/scatter; Oyallon &
// Mallat, CVPR 2015), as the fixed front end of Tramèr & Boneh's
// ScatterNet models ("Differentially Private Learning Needs Better
// Features (or Much More Data)", ICLR 2021, Section 3: J = 2, L = 8). In a
// spec: {"type": "scatter", "j": 2, "l": 8} (the keys are case-blind, so
// "J" and "L" work too).
//
// It may only be the first layer, on images whose sides are multiples of
// 2^J. Each of the C input channels gives 1 + J·L + L²·J(J−1)/2 channels
// (81 for J = 2, L = 8) of (H/2^J)×(W/2^J): the output is 81·C × H/4 × W/4
// for J = 2, L = 8 (81×7×7 on MNIST, 243×8×8 on CIFAR-10), input channel
// i giving output channels 81·i … 81·i + 80.
//
// It has no parameters and the transform does not depend on the data, so
// it costs no privacy and needs no gradient. The network's gorgonia graph
// and dpsgd's engine therefore do not compute it: a network whose first
// layer is a scatter reads the transform's output, precomputed once per
// dataset (Arch.Input gives its shape, Arch.FrontEnd the transform), and
// the layer itself is the identity on it.
type ScatterSpec struct {
	J int `json:"j,omitempty"`
	L int `json:"l,omitempty"`
}

// Scatter is the LayerSpec of a scattering front end.
func Scatter(J, L int) LayerSpec { return layerOf(ScatterSpec{J: J, L: L}) }

func init() { RegisterLayer(ScatterSpec{}) }

func (ScatterSpec) Type() string   { return "scatter" }
func (ScatterSpec) prefix() string { return "scatter" }

func (p ScatterSpec) check() error {
	return firstError(inRange("J", p.J, 1, scatter.MaxJ), inRange("L", p.L, 1, scatter.MaxL))
}

func (p ScatterSpec) shape(in Shape, first bool) (Shape, error) {
	if !first {
		return Shape{}, fmt.Errorf("a scatter layer must be the network's first layer (it transforms the input images)")
	}
	f := 1 << p.J
	if in.H%f != 0 || in.W%f != 0 {
		return Shape{}, fmt.Errorf("image sides %d×%d are not multiples of 2^J = %d", in.H, in.W, f)
	}
	if err := scatter.Check(in.H, in.W, p.J, p.L); err != nil {
		return Shape{}, err
	}
	k := scatter.NumChannels(p.J, p.L)
	if int64(k)*int64(in.C) > MaxWidth {
		return Shape{}, fmt.Errorf("its %d×%d output channels are more than %d", in.C, k, MaxWidth)
	}
	return Shape{C: in.C * k, H: in.H / f, W: in.W / f}, nil
}

// node is the identity: the graph's input is already the transform's
// output (Arch.Input).
func (ScatterSpec) node(_ *graphCtx, _ Layer, h, _, _ *G.Node) *G.Node { return h }

// FrontEnd is a network's fixed front end: a parameter-free,
// data-independent transform of its C×H×W input images to
// OutC×OutH×OutW features, computed outside the network (once per
// dataset) and read by the network's graph and engine as their input.
type FrontEnd struct {
	Spec             ScatterSpec
	C, H, W          int // the images
	OutC, OutH, OutW int // the features
	InSize, OutSize  int // floats per image, per example's features
}

// FrontEnd returns the fixed front end of the network (its scatter first
// layer), and false if it has none.
func (a Arch) FrontEnd() (FrontEnd, bool) {
	if len(a.Spec.Layers) == 0 {
		return FrontEnd{}, false
	}
	p, ok := a.Spec.Layers[0].Kind.(ScatterSpec)
	if !ok {
		return FrontEnd{}, false
	}
	out, err := p.shape(Shape{C: a.C, H: a.H, W: a.W}, true)
	if err != nil || p.check() != nil {
		return FrontEnd{}, false
	}
	return FrontEnd{Spec: p, C: a.C, H: a.H, W: a.W, OutC: out.C, OutH: out.H, OutW: out.W,
		InSize: a.C * a.H * a.W, OutSize: out.C * out.H * out.W}, true
}

// Input returns the shape of one example as the network's gorgonia graph
// and dpsgd's engine read it: the images' C×H×W, or, for a network with a
// front end (FrontEnd), the front end's output.
func (a Arch) Input() (c, h, w int) {
	if f, ok := a.FrontEnd(); ok {
		return f.OutC, f.OutH, f.OutW
	}
	return a.C, a.H, a.W
}

// Key names the transform and its input: two front ends with the same key
// compute the same features from the same images, bit for bit (a feature
// cache is keyed by it, model/features).
func (f FrontEnd) Key() string {
	return fmt.Sprintf("scatter2d-kymatio %s J=%d L=%d order=2 input=%dx%dx%d output=%dx%dx%d", transformVersion, f.Spec.J, f.Spec.L, f.C, f.H, f.W, f.OutC, f.OutH, f.OutW)
}

// transformVersion changes whenever package scatter's output bits do, so
// that no feature cache written by an earlier transform is read back: v2
// is the float32 stage (dense DFTs on the GEMM kernel; features within
// 1e-6 of v1's float64 FFTs, the kymatio check unchanged). Keys without a
// version were v1's.
const transformVersion = "v2"

// Transformer returns the front end's transform: a function from one
// image (InSize floats, [C, H, W]) to its features (OutSize floats,
// [OutC, OutH, OutW]), safe for concurrent use.
func (f FrontEnd) Transformer() (func(dst, img []float32) error, error) {
	s, err := scatter.New(f.H, f.W, f.Spec.J, f.Spec.L)
	if err != nil {
		return nil, err
	}
	return func(dst, img []float32) error { return s.TransformChannels(dst, img, f.C) }, nil
}
