package model

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/dptune/dptune/model/onnxpb"
	"github.com/dptune/dptune/model/scatter"
	G "gorgonia.org/gorgonia"
)

// noONNXSpec is a layer kind without an ONNX form (the identity), for the
// refusal test; it is not registered.
type noONNXSpec struct{}

func (noONNXSpec) Type() string                                       { return "noonnx" }
func (noONNXSpec) prefix() string                                     { return "noonnx" }
func (noONNXSpec) check() error                                       { return nil }
func (noONNXSpec) shape(in Shape, _ bool) (Shape, error)              { return in, nil }
func (noONNXSpec) node(_ *graphCtx, _ Layer, h, _, _ *G.Node) *G.Node { return h }

// An export of a network with a layer kind without an ONNX form is
// refused with one line naming the layer.
func TestONNXRefusesKindWithoutForm(t *testing.T) {
	arch, err := NewArch(Spec{Name: "no-onnx", Layers: []LayerSpec{Flatten(), layerOf(noONNXSpec{}), Linear(10)}}, 1, 4, 4, 10)
	if err != nil {
		t.Fatal(err)
	}
	n, err := NewZero(arch)
	if err != nil {
		t.Fatal(err)
	}
	err = n.WriteONNX(&bytes.Buffer{}, Input{}, nil)
	if err == nil || !strings.Contains(err.Error(), "noonnx1") || strings.Contains(err.Error(), "\n") {
		t.Errorf("export of a layer without an ONNX form: %v", err)
	}
}

// The ONNX nodes of the scatter layer, evaluated by evalONNX (in float64,
// by the ONNX operators' definitions), give the coefficients of
// scatter.Transform, for one and three channels, J = 1, 2, 3 and an image
// whose sides differ, to 1e-6 of the largest coefficient (the constants
// are float32); scatterONNXValues bounds the constants.
func TestONNXScatterEvaluated(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ C, H, W, J, L int }{{1, 28, 28, 2, 8}, {3, 16, 24, 1, 4}, {1, 16, 16, 3, 2}} {
		spec := Spec{Name: "scatter-linear", Layers: []LayerSpec{Scatter(c.J, c.L), Flatten(), Linear(2)}}
		arch, err := NewArch(spec, c.C, c.H, c.W, 2)
		if err != nil {
			t.Fatal(err)
		}
		n, err := NewZero(arch)
		if err != nil {
			t.Fatal(err)
		}
		layers, _, err := arch.Layers()
		if err != nil {
			t.Fatal(err)
		}
		g := &onnxGraph{net: n}
		out, err := layers[0].Kind.(onnxKind).onnx(g, layers[0], "x")
		if err != nil {
			t.Fatal(err)
		}
		values := 0
		for _, t := range g.inits {
			values += len(t.FloatData)
		}
		s, err := scatter.New(c.H, c.W, c.J, c.L)
		if err != nil {
			t.Fatal(err)
		}
		if bound := scatterONNXValues(s.Bank()); int64(values) > bound {
			t.Errorf("%+v: %d constant values, more than scatterONNXValues's %d", c, values, bound)
		}
		// The nodes round-trip through their protobuf encoding.
		var m onnxpb.GraphProto
		b, err := proto.Marshal(&onnxpb.GraphProto{Node: g.nodes, Initializer: g.inits})
		if err != nil {
			t.Fatal(err)
		}
		if err := proto.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		const images = 2
		size := c.C * c.H * c.W
		pixels := make([]float64, images*size)
		for i := range pixels {
			pixels[i] = float64(float32(rng.Float64()))
		}
		got, err := evalONNX(&m, "x", evalT{shape: []int{images, c.C, c.H, c.W}, v: pixels}, out)
		if err != nil {
			t.Fatal(err)
		}
		k, oh, ow := s.OutShape()
		want := make([]float32, images*c.C*k*oh*ow)
		img := make([]float32, size)
		for i := range images {
			for j := range img {
				img[j] = float32(pixels[i*size+j])
			}
			if err := s.TransformChannels(want[i*c.C*k*oh*ow:(i+1)*c.C*k*oh*ow], img, c.C); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(got.shape, []int{images, c.C * k, oh, ow}) {
			t.Fatalf("%+v: output shape %v, want %v", c, got.shape, []int{images, c.C * k, oh, ow})
		}
		worst, largest := 0.0, 0.0
		for i, w := range want {
			worst = math.Max(worst, math.Abs(got.v[i]-float64(w)))
			largest = math.Max(largest, math.Abs(float64(w)))
		}
		t.Logf("%+v: largest difference %.3g of %.3g", c, worst, largest)
		if worst > 1e-6*largest {
			t.Errorf("%+v: largest difference %v, largest coefficient %v", c, worst, largest)
		}
	}
}

