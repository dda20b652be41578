package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"

	G "gorgonia.org/gorgonia"
)

// LayerKind is one type of layer a Spec may name. A value of the kind is
// one layer's hyperparameters: a struct of numbers whose JSON field names are
// the keys of the layer's object in a spec (all omitempty, 0 meaning
// absent). Every kind lives in its own file, layer_<type>.go, which holds
// its hyperparameters and their check, its output shape, its parameter
// shapes and initialisation, and its gorgonia node, and registers it with
// RegisterLayer in init; dpsgd's engine finds its rules by Type.
//
// The unexported methods are the kind's part in Spec.Check (check),
// Arch.Layers (shape) and Net.NewGraph (node). A kind with parameters also
// implements paramKind, one whose forward pass is a GEMM gemmKind, and one
// that RandomArch may draw randomKind.
type LayerKind interface {
	// Type is the name a spec gives the kind.
	Type() string
	// prefix names the kind's layers in a network: conv1, conv2, …
	prefix() string
	// check returns an error if a hyperparameter is out of range,
	// whatever the input.
	check() error
	// shape returns the layer's output shape for its input in, or an
	// error saying why it cannot take in; first is set for the network's
	// first layer, which reads the input as the dataset lays it out.
	shape(in Shape, first bool) (Shape, error)
	// node builds the layer's gorgonia node from its input h ([B, …]) and,
	// for a kind with parameters, its weight w and bias b.
	node(c *graphCtx, l Layer, h, w, b *G.Node) *G.Node
}

// paramKind is a kind with parameters: a weight and a bias.
type paramKind interface {
	LayerKind
	// params returns the PyTorch shapes of the layer's weight and bias.
	params(l Layer) (weight, bias []int)
	// init initialises the layer's weight w and bias b as PyTorch's
	// reset_parameters does, drawing from rng (if at all) weight then bias.
	init(l Layer, w, b []float32, rng *rand.Rand)
}

// gemmKind is a kind whose forward pass is one matrix product.
type gemmKind interface {
	// macs is the multiply-adds of one example's forward product.
	macs(l Layer) int
}

// role is where RandomArch may place a kind.
type role int

const (
	roleActivation role = iota // after a layer with parameters or a reshape, or first
	roleNorm                   // after a layer with parameters, or first
	rolePool                   // after a convolution, or first
	roleInput                  // first only (inputKind)
)

// bufferKind is a kind with buffers: tensors of the model that are not
// parameters — no gradient, not clipped, noised or updated by DP-SGD —
// like PyTorch's registered buffers (a data normalisation's mean and
// variance). They live in Net.Buffers and the checkpoint's buffers.bin.
type bufferKind interface {
	// buffers returns the layer's buffer tensors, their names and shapes,
	// with offsets relative to the layer's first buffer.
	buffers(l Layer) []Tensor
	// initBuffers gives a new network's buffers (their total size) their
	// initial values.
	initBuffers(l Layer, buf []float32)
}

// inputKind is a kind that must read the network's input as the data
// holds it (Arch.Input): the first layer, or the second after a fixed
// front end. A network has at most one.
type inputKind interface {
	readsInput()
}

// randomKind is a kind RandomArch draws.
type randomKind interface {
	role() role
	// random returns a random layer of the kind on an input of c channels
	// (or features), or false if the kind cannot take c.
	random(rng *rand.Rand, c int) (LayerSpec, bool)
}

var layerKinds = map[string]LayerKind{}

// RegisterLayer makes kind available to specs under kind.Type(). It is
// called from the init function of the kind's file, with the kind's zero
// value; registering a type twice panics (a programming error).
func RegisterLayer(kind LayerKind) {
	t := kind.Type()
	if _, dup := layerKinds[t]; dup {
		panic(fmt.Sprintf("model: layer type %q registered twice", t))
	}
	if reflect.TypeOf(kind).Kind() != reflect.Struct || !reflect.TypeOf(kind).Comparable() {
		panic(fmt.Sprintf("model: layer type %q: its hyperparameters must be a comparable struct", t))
	}
	layerKinds[t] = kind
}

