package model

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
)

func TestParameterCounts(t *testing.T) {
	// 26,010 for MNIST: the count Opacus and TensorFlow Privacy give for this network.
	// CIFAR-10: 16·3·64+16 + 32·16·16+32 + 800·32+32 + 32·10+10 = 37,274.
	for _, c := range []struct {
		arch Arch
		want int
		flat int
	}{{MNIST, 26010, 512}, {CIFAR10, 37274, 800},
		// Tramèr & Boneh: 26,010 on MNIST (their Table 9's network with
		// padding 2: 13×13 → pool → 12×12 → conv 5×5 → pool 4×4 → 512),
		// 550,570 on CIFAR-10 (the count the issue and torch_reference give).
		{Arch{Spec: TBMNIST, C: 1, H: 28, W: 28, Classes: 10}, 26010, 512},
		{Arch{Spec: TBCIFAR10, C: 3, H: 32, W: 32, Classes: 10}, 550570, 2048},
		// 81·7·7·10 + 10 weights and biases of the linear layer, and a
		// weight and bias per channel of the group norm: 39,700 + 162.
		{Arch{Spec: ScatterGNLinearMNIST, C: 1, H: 28, W: 28, Classes: 10}, 39862, 3969}} {
		n, err := NewZero(c.arch)
		if err != nil {
			t.Fatal(err)
		}
		fc1 := n.Layers[slices.IndexFunc(n.Layers, func(l Layer) bool { _, ok := l.Kind.(LinearSpec); return ok })]
		if n.NumParams() != c.want || fc1.In != c.flat {
			t.Errorf("%s: %d parameters, flatten %d; want %d, %d", c.arch.Name, n.NumParams(), fc1.In, c.want, c.flat)
		}
	}
}

