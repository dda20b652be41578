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
	// LayerGrads also backpropagates the summed loss down to each layer's
	// output (not to the parameters) and exposes a Trace.
	LayerGrads
	// ParamGrads also computes the gradient of the summed loss with respect
	// to every parameter (gorgonia's G.Grad).
	ParamGrads
)

// Graph is the network built with gorgonia for a fixed batch size B.
//
// Fill X and Y, call Run, then read Logits, Loss and — depending on the
// mode — Trace or ParamGrad. The loss is the SUM over the batch of each
// example's softmax cross-entropy, so an example whose one-hot row in Y is
// all zero contributes nothing and has zero gradient: batches smaller than B
// are padded that way. A Graph is not safe for concurrent use.
type Graph struct {
	Net  *Net
	B    int
	Mode Mode
	// X is the input batch, [B, C, H, W]; Y the one-hot labels, [B, Classes].
	X, Y []float32

	vm       G.VM
	logits   G.Value
	loss     G.Value
	layerIn  []G.Value // per layer: its input
	outGrad  []G.Value // per layer: d loss / d (layer output, bias included)
	paramGrd []G.Value // per tensor of Net.Tensors (ParamGrads)
	grad     []float32
}

// Trace is what one LayerGrads pass exposes for each layer l (in Net.Layers order):
// In[l], the layer's input, [B, In, InH, InW] (linear: [B, In]); and OutGrad[l],
// the gradient of the summed loss with respect to the layer's output
// including its bias, [B, Out, OutH, OutW] (linear: [B, Out]). Per-example
// parameter gradients follow from these alone (e.g. Goodfellow 2015,
// "Efficient per-example gradient computations"; Opacus's grad samplers).
// The slices are owned by the Graph and valid until its next Run.
type Trace struct {
	In, OutGrad [][]float32
}

// NewGraph builds the network for batch size B in the given mode. The graph
// reads n.Params in place.
func (n *Net) NewGraph(B int, mode Mode) (*Graph, error) {
	if B < 1 {
		return nil, fmt.Errorf("model: batch size %d < 1", B)
	}
	gr := &Graph{Net: n, B: B, Mode: mode,
		X: make([]float32, B*n.Arch.C*n.Arch.H*n.Arch.W), Y: make([]float32, B*n.Arch.Classes),
		layerIn: make([]G.Value, len(n.Layers)), outGrad: make([]G.Value, len(n.Layers))}
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
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(B, a.C, a.H, a.W), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(B, a.C, a.H, a.W), tensor.WithBacking(gr.X))))
	y := G.NewMatrix(g, tensor.Float32, G.WithShape(B, a.Classes), G.WithName("y"),
		G.WithValue(tensor.New(tensor.WithShape(B, a.Classes), tensor.WithBacking(gr.Y))))

	ins := make([]*G.Node, len(n.Layers))
	outs := make([]*G.Node, len(n.Layers))
	h := x
	for li, l := range n.Layers {
		w, b := param[2*li], param[2*li+1]
		ins[li] = h
		switch l.Kind {
		case ConvLayer:
			if li > 0 && n.Layers[li-1].Kind != ConvLayer {
				return fmt.Errorf("convolution after a linear layer")
			}
			c := G.Must(G.Conv2d(h, w, tensor.Shape{l.Kernel, l.Kernel}, []int{l.Pad, l.Pad}, []int{l.Stride, l.Stride}, nil))
			b4 := G.Must(G.Reshape(b, tensor.Shape{1, l.Out, 1, 1}))
			outs[li] = G.Must(G.BroadcastAdd(c, b4, nil, []byte{0, 2, 3}))
			r := G.Must(G.Rectify(outs[li]))
			h = G.Must(G.MaxPool2D(r, tensor.Shape{2, 2}, []int{0, 0}, []int{1, 1}))
			if li+1 < len(n.Layers) && n.Layers[li+1].Kind == LinearLayer {
				h = G.Must(G.Reshape(h, tensor.Shape{B, n.Layers[li+1].In}))
			}
		case LinearLayer:
			z := G.Must(G.Mul(h, G.Must(G.Transpose(w))))
			b2 := G.Must(G.Reshape(b, tensor.Shape{1, l.Out}))
			outs[li] = G.Must(G.BroadcastAdd(z, b2, nil, []byte{0}))
			h = outs[li]
			if li+1 < len(n.Layers) {
				h = G.Must(G.Rectify(h))
			}
		}
	}
	logits := h
	logp := G.Must(G.LogSoftMax(logits, 1))
	loss := G.Must(G.Neg(G.Must(G.Sum(G.Must(G.HadamardProd(logp, y))))))
	G.Read(logits, &gr.logits)
	G.Read(loss, &gr.loss)

	switch gr.Mode {
	case LayerGrads:
		one := g.AddNode(G.NewConstant(float32(1)))
		if _, err := G.Backpropagate(G.Nodes{loss}, G.Nodes{one}, G.Nodes{outs[0]}); err != nil {
			return err
		}
		for li := range n.Layers {
			d := outs[li].Deriv()
			if d == nil {
				return fmt.Errorf("no gradient for the output of layer %s", n.Layers[li].Name)
			}
			G.Read(d, &gr.outGrad[li])
			G.Read(ins[li], &gr.layerIn[li])
		}
	case ParamGrads:
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

// Trace returns the last Run's layer inputs and output gradients (LayerGrads mode).
func (gr *Graph) Trace() Trace {
	t := Trace{In: make([][]float32, len(gr.layerIn)), OutGrad: make([][]float32, len(gr.outGrad))}
	for i := range gr.layerIn {
		if gr.layerIn[i] != nil {
			t.In[i] = gr.layerIn[i].Data().([]float32)
			t.OutGrad[i] = gr.outGrad[i].Data().([]float32)
		}
	}
	return t
}

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
