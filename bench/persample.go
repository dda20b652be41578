package bench

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"time"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// PerSampleConfig says what PerSample measures.
type PerSampleConfig struct {
	Train      *data.Dataset // training set the batches are Poisson-sampled from
	Arch       model.Arch
	BatchSizes []int // expected batch sizes; the sampling rate is B/N
	Steps      int   // measured steps per batch size and mode
	Warmup     int   // unmeasured steps before them
	Seed       uint64
	// Progress, if not nil, is called before each measurement.
	Progress func(batchSize int, mode string)
}

// ModeResult is one mode's (non-private or DP-SGD) measurement.
type ModeResult struct {
	ExamplesPerSecond float64            `json:"examples_per_s"`
	MsPerStep         float64            `json:"ms_per_step"`
	AllocsPerStep     float64            `json:"allocs_per_step"`
	BytesPerStep      float64            `json:"bytes_per_step"`
	Phases            map[string]float64 `json:"phases_ms"`          // ms per step
	LayersForward     map[string]float64 `json:"layers_forward_ms"`  // ms per step
	LayersBackward    map[string]float64 `json:"layers_backward_ms"` // ms per step, incl. per-example gradients
	// GFLOPs is TrainingFLOPs per example × examples/s / 10⁹, and
	// PeakFraction that over the report's PeakGFLOPs (0 if unknown).
	GFLOPs       float64 `json:"gflop_per_s"`
	PeakFraction float64 `json:"fraction_of_peak"`
}

// BatchResult is every mode at one expected batch size.
type BatchResult struct {
	BatchSize        int                `json:"batch_size"`
	NonPrivate       ModeResult         `json:"nonprivate"`
	DP               ModeResult         `json:"dp"`                 // seeded: fast noise (dpsgd.NoiseFast)
	DPOverNonPrivate float64            `json:"dp_over_nonprivate"` // ratio of ms per step
	Phases           map[string]float64 `json:"phases"`             // DP-SGD's, ms per step
	// DPSecure is DP-SGD with secure noise (dpsgd.NoiseSecure), the default
	// of unseeded runs; SecureOverFast is its ms per step over DP's.
	DPSecure       ModeResult `json:"dp_secure_noise"`
	SecureOverFast float64    `json:"secure_over_fast_noise"`
}

// PerSampleReport is what PerSample measured.
type PerSampleReport struct {
	Dataset    string   `json:"dataset"`
	Arch       string   `json:"arch"`
	Parameters int      `json:"parameters"`
	Layers     []string `json:"layers"` // the layers with parameters, in order
	// FLOPsPerExample is TrainingFLOPs of the network; PeakGFLOPs the
	// machine's float32 FMA peak (PeakGFLOPs(), 0 if unknown).
	FLOPsPerExample float64       `json:"flop_per_example"`
	PeakGFLOPs      float64       `json:"peak_gflop_per_s"`
	Steps           int           `json:"steps"`
	GOMAXPROCS      int           `json:"gomaxprocs"`
	Results         []BatchResult `json:"results"`
	PeakRSSMB       float64       `json:"peak_rss_mb"`
	LoadAvg         [2]string     `json:"loadavg_before_after"`
	// Torch is the PyTorch reference beside these figures, round by
	// round (PerSampleTorch; nil for PerSample alone).
	Torch *TorchComparison `json:"torch,omitempty"`
}

