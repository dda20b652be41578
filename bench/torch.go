package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/gemm"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
)

// DefaultPython is the interpreter the PyTorch reference runs under:
// Debian's, with its python3-torch package (make torch-deps).
const DefaultPython = "/usr/bin/python3"

// MaxTorchRounds bounds TorchRequest.Rounds.
const MaxTorchRounds = 20

// torchNetworks are the networks the PyTorch reference defines (its
// MODELS: MnistCNN, TBMnistCNN, TBCifarCNN), each on its input. A network
// is compared only when it is one of these layer for layer, so that a JSON
// spec that borrows a built-in name is refused.
var torchNetworks = []model.Arch{
	{Spec: model.OpacusMNIST, C: 1, H: 28, W: 28, Classes: 10},
	{Spec: model.TBMNIST, C: 1, H: 28, W: 28, Classes: 10},
	{Spec: model.TBCIFAR10, C: 3, H: 32, W: 32, Classes: 10},
}

// TorchNetworkNames lists the networks TorchRequest.Check accepts, for a
// flag's help.
func TorchNetworkNames() []string {
	var names []string
	for _, a := range torchNetworks {
		names = append(names, a.Name)
	}
	return names
}

// TorchRequest is bench persample's --torch comparison as a person asks
// for it: the PyTorch reference (torch_reference.py, at Reference) run
// under Python, in Rounds rounds alternating with dptune's own
// measurement.
type TorchRequest struct {
	Python    string // interpreter; "" means DefaultPython
	Reference string // path of torch_reference.py
	Rounds    int
}

func (r TorchRequest) python() string {
	if r.Python == "" {
		return DefaultPython
	}
	return r.Python
}

// Check refuses, before any data is read, a comparison that cannot run:
// Rounds outside [1, MaxTorchRounds], other than one batch size, a
// Reference that is not a regular file, an interpreter that cannot import
// torch (the error says to install Debian's python3-torch), and a network
// (arch, on its input) that the reference does not define. Errors wrap
// job.ErrInvalid and name the flags of dptune bench persample; a cancelled
// ctx returns its error.
func (r TorchRequest) Check(ctx context.Context, arch model.Arch, batchSizes []int) error {
	switch {
	case r.Rounds < 1 || r.Rounds > MaxTorchRounds:
		return job.Invalidf("--rounds %d is outside [1, %d]", r.Rounds, MaxTorchRounds)
	case len(batchSizes) != 1:
		return job.Invalidf("--torch compares one --batch-size at a time, not %d", len(batchSizes))
	}
	if r.Reference == "" {
		return job.Invalidf("--torch needs --torch-reference PATH, the PyTorch reference script (make bench-torch-side passes it)")
	}
	if st, err := os.Stat(r.Reference); err != nil || !st.Mode().IsRegular() {
		return job.Invalidf("--torch-reference %s is not a file (the PyTorch reference, torch_reference.py)", r.Reference)
	}
	if err := exec.CommandContext(ctx, r.python(), "-c", "import torch").Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return job.Invalidf("bench persample --torch needs Debian's python3-torch (make torch-deps): %s cannot import torch", r.python())
	}
	if _, err := torchNetwork(arch); err != nil {
		return err
	}
	return nil
}

// torchNetwork is the reference's name for arch, or an error wrapping
// job.ErrInvalid when the reference does not define it.
func torchNetwork(arch model.Arch) (string, error) {
	got, err := json.Marshal(arch)
	if err != nil {
		return "", err
	}
	for _, a := range torchNetworks {
		if want, _ := json.Marshal(a); bytes.Equal(got, want) {
			return a.Name, nil
		}
	}
	return "", job.Invalidf("--torch: the PyTorch reference does not define %s on %d×%d×%d input (it has %s)",
		arch.Name, arch.C, arch.H, arch.W, strings.Join(TorchNetworkNames(), ", "))
}

// TorchFigures is one run of the PyTorch reference: examples per second of
// each step it times, at its median step time.
type TorchFigures struct {
	NonPrivate float64 `json:"nonprivate_examples_per_s"`
	// Func is DP-SGD with per-sample gradients from torch.func's
	// vmap(grad) (functorch on PyTorch 1.13), PyTorch's fastest
	// per-sample path; Hooks with Opacus-style module hooks (0 if the
	// reference did not time it).
	Func    float64   `json:"dp_func_examples_per_s"`
	Hooks   float64   `json:"dp_hooks_examples_per_s,omitempty"`
	Version string    `json:"torch_version"`
	Threads int       `json:"threads"`
	LoadAvg [2]string `json:"loadavg_before_after"`
	Seconds float64   `json:"seconds"` // the whole run, start-up included
}

