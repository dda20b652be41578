package model

import (
	"strings"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model/scatter"
)

// The scatter layer's output is 81·C × H/4 × W/4 for J = 2, L = 8
// (1 + J·L + L²·J(J−1)/2 channels per input channel), and it is what the
// graph reads (Input).
func TestScatterShapes(t *testing.T) {
	for _, c := range []struct{ C, H, W, J, L, outC, outH, outW int }{
		{1, 28, 28, 2, 8, 81, 7, 7},
		{3, 32, 32, 2, 8, 243, 8, 8},
		{1, 28, 28, 1, 2, 3, 14, 14},
		{2, 16, 24, 3, 4, 2 * (1 + 12 + 16*3), 2, 3},
	} {
		s := Spec{Name: "s", Layers: []LayerSpec{Scatter(c.J, c.L), Flatten(), Linear(10)}}
		a, err := NewArch(s, c.C, c.H, c.W, 10)
		if err != nil {
			t.Fatal(err)
		}
		ls, _, _ := a.Layers()
		if ls[0].Out != c.outC || ls[0].OutH != c.outH || ls[0].OutW != c.outW {
			t.Errorf("%+v: output %d×%d×%d", c, ls[0].Out, ls[0].OutH, ls[0].OutW)
		}
		if ic, ih, iw := a.Input(); ic != c.outC || ih != c.outH || iw != c.outW {
			t.Errorf("%+v: Input %d×%d×%d", c, ic, ih, iw)
		}
		f, ok := a.FrontEnd()
		if !ok || f.InSize != c.C*c.H*c.W || f.OutSize != c.outC*c.outH*c.outW {
			t.Errorf("%+v: front end %+v, %v", c, f, ok)
		}
	}
	if c, h, w := MNIST.Input(); c != 1 || h != 28 || w != 28 {
		t.Errorf("a network without a front end reads %d×%d×%d", c, h, w)
	}
	if _, ok := MNIST.FrontEnd(); ok {
		t.Error("opacus-mnist has a front end")
	}
}

func TestScatterErrors(t *testing.T) {
	for _, c := range []struct {
		js   string
		h, w int
		want string
	}{
		{`{"name":"a","layers":[{"type":"flatten"},{"type":"scatter","j":2,"l":8},{"type":"linear","out":10}]}`, 28, 28, "must be the network's first layer"},
		{`{"name":"a","layers":[{"type":"scatter","j":2,"l":8},{"type":"flatten"},{"type":"linear","out":10}]}`, 30, 28, "image sides 30×28 are not multiples of 2^J = 4"},
		{`{"name":"a","layers":[{"type":"scatter","J":3,"L":8},{"type":"flatten"},{"type":"linear","out":10}]}`, 28, 28, "not multiples of 2^J = 8"},
		{`{"name":"a","layers":[{"type":"scatter","l":8},{"type":"flatten"},{"type":"linear","out":10}]}`, 28, 28, "J 0 is outside [1, 8]"},
		{`{"name":"a","layers":[{"type":"scatter","j":2,"l":33},{"type":"flatten"},{"type":"linear","out":10}]}`, 28, 28, "L 33 is outside [1, 32]"},
		{`{"name":"a","layers":[{"type":"scatter","j":2,"l":8,"out":3},{"type":"flatten"},{"type":"linear","out":10}]}`, 28, 28, "a scatter layer has no out"},
	} {
		s, err := ParseSpec(strings.NewReader(c.js))
		if err == nil {
			_, err = NewArch(s, 1, c.h, c.w, 10)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want %q", c.js, err, c.want)
		}
	}
}

// The front end's transform of a C-channel image is the scattering of
// each channel on its own, one after another.
func TestScatterTransformerPerChannel(t *testing.T) {
	a, err := NewArch(Spec{Name: "s", Layers: []LayerSpec{Scatter(2, 4), Flatten(), Linear(10)}}, 2, 16, 16, 10)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := a.FrontEnd()
	tr, err := f.Transformer()
	if err != nil {
		t.Fatal(err)
	}
	rng := randsrc.Seeded(1, "img")
	img := make([]float32, f.InSize)
	for i := range img {
		img[i] = float32(rng.NormFloat64())
	}
	got := make([]float32, f.OutSize)
	if err := tr(got, img); err != nil {
		t.Fatal(err)
	}
	s, _ := scatter.New(16, 16, 2, 4)
	per := f.OutSize / 2
	for c := 0; c < 2; c++ {
		want := make([]float32, per)
		if err := s.Transform(want, img[c*256:(c+1)*256]); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[c*per+i] != want[i] {
				t.Fatalf("channel %d, value %d: %v, want %v", c, i, got[c*per+i], want[i])
			}
		}
	}
}

// The gorgonia graph of the built-in scatter networks, on their features,
// against the float64 reference, gradients included.
func TestScatterGraphsMatchReference(t *testing.T) {
	for _, s := range []Spec{ScatterLinearMNIST, ScatterCNNMNIST} {
		n, err := New(Arch{Spec: s, C: 1, H: 28, W: 28, Classes: 10}, randsrc.Seeded(4, "init"))
		if err != nil {
			t.Fatal(err)
		}
		checkGraph(t, n, 6, 3)
	}
}