// PerSample measures full DP-SGD steps (sampling, forward, per-sample
// gradients, clipping, noise, update) — with fast and with secure noise — and
// non-private steps with the same engine, for each batch size: throughput, time per phase and per layer,
// allocations per step. Every step is a real dpsgd.Train step on cfg.Train
// (σ = 1, C = 1; the values do not change the cost). It stops with ctx's
// error when ctx is cancelled, returning the batch sizes finished.
func PerSample(ctx context.Context, cfg PerSampleConfig) (PerSampleReport, error) {
	rep := PerSampleReport{Dataset: cfg.Train.Name, Arch: cfg.Arch.Name, Steps: cfg.Steps, GOMAXPROCS: runtime.GOMAXPROCS(0)}
	rep.LoadAvg[0] = LoadAvg()
	if cfg.Steps < 1 || cfg.Warmup < 0 {
		return rep, fmt.Errorf("bench: %d steps and %d warm-up steps", cfg.Steps, cfg.Warmup)
	}
	for _, b := range cfg.BatchSizes {
		if b < 1 || b > cfg.Train.N {
			return rep, fmt.Errorf("bench: batch size %d is outside [1, %d]", b, cfg.Train.N)
		}
	}
	net, err := model.New(cfg.Arch, randsrc.Seeded(cfg.Seed, "init"))
	if err != nil {
		return rep, err
	}
	rep.Parameters = net.NumParams()
	rep.FLOPsPerExample, rep.PeakGFLOPs = TrainingFLOPs(net.Layers), PeakGFLOPs()
	for _, l := range model.ParamLayers(net.Layers) {
		rep.Layers = append(rep.Layers, l.Name)
	}
	init := append([]float32(nil), net.Params...)
	for _, b := range cfg.BatchSizes {
		res := BatchResult{BatchSize: b}
		for _, m := range []struct {
			name  string
			noise dpsgd.NoiseMode
			out   *ModeResult
		}{{"non-private", -1, &res.NonPrivate}, {"DP-SGD", dpsgd.NoiseFast, &res.DP}, {"DP-SGD, secure noise", dpsgd.NoiseSecure, &res.DPSecure}} {
			if cfg.Progress != nil {
				cfg.Progress(b, m.name)
			}
			copy(net.Params, init)
			r, err := measure(ctx, net, cfg, b, m.noise)
			if err != nil {
				return rep, err
			}
			*m.out = r
		}
		res.DPOverNonPrivate = res.DP.MsPerStep / res.NonPrivate.MsPerStep
		for _, m := range []*ModeResult{&res.NonPrivate, &res.DP, &res.DPSecure} {
			m.GFLOPs = rep.FLOPsPerExample * m.ExamplesPerSecond / 1e9
			if rep.PeakGFLOPs > 0 {
				m.PeakFraction = m.GFLOPs / rep.PeakGFLOPs
			}
		}
		res.SecureOverFast = res.DPSecure.MsPerStep / res.DP.MsPerStep
		res.Phases = res.DP.Phases
		rep.Results = append(rep.Results, res)
	}
	rep.PeakRSSMB = peakRSSMB()
	rep.LoadAvg[1] = LoadAvg()
	return rep, nil
}

// measure times DP-SGD steps with the given noise mode, or non-private steps
// when noise is negative.
func measure(ctx context.Context, net *model.Net, cfg PerSampleConfig, batch int, noise dpsgd.NoiseMode) (ModeResult, error) {
	q := float64(batch) / float64(cfg.Train.N)
	seed := cfg.Seed
	c := dpsgd.Config{NoiseMultiplier: 1, ClipNorm: 1, SamplingRate: q, LearningRate: 0.01, Seed: &seed, Noise: noise} // a datanorm network's estimate runs once per Train call
	if noise < 0 {
		c.Noise = dpsgd.NoiseAuto
		c.NoiseMultiplier, c.ClipNorm, c.NonPrivate = 0, 0, true
	}
	engine, err := dpsgd.NewEngine(net, batch)
	if err != nil {
		return ModeResult{}, err
	}
	if cfg.Warmup > 0 {
		c.Steps = cfg.Warmup
		if _, err := dpsgd.Train(ctx, net, cfg.Train, c, engine, nil); err != nil {
			return ModeResult{}, err
		}
	}
	c.Steps = cfg.Steps
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	start := time.Now()
	res, err := dpsgd.Train(ctx, net, cfg.Train, c, engine, nil)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&m1)
	if err != nil {
		return ModeResult{}, err
	}
	steps := float64(res.Steps)
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 / steps }
	out := ModeResult{
		ExamplesPerSecond: res.MeanBatchSize * steps / elapsed.Seconds(),
		MsPerStep:         elapsed.Seconds() * 1e3 / steps,
		AllocsPerStep:     float64(m1.Mallocs-m0.Mallocs) / steps,
		BytesPerStep:      float64(m1.TotalAlloc-m0.TotalAlloc) / steps,
		Phases:            map[string]float64{},
		LayersForward:     map[string]float64{},
		LayersBackward:    map[string]float64{},
	}
	for ph := dpsgd.Phase(0); ph < dpsgd.NumPhases; ph++ {
		out.Phases[ph.String()] = ms(res.Timings.Phase[ph])
	}
	for l, layer := range model.ParamLayers(net.Layers) {
		out.LayersForward[layer.Name] = ms(res.Timings.Forward[l])
		out.LayersBackward[layer.Name] = ms(res.Timings.Backward[l])
	}
	return out, nil
}

// peakRSSMB is the process's peak resident set size so far.
func peakRSSMB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024 // kB on Linux
}
