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
	"testing"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
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
		var buf bytes.Buffer
		if err := net.WriteONNX(&buf, in, map[string]string{"epsilon": "3"}); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		onnxPath, pixPath := filepath.Join(dir, "m.onnx"), filepath.Join(dir, "pixels.f32")
		if err := os.WriteFile(onnxPath, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		pixels := make([]float32, n*784)
		x := make([]float32, n*784)
		var raw bytes.Buffer
		for i := range pixels {
			pixels[i] = float32(rng.IntN(256))
			x[i] = float32((float64(pixels[i])/255 - in.Mean[0]) / in.Std[0])
			binary.Write(&raw, binary.LittleEndian, pixels[i])
		}
		if err := os.WriteFile(pixPath, raw.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(node, filepath.Join("testdata", "ort_logits.js"), module, onnxPath, pixPath, "200", "1", "28", "28").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: onnxruntime: %v: %s", spec.Name, err, out)
		}
		var got []float64
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s: %v: %.200s", spec.Name, err, out)
		}
		want, err := dpsgd.Logits(context.Background(), net, x)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d logits, want %d", spec.Name, len(got), len(want))
		}
		worst, agree := 0.0, 0
		for i := range n {
			a, b := 0, 0
			for k := range 10 {
				worst = math.Max(worst, math.Abs(got[i*10+k]-float64(want[i*10+k])))
				if got[i*10+k] > got[i*10+a] {
					a = k
				}
				if want[i*10+k] > want[i*10+b] {
					b = k
				}
			}
			if a == b {
				agree++
			}
		}
		t.Logf("%s: largest logit difference %.3g, argmax agrees on %d of %d", spec.Name, worst, agree, n)
		if worst > 1e-4 || agree < 199 {
			t.Errorf("%s: largest logit difference %v, argmax agrees on %d of %d", spec.Name, worst, agree, n)
		}
	}
}

// A network with the ScatterNet front layer is refused with an error
// that names it.
func TestONNXRefusesScatter(t *testing.T) {
	arch, err := model.NewArch(model.ScatterLinearMNIST, 1, 28, 28, 10)
	if err != nil {
		t.Fatal(err)
	}
	net, err := model.NewZero(arch)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := net.WriteONNX(&buf, model.Input{}, nil); err == nil || !bytes.Contains([]byte(err.Error()), []byte("scatter")) {
		t.Errorf("scatter export: %v", err)
	}
}
