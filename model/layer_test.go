package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
)

// A spec with a layer of every registered kind survives a JSON round trip:
// the same layers after parsing, the same bytes when written again.
func TestEveryKindJSONRoundTrip(t *testing.T) {
	js := `{"name":"all","layers":[{"type":"scatter","j":1,"l":2},{"type":"datanorm","noise_multiplier":6.5,"square_clip_norm":3},{"type":"layernorm"},{"type":"conv2d","out":8,"kernel":3,"stride":1,"padding":1},` +
		`{"type":"groupnorm","groups":2},{"type":"silu"},{"type":"avgpool2d","kernel":2},{"type":"conv2d","out":8,"kernel":3},` +
		`{"type":"relu"},{"type":"maxpool2d","kernel":2,"stride":1},{"type":"tanh"},{"type":"flatten"},{"type":"gelu"},{"type":"linear","out":10}]}`
	s, err := ParseSpec(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range s.Layers {
		seen[l.Type] = true
	}
	for _, typ := range LayerTypes() {
		if !seen[typ] {
			t.Errorf("layer type %s missing from the test spec", typ)
		}
	}
	if _, err := NewArch(s, 1, 28, 28, 10); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(s)
	if err != nil || string(out) != js {
		t.Fatalf("written again as %s (%v)", out, err)
	}
	want := Spec{Name: "all", Layers: []LayerSpec{Scatter(1, 2), DataNorm(6.5, 0, 3), LayerNorm(), Conv2d(8, 3, 1, 1), GroupNorm(2), SiLU(), AvgPool2d(2, 0),
		Conv2d(8, 3, 0, 0), ReLU(), MaxPool2d(2, 1), Tanh(), Flatten(), GELU(), Linear(10)}}
	a, b := Arch{Spec: s, C: 1, H: 28, W: 28, Classes: 10}, Arch{Spec: want, C: 1, H: 28, W: 28, Classes: 10}
	if !a.Equal(b) {
		t.Fatalf("parsed %+v, want %+v", s.Layers, want.Layers)
	}
}

// The JSON of the built-in specs is what it was before kinds registered
// themselves (the bytes of model.json depend on it).
func TestBuiltinSpecJSON(t *testing.T) {
	b, _ := json.Marshal(OpacusMNIST)
	want := `{"name":"opacus-mnist","layers":[{"type":"conv2d","out":16,"kernel":8,"stride":2,"padding":3},{"type":"relu"},` +
		`{"type":"maxpool2d","kernel":2,"stride":1},{"type":"conv2d","out":32,"kernel":4,"stride":2},{"type":"relu"},` +
		`{"type":"maxpool2d","kernel":2,"stride":1},{"type":"flatten"},{"type":"linear","out":32},{"type":"relu"},{"type":"linear","out":10}]}`
	if string(b) != want {
		t.Fatalf("got %s", b)
	}
}

// A key no kind has is an error at once; a key another kind has is an
// error unless it is 0, as omitempty writes it.
func TestLayerKeys(t *testing.T) {
	for _, c := range []struct{ js, want string }{
		{`{"name":"a","layers":[{"type":"flatten","size":3},{"type":"linear","out":10}]}`, `unknown field "size" in a flatten layer`},
		{`{"name":"a","layers":[{"type":"flatten","groups":2},{"type":"linear","out":10}]}`, "layer 1 (flatten): a flatten layer has no groups"},
		{`{"name":"a","layers":[{"type":"flatten","groups":0},{"type":"linear","out":10,"stride":0}]}`, ""},
		{`{"name":"a","layers":[{"type":"layernorm","kernel":1},{"type":"flatten"},{"type":"linear","out":10}]}`, "a layernorm layer has no kernel"},
	} {
		_, err := ParseSpec(strings.NewReader(c.js))
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.js, err, c.want)
		}
	}
}

// Registering a type twice is a programming error: it panics.
func TestRegisterLayerTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a second registration of silu did not panic")
		}
	}()
	RegisterLayer(SiLUSpec{})
}

