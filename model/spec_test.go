package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dptune/dptune/internal/randsrc"
)

// checkGraph compares the gorgonia graph of n with the float64 reference:
// logits and summed loss of a batch with a padding row, and, when coords >
// 0, the parameter gradients against central finite differences of the
// reference at coords random coordinates of every tensor.
func checkGraph(t *testing.T, n *Net, seed uint64, coords int) {
	t.Helper()
	a := n.Arch
	mode := Forward
	if coords > 0 {
		mode = ParamGrads
	}
	g, err := n.NewGraph(3, mode)
	if err != nil {
		t.Fatal(err)
	}
	x, y := randomBatch(t, n, 3, 2, seed)
	if err := g.SetBatch(x, y, seq(2)); err != nil {
		t.Fatal(err)
	}
	if err := g.Run(); err != nil {
		t.Fatal(err)
	}
	p := to64(n.Params)
	ic, ih, iw := a.Input()
	size := ic * ih * iw
	loss := func() float64 {
		return refLoss(n, p, to64(x[:size]), int(y[0])) + refLoss(n, p, to64(x[size:2*size]), int(y[1]))
	}
	for i := 0; i < 2; i++ {
		want := refForward(n, p, to64(x[i*size:(i+1)*size]))
		got := g.Logits()[i*a.Classes : (i+1)*a.Classes]
		for k := range want {
			if math.Abs(float64(got[k])-want[k]) > 1e-4*(1+math.Abs(want[k])) {
				t.Fatalf("%s example %d logit %d: %v, reference %v", a.Name, i, k, got[k], want[k])
			}
		}
	}
	if want := loss(); math.Abs(float64(g.Loss())-want) > 1e-4*(1+want) {
		t.Fatalf("%s summed loss %v, reference %v (padding row must add nothing)", a.Name, g.Loss(), want)
	}
	if coords == 0 {
		return
	}
	grad := g.ParamGrad()
	rng := randsrc.Seeded(seed, "coords")
	f0 := loss()
	kinks, checked := 0, 0
	for _, tn := range n.Tensors {
		for k := 0; k < coords; k++ {
			i := tn.Offset + rng.IntN(tn.Size())
			const h = 1e-5
			orig := p[i]
			p[i] = orig + h
			up := loss()
			p[i] = orig - h
			down := loss()
			p[i] = orig
			d := (up - down) / (2 * h)
			tol := 2e-3 * (math.Abs(d) + 1e-2)
			// A ReLU or max-pool switching within ±h (a kink) makes the
			// one-sided differences disagree: the loss has no derivative
			// to compare there.
			if math.Abs((up-f0)/h-(f0-down)/h) > tol {
				kinks++
				continue
			}
			checked++
			if math.Abs(float64(grad[i])-d) > tol {
				t.Errorf("%s %s[%d]: gorgonia %v, finite difference %v", a.Name, tn.Name, i-tn.Offset, grad[i], d)
			}
		}
	}
	if kinks > checked/10 {
		t.Errorf("%s: %d of %d coordinates at a kink", a.Name, kinks, kinks+checked)
	}
}

func TestBuiltinGraphsMatchReference(t *testing.T) {
	for _, a := range []Arch{{Spec: TBMNIST, C: 1, H: 28, W: 28, Classes: 10}, {Spec: TBCIFAR10, C: 3, H: 32, W: 32, Classes: 10}} {
		n, err := New(a, randsrc.Seeded(3, "init"))
		if err != nil {
			t.Fatal(err)
		}
		coords := 0
		if a.Name == "tb-mnist" {
			coords = 3
		}
		checkGraph(t, n, 5, coords)
	}
}

// A random spec per run (the seed is logged): the graph of every layer
// type against the reference, gradients included.
func TestRandomGraphsMatchReference(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	for i := range 6 {
		a := RandomArch(randsrc.Seeded(seed+uint64(i), "spec"))
		js, _ := json.Marshal(a)
		t.Logf("seed %d: %s", seed+uint64(i), js)
		n, err := New(a, randsrc.Seeded(seed+uint64(i), "init"))
		if err != nil {
			t.Fatal(err)
		}
		// A normalisation's weight starts at 1 and its bias at 0; move
		// them so that their gradients are tested away from the start.
		rng := randsrc.Seeded(seed, "perturb")
		for _, l := range n.Layers {
			if k, ok := l.Kind.(randomKind); ok && k.role() == roleNorm {
				for k := l.WeightOffset; k < l.BiasOffset+l.BiasSize(); k++ {
					n.Params[k] += float32(0.3 * rng.NormFloat64())
				}
			}
		}
		checkGraph(t, n, seed+uint64(i), 3)
	}
}

