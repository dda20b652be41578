package bench

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
)

// torchFixture is the reference's JSON from a real run:
// torch_reference.py --only bench --model tb-mnist --batch-size 32
// --no-epoch --n-timed-naive 1 --n-timed 3 --rounds 1 --threads 2 under
// Debian's PyTorch 1.13 (samples_per_s: nonprivate 17194.2, dp_func
// 9770.6, dp_hooks 3088.8; 26,010 parameters).
const torchFixture = "testdata/torch_reference_tb-mnist.json"

var tbMNIST = model.Arch{Spec: model.TBMNIST, C: 1, H: 28, W: 28, Classes: 10}

// writeScript writes an executable shell script into dir.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeTorch writes a fake interpreter that imports torch (python -c
// exits 0) and runs any other script with /bin/sh, and a fake reference
// that logs its arguments and OMP_NUM_THREADS to dir/args, prints a
// per-method line as the reference does and copies fixture (its JSON) to
// --out-prefix.json.
func fakeTorch(t *testing.T, fixture []byte) (dir, python, ref string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fixture.json"), fixture, 0o644); err != nil {
		t.Fatal(err)
	}
	python = writeScript(t, dir, "python", `if [ "$1" = -c ]; then exit 0; fi
exec /bin/sh "$@"
`)
	ref = writeScript(t, dir, "torch_reference.py", `echo "$* OMP_NUM_THREADS=$OMP_NUM_THREADS" >> `+dir+`/args
while [ $# -gt 0 ]; do
	if [ "$1" = --out-prefix ]; then prefix=$2; fi
	shift
done
echo "loaded MNIST"
echo "round 1 nonprivate             median 1.86 ms"
cp `+dir+`/fixture.json "$prefix.json"
`)
	return dir, python, ref
}

