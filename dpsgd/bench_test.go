package dpsgd

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/model"
)

// benchStep times single DP-SGD or non-private steps of network arch at an
// expected batch size of 256 (Poisson sampling from n random examples).
// Each b.N iteration is one full step: sampling, forward, per-sample
// gradients, clipping, noise, update. examples/s = 256 / (ns/op · 1e-9).
func benchStep(b *testing.B, arch model.Arch, n int, nonPrivate bool, newEngine func(*model.Net, int) (Engine, error)) {
	net, x, y := randomData(b, arch, n, 3)
	train := &data.Dataset{Name: "bench", X: x, Y: y, N: n, C: arch.C, H: arch.H, W: arch.W, Classes: arch.Classes}
	cfg := Config{NoiseMultiplier: 1, ClipNorm: 1, SamplingRate: 256 / float64(n), Steps: 1, LearningRate: 0.1}
	if nonPrivate {
		cfg.NoiseMultiplier, cfg.ClipNorm, cfg.NonPrivate = 0, 0, true
	}
	engine, err := newEngine(net, 256)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Steps = 3
	if _, err := Train(context.Background(), net, train, cfg, engine, nil); err != nil { // warm-up
		b.Fatal(err)
	}
	cfg.Steps = b.N
	b.ReportAllocs()
	b.ResetTimer()
	res, err := Train(context.Background(), net, train, cfg, engine, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(256*float64(b.N)/b.Elapsed().Seconds(), "examples/s")
	// Per phase and per layer, ms per step (engine phases averaged over
	// its workers).
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(b.N) }
	if _, ok := engine.(Timed); !ok {
		return
	}
	for ph := Phase(0); ph < NumPhases; ph++ {
		b.ReportMetric(ms(res.Timings.Phase[ph]), ph.String()+"-ms")
	}
	for l, layer := range model.ParamLayers(net.Layers) {
		b.ReportMetric(ms(res.Timings.Forward[l]), layer.Name+"-fwd-ms")
		b.ReportMetric(ms(res.Timings.Backward[l]), layer.Name+"-bwd-ms")
	}
}

// BenchmarkDPStep: DP-SGD with the default (per-example) engine.
func BenchmarkDPStep(b *testing.B) { benchStep(b, model.MNIST, 60000, false, NewEngine) }

// BenchmarkNonPrivateStep: plain SGD with the same engine, no clipping, no noise.
func BenchmarkNonPrivateStep(b *testing.B) { benchStep(b, model.MNIST, 60000, true, NewEngine) }

// BenchmarkNonPrivateAutodiffStep: plain SGD with gorgonia's own autodiff to
// the parameters (NewBatchGradEngine).
func BenchmarkNonPrivateAutodiffStep(b *testing.B) {
	benchStep(b, model.MNIST, 60000, true, NewBatchGradEngine)
}

// tbCIFAR10 is Tramèr & Boneh's CIFAR-10 network on 32×32×3 inputs.
var tbCIFAR10 = model.Arch{Spec: model.TBCIFAR10, C: 3, H: 32, W: 32, Classes: 10}

// BenchmarkDPStepTBCIFAR10: DP-SGD steps of tb-cifar10 (10,000 random
// examples, expected batch 256).
func BenchmarkDPStepTBCIFAR10(b *testing.B) { benchStep(b, tbCIFAR10, 10000, false, NewEngine) }

// BenchmarkNonPrivateStepTBCIFAR10: plain SGD steps of tb-cifar10.
func BenchmarkNonPrivateStepTBCIFAR10(b *testing.B) { benchStep(b, tbCIFAR10, 10000, true, NewEngine) }

// scatterGNLinear is examples/scatter-gn-linear-mnist.json past its
// scatter front end: group norm and a linear layer on the 81×7×7
// ScatterNet features of an MNIST image.
var scatterGNLinear = model.Arch{Spec: model.Spec{Name: "scatter-gn-linear", Layers: []model.LayerSpec{
	model.GroupNorm(27), model.Flatten(), model.Linear(10)}}, C: 81, H: 7, W: 7, Classes: 10}

// BenchmarkDPStepScatterGNLinear: DP-SGD steps of the linear classifier on
// ScatterNet features (10,000 random examples, expected batch 256).
func BenchmarkDPStepScatterGNLinear(b *testing.B) {
	benchStep(b, scatterGNLinear, 10000, false, NewEngine)
}

// scatterGNLinearCIFAR10 is examples/scatter-gn-linear-cifar10.json past
// its scatter front end: the 243×8×8 ScatterNet features of a CIFAR-10
// image.
var scatterGNLinearCIFAR10 = model.Arch{Spec: model.Spec{Name: "scatter-gn-linear-cifar10", Layers: []model.LayerSpec{
	model.GroupNorm(27), model.Flatten(), model.Linear(10)}}, C: 243, H: 8, W: 8, Classes: 10}

// BenchmarkDPStepScatterGNLinearCIFAR10: DP-SGD steps of the linear
// classifier on CIFAR-10's ScatterNet features (4,000 random examples,
// expected batch 256).
func BenchmarkDPStepScatterGNLinearCIFAR10(b *testing.B) {
	benchStep(b, scatterGNLinearCIFAR10, 4000, false, NewEngine)
}

// benchRuns times two 400-step (5-epoch) runs of the linear classifier on MNIST's
// ScatterNet features (20,000 random examples, expected batch 256), either
// side by side with GOMAXPROCS/2 engine workers each (as runner.Local runs
// them) or one after the other with GOMAXPROCS workers each.
func benchRuns(b *testing.B, sideBySide bool) {
	const n, steps = 20000, 400
	_, x, y := randomData(b, scatterGNLinear, n, 3)
	train := &data.Dataset{Name: "bench", X: x, Y: y, N: n, C: scatterGNLinear.C, H: scatterGNLinear.H, W: scatterGNLinear.W, Classes: 10}
	one := func(workers int) {
		net, _, _ := randomData(b, scatterGNLinear, 1, 4)
		engine, err := newEngineWorkers(net, workers)
		if err != nil {
			b.Error(err)
			return
		}
		cfg := Config{NoiseMultiplier: 1, ClipNorm: 1, SamplingRate: 256.0 / n, Steps: steps, LearningRate: 0.1}
		if _, err := Train(context.Background(), net, train, cfg, engine, nil); err != nil {
			b.Error(err)
		}
	}
	procs := runtime.GOMAXPROCS(0)
	b.ResetTimer()
	for range b.N {
		if !sideBySide {
			one(procs)
			one(procs)
			continue
		}
		var wg sync.WaitGroup
		wg.Go(func() { one(max(1, procs/2)) })
		wg.Go(func() { one(max(1, procs/2)) })
		wg.Wait()
	}
	b.ReportMetric(2*steps*float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

// BenchmarkTwoRunsInTurn: two runs one after the other, every core each.
func BenchmarkTwoRunsInTurn(b *testing.B) { benchRuns(b, false) }

// BenchmarkTwoRunsSideBySide: the same two runs at once, half the cores
// each.
func BenchmarkTwoRunsSideBySide(b *testing.B) { benchRuns(b, true) }
