package model

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Net is a network (Arch) and its parameters.
type Net struct {
	Arch Arch
	// Layers are the Arch's layers with their shapes (Arch.Layers), those
	// without parameters included.
	Layers []Layer
	// Tensors lists the parameter tensors in Params, in PyTorch's
	// named_parameters order (conv1.weight, conv1.bias, …, fc2.bias).
	Tensors []Tensor
	// Params is the flat parameter vector; every Graph of this Net reads it
	// in place, so an update to Params is seen by the next Graph.Run.
	Params []float32
	// BufferTensors lists the buffer tensors in Buffers, in layer order
	// (dn1.mean, dn1.var); nil for a network without buffers.
	BufferTensors []Tensor
	// Buffers holds the layers' buffers: tensors of the model that are
	// not parameters (no gradient; DP-SGD neither clips, noises nor
	// updates them), such as a datanorm layer's mean and variance. A
	// Graph reads them when it is built, dpsgd's engine at every step.
	Buffers []float32
}

// New returns the network for arch with PyTorch's default initialisation
// of each layer (its kind's reset_parameters), so that results compare
// with the Python stacks: a weight multiplying its inputs, and its bias,
// from U(−1/√fan_in, 1/√fan_in) (Kaiming-uniform with a = √5); a
// normalisation's scale 1 and shift 0. Randomness comes from rng, drawn
// layer by layer, weight then bias.
func New(arch Arch, rng *rand.Rand) (*Net, error) {
	n, err := NewZero(arch)
	if err != nil {
		return nil, err
	}
	for _, l := range n.Layers {
		if pk, ok := l.Kind.(paramKind); ok {
			pk.init(l, n.Params[l.WeightOffset:l.WeightOffset+l.WeightSize()], n.Params[l.BiasOffset:l.BiasOffset+l.BiasSize()], rng)
		}
	}
	return n, nil
}

// NewZero returns the network for arch with all parameters zero, and its
// buffers at their kinds' initial values (a datanorm layer's μ = 0, v = 1).
func NewZero(arch Arch) (*Net, error) {
	layers, tensors, err := arch.Layers()
	if err != nil {
		return nil, err
	}
	last := tensors[len(tensors)-1]
	n := &Net{Arch: arch, Layers: layers, Tensors: tensors, Params: make([]float32, last.Offset+last.Size())}
	for _, l := range layers {
		bk, ok := l.Kind.(bufferKind)
		if !ok {
			continue
		}
		for _, t := range bk.buffers(l) {
			t.Offset += l.BufferOffset
			n.BufferTensors = append(n.BufferTensors, t)
		}
		n.Buffers = append(n.Buffers, make([]float32, l.BufferSize)...)
		bk.initBuffers(l, n.Buffers[l.BufferOffset:l.BufferOffset+l.BufferSize])
	}
	return n, nil
}

// Buffer returns the slice of Buffers holding the buffer tensor called
// name, or nil.
func (n *Net) Buffer(name string) []float32 {
	for _, t := range n.BufferTensors {
		if t.Name == name {
			return n.Buffers[t.Offset : t.Offset+t.Size()]
		}
	}
	return nil
}

// NumParams is the number of parameters, len(Params).
func (n *Net) NumParams() int { return len(n.Params) }

// Tensor returns the slice of Params holding the tensor called name, or nil.
func (n *Net) Tensor(name string) []float32 {
	for _, t := range n.Tensors {
		if t.Name == name {
			return n.Params[t.Offset : t.Offset+t.Size()]
		}
	}
	return nil
}

// CheckFinite returns an error naming the first parameter that is NaN or
// ±Inf (a diverged run's model), or nil.
func (n *Net) CheckFinite() error {
	for _, t := range n.Tensors {
		for i, v := range n.Params[t.Offset : t.Offset+t.Size()] {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("model: parameter %d of %s is %v: the parameters are not all finite", i, t.Name, v)
			}
		}
	}
	return nil
}
