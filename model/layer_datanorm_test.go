package model

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
)

// dataNormNet returns scatter + datanorm + conv + tanh + flatten + linear
// on 1×8×8 images (features 3×4×4) with random parameters and buffers μ,
// v drawn at random, channel 1's variance 0.
func dataNormNet(t *testing.T) *Net {
	t.Helper()
	s := Spec{Name: "dn", Layers: []LayerSpec{Scatter(1, 2), DataNorm(0, 0, 0), Conv2d(4, 3, 1, 1), Tanh(), Flatten(), Linear(3)}}
	a, err := NewArch(s, 1, 8, 8, 3)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(a, randsrc.Seeded(1, "init"))
	if err != nil {
		t.Fatal(err)
	}
	rng := randsrc.Seeded(2, "buffers")
	mean, variance := n.Buffer("dn1.mean"), n.Buffer("dn1.var")
	if len(mean) != 3 || len(variance) != 3 {
		t.Fatalf("buffers %v", n.BufferTensors)
	}
	for c := range mean {
		mean[c], variance[c] = float32(rng.NormFloat64()), float32(0.1+rng.Float64())
	}
	variance[1] = 0
	return n
}

// A datanorm layer's graph, forward and gradients, against the float64
// reference (which zeroes a channel of variance 0, as Tramèr & Boneh do).
func TestDataNormGraphMatchesReference(t *testing.T) {
	n := dataNormNet(t)
	if n.NumParams() != 4*3*9+4+3*4*16+3 {
		t.Fatalf("%d parameters: the datanorm layer must have none", n.NumParams())
	}
	checkGraph(t, n, 3, 5)
}

// A new network's datanorm layer holds μ = 0, v = 1.
func TestDataNormInitialBuffers(t *testing.T) {
	a, err := NewArch(Spec{Name: "dn", Layers: []LayerSpec{DataNorm(0, 0, 0), Flatten(), Linear(2)}}, 2, 3, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	n, err := NewZero(a)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(n.Buffers, []float32{0, 0, 1, 1}) || n.Buffer("dn1.var") == nil {
		t.Fatalf("buffers %v %v", n.Buffers, n.BufferTensors)
	}
}

// The checkpoint keeps μ and v (buffers.bin) and detects a corrupt or
// missing buffers file; a network without buffers writes neither the file
// nor the keys.
func TestDataNormCheckpointRoundTrip(t *testing.T) {
	n := dataNormNet(t)
	dir := t.TempDir()
	if err := n.Save(dir, Metadata{}); err != nil {
		t.Fatal(err)
	}
	m, _, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Buffers, n.Buffers) || !slices.Equal(m.Params, n.Params) {
		t.Fatalf("buffers %v, want %v", m.Buffers, n.Buffers)
	}
	// The reloaded network computes what the saved one did.
	x := make([]float32, 3*16)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	g1, _ := n.NewGraph(1, Forward)
	g2, _ := m.NewGraph(1, Forward)
	copy(g1.X, x)
	copy(g2.X, x)
	if g1.Run() != nil || g2.Run() != nil || !slices.Equal(g1.Logits(), g2.Logits()) {
		t.Fatalf("logits %v after reloading, %v before", g2.Logits(), g1.Logits())
	}
	bb := filepath.Join(dir, "buffers.bin")
	b, _ := os.ReadFile(bb)
	b[5] ^= 1
	os.WriteFile(bb, b, 0o644)
	if _, _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("flipped bit in buffers.bin: %v", err)
	}
	os.Remove(bb)
	if _, _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "buffers.bin") {
		t.Fatalf("missing buffers.bin: %v", err)
	}

	plain, _ := New(MNIST, randsrc.Seeded(1, "init"))
	dir = t.TempDir()
	if err := plain.Save(dir, Metadata{}); err != nil {
		t.Fatal(err)
	}
	js, _ := os.ReadFile(filepath.Join(dir, "model.json"))
	if _, err := os.Stat(filepath.Join(dir, "buffers.bin")); err == nil || strings.Contains(string(js), "buffers") {
		t.Fatalf("a network without buffers wrote buffers: %s", js)
	}
}

// Bad values and places for a datanorm layer are one-line errors.
func TestDataNormSpecErrors(t *testing.T) {
	for _, c := range []struct{ layers, want string }{
		{`{"type":"datanorm","noise_multiplier":-1}`, "noise_multiplier must be positive"},
		{`{"type":"datanorm","mean_clip_norm":0}`, "mean_clip_norm must be positive"},
		{`{"type":"datanorm","square_clip_norm":-2.5}`, "square_clip_norm must be positive"},
		{`{"type":"datanorm","noise_multiplier":1e300}`, "at most 10⁶"},
	} {
		_, err := ParseSpec(strings.NewReader(`{"name":"x","layers":[` + c.layers + `,{"type":"flatten"},{"type":"linear","out":2}]}`))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want %q", c.layers, err, c.want)
		}
	}
	for _, c := range []struct {
		layers []LayerSpec
		want   string
	}{
		{[]LayerSpec{Conv2d(2, 1, 1, 0), DataNorm(0, 0, 0), Flatten(), Linear(2)}, "must be the first layer"},
		{[]LayerSpec{Scatter(1, 2), Conv2d(2, 1, 1, 0), DataNorm(0, 0, 0), Flatten(), Linear(2)}, "must be the first layer"},
		{[]LayerSpec{DataNorm(0, 0, 0), DataNorm(0, 0, 0), Flatten(), Linear(2)}, "one datanorm layer"},
	} {
		if _, err := NewArch(Spec{Name: "x", Layers: c.layers}, 1, 8, 8, 2); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.layers, err, c.want)
		}
	}
	if _, err := NewArch(Spec{Name: "x", Layers: []LayerSpec{Flatten(), DataNorm(0, 0, 0), Linear(2)}}, 1, 8, 8, 2); err == nil {
		t.Error("a datanorm layer on flat features was accepted")
	}
	// Keys given survive a round trip; absent ones take the defaults.
	s, err := ParseSpec(strings.NewReader(`{"name":"x","layers":[{"type":"datanorm","noise_multiplier":6},{"type":"flatten"},{"type":"linear","out":2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p := s.Layers[0].Kind.(DataNormSpec).Resolved()
	if p.NoiseMultiplier != 6 || p.MeanClipNorm != DefaultDataNormMeanClip || p.SquareClipNorm != DefaultDataNormSquareClip {
		t.Fatalf("resolved %+v", p)
	}
	js, _ := json.Marshal(s)
	if !strings.Contains(string(js), `{"type":"datanorm","noise_multiplier":6}`) {
		t.Fatalf("written as %s", js)
	}
}

// DataNormAffine is the standardisation (x − μ)/√(v + 10⁻⁵), and 0 for a
// channel of variance 0.
func TestDataNormAffine(t *testing.T) {
	scale, shift := DataNormAffine([]float32{2, 5}, []float32{4, 0})
	x := float32(3)
	if got, want := float64(x*scale[0]+shift[0]), (3-2)/math.Sqrt(4+1e-5); math.Abs(got-want) > 1e-6 {
		t.Fatalf("channel 0: %v, want %v", got, want)
	}
	if scale[1] != 0 || shift[1] != 0 {
		t.Fatalf("channel of variance 0: scale %v shift %v", scale[1], shift[1])
	}
}
