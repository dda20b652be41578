package job

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/model/features"
)

// onnxRuntime returns node and the onnxruntime-node module: the one
// DPTUNE_ONNXRUNTIME names (make test installs it and sets it; then a
// missing runtime fails the test), else out/onnxruntime's if present, else
// the test is skipped (a plain go test without the Makefile).
func onnxRuntime(t *testing.T) (node, module string) {
	module, required := os.LookupEnv("DPTUNE_ONNXRUNTIME")
	if !required {
		_, file, _, _ := runtime.Caller(0)
		module = filepath.Join(filepath.Dir(file), "..", "out", "onnxruntime", "node_modules", "onnxruntime-node")
	}
	missing := func(format string, args ...any) {
		t.Helper()
		if required {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("no node (make test installs onnxruntime-node and node)")
	}
	if _, err := os.Stat(module); err != nil {
		missing("no onnxruntime-node at %s (make test installs it)", module)
	}
	return node, module
}

// ortLogits writes net's ONNX export and the raw pixels ([n, C, H, W],
// values in [0, 255]) to files, runs them in ONNX Runtime and returns its
// logits, [n, classes].
func ortLogits(t *testing.T, node, module string, net *model.Net, in model.Input, pixels []float32) []float64 {
	t.Helper()
	a := net.Arch
	var buf bytes.Buffer
	if err := net.WriteONNX(&buf, in, map[string]string{"epsilon": "3"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	onnxPath, pixPath := filepath.Join(dir, "m.onnx"), filepath.Join(dir, "pixels.f32")
	if err := os.WriteFile(onnxPath, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	binary.Write(&raw, binary.LittleEndian, pixels)
	if err := os.WriteFile(pixPath, raw.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	n := len(pixels) / (a.C * a.H * a.W)
	args := []string{filepath.Join("testdata", "ort_logits.js"), module, onnxPath, pixPath}
	for _, d := range []int{n, a.C, a.H, a.W} {
		args = append(args, strconv.Itoa(d))
	}
	out, err := exec.Command(node, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: onnxruntime: %v: %.2000s", a.Name, err, out)
	}
	var got []float64
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v: %.200s", a.Name, err, out)
	}
	if len(got) != n*a.Classes {
		t.Fatalf("%s: %d logits, want %d", a.Name, len(got), n*a.Classes)
	}
	return got
}

// normalised returns the pixels ([n, C, H, W], in [0, 255]) as dptune's
// loaders and predict read them: x/255, then (x − Mean[c]) / Std[c].
func normalised(pixels []float32, in model.Input, c, hw int) []float32 {
	x := make([]float32, len(pixels))
	for i, p := range pixels {
		ch := i / hw % c
		x[i] = float32((float64(p)/255 - in.Mean[ch]) / in.Std[ch])
	}
	return x
}

// agreement compares ONNX Runtime's logits got with dptune's want
// ([n, k]): the largest absolute difference, the largest |logit| of want
// and the number of examples whose argmax is the same.
func agreement(got []float64, want []float32, k int) (worst, largest float64, agree int) {
	for i := range len(want) / k {
		a, b := 0, 0
		for j := range k {
			worst = math.Max(worst, math.Abs(got[i*k+j]-float64(want[i*k+j])))
			largest = math.Max(largest, math.Abs(float64(want[i*k+j])))
			if got[i*k+j] > got[i*k+a] {
				a = j
			}
			if want[i*k+j] > want[i*k+b] {
				b = j
			}
		}
		if a == b {
			agree++
		}
	}
	return worst, largest, agree
}

// ONNX Runtime runs dptune's ONNX export of networks covering every layer
// kind with an ONNX form, on 200 images of raw pixels each: its logits are
// within 1e-4 of dptune's own forward pass on the normalised pixels, and
// its argmax agrees on at least 99.5% of them.
func TestONNXRuntimeAgrees(t *testing.T) {
	node, module := onnxRuntime(t)
	specs := []model.Spec{
		{Name: "every-kind", Layers: []model.LayerSpec{
			model.DataNorm(8, 1, 1), model.Conv2d(8, 3, 1, 1), model.GroupNorm(2), model.SiLU(), model.MaxPool2d(2, 2),
			model.Conv2d(8, 3, 2, 1), model.LayerNorm(), model.GELU(), model.AvgPool2d(2, 1),
			model.Flatten(), model.Linear(16), model.Tanh(), model.Linear(16), model.ReLU(), model.Linear(10)}},
		model.TBMNIST,
	}
	in := model.Input{Dataset: "mnist", Mean: []float64{0.1307}, Std: []float64{0.3081}}
	const n = 200
	rng := rand.New(rand.NewPCG(3, 4))
	for _, spec := range specs {
		arch, err := model.NewArch(spec, 1, 28, 28, 10)
		if err != nil {
			t.Fatal(err)
		}
		net, err := model.New(arch, rng)
		if err != nil {
			t.Fatal(err)
		}
		for i := range net.Buffers { // a datanorm layer's estimate: means, then variances
			net.Buffers[i] = float32(rng.Float64())
		}
		pixels := make([]float32, n*784)
		for i := range pixels {
			pixels[i] = float32(rng.IntN(256))
		}
		got := ortLogits(t, node, module, net, in, pixels)
		want, err := dpsgd.Logits(context.Background(), net, normalised(pixels, in, 1, 784))
		if err != nil {
			t.Fatal(err)
		}
		worst, _, agree := agreement(got, want, 10)
		t.Logf("%s: largest logit difference %.3g, argmax agrees on %d of %d", spec.Name, worst, agree, n)
		if worst > 1e-4 || agree < 199 {
			t.Errorf("%s: largest logit difference %v, argmax agrees on %d of %d", spec.Name, worst, agree, n)
		}
	}
}

// ONNX Runtime runs the ONNX export of every built-in ScatterNet network
// (scattering front end, its normalisation and the linear or CNN head) on
// 200 seeded random images of its dataset's shape (MNIST's 1×28×28,
// CIFAR-10's 3×32×32) and agrees with dptune predict's computation (the
// images normalised as its loader does, the Go scattering transform of
// package model/scatter, the network's forward pass): the largest logit
// difference is at most 1e-4 of the largest |logit|, and the argmax is
// the same on all 200. The networks are randomly initialised; a datanorm
// layer holds the mean and variance of the features of the images, as
// its estimate on the training data would.
func TestONNXRuntimeAgreesScatter(t *testing.T) {
	node, module := onnxRuntime(t)
	const n = 200
	rng := rand.New(rand.NewPCG(5, 6))
	tested := 0
	for _, spec := range model.BuiltinSpecs() {
		if len(spec.Layers) == 0 || spec.Layers[0].Type != "scatter" {
			continue
		}
		tested++
		name := "mnist"
		if strings.HasSuffix(spec.Name, "cifar10") {
			name = "cifar10"
		}
		d, ok := data.Lookup(name)
		if !ok {
			t.Fatalf("no dataset %s", name)
		}
		in := model.Input{Dataset: name, Mean: d.Mean, Std: d.Std}
		arch, err := model.NewArch(spec, d.C, d.H, d.W, d.Classes)
		if err != nil {
			t.Fatal(err)
		}
		net, err := model.New(arch, rng)
		if err != nil {
			t.Fatal(err)
		}
		size := d.C * d.H * d.W
		pixels := make([]float32, n*size)
		for i := range pixels {
			pixels[i] = float32(rng.IntN(256))
		}
		front, _ := arch.FrontEnd()
		x := normalised(pixels, in, d.C, d.H*d.W)
		feat, err := features.Compute(context.Background(), front, &data.Dataset{Name: "images", X: x, Y: make([]uint8, n), N: n, C: d.C, H: d.H, W: d.W, Classes: d.Classes}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(net.Buffers) > 0 { // the datanorm layer: the features' means, then variances
			c, hw := front.OutC, front.OutH*front.OutW
			for ch := range c {
				var s, s2 float64
				for i := range n {
					for _, v := range feat.X[(i*c+ch)*hw : (i*c+ch+1)*hw] {
						s += float64(v)
						s2 += float64(v) * float64(v)
					}
				}
				mean := s / float64(n*hw)
				net.Buffers[ch], net.Buffers[c+ch] = float32(mean), float32(s2/float64(n*hw)-mean*mean)
			}
		}
		got := ortLogits(t, node, module, net, in, pixels)
		want, err := dpsgd.Logits(context.Background(), net, feat.X)
		if err != nil {
			t.Fatal(err)
		}
		worst, largest, agree := agreement(got, want, d.Classes)
		t.Logf("%s: largest logit difference %.3g = %.3g of the largest |logit| %.3g; argmax agrees on %d of %d", spec.Name, worst, worst/largest, largest, agree, n)
		if !(worst <= 1e-4*largest) || agree != n {
			t.Errorf("%s: largest logit difference %v (largest |logit| %v), argmax agrees on %d of %d", spec.Name, worst, largest, agree, n)
		}
	}
	if tested < 5 {
		t.Errorf("%d built-in ScatterNet networks, want at least 5", tested)
	}
}