func TestSpecErrorsNameTheLayer(t *testing.T) {
	for _, c := range []struct{ js, want string }{
		{`{"name":"a","layers":[{"type":"conv2d","out":4,"kernel":3},{"type":"linear","out":10}]}`, "layer 2 (linear fc1): needs flat features"},
		{`{"name":"a","layers":[{"type":"conv2d","out":4,"kernel":40}]}`, "kernel 40 is outside"},
		{`{"name":"a","layers":[{"type":"conv2d","out":4,"kernel":30},{"type":"flatten"},{"type":"linear","out":10}]}`, "layer 1 (conv2d conv1): its 28×28 input (padding 0) is smaller than its 30×30 kernel"},
		{`{"name":"a","layers":[{"type":"flatten"},{"type":"linear","out":7}]}`, "ends in 7 features; it must end in 10"},
		{`{"name":"a","layers":[{"type":"conv2d","out":6,"kernel":3},{"type":"groupnorm","groups":4},{"type":"flatten"},{"type":"linear","out":10}]}`, "4 groups do not divide 6 channels"},
		{`{"name":"a","layers":[{"type":"flatten"},{"type":"maxpool2d","kernel":2}]}`, "needs a feature map"},
		{`{"name":"a","layers":[{"type":"dense","out":10}]}`, `unknown layer type "dense"`},
		{`{"name":"a","layers":[{"type":"linear","out":10,"kernel":3}]}`, "a linear layer has no kernel"},
		{`{"name":"a","layers":[{"type":"flatten"},{"type":"linear","out":4096},{"type":"linear","out":4096},{"type":"linear","out":4096},{"type":"linear","out":4096},{"type":"linear","out":4096},{"type":"linear","out":10}]}`, "over 67108864 parameters"},
		{`{"name":"a","layers":[],"extra":1}`, "unknown field"},
		{`{"name":"a","layers":[{"type":"flatten"},{"type":"linear","out":10}]} {}`, "data after"},
	} {
		s, err := ParseSpec(strings.NewReader(c.js))
		if err == nil {
			_, err = NewArch(s, 1, 28, 28, 10)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.js, err, c.want)
		}
	}
}

// The spec of a JSON file trains the same network as the built-in one.
func TestSpecJSONRoundTrip(t *testing.T) {
	for _, s := range BuiltinSpecs() {
		js, _ := json.Marshal(s)
		path := filepath.Join(t.TempDir(), "net.json")
		os.WriteFile(path, js, 0o644)
		got, err := LoadSpec(path)
		if err != nil {
			t.Fatal(err)
		}
		a, err := NewArch(got, 1, 28, 28, 10)
		if err != nil {
			t.Fatal(err)
		}
		if b := (Arch{Spec: s, C: 1, H: 28, W: 28, Classes: 10}); !a.Equal(b) {
			t.Fatalf("%s: %+v after the round trip", s.Name, a)
		}
	}
	if _, err := LoadSpec("no-such-net"); err == nil || !strings.Contains(err.Error(), "tb-mnist") {
		t.Fatalf("unknown name: %v", err)
	}
}

// A checkpoint written before specs existed ("arch" without layers, named
// mnist-cnn) loads as opacus-mnist with the same parameters.
func TestLegacyCheckpointLoads(t *testing.T) {
	n, _ := New(MNIST, randsrc.Seeded(21, "init"))
	dir := t.TempDir()
	if err := n.Save(dir, Metadata{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "model.json")
	var h map[string]any
	b, _ := os.ReadFile(path)
	json.Unmarshal(b, &h)
	h["arch"] = map[string]any{"name": "mnist-cnn", "channels": 1, "height": 28, "width": 28, "classes": 10}
	b, _ = json.Marshal(h)
	os.WriteFile(path, b, 0o644)
	m, _, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Arch.Equal(MNIST) || !bytes.Equal(f32bytes(m.Params), f32bytes(n.Params)) {
		t.Fatalf("legacy checkpoint loaded as %+v", m.Arch)
	}
}

func f32bytes(v []float32) []byte {
	var b bytes.Buffer
	for _, x := range v {
		fmt.Fprintf(&b, "%08x", math.Float32bits(x))
	}
	return b.Bytes()
}