func readFixture(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(torchFixture)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// syntheticMNIST is n MNIST-shaped examples.
func syntheticMNIST(n int) *data.Dataset {
	ds := &data.Dataset{Name: "random", X: make([]float32, n*28*28), Y: make([]uint8, n), N: n, C: 1, H: 28, W: 28, Classes: 10}
	for i := range ds.X {
		ds.X[i] = float32(i%97) / 97
	}
	for i := range ds.Y {
		ds.Y[i] = uint8(i % 10)
	}
	return ds
}

// PerSampleTorch alternates the reference and dptune (A B A B), passes
// the reference the batch size, steps and GOMAXPROCS threads, and its
// ratios are each round's dptune figures over the reference's canned ones.
func TestTorchInterleavesRounds(t *testing.T) {
	dir, python, ref := fakeTorch(t, readFixture(t))
	var order []string
	cfg := PerSampleConfig{Train: syntheticMNIST(64), Arch: tbMNIST, BatchSizes: []int{32}, Steps: 3, Seed: 1,
		Progress: func(int, string) { order = append(order, "dptune") }}
	var lines []string
	tr := TorchRequest{Python: python, Reference: ref, Rounds: 2}
	if err := tr.Check(context.Background(), cfg.Arch, cfg.BatchSizes); err != nil {
		t.Fatal(err)
	}
	rep, err := PerSampleTorch(context.Background(), cfg, tr, func(s string) {
		lines = append(lines, s)
		if strings.HasPrefix(s, "PyTorch: nonprivate") { // the reference's own line
			order = append(order, "pytorch")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// PerSample's progress runs once per mode (non-private, fast, secure).
	want := "pytorch dptune dptune dptune pytorch dptune dptune dptune"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("order %q, want %q (progress %q)", got, want, lines)
	}
	c := rep.Torch
	if c == nil || len(c.Rounds) != 2 || len(rep.Results) != 1 {
		t.Fatalf("report %+v", rep)
	}
	if c.Network != "tb-mnist" || c.BatchSize != 32 || c.Steps != 3 || c.Threads != runtime.GOMAXPROCS(0) || c.Kernel == "" || c.Cores < 1 {
		t.Errorf("comparison %+v", c)
	}
	for i, r := range c.Rounds {
		if r.PyTorch.NonPrivate != 17194.178703402104 || r.PyTorch.Func != 9770.619452641735 || r.PyTorch.Hooks != 3088.8024921790616 ||
			r.PyTorch.Version != "1.13.0a0" || r.PyTorch.Threads != 2 {
			t.Errorf("round %d: PyTorch %+v", i+1, r.PyTorch)
		}
		if !(r.DP > 0 && r.NonPrivate > 0) {
			t.Errorf("round %d: dptune %+v", i+1, r)
		}
	}
	r0, r1 := c.Rounds[0], c.Rounds[1]
	if got := (Range{min(r0.DP, r1.DP) / 9770.619452641735, max(r0.DP, r1.DP) / 9770.619452641735}); c.DPOverFunc != got {
		t.Errorf("DP ÷ torch.func %+v, want %+v", c.DPOverFunc, got)
	}
	if got := (Range{min(r0.DP, r1.DP) / 17194.178703402104, max(r0.DP, r1.DP) / 17194.178703402104}); c.DPOverPyTorchNonPrivate != got {
		t.Errorf("DP ÷ PyTorch non-private %+v, want %+v", c.DPOverPyTorchNonPrivate, got)
	}
	if c.PyTorchFunc != (Range{9770.619452641735, 9770.619452641735}) || c.DP != (Range{min(r0.DP, r1.DP), max(r0.DP, r1.DP)}) {
		t.Errorf("ranges %+v %+v", c.PyTorchFunc, c.DP)
	}
	if rep.Results[0].DP.ExamplesPerSecond != r1.DP {
		t.Error("the report is not the last round's")
	}
	args, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		t.Fatal(err)
	}
	calls := strings.Split(strings.TrimSpace(string(args)), "\n")
	threads := runtime.GOMAXPROCS(0)
	for _, want := range []string{"--only bench --model tb-mnist --batch-size 32 --no-epoch --n-timed-naive 1 --n-timed 3 --rounds 2 --threads " + itoa(threads),
		"OMP_NUM_THREADS=" + itoa(threads)} {
		if len(calls) != 2 || !strings.Contains(calls[0], want) || !strings.Contains(calls[1], want) {
			t.Errorf("reference calls %q lack %q", calls, want)
		}
	}
	b, err := json.Marshal(rep)
	if err != nil || !strings.Contains(string(b), `"dp_over_pytorch_func"`) {
		t.Errorf("JSON lacks the comparison: %v", err)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// Check refuses, before any work, an interpreter that cannot import torch
// (with the one line that says what to install), a missing reference, a
// network the reference does not define, several batch sizes and rounds
// out of range, each wrapping job.ErrInvalid.
func TestTorchCheckRefuses(t *testing.T) {
	_, python, ref := fakeTorch(t, readFixture(t))
	noTorch := writeScript(t, t.TempDir(), "python", "echo \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n")
	ctx := context.Background()
	ok := TorchRequest{Python: python, Reference: ref, Rounds: 2}
	if err := ok.Check(ctx, tbMNIST, []int{256}); err != nil {
		t.Fatalf("accepted request refused: %v", err)
	}
	other := func(s model.Spec, c, h, w int) model.Arch { return model.Arch{Spec: s, C: c, H: h, W: w, Classes: 10} }
	borrowed := model.TBMNIST
	borrowed.Layers = append([]model.LayerSpec{model.Conv2d(16, 8, 2, 3)}, model.TBMNIST.Layers[1:]...)
	for _, c := range []struct {
		name  string
		req   TorchRequest
		arch  model.Arch
		sizes []int
		want  string
	}{
		{"no torch", TorchRequest{Python: noTorch, Reference: ref, Rounds: 2}, tbMNIST, []int{256},
			"bench persample --torch needs Debian's python3-torch (make torch-deps): " + noTorch + " cannot import torch"},
		{"no python", TorchRequest{Python: filepath.Join(t.TempDir(), "python3"), Reference: ref, Rounds: 2}, tbMNIST, []int{256},
			"needs Debian's python3-torch"},
		{"no reference", TorchRequest{Python: python, Reference: filepath.Join(t.TempDir(), "x.py"), Rounds: 2}, tbMNIST, []int{256}, "--torch-reference"},
		{"no reference given", TorchRequest{Python: python, Rounds: 2}, tbMNIST, []int{256}, "--torch needs --torch-reference PATH"},
		{"scatter network", ok, other(model.ScatterLinearMNIST, 1, 28, 28), []int{256}, "does not define scatter-linear-mnist"},
		{"other input", ok, other(model.TBMNIST, 3, 32, 32), []int{256}, "does not define tb-mnist on 3×32×32"},
		{"borrowed name", ok, other(borrowed, 1, 28, 28), []int{256}, "does not define tb-mnist"},
		{"two sizes", ok, tbMNIST, []int{128, 256}, "one --batch-size"},
		{"no rounds", TorchRequest{Python: python, Reference: ref}, tbMNIST, []int{256}, "--rounds 0"},
	} {
		err := c.req.Check(ctx, c.arch, c.sizes)
		if !errors.Is(err, job.ErrInvalid) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q wrapping ErrInvalid", c.name, err, c.want)
		}
	}
	// A spec read from JSON is the built-in one when its layers are.
	b, err := json.Marshal(model.TBCIFAR10)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := model.ParseSpec(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := ok.Check(ctx, other(spec, 3, 32, 32), []int{256}); err != nil {
		t.Errorf("tb-cifar10 from JSON refused: %v", err)
	}
}

// A reference that fails, writes figures about something else, or is
// cancelled stops the comparison with an error saying so.
func TestTorchReferenceFailures(t *testing.T) {
	fixture := readFixture(t)
	cfg := PerSampleConfig{Train: syntheticMNIST(64), Arch: tbMNIST, BatchSizes: []int{32}, Steps: 1, Seed: 1}
	for _, c := range []struct {
		name, from, to, want string
	}{
		{"parameters", `"parameters": 26010`, `"parameters": 1`, "has 1 parameters, dptune's 26010"},
		{"network", `"model": "tb-mnist"`, `"model": "opacus-mnist"`, "timed opacus-mnist at batch 32"},
		{"batch", `"batch_size": 32`, `"batch_size": 256`, "at batch 256, not tb-mnist at 32"},
		{"no func", `"dp_func"`, `"dp_other"`, "no dp_func speed"},
		{"malformed", `{`, `[`, "figures"},
	} {
		edited := strings.Replace(string(fixture), c.from, c.to, 1)
		if edited == string(fixture) {
			t.Fatalf("%s: fixture lacks %q", c.name, c.from)
		}
		_, python, ref := fakeTorch(t, []byte(edited))
		_, err := PerSampleTorch(context.Background(), cfg, TorchRequest{Python: python, Reference: ref, Rounds: 1}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	dir := t.TempDir()
	python := writeScript(t, dir, "python", "exec /bin/sh \"$@\"\n")
	failing := writeScript(t, dir, "failing.py", "echo 'FileNotFoundError: train-images-idx3-ubyte.gz' >&2\nexit 1\n")
	_, err := PerSampleTorch(context.Background(), cfg, TorchRequest{Python: python, Reference: failing, Rounds: 1}, nil)
	if err == nil || !strings.Contains(err.Error(), "failed") || !strings.Contains(err.Error(), "FileNotFoundError") {
		t.Errorf("failing reference: %v", err)
	}
	slow := writeScript(t, dir, "slow.py", "exec sleep 60\n")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = PerSampleTorch(ctx, cfg, TorchRequest{Python: python, Reference: slow, Rounds: 1}, nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Errorf("cancelled reference: %v after %v", err, time.Since(start))
	}
}

// The reference plays a warm round first (torchWarmRounds): its figure is
// the last round's median, not the pooled one that a cold first round
// drags down.
func TestTorchTakesTheLastRound(t *testing.T) {
	b := []byte(`{"torch": "1.13", "threads": 2, "bench": {"model": "tb-cifar10", "batch_size": 256, "parameters": 1,
		"nonprivate": {"samples_per_s": 700, "round_medians_ms": [412, 320]},
		"dp_func": {"samples_per_s": 280, "round_medians_ms": [950, 900]}}}`)
	run, err := parseTorchOutput(b, "tb-cifar10", 256, torchRun{})
	if err != nil {
		t.Fatal(err)
	}
	if want := 256 / 0.320; math.Abs(run.NonPrivate-want) > 1e-9 {
		t.Errorf("non-private %v examples/s, want the last round's %v", run.NonPrivate, want)
	}
	if want := 256 / 0.900; math.Abs(run.Func-want) > 1e-9 {
		t.Errorf("torch.func %v examples/s, want the last round's %v", run.Func, want)
	}
}
