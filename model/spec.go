package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dptune/dptune/internal/fsx"
)

// Spec is a network definition: a sequence of layers, like PyTorch's
// nn.Sequential, ending in as many features as the data has classes (the
// logits of a softmax cross-entropy loss). Each layer's type is a kind
// registered by its own file (LayerTypes lists them). Shapes are inferred from the
// input (Spec.Arch). The model package builds the gorgonia graph from a
// Spec and the dpsgd engine its native plan from the same Spec: no network
// is written twice. A Spec serialises to JSON, for example
//
//	{"name": "my-cnn", "layers": [
//	  {"type": "conv2d", "out": 16, "kernel": 5, "padding": 2}, {"type": "tanh"},
//	  {"type": "maxpool2d", "kernel": 2},
//	  {"type": "flatten"}, {"type": "linear", "out": 10}]}
type Spec struct {
	Name   string      `json:"name"`
	Layers []LayerSpec `json:"layers"`
}

// Limits a Spec must keep, so that a hostile file gets an error, not an
// allocation that takes the machine down.
const (
	MaxSpecLayers = 64
	MaxWidth      = 4096    // output channels or features of one layer
	MaxKernel     = 32      // kernel size, stride and padding
	MaxParams     = 1 << 26 // parameters of a network (256 MiB of float32)
	MaxActivation = 1 << 22 // floats one example's activation or unfolded input may take in one layer
)

// The built-in specs.
var (
	// OpacusMNIST is the CNN of Opacus's MNIST example (and of TensorFlow
	// Privacy's): conv 16 8×8 s2 p3, ReLU, max-pool 2 s1, conv 32 4×4 s2,
	// ReLU, max-pool 2 s1, linear 32, ReLU, linear 10.
	OpacusMNIST = Spec{Name: "opacus-mnist", Layers: []LayerSpec{
		Conv2d(16, 8, 2, 3), ReLU(), MaxPool2d(2, 1),
		Conv2d(32, 4, 2, 0), ReLU(), MaxPool2d(2, 1),
		Flatten(), Linear(32), ReLU(), Linear(10)}}
	// OpacusCIFAR10 is the same network on CIFAR-10's 3×32×32 input.
	OpacusCIFAR10 = Spec{Name: "opacus-cifar10", Layers: OpacusMNIST.Layers}
	// TBMNIST is Tramèr & Boneh's MNIST CNN ("Differentially Private
	// Learning Needs Better Features (or Much More Data)", ICLR 2021,
	// Table 9): conv 16 8×8 s2 p2, tanh, max-pool 2 s1, conv 32 4×4 s2,
	// tanh, max-pool 2 s1, linear 32, tanh, linear 10.
	TBMNIST = Spec{Name: "tb-mnist", Layers: []LayerSpec{
		Conv2d(16, 8, 2, 2), Tanh(), MaxPool2d(2, 1),
		Conv2d(32, 4, 2, 0), Tanh(), MaxPool2d(2, 1),
		Flatten(), Linear(32), Tanh(), Linear(10)}}
	// TBCIFAR10 is Tramèr & Boneh's CIFAR-10 CNN (Table 9): six 3×3
	// convolutions with padding 1 (32, 32, 64, 64, 128, 128 channels), each
	// followed by tanh, a 2×2 stride-2 max-pool after every second one,
	// linear 128, tanh, linear 10: 550,570 parameters.
	TBCIFAR10 = Spec{Name: "tb-cifar10", Layers: []LayerSpec{
		Conv2d(32, 3, 1, 1), Tanh(), Conv2d(32, 3, 1, 1), Tanh(), MaxPool2d(2, 2),
		Conv2d(64, 3, 1, 1), Tanh(), Conv2d(64, 3, 1, 1), Tanh(), MaxPool2d(2, 2),
		Conv2d(128, 3, 1, 1), Tanh(), Conv2d(128, 3, 1, 1), Tanh(), MaxPool2d(2, 2),
		Flatten(), Linear(128), Tanh(), Linear(10)}}
	// ScatterLinearMNIST is Tramèr & Boneh's ScatterNet + linear model for
	// MNIST (Section 3, "ScatterNet+linear"): the scattering transform with
	// J = 2, L = 8 (81×7×7 features), their private data normalisation
	// (datanorm: per-channel mean and variance by the Gaussian mechanism,
	// σ = 8, with the default clipping norms) and one linear layer: 39,700
	// parameters. On the validation split data normalisation and group
	// normalisation in 27 groups were within noise of each other (see
	// job.TrainDefaults); data normalisation leaves a plain linear model to
	// train, about twice as fast.
	ScatterLinearMNIST = Spec{Name: "scatter-linear-mnist", Layers: []LayerSpec{
		Scatter(2, 8), DataNorm(8, DefaultDataNormMeanClip, DefaultDataNormSquareClip), Flatten(), Linear(10)}}
	// ScatterGNLinearMNIST is Tramèr & Boneh's ScatterNet + linear model as
	// they train it on Fashion-MNIST (their code's README,
	// ftramer/Handcrafted-DP): the 81×7×7 scattering features normalised by
	// group normalisation in 27 groups, which spends no privacy (theirs has
	// no affine weight and bias; this layer learns them, 162 parameters
	// more), and one linear layer: 39,862 parameters.
	ScatterGNLinearMNIST = Spec{Name: "scatter-gn-linear-mnist", Layers: []LayerSpec{
		Scatter(2, 8), GroupNorm(27), Flatten(), Linear(10)}}
	// ScatterCNNMNIST is Tramèr & Boneh's ScatterNet + CNN for MNIST (their
	// code's MNIST_CNN on scattering features): the normalised 81×7×7
	// features, conv 16 3×3 s2 p1, tanh, conv 32 3×3 p1, tanh, linear 32,
	// tanh, linear 10: 33,066 parameters.
	ScatterCNNMNIST = Spec{Name: "scatter-cnn-mnist", Layers: []LayerSpec{
		Scatter(2, 8), DataNorm(8, DefaultDataNormMeanClip, DefaultDataNormSquareClip),
		Conv2d(16, 3, 2, 1), Tanh(), Conv2d(32, 3, 1, 1), Tanh(), Flatten(), Linear(32), Tanh(), Linear(10)}}
	// ScatterLinearCIFAR10 is Tramèr & Boneh's ScatterNet + linear model
	// for CIFAR-10 (Section 3; their code's ScatterLinear): the scattering
	// transform with J = 2, L = 8 of each colour channel (243×8×8
	// features), data normalisation (σ = 8; clipping norms 0.9 and 1.2,
	// the medians on the validation split) and one linear layer: 155,530
	// parameters.
	ScatterLinearCIFAR10 = Spec{Name: "scatter-linear-cifar10", Layers: []LayerSpec{
		Scatter(2, 8), DataNorm(8, 0.9, 1.2), Flatten(), Linear(10)}}
	// ScatterCNNCIFAR10 is Tramèr & Boneh's ScatterNet + CNN for CIFAR-10
	// (their code's CIFAR10_CNN on scattering features, the default size):
	// the 243×8×8 features with the same data normalisation, conv 64 3×3
	// p1, tanh, max-pool 2 s2, conv 64 3×3 p1, tanh, linear 10: 187,210
	// parameters.
	ScatterCNNCIFAR10 = Spec{Name: "scatter-cnn-cifar10", Layers: []LayerSpec{
		Scatter(2, 8), DataNorm(8, 0.9, 1.2), Conv2d(64, 3, 1, 1), Tanh(), MaxPool2d(2, 2),
		Conv2d(64, 3, 1, 1), Tanh(), Flatten(), Linear(10)}}
)

