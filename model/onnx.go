package model

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/dptune/dptune/model/onnxpb"
)

// ONNXOpset is the ONNX operator set an export uses (LayerNormalization
// needs 17), and ONNXIRVersion its IR version (8: what ONNX 1.13, the
// first with opset 17, writes).
const (
	ONNXOpset     = 17
	ONNXIRVersion = 8
)

// onnxKind is a layer kind that can be written as ONNX nodes: onnx adds
// the nodes of layer l, whose input is the value called in ([N, C, H, W],
// or [N, F] when l.Flat), to g and returns its output's name. Each kind
// writes its own nodes in its own file; a kind without the method cannot
// be exported, and Net.WriteONNX says so.
type onnxKind interface {
	onnx(g *onnxGraph, l Layer, in string) (string, error)
}

// onnxGraph collects the nodes and constants of an export.
type onnxGraph struct {
	net   *Net
	nodes []*onnxpb.NodeProto
	inits []*onnxpb.TensorProto
	count int
}

// fresh returns a new value name starting with prefix.
func (g *onnxGraph) fresh(prefix string) string {
	g.count++
	return prefix + "_" + strconv.Itoa(g.count)
}

// node adds an op reading in and returns its (one) output's name.
func (g *onnxGraph) node(op, prefix string, in []string, attrs ...*onnxpb.AttributeProto) string {
	out := g.fresh(prefix)
	g.nodes = append(g.nodes, &onnxpb.NodeProto{OpType: op, Name: out, Input: in, Output: []string{out}, Attribute: attrs})
	return out
}

// constant adds a float32 initializer of the given shape and returns its
// name.
func (g *onnxGraph) constant(name string, shape []int, v []float32) string {
	dims := make([]int64, len(shape))
	for i, d := range shape {
		dims[i] = int64(d)
	}
	g.inits = append(g.inits, &onnxpb.TensorProto{Name: name, Dims: dims, DataType: int32(onnxpb.TensorProto_FLOAT), FloatData: slices.Clone(v)})
	return name
}

// int64s adds an int64 initializer (a shape, axes) and returns its name.
func (g *onnxGraph) int64s(prefix string, v ...int64) string {
	name := g.fresh(prefix)
	g.inits = append(g.inits, &onnxpb.TensorProto{Name: name, Dims: []int64{int64(len(v))}, DataType: int32(onnxpb.TensorProto_INT64), Int64Data: v})
	return name
}

// param adds layer l's weight and bias as initializers named by their
// tensors ("conv1.weight", …) and returns the two names.
func (g *onnxGraph) param(l Layer) (weight, bias string) {
	p := g.net.Params
	w := g.constant(l.Name+".weight", l.WeightShape, p[l.WeightOffset:l.WeightOffset+l.WeightSize()])
	b := g.constant(l.Name+".bias", l.BiasShape, p[l.BiasOffset:l.BiasOffset+l.BiasSize()])
	return w, b
}

// attrInts is an INTS attribute.
func attrInts(name string, v ...int) *onnxpb.AttributeProto {
	a := &onnxpb.AttributeProto{Name: name, Type: onnxpb.AttributeProto_INTS}
	for _, x := range v {
		a.Ints = append(a.Ints, int64(x))
	}
	return a
}

// attrInt is an INT attribute.
func attrInt(name string, v int) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: name, Type: onnxpb.AttributeProto_INT, I: int64(v)}
}

// attrFloat is a FLOAT attribute.
func attrFloat(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: name, Type: onnxpb.AttributeProto_FLOAT, F: v}
}

// perChannel adds a [1, C, 1, 1] constant (or [1, C] for a flat input) and
// returns its name.
func (g *onnxGraph) perChannel(name string, flat bool, v []float32) string {
	if flat {
		return g.constant(name, []int{1, len(v)}, v)
	}
	return g.constant(name, []int{1, len(v), 1, 1}, v)
}

// tensorType is a float tensor type of dims ("" for the dynamic batch).
func tensorType(batch string, dims ...int) *onnxpb.TypeProto {
	shape := &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: batch}}}}
	for _, d := range dims {
		shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d)}})
	}
	return &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: int32(onnxpb.TensorProto_FLOAT), Shape: shape}}}
}

// WriteONNX writes n as a self-contained ONNX model (opset ONNXOpset) to
// w: its one input "pixels" is the raw image as float32 values in
// [0, 255], [N, C, H, W] with N dynamic; its first nodes scale them by
// 1/255 and normalise channel c as (x − in.Mean[c]) / in.Std[c] (none when
// in has no constants), as dptune's loaders do; then each layer's nodes
// (its kind's onnx method); its one output "logits" is [N, classes].
// metadata becomes the model's metadata_props, with, for a network with
// a ScatterNet front end, its J, L and input and output shapes
// (frontEndMetadata) where metadata does not set those keys. The
// ScatterNet front layer is written as standard operators too
// (onnx_scatter.go), so every built-in network exports. A layer kind
// without ONNX nodes is an error naming the layer, in one line.
func (n *Net) WriteONNX(w io.Writer, in Input, metadata map[string]string) error {
	layers, _, err := n.Arch.Layers()
	if err != nil {
		return err
	}
	a := n.Arch
	if len(in.Mean) != 0 && (len(in.Mean) != a.C || len(in.Std) != a.C) {
		return fmt.Errorf("model: %d means and %d deviations for %d channels", len(in.Mean), len(in.Std), a.C)
	}
	g := &onnxGraph{net: n}
	x := g.node("Div", "scaled", []string{"pixels", g.constant("255", nil, []float32{255})})
	if len(in.Mean) != 0 {
		mean, inv := make([]float32, a.C), make([]float32, a.C)
		for c := range a.C {
			mean[c], inv[c] = float32(in.Mean[c]), float32(1/in.Std[c])
		}
		x = g.node("Sub", "centred", []string{x, g.perChannel("input.mean", false, mean)})
		x = g.node("Mul", "normalised", []string{x, g.perChannel("input.inv_std", false, inv)})
	}
	for _, l := range layers {
		k, ok := l.Kind.(onnxKind)
		if !ok {
			return fmt.Errorf("model: %s (%s) has no ONNX form in this version: a network with a %s layer cannot be exported to ONNX", l.Name, l.Kind.Type(), l.Kind.Type())
		}
		if x, err = k.onnx(g, l, x); err != nil {
			return fmt.Errorf("model: %s: %w", l.Name, err)
		}
	}
	g.nodes = append(g.nodes, &onnxpb.NodeProto{OpType: "Identity", Name: "logits", Input: []string{x}, Output: []string{"logits"}})
	m := &onnxpb.ModelProto{
		IrVersion:       ONNXIRVersion,
		OpsetImport:     []*onnxpb.OperatorSetIdProto{{Domain: "", Version: ONNXOpset}},
		ProducerName:    "dptune",
		ProducerVersion: CheckpointFormat,
		Graph: &onnxpb.GraphProto{
			Name:        a.Name,
			Node:        g.nodes,
			Initializer: g.inits,
			Input:       []*onnxpb.ValueInfoProto{{Name: "pixels", Type: tensorType("N", a.C, a.H, a.W)}},
			Output:      []*onnxpb.ValueInfoProto{{Name: "logits", Type: tensorType("N", a.Classes)}},
		},
	}
	metadata = withFrontEnd(metadata, a)
	keys := make([]string, 0, len(metadata))
	for k := range metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		m.MetadataProps = append(m.MetadataProps, &onnxpb.StringStringEntryProto{Key: k, Value: metadata[k]})
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
