package model

import (
	"fmt"

	_ "go4.org/unsafe/assume-no-moving-gc" // gorgonia v0.9.18 needs it to start on Go ≥ 1.26
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Mode says what a Graph computes besides the forward pass.
type Mode int

const (
	// Forward computes logits only.
	Forward Mode = iota
	// ParamGrads also computes the gradient of the summed loss with respect
	// to every parameter (gorgonia's G.Grad).
	ParamGrads
)

// Graph is the network built with gorgonia for a fixed batch size B: the
// definition of what an Arch computes, built layer by layer from its Spec
// (each layer's node by its kind), and the test oracle of dpsgd's native engine.
//
// Fill X and Y, call Run, then read Logits, Loss and — in ParamGrads mode —
// ParamGrad. The loss is the SUM over the batch of each example's softmax
// cross-entropy, so an example whose one-hot row in Y is all zero
// contributes nothing and has zero gradient: batches smaller than B are
// padded that way. A Graph is not safe for concurrent use.
type Graph struct {
	Net  *Net
	B    int
	Mode Mode
	// X is the input batch, [B, C, H, W]; Y the one-hot labels, [B, Classes].
	X, Y []float32

	vm       G.VM
	logits   G.Value
	loss     G.Value
	paramGrd []G.Value // per tensor of Net.Tensors (ParamGrads)
	grad     []float32
}

// NewGraph builds the network for batch size B in the given mode. The graph
// reads n.Params in place, and n.Buffers once, when it is built.
func (n *Net) NewGraph(B int, mode Mode) (*Graph, error) {
	if B < 1 {
		return nil, fmt.Errorf("model: batch size %d < 1", B)
	}
	c, h, w := n.Arch.Input()
	gr := &Graph{Net: n, B: B, Mode: mode,
		X: make([]float32, B*c*h*w), Y: make([]float32, B*n.Arch.Classes)}
	if err := gr.build(); err != nil {
		return nil, fmt.Errorf("model: building the %s graph for batch %d: %w", n.Arch.Name, B, err)
	}
	return gr, nil
}

func (gr *Graph) build() (err error) {
	// gorgonia reports some shape errors by panicking; turn them into errors.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	n, B, a := gr.Net, gr.B, gr.Net.Arch
	g := G.NewGraph()
	param := make([]*G.Node, len(n.Tensors))
	for i, t := range n.Tensors {
		v := tensor.New(tensor.WithShape(t.Shape...), tensor.WithBacking(n.Params[t.Offset:t.Offset+t.Size()]))
		param[i] = G.NewTensor(g, tensor.Float32, len(t.Shape), G.WithShape(t.Shape...), G.WithName(t.Name), G.WithValue(v))
	}
	ic, ih, iw := a.Input()
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(B, ic, ih, iw), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(B, ic, ih, iw), tensor.WithBacking(gr.X))))
	y := G.NewMatrix(g, tensor.Float32, G.WithShape(B, a.Classes), G.WithName("y"),
		G.WithValue(tensor.New(tensor.WithShape(B, a.Classes), tensor.WithBacking(gr.Y))))

	c := &graphCtx{g: g, B: B, buffers: n.Buffers}
	h := x
	pi := 0 // the next parameter tensor
	for _, l := range n.Layers {
		var w, b *G.Node
		if l.HasParams() {
			w, b = param[pi], param[pi+1]
			pi += 2
		}
		h = l.Kind.node(c, l, h, w, b)
	}
	h = c.flat(h)
	logits := h
	logp := G.Must(G.LogSoftMax(logits, 1))
	loss := G.Must(G.Neg(G.Must(G.Sum(G.Must(G.HadamardProd(logp, y))))))
	G.Read(logits, &gr.logits)
	G.Read(loss, &gr.loss)

	if gr.Mode == ParamGrads {
		grads, err := G.Grad(loss, param...)
		if err != nil {
			return err
		}
		gr.paramGrd = make([]G.Value, len(grads))
		for i := range grads {
			G.Read(grads[i], &gr.paramGrd[i])
		}
		gr.grad = make([]float32, len(n.Params))
	}
	gr.vm = G.NewTapeMachine(g)
	return nil
}

