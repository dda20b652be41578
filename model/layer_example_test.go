package model

import (
	"fmt"
	"math"
	"strings"
	"sync"

	G "gorgonia.org/gorgonia"
)

// ScaleSpec is a layer kind added from a test file: it multiplies its
// input by Factor, elementwise; no parameters. A kind's own file
// (layer_<type>.go) holds what this one does — its hyperparameters and
// their check, its output shape and its gorgonia node — and registers the
// kind in init; dpsgd's layer_<type>.go adds its engine rules.
type ScaleSpec struct {
	Factor float64 `json:"factor,omitempty"`
}

func (ScaleSpec) Type() string   { return "scale" }
func (ScaleSpec) prefix() string { return "scale" }

func (p ScaleSpec) check() error {
	if !(p.Factor > 0) || math.IsInf(p.Factor, 1) {
		return fmt.Errorf("factor %v must be positive and finite", p.Factor)
	}
	return nil
}

func (ScaleSpec) shape(in Shape, _ bool) (Shape, error) { return in, nil }

func (p ScaleSpec) node(_ *graphCtx, _ Layer, h, _, _ *G.Node) *G.Node {
	return G.Must(G.Mul(h, G.NewConstant(float32(p.Factor))))
}

var registerScale sync.Once

// A layer kind added from a test file: once registered, a JSON spec names
// it by its type, Spec.Check runs its check, the architecture takes its
// shape and the network's graph its node. (A kind's own file registers it
// in init; this example registers it when it runs, after the tests that
// list every registered kind.)
func ExampleRegisterLayer() {
	registerScale.Do(func() { RegisterLayer(ScaleSpec{}) })

	spec, err := ParseSpec(strings.NewReader(`{"name": "scaled", "layers": [{"type": "scale", "factor": 2}, {"type": "flatten"}, {"type": "linear", "out": 2}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	arch, err := NewArch(spec, 1, 2, 2, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	layers, _, _ := arch.Layers()
	for _, l := range layers {
		fmt.Printf("%s: %d×%d×%d\n", l.Name, l.Out, l.OutH, l.OutW)
	}

	// A network whose linear layer sums its four inputs: the logits are
	// twice the sum of the image's pixels.
	net, _ := NewZero(arch)
	for i := range net.Tensor("fc1.weight") {
		net.Tensor("fc1.weight")[i] = 1
	}
	g, err := net.NewGraph(1, Forward)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := g.SetBatch([]float32{1, 2, 3, 4}, []uint8{0}, []int{0}); err != nil {
		fmt.Println(err)
		return
	}
	if err := g.Run(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("logits", g.Logits())

	_, err = ParseSpec(strings.NewReader(`{"name": "unscaled", "layers": [{"type": "scale"}, {"type": "flatten"}, {"type": "linear", "out": 2}]}`))
	fmt.Println(err)
	// Output:
	// scale1: 1×2×2
	// flatten1: 4×1×1
	// fc1: 2×1×1
	// logits [20 20]
	// model: spec unscaled, layer 1 (scale): factor 0 must be positive and finite
}
