package bench

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/federated"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/tuning"
)

// Figure 2's simulation on a small setup: every point's success rate is at
// least Theorem V.1's mean bound (less its 95% interval), all-good
// candidates always succeed, and the noiseless end (large ε, ℓ = 1, small
// loss deviation) selects a good candidate every time.
func TestVoteFigure2(t *testing.T) {
	cfg := VoteSimConfig{Candidates: 20, Clients: 30, GoodMean: 0, BadMean: 1, Delta: 1e-5, Reps: 200, Seed: 3,
		Good2a: 3, LossStddevs: []float64{0.25, 1}, Votes2a: []int{1, 5}, Epsilons2a: []float64{0.05, 5},
		LossStddev2b: 1, Goods2b: []int{1, 20}, Votes2b: []int{1, 20}, Epsilons2b: []float64{0.2}}
	dir := t.TempDir()
	pts, err := VoteFigure2(context.Background(), cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2*2*2+2*2 {
		t.Fatalf("%d points", len(pts))
	}
	for _, p := range pts {
		if p.Success < p.Bound-p.CI95-1e-9 {
			t.Errorf("%+v: success below Theorem V.1's bound", p)
		}
		if p.Good == cfg.Candidates && p.Success != 1 {
			t.Errorf("%+v: every candidate is good", p)
		}
		if p.Figure == "2a" && p.LossStddev == 0.25 && p.VotesPerClient == 1 && p.Epsilon == 5 && p.Success != 1 {
			t.Errorf("%+v: a nearly noiseless vote missed", p)
		}
	}
	for _, f := range []string{"figure2a.png", "figure2b.png", "vote_sim.csv"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// toySource is a two-class 4×4 problem a linear model learns in one epoch.
func toySource(t *testing.T, n int) job.Source {
	t.Helper()
	spec, err := model.ParseSpec(strings.NewReader(`{"name": "toy", "layers": [{"type": "flatten"}, {"type": "linear", "out": 2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	arch, err := model.NewArch(spec, 1, 4, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	gen := func(n int, seed uint64) *data.Dataset {
		r := rand.New(rand.NewPCG(seed, seed))
		d := &data.Dataset{Name: "toy", X: make([]float32, n*16), Y: make([]uint8, n), N: n, C: 1, H: 4, W: 4, Classes: 2}
		for i := range n {
			y := r.IntN(2)
			d.Y[i] = uint8(y)
			for j := range 16 {
				sign := float32(1)
				if (j%2 == 0) != (y == 0) {
					sign = -1
				}
				d.X[i*16+j] = sign*0.5 + float32(r.NormFloat64())*0.5
			}
		}
		return d
	}
	train, test := gen(n, 1), gen(200, 2)
	return job.Source{Name: "toy", Arch: arch, NominalN: n, Load: func() (*data.Dataset, *data.Dataset, error) { return train, test, nil }}
}

// The real-data figures on a toy problem: DP-Hype's mean accuracy lies
// between the worst candidate's and Opt's, the noise grows as ε shrinks,
// the split histogram counts every example once, and a rerun on the cache
// trains nothing and gives the same points.
func TestVoteReal(t *testing.T) {
	space := tuning.Space{Name: "toy", Dims: []tuning.Dim{{Name: federated.LearningRate, Values: []float64{1e-4, 0.01, 0.3}}, {Name: federated.Momentum, Values: []float64{0, 0.9}}}}
	trained := 0
	cfg := VoteRealConfig{Source: toySource(t, 600), Space: space, IIDClients: []int{4}, Alphas: []float64{0.5}, AlphaClients: 4, DirichletClients: []int{4, 3},
		Epsilons: []float64{0.5, 8}, Delta: 1e-5, VotesPerClient: 1, LocalEpochs: 1, BatchSize: 16, Rounds: 2, ClipNorm: 1,
		DPSGDEpsilons: []float64{8}, Reps: 200, Seed: 1, CacheDir: t.TempDir(), Progress: func(string, int, int) { trained++ }}
	pts, splits, err := VoteReal(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2+1+2+2 || len(splits) != 3 {
		t.Fatalf("%d points, %d splits", len(pts), len(splits))
	}
	if s := splits[2]; s.Clients != 3 || s.Alpha != 0.5 || len(s.Counts) != 3 {
		t.Errorf("the second Dirichlet setting's split is %d clients at α = %g", s.Clients, s.Alpha)
	}
	for _, p := range pts {
		if p.DPHype > p.Opt+1e-12 || p.Opt < p.RandGuess || p.DPHype < 0.4 || p.Noiseless > p.Opt || p.Noiseless <= 0 {
			t.Errorf("%+v", p)
		}
	}
	// At ε = 8 with one vote each the noise rarely overturns the noiseless
	// count, so DP-Hype's mean is near the noiseless winner's accuracy.
	if p := pts[1]; math.Abs(p.DPHype-p.Noiseless) > 0.1 {
		t.Errorf("ε = 8: DP-Hype %.3f, noiseless winner %.3f", p.DPHype, p.Noiseless)
	}
	var timed []float64
	for _, s := range splits {
		if s.TrainingSeconds == nil || !(*s.TrainingSeconds > 0) {
			t.Fatalf("split %d×%g: training time %v", s.Clients, s.Alpha, s.TrainingSeconds)
		}
		timed = append(timed, *s.TrainingSeconds)
	}
	if pts[0].NoiseStddev <= pts[1].NoiseStddev || pts[0].Opt < 0.9 {
		t.Errorf("ε = 0.5: %+v; ε = 8: %+v", pts[0], pts[1])
	}
	for _, s := range splits {
		total := 0
		for _, c := range s.Counts {
			for _, k := range c {
				total += k
			}
		}
		if total != 600 {
			t.Errorf("split %+v covers %d examples", s, total)
		}
	}
	if trained == 0 {
		t.Fatal("nothing trained")
	}
	trained = 0
	again, againSplits, err := VoteReal(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if trained != 0 {
		t.Errorf("the rerun trained %d times; the cache should cover it", trained)
	}
	for i, s := range againSplits {
		if *s.TrainingSeconds != timed[i] {
			t.Errorf("split %d: the rerun from the cache changed the training time from %g to %g s", i, timed[i], *s.TrainingSeconds)
		}
	}
	for i := range pts {
		if pts[i] != again[i] {
			t.Errorf("rerun point %d: %+v, first %+v", i, again[i], pts[i])
		}
	}
	dir := t.TempDir()
	if err := PlotVoteReal(pts, "non-private", "toy", filepath.Join(dir, "a.png")); err != nil {
		t.Fatal(err)
	}
	if err := PlotVoteSplits(splits, filepath.Join(dir, "b.png")); err != nil {
		t.Fatal(err)
	}
}

// The real-data figures of a network with a scatter front end train it on
// the features of the images.
func TestVoteRealOfAScatterNetwork(t *testing.T) {
	src := toySource(t, 300)
	spec := model.Spec{Name: "toy-scatter", Layers: []model.LayerSpec{model.Scatter(1, 2), model.GroupNorm(3), model.Flatten(), model.Linear(2)}}
	var err error
	if src, err = src.WithModel(spec); err != nil {
		t.Fatal(err)
	}
	space := tuning.Space{Name: "toy", Dims: []tuning.Dim{{Name: federated.LearningRate, Values: []float64{1e-4, 0.3}}}}
	cfg := VoteRealConfig{Source: src, Space: space, IIDClients: []int{2}, AlphaClients: 2, Epsilons: []float64{8}, Delta: 1e-5,
		VotesPerClient: 1, LocalEpochs: 1, BatchSize: 16, Rounds: 1, ClipNorm: 1, Reps: 10, Seed: 1, CacheDir: t.TempDir()}
	pts, _, err := VoteReal(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 1 || !(pts[0].Opt > 0.5) {
		t.Errorf("points %+v: want one whose best candidate learns the toy problem", pts)
	}
}
