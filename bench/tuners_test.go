package bench

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/tuning"
)

func syntheticLandscape(shift float64) Landscape {
	s := tuning.Space{Name: "syn", Dims: []tuning.Dim{
		{Name: tuning.LearningRate, Values: tuning.LogGrid(0.01, 2, 8), Log: true},
		{Name: tuning.ClipNorm, Values: tuning.LinearGrid(0.5, 0.5, 5)}}}
	l := Landscape{Space: s, Mean: make([]float64, s.Size()), SD: make([]float64, s.Size()), N: make([]int, s.Size())}
	for i := range l.Mean {
		x := s.Coords(i)
		l.Mean[i] = 0.95 - shift - 0.8*((x[0]-0.7)*(x[0]-0.7)+(x[1]-0.5)*(x[1]-0.5))
	}
	return l
}

// The simulation's accuracies lie within the landscape's range, approach its
// best with many runs, and fall as the mean number of runs falls; the plot
// is written.
func TestSimulateTuners(t *testing.T) {
	gp, un := syntheticLandscape(0.002), syntheticLandscape(0)
	cells, err := SimulateTuners(context.Background(), TunerSimConfig{GP: gp, Uniform: un, Gammas: []float64{0.01, 0.5},
		Repeats: 40, ScoreNoise: 0.005, GPOptions: tuning.DefaultGPOptions(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	bestU, bestG := un.Mean[0], gp.Mean[0]
	for i := range un.Mean {
		bestU, bestG = math.Max(bestU, un.Mean[i]), math.Max(bestG, gp.Mean[i])
	}
	many, few := cells[0], cells[1]
	if many.UniformAccuracy < bestU-0.03 || many.GPAccuracy < bestG-0.03 || many.UniformAccuracy > bestU || many.GPAccuracy > bestG {
		t.Errorf("100 runs: %+v (best %v, %v)", many, bestU, bestG)
	}
	if few.UniformAccuracy >= many.UniformAccuracy || few.GPAccuracy >= many.GPAccuracy {
		t.Errorf("2 runs %+v not below 100 runs %+v", few, many)
	}
	// The paired difference has the arms' difference of means as its mean
	// (linearity), and a standard error of its own.
	for _, c := range cells {
		if d, se := c.GapAndStdErr(); math.Abs(d-(c.GPAccuracy-c.UniformAccuracy)) > 1e-12 || !(se > 0) || c.DifferenceStdErr != se {
			t.Errorf("γ = %v: paired GP − Uniform %v ± %v, arms %v − %v", c.Gamma, d, se, c.GPAccuracy, c.UniformAccuracy)
		}
	}
	if err := PlotTuners(cells, filepath.Join(t.TempDir(), "t.png")); err != nil {
		t.Fatal(err)
	}
}

// A landscape's runs go to the cache as they finish, and a second build
// reuses those of its own network (and only those) instead of training
// again, with their wall time.
func TestLandscapeCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.csv")
	own := NetworkKey(model.Spec{}) // the zero Arch's, as the build below has
	other := NetworkKey(model.OpacusMNIST)
	rows := []cacheRow{{own, 0.7, 1, 0, 0.1, 0.5, 0.9, 1.5}, {own, 0.7, 1, 1, 0.1, 0.5, 0.8, 2.5}, {other, 0.7, 1, 1, 0.1, 0.5, 0.1, 9}}
	for _, r := range rows {
		if err := appendCache(path, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readCache(path)
	if err != nil || len(got) != 3 || got[1] != rows[1] {
		t.Fatalf("%v %v", got, err)
	}
	if own == other || !strings.HasPrefix(other, "opacus-mnist@") {
		t.Errorf("network keys %q and %q", own, other)
	}
	space := tuning.Space{Name: "one", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.1}}, {Name: tuning.ClipNorm, Values: []float64{0.5}}}}
	// A cancelled build returns at once if it has a run to train.
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	l, err := BuildLandscape(stopped, LandscapeConfig{Space: space, NoiseMultiplier: 0.7, Epochs: 1, Seeds: 2, Cache: path})
	if err != nil {
		t.Fatal(err)
	}
	if l.N[0] != 2 || math.Abs(l.Mean[0]-0.85) > 1e-12 || l.Seconds != 4 || l.Network != own {
		t.Errorf("%+v", l)
	}
	// The same runs of another network are not this one's.
	if _, err := BuildLandscape(stopped, LandscapeConfig{Arch: model.MNIST, Space: space, NoiseMultiplier: 0.7, Epochs: 1, Seeds: 2, Cache: path}); !errors.Is(err, context.Canceled) {
		t.Errorf("another network's runs reused: %v", err)
	}
	os.WriteFile(path, []byte("noise_multiplier,epochs\n1,x\n"), 0o644)
	if _, err := readCache(path); err == nil {
		t.Error("corrupt cache accepted")
	}
}

// The doubling figures are written, the fitted constant of T ≈ c·log n
// lies in the range the paper reports (between 1 and 5), and on percent
// utilities with the noise of [0, 1] the fidelity reaches the paper's
// Figure 3 (α ≈ 1 from kϵ = 5).
func TestDoublingFigures(t *testing.T) {
	dir := t.TempDir()
	sum, err := DoublingFigures(context.Background(), dir, 3, 3)
	if err != nil {
		t.Fatal(err)
	}
	c2 := sum.FitLog2
	for _, p := range sum.Fidelity {
		if p.Utilities == "percent" && p.KEpsilon >= 5 && p.Fidelity < 0.95 {
			t.Errorf("percent utilities at kϵ = %g: fidelity %.2f, want the paper's ≈ 1", p.KEpsilon, p.Fidelity)
		}
	}
	if len(sum.Fidelity) != 8 {
		t.Errorf("%d fidelity points, want 2 units × 4 kϵ", len(sum.Fidelity))
	}
	for _, f := range []string{"figure1.png", "figure1.csv", "figure3.png", "figure3.csv", "figure4.png", "figure4.csv", "doubling.json"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if c2 < 1 || c2 > 5 {
		t.Errorf("T ≈ %.2f·log₂ n", c2)
	}
}

// DoublingFigures stops between searches once its context is done, however
// many repetitions were asked for.
func TestDoublingFiguresStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	go func() { _, err := DoublingFigures(ctx, t.TempDir(), 1<<30, 1<<30); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("DoublingFigures ignored its cancelled context")
	}
}
