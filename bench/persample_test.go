package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/model"
)

// PerSample measures both modes at each batch size, its phases add up to
// about the measured step time, and the plot is a PNG.
func TestPerSampleAndPlot(t *testing.T) {
	n := 512
	ds := &data.Dataset{Name: "random", X: make([]float32, n*28*28), Y: make([]uint8, n), N: n, C: 1, H: 28, W: 28, Classes: 10}
	for i := range ds.X {
		ds.X[i] = float32(i%97) / 97
	}
	for i := range ds.Y {
		ds.Y[i] = uint8(i % 10)
	}
	rep, err := PerSample(context.Background(), PerSampleConfig{Train: ds, Arch: model.MNIST, BatchSizes: []int{16, 32}, Steps: 3, Warmup: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || rep.Parameters != 26010 {
		t.Fatalf("%+v", rep)
	}
	for _, r := range rep.Results {
		var sum float64
		for _, v := range r.DP.Phases {
			sum += v
		}
		if !(r.DP.ExamplesPerSecond > 0 && r.NonPrivate.MsPerStep > 0 && sum > 0.3*r.DP.MsPerStep && sum < 1.5*r.DP.MsPerStep) {
			t.Errorf("batch %d: %+v (phases sum to %.3f ms)", r.BatchSize, r, sum)
		}
		if r.DP.Phases["per_sample"] <= 0 || r.NonPrivate.Phases["per_sample"] != 0 {
			t.Errorf("per-sample time: DP %v, non-private %v", r.DP.Phases["per_sample"], r.NonPrivate.Phases["per_sample"])
		}
	}
	path := filepath.Join(t.TempDir(), "p.png")
	if err := PlotPerSample(rep, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 8 || string(b[1:4]) != "PNG" {
		t.Fatalf("not a PNG: %v", err)
	}
	if _, err := PerSample(context.Background(), PerSampleConfig{Train: ds, Arch: model.MNIST, BatchSizes: []int{n + 1}, Steps: 1}); err == nil {
		t.Error("batch larger than the data accepted")
	}
}