func TestInitIsPyTorchDefault(t *testing.T) {
	n, err := New(MNIST, randsrc.Seeded(1, "init"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ParamLayers(n.Layers) {
		fanIn := Tensor{Shape: l.WeightShape[1:]}.Size() // PyTorch's fan_in: all but the output dimension
		bound := 1 / math.Sqrt(float64(fanIn))
		w := n.Params[l.WeightOffset : l.WeightOffset+l.WeightSize()]
		var s2 float64
		for _, v := range w {
			if math.Abs(float64(v)) > bound {
				t.Fatalf("%s weight %v outside ±%v", l.Name, v, bound)
			}
			s2 += float64(v) * float64(v)
		}
		// U(−b, b) has variance b²/3.
		if got, want := s2/float64(len(w)), bound*bound/3; math.Abs(got-want) > 0.2*want {
			t.Errorf("%s weight variance %v, want %v", l.Name, got, want)
		}
	}
}

// randomBatch fills a graph with random images and labels; row pad is left as padding.
func randomBatch(t *testing.T, n *Net, B, real int, seed uint64) ([]float32, []uint8) {
	t.Helper()
	rng := randsrc.Seeded(seed, "batch")
	c, h, w := n.Arch.Input()
	size := c * h * w
	x := make([]float32, real*size)
	y := make([]uint8, real)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i := range y {
		y[i] = uint8(rng.IntN(n.Arch.Classes))
	}
	return x, y
}

func seq(k int) []int {
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

func TestForwardMatchesReference(t *testing.T) {
	for _, arch := range []Arch{MNIST, CIFAR10} {
		n, _ := New(arch, randsrc.Seeded(2, "init"))
		checkGraph(t, n, 3, 0)
	}
}

// Gradients from gorgonia against central finite differences of the float64 reference.
func TestParamGradsMatchFiniteDifferences(t *testing.T) {
	n, _ := New(MNIST, randsrc.Seeded(4, "init"))
	checkGraph(t, n, 5, 6)
}

// The gradient of the last layer's bias is Σ_i softmax(z_i) − onehot(y_i)
// over the real rows (closed form of the cross-entropy's derivative): the
// padding row adds nothing.
func TestLastBiasGradClosedForm(t *testing.T) {
	n, _ := New(MNIST, randsrc.Seeded(7, "init"))
	g, err := n.NewGraph(3, ParamGrads)
	if err != nil {
		t.Fatal(err)
	}
	x, y := randomBatch(t, n, 3, 2, 8)
	g.SetBatch(x, y, seq(2))
	if err := g.Run(); err != nil {
		t.Fatal(err)
	}
	z := g.Logits()
	want := make([]float64, 10)
	for i := 0; i < 2; i++ {
		var s, m float64 = 0, math.Inf(-1)
		for k := 0; k < 10; k++ {
			m = math.Max(m, float64(z[i*10+k]))
		}
		for k := 0; k < 10; k++ {
			s += math.Exp(float64(z[i*10+k]) - m)
		}
		for k := 0; k < 10; k++ {
			want[k] += math.Exp(float64(z[i*10+k])-m) / s
		}
		want[y[i]]--
	}
	got := n.Tensor("fc2.bias")
	grad := g.ParamGrad()[n.Tensors[len(n.Tensors)-1].Offset:]
	for k := range want {
		if math.Abs(float64(grad[k])-want[k]) > 1e-5 {
			t.Fatalf("class %d: %v, want %v (bias %v)", k, grad[k], want[k], got[k])
		}
	}
}

// Graphs read Params in place: an update is seen by the next Run.
func TestGraphSeesParamUpdates(t *testing.T) {
	n, _ := New(MNIST, randsrc.Seeded(9, "init"))
	g, _ := n.NewGraph(1, Forward)
	x, y := randomBatch(t, n, 1, 1, 10)
	g.SetBatch(x, y, seq(1))
	g.Run()
	before := g.Logits()[3]
	n.Tensor("fc2.bias")[3] += 1.5
	g.Run()
	if got := g.Logits()[3]; math.Abs(float64(got-before)-1.5) > 1e-5 {
		t.Fatalf("logit moved by %v, want 1.5", got-before)
	}
}

func TestEvaluateMatchesReference(t *testing.T) {
	n, _ := New(MNIST, randsrc.Seeded(11, "init"))
	x, y := randomBatch(t, n, 0, 7, 12)
	m, err := n.Evaluate(context.Background(), x, y)
	if err != nil {
		t.Fatal(err)
	}
	p := to64(n.Params)
	var correct int
	var loss float64
	for i := 0; i < 7; i++ {
		z := refForward(n, p, to64(x[i*784:(i+1)*784]))
		best := 0
		for k := range z {
			if z[k] > z[best] {
				best = k
			}
		}
		if best == int(y[i]) {
			correct++
		}
		loss += refLoss(n, p, to64(x[i*784:(i+1)*784]), int(y[i]))
	}
	if m.N != 7 || m.Accuracy != float64(correct)/7 || math.Abs(m.Loss-loss/7) > 1e-5 {
		t.Fatalf("got %+v, reference accuracy %v loss %v", m, float64(correct)/7, loss/7)
	}
}

func compact(b []byte) string {
	var out bytes.Buffer
	json.Compact(&out, b)
	return out.String()
}

func TestCheckpointRoundTripAndCorruption(t *testing.T) {
	n, _ := New(CIFAR10, randsrc.Seeded(13, "init"))
	dir := t.TempDir()
	meta := Metadata{Hyperparameters: []byte(`{"learning_rate":0.5}`), Ledger: []byte(`{"events":[]}`)}
	if err := n.Save(dir, meta); err != nil {
		t.Fatal(err)
	}
	m, got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Arch.Equal(CIFAR10) || compact(got.Hyperparameters) != `{"learning_rate":0.5}` || compact(got.Ledger) != `{"events":[]}` {
		t.Fatalf("metadata %+v %s %s", m.Arch, got.Hyperparameters, got.Ledger)
	}
	for i := range n.Params {
		if n.Params[i] != m.Params[i] {
			t.Fatalf("param %d: %v vs %v", i, n.Params[i], m.Params[i])
		}
	}
	pb := filepath.Join(dir, "params.bin")
	b, _ := os.ReadFile(pb)
	b[100] ^= 1
	os.WriteFile(pb, b, 0o644)
	if _, _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("flipped bit: %v", err)
	}
	os.WriteFile(pb, b[:40], 0o644)
	if _, _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "40 bytes") {
		t.Fatalf("short params: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "model.json"), []byte(`{"format":"other"}`), 0o644)
	if _, _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "format") {
		t.Fatalf("bad format: %v", err)
	}
	if _, _, err := Load(filepath.Join(dir, "absent")); err == nil {
		t.Fatal("missing directory loaded")
	}
}