// A layer norm's γ and β have the shape of its input, as
// torch.nn.LayerNorm(input.shape[1:]) gives them, and start at 1 and 0.
func TestLayerNormParameters(t *testing.T) {
	a, err := NewArch(Spec{Name: "ln", Layers: []LayerSpec{Conv2d(4, 3, 1, 0), LayerNorm(), Flatten(), Linear(8), LayerNorm(), Linear(10)}}, 1, 7, 7, 10)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(a, randsrc.Seeded(1, "init"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tn := range n.Tensors {
		got = append(got, fmt.Sprint(tn.Name, tn.Shape))
	}
	want := "conv1.weight[4 1 3 3] conv1.bias[4] ln1.weight[4 5 5] ln1.bias[4 5 5] fc1.weight[8 100] fc1.bias[8] ln2.weight[8] ln2.bias[8] fc2.weight[10 8] fc2.bias[10]"
	if strings.Join(got, " ") != want {
		t.Fatalf("tensors %s, want %s", strings.Join(got, " "), want)
	}
	for _, name := range []string{"ln1", "ln2"} {
		for _, v := range n.Tensor(name + ".weight") {
			if v != 1 {
				t.Fatalf("%s.weight starts at %v", name, v)
			}
		}
		for _, v := range n.Tensor(name + ".bias") {
			if v != 0 {
				t.Fatalf("%s.bias starts at %v", name, v)
			}
		}
	}
}

// Layer norm and SiLU, in a spec read from JSON, give a gorgonia graph that
// matches the float64 reference, parameter gradients included.
func TestLayerNormSiLUGraphMatchesReference(t *testing.T) {
	js := `{"name":"ln-silu","layers":[{"type":"conv2d","out":4,"kernel":3,"padding":1},{"type":"layernorm"},{"type":"silu"},` +
		`{"type":"maxpool2d","kernel":2},{"type":"flatten"},{"type":"layernorm"},{"type":"linear","out":6},{"type":"silu"},{"type":"linear","out":3}]}`
	path := filepath.Join(t.TempDir(), "ln-silu.json")
	if err := os.WriteFile(path, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewArch(s, 2, 6, 6, 3)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(a, randsrc.Seeded(6, "init"))
	if err != nil {
		t.Fatal(err)
	}
	rng := randsrc.Seeded(6, "perturb")
	for _, l := range n.Layers {
		if _, ok := l.Kind.(LayerNormSpec); ok {
			for k := l.WeightOffset; k < l.BiasOffset+l.BiasSize(); k++ {
				n.Params[k] += float32(0.3 * rng.NormFloat64())
			}
		}
	}
	checkGraph(t, n, 7, 8)
	var buf bytes.Buffer
	json.NewEncoder(&buf).Encode(s)
	if strings.TrimSpace(buf.String()) != js {
		t.Fatalf("written again as %s", buf.String())
	}
}

// The GELU's graph (built from gorgonia's operators, with an erf accurate
// to 1.5·10⁻⁷) matches the float64 reference's exact erf, parameter
// gradients included.
func TestGELUGraphMatchesReference(t *testing.T) {
	a, err := NewArch(Spec{Name: "gelu", Layers: []LayerSpec{GELU(), Conv2d(4, 3, 1, 1), GELU(), Flatten(), Linear(6), GELU(), Linear(3)}}, 2, 5, 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(a, randsrc.Seeded(8, "init"))
	if err != nil {
		t.Fatal(err)
	}
	checkGraph(t, n, 9, 8)
}

// MACs is a layer's forward product, by hand for opacus-mnist: conv1
// 14·14 positions × 1·8·8 × 16, conv2 (on the 13×13 pooled map) 5·5 × 16·4·4
// × 32, fc1 512 × 32, fc2 32 × 10; every other layer has none.
func TestMACs(t *testing.T) {
	n, err := NewZero(MNIST)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, l := range n.Layers {
		got = append(got, l.MACs())
	}
	want := []int{14 * 14 * 64 * 16, 0, 0, 5 * 5 * 256 * 32, 0, 0, 0, 512 * 32, 0, 32 * 10}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("MACs %v, want %v", got, want)
	}
}

// Every spec in examples/ loads and fits MNIST's input.
func TestExampleSpecs(t *testing.T) {
	paths, err := filepath.Glob("../examples/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no example specs: %v", err)
	}
	for _, p := range paths {
		s, err := LoadSpec(p)
		if err == nil {
			_, err = NewArch(s, 1, 28, 28, 10)
		}
		if err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