// BuiltinSpecs lists the built-in specs by name.
func BuiltinSpecs() []Spec {
	return []Spec{OpacusMNIST, TBMNIST, OpacusCIFAR10, TBCIFAR10, ScatterLinearMNIST, ScatterGNLinearMNIST, ScatterCNNMNIST, ScatterLinearCIFAR10, ScatterCNNCIFAR10}
}

// legacyNames are the architecture names of checkpoints written before
// specs existed, and the specs they are.
var legacyNames = map[string]Spec{"mnist-cnn": OpacusMNIST, "cifar10-cnn": OpacusCIFAR10}

// SpecByName returns the built-in spec called name.
func SpecByName(name string) (Spec, error) {
	for _, s := range BuiltinSpecs() {
		if s.Name == name {
			return s, nil
		}
	}
	if s, ok := legacyNames[name]; ok {
		return s, nil
	}
	names := make([]string, 0, 4)
	for _, s := range BuiltinSpecs() {
		names = append(names, s.Name)
	}
	return Spec{}, fmt.Errorf("model: unknown network %q (built in: %s; or a spec file ending in .json)", name, strings.Join(names, ", "))
}

// MaxSpecBytes bounds the JSON text of a spec (a spec of MaxSpecLayers
// layers takes a few kilobytes).
const MaxSpecBytes = 1 << 20

// ParseSpec reads a JSON spec from r: more than MaxSpecBytes bytes, unknown
// fields, trailing data and layers outside the limits are errors. The
// spec's shapes are checked by Spec.Arch, against an input.
func ParseSpec(r io.Reader) (Spec, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxSpecBytes+1))
	if err != nil {
		return Spec{}, fmt.Errorf("model: spec: %w", err)
	}
	if len(b) > MaxSpecBytes {
		return Spec{}, fmt.Errorf("model: spec larger than %d bytes", MaxSpecBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return Spec{}, fmt.Errorf("model: spec: %w", err)
	}
	if dec.More() {
		return Spec{}, fmt.Errorf("model: spec: data after the JSON object")
	}
	return s, s.Check()
}

// LoadSpec resolves a --model argument: the name of a built-in spec, or the
// path of a JSON spec file (ParseSpec).
func LoadSpec(nameOrPath string) (Spec, error) {
	if !strings.HasSuffix(nameOrPath, ".json") {
		return SpecByName(nameOrPath)
	}
	b, err := fsx.ReadFile(nameOrPath, MaxSpecBytes)
	if errors.Is(err, fsx.ErrTooLarge) {
		return Spec{}, fmt.Errorf("model: %s: spec larger than %d bytes", nameOrPath, MaxSpecBytes)
	}
	if err != nil {
		return Spec{}, fmt.Errorf("model: %w", err)
	}
	s, err := ParseSpec(bytes.NewReader(b))
	if err != nil {
		return Spec{}, fmt.Errorf("%s: %w", nameOrPath, err)
	}
	return s, nil
}

// Check returns an error naming the first layer whose type or
// hyperparameters are invalid, whatever the input (shapes are checked by
// Arch).
func (s Spec) Check() error {
	if s.Name == "" || len(s.Name) > 64 || strings.ContainsAny(s.Name, "\"\\/\n\r\t") {
		return fmt.Errorf("model: spec name %q must be 1 to 64 characters without quotes, slashes or control characters", s.Name)
	}
	if len(s.Layers) == 0 || len(s.Layers) > MaxSpecLayers {
		return fmt.Errorf("model: spec %s has %d layers (want 1 to %d)", s.Name, len(s.Layers), MaxSpecLayers)
	}
	for i, l := range s.Layers {
		if err := l.check(); err != nil {
			return fmt.Errorf("model: spec %s, layer %d (%s): %w", s.Name, i+1, l.Type, err)
		}
	}
	return nil
}
