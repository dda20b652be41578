package bench

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/model/features"
)

// tinyScatterNetwork is scatter-linear-mnist's layers on 64 random 8×8
// images (81×2×2 features), batch 16: a four-step epoch.
func tinyScatterNetwork(t *testing.T) ScatterNetwork {
	t.Helper()
	arch, err := model.NewArch(model.ScatterLinearMNIST, 1, 8, 8, 10)
	if err != nil {
		t.Fatal(err)
	}
	const n = 64
	d := &data.Dataset{Name: "tiny", X: make([]float32, n*64), Y: make([]uint8, n), N: n, C: 1, H: 8, W: 8, Classes: 10}
	for i := range d.X {
		d.X[i] = float32(i%13) / 13
	}
	for i := range d.Y {
		d.Y[i] = uint8(i % 10)
	}
	return ScatterNetwork{Name: "tiny-scatter", Dataset: "tiny", Arch: arch, NominalN: n, BatchSize: 16, Epochs: 3, LearningRate: 1, ClipNorm: 0.1,
		Train: func() (*data.Dataset, error) { return d, nil }}
}

// Scatter gives one row per size and worker count with a positive
// throughput, skips a network without its cache (and one whose cache is
// corrupt) without building it, times an epoch once the cache exists, and
// writes scatter.json and CSVs with the documented columns.
func TestScatter(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tiny := tinyScatterNetwork(t)
	broken := ScatterNetwork{Name: "broken", Dataset: "tiny", Err: errors.New("a data directory is required")}
	cfg := ScatterConfig{
		Sizes:    []ScatterSize{{Dataset: "a", C: 1, H: 8, W: 8, Images: 1000}, {Dataset: "b", C: 3, H: 8, W: 8, Images: 500}},
		Duration: 20 * time.Millisecond, Workers: []int{1, 2}, Networks: []ScatterNetwork{tiny, broken}, FeatureDir: dir, Seed: 1,
	}
	rep, err := Scatter(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 4 {
		t.Fatalf("%d rows, want 2 sizes × 2 worker counts", len(rep.Rows))
	}
	for i, r := range rep.Rows {
		wantShape := []string{"1×8×8", "1×8×8", "3×8×8", "3×8×8"}[i]
		if r.Shape != wantShape || r.Workers != cfg.Workers[i%2] || r.Images < r.Workers || !(r.ImagesPerS > 0) ||
			!(r.CPUMsPerImage >= 0) || r.CacheSecondsEx != float64(r.CacheImages)/r.ImagesPerS {
			t.Errorf("row %d: %+v", i, r)
		}
	}
	if len(rep.Epochs) != 2 || !strings.Contains(rep.Epochs[0].Skipped, "no feature cache") ||
		rep.Epochs[1].Skipped != "a data directory is required" {
		t.Fatalf("epochs without a cache: %+v", rep.Epochs)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("Scatter wrote %d files to the feature cache", len(entries))
	}

	// A corrupt cache file is reported, not rebuilt.
	f, _ := tiny.Arch.FrontEnd()
	train, _ := tiny.Train()
	path := features.Path(dir, f, train)
	if err := os.WriteFile(path, []byte("DPTFEAT1 truncated"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Sizes, cfg.Networks = cfg.Sizes[:1], cfg.Networks[:1]
	if rep, err = Scatter(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if len(rep.Epochs) != 1 || !strings.Contains(rep.Epochs[0].Skipped, "not usable") {
		t.Fatalf("epoch with a corrupt cache: %+v", rep.Epochs)
	}
	if b, _ := os.ReadFile(path); string(b) != "DPTFEAT1 truncated" {
		t.Fatal("the corrupt cache file was rewritten")
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := features.Load(ctx, dir, f, train, nil, nil); err != nil {
		t.Fatal(err)
	}
	if rep, err = Scatter(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	e := rep.Epochs[0]
	// 81·2·2 features → 10 classes: 3240 weights and 10 biases (the data
	// normalisation's mean and variance are buffers, not parameters).
	if e.Skipped != "" || e.Steps != 4 || !(e.Seconds > 0) || e.Parameters != 3240+10 || e.RunSeconds != 3*e.Seconds {
		t.Fatalf("epoch: %+v", e)
	}

	out := t.TempDir()
	paths, err := WriteScatter(rep, out)
	if err != nil || len(paths) != 3 {
		t.Fatalf("WriteScatter: %v, %v", paths, err)
	}
	var back ScatterReport
	if b, err := os.ReadFile(paths[0]); err != nil || json.Unmarshal(b, &back) != nil || len(back.Rows) != 2 || back.J != 2 || back.L != 8 {
		t.Fatalf("scatter.json: %v %+v", err, back)
	}
	for i, want := range [][]string{ScatterColumns, ScatterEpochColumns} {
		fh, err := os.Open(paths[i+1])
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(fh).ReadAll()
		fh.Close()
		if err != nil || len(recs) < 2 || !slices.Equal(recs[0], want) {
			t.Fatalf("%s: %v %v", paths[i+1], err, recs)
		}
		for _, r := range recs[1:] {
			if len(r) != len(want) {
				t.Errorf("%s row %v: %d fields, want %d", paths[i+1], r, len(r), len(want))
			}
		}
	}

	if _, err := Scatter(ctx, ScatterConfig{Duration: 0}); err == nil {
		t.Error("a zero duration accepted")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Scatter(cctx, cfg); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