// LayerTypes returns the registered layer types, sorted.
func LayerTypes() []string {
	ts := make([]string, 0, len(layerKinds))
	for t := range layerKinds {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// LayerSpec is one layer of a Spec: its type and hyperparameters. In JSON
// it is one object, {"type": Type, …the kind's fields…}.
type LayerSpec struct {
	Type string
	// Kind holds the hyperparameters; nil when Type names no registered
	// kind (Spec.Check reports it).
	Kind LayerKind
	// extra is a key of the JSON object that Kind does not have, given a
	// value other than 0 (Spec.Check reports it).
	extra string
}

// layerOf is the LayerSpec of kind.
func layerOf(kind LayerKind) LayerSpec { return LayerSpec{Type: kind.Type(), Kind: kind} }

// MarshalJSON writes {"type": …} followed by the kind's fields.
func (s LayerSpec) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(s.Type)
	if err != nil {
		return nil, err
	}
	out := append([]byte(`{"type":`), head...)
	if s.Kind == nil {
		return append(out, '}'), nil
	}
	fields, err := json.Marshal(s.Kind)
	if err != nil {
		return nil, err
	}
	if len(fields) > 2 {
		out = append(append(out, ','), fields[1:len(fields)-1]...)
	}
	return append(out, '}'), nil
}

// UnmarshalJSON reads a layer object: "type" picks the kind, whose struct
// takes the other keys. A key the kind does not have is accepted if its
// value is 0 (what omitempty leaves out) and another kind has it; else
// Check reports it ("a <type> layer has no <key>"), or, for a key no kind
// has, decoding fails.
func (s *LayerSpec) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*s = LayerSpec{}
	rest := map[string]json.RawMessage{}
	for k, v := range m {
		if strings.EqualFold(k, "type") {
			if err := json.Unmarshal(v, &s.Type); err != nil {
				return fmt.Errorf("layer type: %w", err)
			}
			continue
		}
		rest[k] = v
	}
	kind, ok := layerKinds[s.Type]
	if !ok {
		return nil
	}
	t := reflect.TypeOf(kind)
	own := map[string]json.RawMessage{}
	for k, v := range rest {
		if hasJSONField(t, k) {
			own[k] = v
			continue
		}
		if !anyKindHas(k) {
			return fmt.Errorf("unknown field %q in a %s layer", k, s.Type)
		}
		var n int
		if json.Unmarshal(v, &n) != nil || n != 0 {
			if s.extra == "" || k < s.extra {
				s.extra = k
			}
		}
	}
	js, err := json.Marshal(own)
	if err != nil {
		return err
	}
	p := reflect.New(t)
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p.Interface()); err != nil {
		return fmt.Errorf("%s layer: %w", s.Type, err)
	}
	s.Kind = p.Elem().Interface().(LayerKind)
	return nil
}

// hasJSONField reports whether struct type t has a field whose JSON name
// is k (compared as encoding/json does, ignoring case).
func hasJSONField(t reflect.Type, k string) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && strings.EqualFold(name, k) {
			return true
		}
	}
	return false
}

func anyKindHas(k string) bool {
	for _, kind := range layerKinds {
		if hasJSONField(reflect.TypeOf(kind), k) {
			return true
		}
	}
	return false
}

// check returns an error if the layer's type is unknown or a
// hyperparameter is invalid.
func (s LayerSpec) check() error {
	if s.Kind == nil {
		return fmt.Errorf("unknown layer type %q (want one of %s)", s.Type, strings.Join(LayerTypes(), ", "))
	}
	if s.Type != s.Kind.Type() {
		return fmt.Errorf("type %q does not match its %s hyperparameters", s.Type, s.Kind.Type())
	}
	if s.extra != "" {
		return fmt.Errorf("a %s layer has no %s", s.Type, s.extra)
	}
	return s.Kind.check()
}

// inRange is nil if lo ≤ v ≤ hi, else an error naming the hyperparameter.
func inRange(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("%s %d is outside [%d, %d]", name, v, lo, hi)
	}
	return nil
}