// evalT is a value of evalONNX: float64 values, or int64 ones (shapes,
// axes) in iv.
type evalT struct {
	shape []int
	v     []float64
	iv    []int64
}

// evalONNX evaluates the nodes of g on the value x of input, and returns
// output, by the definitions of the ONNX operators (opset 17) that the
// scatter layer's nodes use, in float64: a reference independent of any
// ONNX runtime.
func evalONNX(g *onnxpb.GraphProto, input string, x evalT, output string) (evalT, error) {
	vals := map[string]evalT{input: x}
	for _, t := range g.Initializer {
		shape := make([]int, len(t.Dims))
		for i, d := range t.Dims {
			shape[i] = int(d)
		}
		if t.DataType == int32(onnxpb.TensorProto_INT64) {
			vals[t.Name] = evalT{shape: shape, iv: t.Int64Data}
			continue
		}
		v := make([]float64, len(t.FloatData))
		for i, f := range t.FloatData {
			v[i] = float64(f)
		}
		vals[t.Name] = evalT{shape: shape, v: v}
	}
	attr := func(n *onnxpb.NodeProto, name string) *onnxpb.AttributeProto {
		for _, a := range n.Attribute {
			if a.Name == name {
				return a
			}
		}
		return nil
	}
	for _, n := range g.Node {
		in := make([]evalT, len(n.Input))
		for i, name := range n.Input {
			in[i] = vals[name]
		}
		var out []evalT
		switch n.OpType {
		case "Div", "Sub", "Mul", "Add":
			out = []evalT{broadcast(n.OpType, in[0], in[1])}
		case "Sqrt":
			v := make([]float64, len(in[0].v))
			for i, x := range in[0].v {
				v[i] = math.Sqrt(x)
			}
			out = []evalT{{shape: in[0].shape, v: v}}
		case "MatMul":
			out = []evalT{matmul(in[0], in[1])}
		case "Reshape":
			shape := make([]int, len(in[1].iv))
			rest, neg := len(in[0].v), -1
			for i, d := range in[1].iv {
				switch d {
				case 0:
					shape[i] = in[0].shape[i]
				case -1:
					neg = i
					continue
				default:
					shape[i] = int(d)
				}
				rest /= shape[i]
			}
			if neg >= 0 {
				shape[neg] = rest
			}
			out = []evalT{{shape: shape, v: in[0].v}}
		case "Unsqueeze":
			shape := slices.Insert(slices.Clone(in[0].shape), int(in[1].iv[0]), 1)
			out = []evalT{{shape: shape, v: in[0].v}}
		case "Transpose":
			out = []evalT{transposeT(in[0], attr(n, "perm").Ints)}
		case "Split":
			axis := int(attr(n, "axis").I)
			if axis < 0 {
				axis += len(in[0].shape)
			}
			parts := len(n.Output)
			for p := range parts {
				out = append(out, sliceAxis(in[0], axis, p*in[0].shape[axis]/parts, (p+1)*in[0].shape[axis]/parts))
			}
		case "Concat":
			out = []evalT{concat(in, int(attr(n, "axis").I))}
		case "Identity":
			out = []evalT{in[0]}
		default:
			return evalT{}, fmt.Errorf("evalONNX: no %s", n.OpType)
		}
		for i, name := range n.Output {
			vals[name] = out[i]
		}
	}
	return vals[output], nil
}

// strides returns the row-major strides of shape.
func strides(shape []int) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

// offsetIn returns the flat index in a tensor of shape (right-aligned
// against out's rank, broadcast along its axes of size 1) of the element
// of out's multi-index idx.
func offsetIn(shape []int, idx []int) int {
	st := strides(shape)
	off, shift := 0, len(idx)-len(shape)
	for i, d := range shape {
		if d != 1 {
			off += idx[shift+i] * st[i]
		}
	}
	return off
}