// graphCtx is what a layer's node sees of the graph being built.
type graphCtx struct {
	g *G.ExprGraph
	B int // batch size
	// buffers is Net.Buffers, which the nodes of layers with buffers read
	// when the graph is built.
	buffers []float32
	// pending is the feature count of a reshape to flat features not yet
	// applied. It is applied when a layer needs flat features (flat), or
	// for the logits: elementwise layers in between act on the feature
	// map, which is the same. Applied at once, gorgonia v0.9.18 would let
	// an activation after the reshape overwrite, through its shared
	// storage, an activation's output that the activation's gradient reads.
	pending int
}

// flat returns h as [B, features], applying a pending reshape.
func (c *graphCtx) flat(h *G.Node) *G.Node {
	if c.pending > 0 {
		h, c.pending = G.Must(G.Reshape(h, tensor.Shape{c.B, c.pending})), 0
	}
	return h
}

// standardize returns (x − μ)/√(σ² + eps) for each row of x ([rows, M]),
// with the row's mean μ and biased variance σ². Every broadcast is a
// matrix product with a constant vector of ones, and 1/√(σ² + ε) is
// Inverse(Sqrt(·)): gorgonia v0.9.18's gradients of its broadcasting
// operators (with respect to the broadcast operand) and of InverseSqrt
// disagree with finite differences. name prefixes the constants' names.
func (c *graphCtx) standardize(name string, x *G.Node, M int, eps float64) *G.Node {
	avg, spread := c.constant(name+".avg", M, 1, 1/float32(M)), c.constant(name+".spread", 1, M, 1)
	mean := G.Must(G.Mul(x, avg)) // [rows, 1]
	xc := G.Must(G.Sub(x, G.Must(G.Mul(mean, spread))))
	variance := G.Must(G.Mul(G.Must(G.Square(xc)), avg))
	e := c.g.AddNode(G.NewConstant(float32(eps)))
	rstd := G.Must(G.Inverse(G.Must(G.Sqrt(G.Must(G.Add(variance, e))))))
	return G.Must(G.HadamardProd(xc, G.Must(G.Mul(rstd, spread))))
}

// constant is an r×c matrix node of v.
func (c *graphCtx) constant(name string, r, cols int, v float32) *G.Node {
	d := make([]float32, r*cols)
	for i := range d {
		d[i] = v
	}
	return G.NewMatrix(c.g, tensor.Float32, G.WithShape(r, cols), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithShape(r, cols), tensor.WithBacking(d))))
}

// Run executes the graph on the current X and Y.
func (gr *Graph) Run() error {
	defer gr.vm.Reset()
	if err := gr.vm.RunAll(); err != nil {
		return fmt.Errorf("model: running the %s graph: %w", gr.Net.Arch.Name, err)
	}
	return nil
}

// Loss is the summed cross-entropy (nats) of the last Run.
func (gr *Graph) Loss() float32 { return gr.loss.Data().(float32) }

// Logits returns the last Run's logits, [B, Classes], owned by the Graph.
func (gr *Graph) Logits() []float32 { return gr.logits.Data().([]float32) }

// ParamGrad returns the last Run's gradient of the summed loss with respect
// to Net.Params, laid out like Params (ParamGrads mode), owned by the Graph.
func (gr *Graph) ParamGrad() []float32 {
	for i, t := range gr.Net.Tensors {
		copy(gr.grad[t.Offset:t.Offset+t.Size()], gr.paramGrd[i].Data().([]float32))
	}
	return gr.grad
}

// SetBatch fills X and Y with the examples idx of the dataset (x, y) — x is
// [N, C, H, W], y the labels — and pads the rest of
// the batch with zero images and all-zero label rows. It returns an error if
// len(idx) > B.
func (gr *Graph) SetBatch(x []float32, y []uint8, idx []int) error {
	if len(idx) > gr.B {
		return fmt.Errorf("model: %d examples for a graph of batch size %d", len(idx), gr.B)
	}
	s, k := len(gr.X)/gr.B, gr.Net.Arch.Classes
	clear(gr.Y)
	for j, i := range idx {
		copy(gr.X[j*s:(j+1)*s], x[i*s:(i+1)*s])
		gr.Y[j*k+int(y[i])] = 1
	}
	clear(gr.X[len(idx)*s:])
	return nil
}