// firstError returns the first non-nil error of errs.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Shape is what flows from one layer to the next: C channels of H×W, or,
// when Flat, C features (H = W = 1).
type Shape struct {
	C, H, W int
	Flat    bool
	// FlatC, FlatHW: when the flat features are a feature map computed
	// inside the network (not the network's input) with more than one
	// channel and position, laid out flat, the map's channels and
	// positions (PyTorch orders the features (channel, row, column),
	// dpsgd's engine (row, column, channel)); else 0.
	FlatC, FlatHW int
}

// needMap is nil for a feature map and an error for flat features.
func (s Shape) needMap() error {
	if s.Flat {
		return fmt.Errorf("needs a feature map (channels × height × width), but its input is %d flat features", s.C)
	}
	return nil
}

// Layer is one layer of an Arch with its shapes inferred: its kind and
// hyperparameters, its input and output shapes and, for a layer with
// parameters, where its weight and bias sit in Net.Params.
type Layer struct {
	Name string    // the kind's prefix and its count: conv1, fc2, gn1, …
	Kind LayerKind // the kind and hyperparameters, as the spec gives them
	// In, Out: input and output channels, or features on a flat input or
	// output.
	In, Out int
	// InH, InW, OutH, OutW: spatial sizes; 1 when flat.
	InH, InW, OutH, OutW int
	// Flat: the input is a feature vector.
	Flat bool
	// FlatC, FlatHW: the input's (Shape).
	FlatC, FlatHW int
	// WeightOffset, BiasOffset: where the weight and bias start in
	// Net.Params (layers with parameters only).
	WeightOffset, BiasOffset int
	// WeightShape, BiasShape: the PyTorch shapes of the weight and bias;
	// nil for a layer without parameters.
	WeightShape, BiasShape []int
	// BufferOffset, BufferSize: where the layer's buffers start in
	// Net.Buffers and how many floats they take (0 for a layer without
	// buffers).
	BufferOffset, BufferSize int
}

// HasParams reports whether the layer has a weight and a bias.
func (l Layer) HasParams() bool { return l.WeightShape != nil }

// WeightSize is the number of weights (0 for a layer without parameters).
func (l Layer) WeightSize() int {
	if !l.HasParams() {
		return 0
	}
	return Tensor{Shape: l.WeightShape}.Size()
}

// BiasSize is the number of biases (0 for a layer without parameters).
func (l Layer) BiasSize() int {
	if !l.HasParams() {
		return 0
	}
	return Tensor{Shape: l.BiasShape}.Size()
}

// MACs is the multiply-adds of one example's forward matrix product (a
// convolution's or fully connected layer's), 0 for a layer that has none.
func (l Layer) MACs() int {
	if g, ok := l.Kind.(gemmKind); ok {
		return g.macs(l)
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

// window is the output shape of a square kernel k with stride and padding
// pad on the feature map in, or an error if in is flat or smaller than the
// kernel.
func window(in Shape, k, stride, pad int) (Shape, error) {
	if err := in.needMap(); err != nil {
		return Shape{}, err
	}
	out := Shape{C: in.C, H: convOut(in.H, k, stride, pad), W: convOut(in.W, k, stride, pad)}
	if out.H < 1 || out.W < 1 {
		return Shape{}, fmt.Errorf("its %d×%d input (padding %d) is smaller than its %d×%d kernel", in.H, in.W, pad, k, k)
	}
	return out, nil
}

// uniformInit fills w then b from U(−1/√fanIn, 1/√fanIn): PyTorch's
// default for convolutions and fully connected layers (Kaiming-uniform
// with a = √5 for the weight, and the same bound for the bias).
func uniformInit(w, b []float32, fanIn int, rng *rand.Rand) {
	bound := 1 / math.Sqrt(float64(fanIn))
	for _, v := range [][]float32{w, b} {
		for i := range v {
			v[i] = float32((2*rng.Float64() - 1) * bound)
		}
	}
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