// TorchRound is one round: the reference's run, then dptune's.
type TorchRound struct {
	PyTorch TorchFigures `json:"pytorch"`
	// NonPrivate and DP are dptune's examples per second (DP with fast
	// noise, as PerSample's DP), PeakFraction DP's fraction of the FMA
	// peak.
	NonPrivate   float64   `json:"dptune_nonprivate_examples_per_s"`
	DP           float64   `json:"dptune_dp_examples_per_s"`
	PeakFraction float64   `json:"dptune_dp_fraction_of_peak"`
	LoadAvg      [2]string `json:"dptune_loadavg_before_after"`
}

// Range is the smallest and largest of a figure over the rounds.
type Range struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// rangeOf is the range of f over rounds.
func rangeOf(rounds []TorchRound, f func(TorchRound) float64) Range {
	r := Range{Min: math.Inf(1), Max: math.Inf(-1)}
	for _, x := range rounds {
		v := f(x)
		r.Min, r.Max = min(r.Min, v), max(r.Max, v)
	}
	return r
}

// TorchComparison is dptune beside the PyTorch reference on one machine in
// one sitting: each round's figures, their ranges, and the ratios of each
// round's dptune DP-SGD to that round's PyTorch (ranged over the rounds).
type TorchComparison struct {
	Reference string `json:"reference"`
	Network   string `json:"network"`
	BatchSize int    `json:"batch_size"`
	Steps     int    `json:"steps"`   // timed steps of each mode, on each side, each round
	Threads   int    `json:"threads"` // PyTorch's threads, dptune's GOMAXPROCS
	CPU       string `json:"cpu"`
	Cores     int    `json:"logical_cpus"`
	Kernel    string `json:"gemm_kernel"`

	Rounds []TorchRound `json:"rounds"`

	PyTorchNonPrivate Range `json:"pytorch_nonprivate_examples_per_s"`
	PyTorchFunc       Range `json:"pytorch_dp_func_examples_per_s"`
	PyTorchHooks      Range `json:"pytorch_dp_hooks_examples_per_s"` // 0–0 if not timed
	NonPrivate        Range `json:"dptune_nonprivate_examples_per_s"`
	DP                Range `json:"dptune_dp_examples_per_s"`
	// DPOverFunc is dptune DP-SGD ÷ PyTorch torch.func DP-SGD,
	// DPOverPyTorchNonPrivate dptune DP-SGD ÷ PyTorch's non-private step
	// (examples per second, round by round); PeakFraction dptune DP-SGD's
	// fraction of the FMA peak (PeakGFLOPs; 0 if unknown).
	DPOverFunc              Range `json:"dp_over_pytorch_func"`
	DPOverPyTorchNonPrivate Range `json:"dp_over_pytorch_nonprivate"`
	PeakFraction            Range `json:"dp_fraction_of_peak"`
}

// summarise fills c's ranges from its rounds.
func (c *TorchComparison) summarise() {
	rs := c.Rounds
	c.PyTorchNonPrivate = rangeOf(rs, func(r TorchRound) float64 { return r.PyTorch.NonPrivate })
	c.PyTorchFunc = rangeOf(rs, func(r TorchRound) float64 { return r.PyTorch.Func })
	c.PyTorchHooks = rangeOf(rs, func(r TorchRound) float64 { return r.PyTorch.Hooks })
	c.NonPrivate = rangeOf(rs, func(r TorchRound) float64 { return r.NonPrivate })
	c.DP = rangeOf(rs, func(r TorchRound) float64 { return r.DP })
	c.DPOverFunc = rangeOf(rs, func(r TorchRound) float64 { return r.DP / r.PyTorch.Func })
	c.DPOverPyTorchNonPrivate = rangeOf(rs, func(r TorchRound) float64 { return r.DP / r.PyTorch.NonPrivate })
	c.PeakFraction = rangeOf(rs, func(r TorchRound) float64 { return r.PeakFraction })
}