// broadcastShape is numpy's broadcast of a and b.
func broadcastShape(a, b []int) []int {
	r := max(len(a), len(b))
	out := make([]int, r)
	for i := range r {
		da, db := 1, 1
		if j := i - (r - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (r - len(b)); j >= 0 {
			db = b[j]
		}
		out[i] = max(da, db)
	}
	return out
}

// unravel returns the multi-index of flat index i in shape.
func unravel(i int, shape []int, idx []int) {
	for k := len(shape) - 1; k >= 0; k-- {
		idx[k] = i % shape[k]
		i /= shape[k]
	}
}

func broadcast(op string, a, b evalT) evalT {
	shape := broadcastShape(a.shape, b.shape)
	size := 1
	for _, d := range shape {
		size *= d
	}
	v := make([]float64, size)
	idx := make([]int, len(shape))
	for i := range v {
		unravel(i, shape, idx)
		x, y := a.v[offsetIn(a.shape, idx)], b.v[offsetIn(b.shape, idx)]
		switch op {
		case "Div":
			v[i] = x / y
		case "Sub":
			v[i] = x - y
		case "Mul":
			v[i] = x * y
		case "Add":
			v[i] = x + y
		}
	}
	return evalT{shape: shape, v: v}
}

// matmul is numpy's matmul for operands of rank at least 2.
func matmul(a, b evalT) evalT {
	ra, rb := len(a.shape), len(b.shape)
	m, k, n := a.shape[ra-2], a.shape[ra-1], b.shape[rb-1]
	batch := broadcastShape(a.shape[:ra-2], b.shape[:rb-2])
	count := 1
	for _, d := range batch {
		count *= d
	}
	v := make([]float64, count*m*n)
	idx := make([]int, len(batch))
	aBatch, bBatch := a.shape[:ra-2], b.shape[:rb-2]
	for bi := range count {
		unravel(bi, batch, idx)
		ao := offsetIn(aBatch, idx) * m * k
		bo := offsetIn(bBatch, idx) * k * n
		o := v[bi*m*n : (bi+1)*m*n]
		for i := range m {
			for p := range k {
				x := a.v[ao+i*k+p]
				row := b.v[bo+p*n : bo+(p+1)*n]
				for j, y := range row {
					o[i*n+j] += x * y
				}
			}
		}
	}
	return evalT{shape: append(slices.Clone(batch), m, n), v: v}
}

func transposeT(a evalT, perm []int64) evalT {
	shape := make([]int, len(perm))
	for i, p := range perm {
		shape[i] = a.shape[p]
	}
	st := strides(a.shape)
	v := make([]float64, len(a.v))
	idx := make([]int, len(shape))
	for i := range v {
		unravel(i, shape, idx)
		off := 0
		for k, p := range perm {
			off += idx[k] * st[p]
		}
		v[i] = a.v[off]
	}
	return evalT{shape: shape, v: v}
}

func sliceAxis(a evalT, axis, lo, hi int) evalT {
	shape := slices.Clone(a.shape)
	shape[axis] = hi - lo
	outer, inner := 1, 1
	for _, d := range a.shape[:axis] {
		outer *= d
	}
	for _, d := range a.shape[axis+1:] {
		inner *= d
	}
	var v []float64
	for o := range outer {
		base := o * a.shape[axis] * inner
		v = append(v, a.v[base+lo*inner:base+hi*inner]...)
	}
	return evalT{shape: shape, v: v}
}

func concat(in []evalT, axis int) evalT {
	if axis < 0 {
		axis += len(in[0].shape)
	}
	shape := slices.Clone(in[0].shape)
	shape[axis] = 0
	for _, t := range in {
		shape[axis] += t.shape[axis]
	}
	outer := 1
	for _, d := range shape[:axis] {
		outer *= d
	}
	var v []float64
	for o := range outer {
		for _, t := range in {
			chunk := len(t.v) / outer
			v = append(v, t.v[o*chunk:(o+1)*chunk]...)
		}
	}
	return evalT{shape: shape, v: v}
}