// PerSampleTorch is PerSample beside the PyTorch reference, in one
// sitting: for each of tr.Rounds rounds it runs the reference (with
// --rounds 2, of which it takes the last round's median: torchWarmRounds;
// the same batch size and cfg.Steps timed steps, as many
// threads as GOMAXPROCS: torch.set_num_threads and OMP_NUM_THREADS), then
// PerSample, so that the two alternate (A B A B) and both see the same
// machine. cfg must hold one batch size and tr must pass Check. The report
// is the last round's PerSample with Torch set (LoadAvg spans the
// sitting). progress, if not nil, receives a line as each side of a round
// starts and the reference's own per-method lines. The reference runs in a
// temporary directory removed afterwards; MNIST_DIR is set to the MNIST
// files' home (data.MNISTDir) unless the environment sets it, since the
// reference loads MNIST for every network. A reference that fails, or
// whose JSON is missing, malformed or about another network, batch size or
// parameter count, is an error naming it; a cancelled ctx kills it and
// returns ctx's error, with the rounds finished.
func PerSampleTorch(ctx context.Context, cfg PerSampleConfig, tr TorchRequest, progress func(string)) (PerSampleReport, error) {
	if progress == nil {
		progress = func(string) {}
	}
	if len(cfg.BatchSizes) != 1 || tr.Rounds < 1 {
		return PerSampleReport{}, fmt.Errorf("bench: a PyTorch comparison needs one batch size and a round, not %v and %d", cfg.BatchSizes, tr.Rounds)
	}
	name, err := torchNetwork(cfg.Arch)
	if err != nil {
		return PerSampleReport{}, err
	}
	dir, err := os.MkdirTemp("", "dptune-torch-")
	if err != nil {
		return PerSampleReport{}, err
	}
	defer os.RemoveAll(dir)
	c := &TorchComparison{Reference: tr.Reference, Network: name, BatchSize: cfg.BatchSizes[0], Steps: cfg.Steps,
		Threads: runtime.GOMAXPROCS(0), CPU: cpuModel(), Cores: runtime.NumCPU(), Kernel: gemm.Kernel()}
	var rep PerSampleReport
	start := LoadAvg()
	for i := 1; i <= tr.Rounds; i++ {
		progress(fmt.Sprintf("round %d/%d: PyTorch reference", i, tr.Rounds))
		pt, err := runTorchReference(ctx, tr, c, filepath.Join(dir, "round"+strconv.Itoa(i)), progress)
		if err == nil {
			progress(fmt.Sprintf("round %d/%d: dptune", i, tr.Rounds))
			var r PerSampleReport
			r, err = PerSample(ctx, cfg)
			if err == nil && r.Parameters != pt.parameters {
				err = fmt.Errorf("bench: the PyTorch reference's %s has %d parameters, dptune's %d", name, pt.parameters, r.Parameters)
			}
			if err == nil {
				rep = r
				res := r.Results[0]
				c.Rounds = append(c.Rounds, TorchRound{PyTorch: pt.TorchFigures, NonPrivate: res.NonPrivate.ExamplesPerSecond,
					DP: res.DP.ExamplesPerSecond, PeakFraction: res.DP.PeakFraction, LoadAvg: r.LoadAvg})
			}
		}
		if err != nil {
			if len(c.Rounds) == 0 {
				return PerSampleReport{}, err
			}
			break
		}
	}
	c.summarise()
	rep.Torch = c
	rep.LoadAvg[0] = start
	return rep, err
}

// torchRun is one reference run's figures and the parameter count it
// reported.
type torchRun struct {
	TorchFigures
	parameters int
}

// torchOutput is the part of the reference's JSON (its --out-prefix
// .json) that PerSampleTorch reads.
type torchOutput struct {
	Torch   string `json:"torch"`
	Threads int    `json:"threads"`
	Bench   *struct {
		Model      string     `json:"model"`
		BatchSize  int        `json:"batch_size"`
		Parameters int        `json:"parameters"`
		NonPrivate *torchTime `json:"nonprivate"`
		Func       *torchTime `json:"dp_func"`
		Hooks      *torchTime `json:"dp_hooks"`
	} `json:"bench"`
}

// torchTime is one timed step of the reference.
type torchTime struct {
	SamplesPerS    float64   `json:"samples_per_s"`
	RoundMediansMS []float64 `json:"round_medians_ms"`
}

// torchWarmRounds is how many rounds each run of the reference plays
// before the one PerSampleTorch takes: a process's first round of a
// network runs slower than its later ones (tb-cifar10's non-private step:
// 412 ms in the first of five rounds, 292–313 ms in the others, on 2
// cores), so one round alone would time PyTorch at its coldest.
const torchWarmRounds = 1

// runTorchReference runs the reference once, writing its files at prefix,
// and reads its figures.
func runTorchReference(ctx context.Context, tr TorchRequest, c *TorchComparison, prefix string, progress func(string)) (torchRun, error) {
	threads := strconv.Itoa(c.Threads)
	cmd := exec.CommandContext(ctx, tr.python(), tr.Reference, "--only", "bench", "--model", c.Network,
		"--batch-size", strconv.Itoa(c.BatchSize), "--no-epoch", "--n-timed-naive", "1", "--n-timed", strconv.Itoa(c.Steps),
		"--rounds", strconv.Itoa(torchWarmRounds+1), "--threads", threads, "--out-prefix", prefix)
	cmd.Dir = filepath.Dir(prefix)
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS="+threads)
	if os.Getenv("MNIST_DIR") == "" {
		if d, err := data.MNISTDir(); err == nil {
			cmd.Env = append(cmd.Env, "MNIST_DIR="+d)
		}
	}
	out := &lineWriter{progress: progress}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	run := torchRun{}
	run.LoadAvg[0] = LoadAvg()
	t0 := time.Now()
	err := cmd.Run()
	run.Seconds = time.Since(t0).Seconds()
	run.LoadAvg[1] = LoadAvg()
	if ctx.Err() != nil {
		return run, ctx.Err()
	}
	if err != nil {
		return run, fmt.Errorf("bench: the PyTorch reference %s failed (%v): %s", tr.Reference, err, out.tail())
	}
	b, err := os.ReadFile(prefix + ".json")
	if err != nil {
		return run, fmt.Errorf("bench: the PyTorch reference %s wrote no figures: %w", tr.Reference, err)
	}
	return parseTorchOutput(b, c.Network, c.BatchSize, run)
}

// parseTorchOutput reads the reference's JSON b into run, refusing figures
// about another network or batch size, and missing or non-positive speeds
// of the non-private and torch.func steps.
func parseTorchOutput(b []byte, network string, batch int, run torchRun) (torchRun, error) {
	var o torchOutput
	if err := json.Unmarshal(b, &o); err != nil {
		return run, fmt.Errorf("bench: the PyTorch reference's figures: %w", err)
	}
	switch {
	case o.Bench == nil:
		return run, errors.New("bench: the PyTorch reference's figures have no bench section")
	case o.Bench.Model != network || o.Bench.BatchSize != batch:
		return run, fmt.Errorf("bench: the PyTorch reference timed %s at batch %d, not %s at %d", o.Bench.Model, o.Bench.BatchSize, network, batch)
	}
	speed := func(t *torchTime, what string) (float64, error) {
		if t == nil {
			return 0, fmt.Errorf("bench: the PyTorch reference's figures have no %s speed", what)
		}
		v := t.SamplesPerS
		if n := len(t.RoundMediansMS); n > 0 {
			v = float64(batch) / (t.RoundMediansMS[n-1] / 1000) // the last round's, after the warm ones
		}
		if !(v > 0) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("bench: the PyTorch reference's figures have no %s speed", what)
		}
		return v, nil
	}
	var err error
	if run.NonPrivate, err = speed(o.Bench.NonPrivate, "nonprivate"); err != nil {
		return run, err
	}
	if run.Func, err = speed(o.Bench.Func, "dp_func"); err != nil {
		return run, err
	}
	if o.Bench.Hooks != nil {
		run.Hooks, _ = speed(o.Bench.Hooks, "dp_hooks")
	}
	run.Version, run.Threads, run.parameters = o.Torch, o.Threads, o.Bench.Parameters
	return run, nil
}

// lineWriter passes the reference's per-method lines ("round 1 nonprivate
// median …", less the round) to progress and keeps the last of its output
// for an error.
type lineWriter struct {
	progress func(string)
	partial  []byte
	last     []string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSpace(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
		if f := strings.Fields(line); len(f) > 2 && f[0] == "round" {
			w.progress("PyTorch: " + strings.Join(f[2:], " ")) // its round is always 1
		}
		if line != "" {
			w.last = append(w.last, line)
			if len(w.last) > 5 {
				w.last = slices.Delete(w.last, 0, 1)
			}
		}
	}
	return len(p), nil
}

// tail is the last lines written, for an error message.
func (w *lineWriter) tail() string {
	lines := w.last
	if s := strings.TrimSpace(string(w.partial)); s != "" {
		lines = append(lines, s)
	}
	return strings.Join(lines, " | ")
}
