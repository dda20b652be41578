package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/tuning"
)

// tinySource is a Source of n random 28×28 images (learnable: a bright
// column per label) and 100 test images.
func tinySource(n int) job.Source {
	mk := func(n int, rng *rand.Rand) *data.Dataset {
		d := &data.Dataset{Name: "tiny", N: n, C: 1, H: 28, W: 28, Classes: 10, X: make([]float32, n*784), Y: make([]uint8, n)}
		for i := range n {
			y := rng.IntN(10)
			d.Y[i] = uint8(y)
			for k := range 784 {
				v := rng.Float32() * 0.2
				if k%10 == y {
					v += 0.8
				}
				d.X[i*784+k] = v
			}
		}
		return d
	}
	return job.Source{Name: "mnist", Arch: model.Arch{Spec: model.TBMNIST, C: 1, H: 28, W: 28, Classes: 10}, NominalN: n,
		Load: func() (*data.Dataset, *data.Dataset, error) {
			rng := rand.New(rand.NewPCG(5, 6))
			return mk(n, rng), mk(100, rng), nil
		}}
}

// A comparison with baselines runs the default, the not-private selection
// and the oracle beside the tuners at every budget and seed, pairs each
// tuner with the default, reuses all of it from the cache on a rerun, and
// labels the not-private rows in its tables.
func TestCompareBaselines(t *testing.T) {
	space := tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.5, 0.05}}}}
	cfg := CompareConfig{Data: tinySource(600), Space: space, Entries: []CompareEntry{{Tuner: "randomstop", Variant: "tnb"}}, Budgets: []float64{4},
		Delta: 1e-5, Seeds: []uint64{1, 2}, Epochs: 1, BatchSize: 50, MeanRuns: 2, ValSize: 100, ScoreNoise: 5, GridScoreNoise: 5,
		Baselines: true, Default: &job.TrainDefaults{BatchSize: 50, Epochs: 1, LearningRate: 0.5, ClipNorm: 1, Source: "a test's"}, Dir: t.TempDir()}
	rep, err := Compare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range cfg.Seeds {
		row := func(tuner string) CompareRow {
			i := slices.IndexFunc(rep.Rows, func(r CompareRow) bool { return r.Tuner == tuner && r.Seed == seed })
			if i < 0 {
				t.Fatalf("seed %d: no %s row", seed, tuner)
			}
			return rep.Rows[i]
		}
		def, sel, ora := row(BaselineDefault), row(BaselineSelection), row(BaselineOracle)
		if !def.Released || def.Runs != 1 || def.EpsilonRDP > 4 || def.EpsilonRDP < 3.99 {
			t.Errorf("seed %d: default %+v", seed, def)
		}
		if sel.Runs != 2 || ora.Runs != 2 || ora.TestAccuracy < sel.TestAccuracy {
			t.Errorf("seed %d: selection %v, oracle %v (the oracle is the best test accuracy of the same runs)", seed, sel.TestAccuracy, ora.TestAccuracy)
		}
	}
	if len(rep.Versus) != 1 || rep.Versus[0].Seeds != 2 || rep.Versus[0].Verdict != verdict(rep.Versus[0].Mean, rep.Versus[0].CI95, 2) {
		t.Errorf("versus the default: %+v", rep.Versus)
	}
	// Every row ran here, in this process: its CPU seconds are measured.
	for _, r := range rep.Rows {
		if r.CPUSeconds == nil || *r.CPUSeconds <= 0 || !(r.Seconds > 0) {
			t.Errorf("%s, seed %d: %v s, CPU %v", r.Tuner, r.Seed, r.Seconds, r.CPUSeconds)
		}
	}
	again, err := Compare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if again.Cached != len(rep.Rows) || len(again.Rows) != 8 {
		t.Errorf("rerun: %d of %d rows from the cache", again.Cached, len(again.Rows))
	}
	// A cost sitting reads none of that cache: every tuning runs again.
	sitting := cfg
	sitting.CostSitting, sitting.Seeds = true, []uint64{1}
	timed, err := Compare(context.Background(), sitting)
	if err != nil {
		t.Fatal(err)
	}
	if !timed.CostSitting || timed.Cached != 0 || len(timed.Rows) != 4 {
		t.Errorf("cost sitting: %d of %d rows from the cache (cost sitting %v)", timed.Cached, len(timed.Rows), timed.CostSitting)
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	reps, err := answerReports([]found{{kind: "compare.json", path: "compare.json", raw: raw}})
	if err != nil {
		t.Fatal(err)
	}
	var answer strings.Builder
	writeAnswer(&answer, reps, answerRows(reps))
	v := rep.Versus[0]
	if row := fmt.Sprintf("| 4 | %s | randomstop (tnb): ", meanWithCI(rep.Cells[0].Accuracy, rep.Cells[0].CI95, 2)); !strings.Contains(answer.String(), "## Does private tuning pay?") ||
		!strings.Contains(answer.String(), row) || !strings.Contains(answer.String(), signedWithCI(v.Mean, v.CI95, v.Seeds)+" |") || !strings.Contains(answer.String(), v.Verdict+" |") {
		t.Errorf("the answer table lacks %q or the verdict:\n%s", row, answer.String())
	}
	png := filepath.Join(t.TempDir(), "versus.png")
	if err := PlotVersus(rep, png); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(png); err != nil || fi.Size() == 0 {
		t.Errorf("no versus plot: %v", err)
	}
	var md strings.Builder
	WriteCompareMarkdown(&md, rep)
	for _, want := range []string{"| default (one run of published settings) |", "| non-private selection (*not private*) |", "| oracle (*not private*) |", "a test's", "| randomstop (tnb) | "} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("compare.md lacks %q:\n%s", want, md.String())
		}
	}
}

// The verdict of a paired difference needs its interval on one side of 0.
func TestVerdicts(t *testing.T) {
	for _, c := range []struct {
		mean, half float64
		n          int
		want       string
	}{{0.02, 0.01, 5, VerdictPays}, {-0.02, 0.01, 5, VerdictCosts}, {0.005, 0.01, 5, VerdictUnresolved}, {0.5, 0, 1, VerdictOneSeed}} {
		if got := verdict(c.mean, c.half, c.n); got != c.want {
			t.Errorf("%+.3f ± %.3f over %d: %q, want %q", c.mean, c.half, c.n, got, c.want)
		}
	}
}

// A doubling tuning's cost is timed in two phases: its part runs and its
// final run, which add up to the tuning's. At the second budget of a seed
// its part scores come from the first's cache: only its final run is
// timed; a cost sitting removes that cache and times the parts again.
func TestCompareTimesDoublingPhases(t *testing.T) {
	space := tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.5, 0.05}}}}
	cfg := CompareConfig{Data: tinySource(600), Space: space, Entries: []CompareEntry{{Tuner: tuning.DoublingName}}, Budgets: []float64{4, 8},
		Delta: 1e-5, Seeds: []uint64{1}, Epochs: 1, BatchSize: 50, MeanRuns: 2, ValSize: 100, ScoreNoise: 5, GridScoreNoise: 5,
		Options: tuning.Values{"partitions": 2}, Dir: t.TempDir()}
	rep, err := Compare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 2 {
		t.Fatalf("%d rows", len(rep.Rows))
	}
	first, second := rep.Rows[0], rep.Rows[1]
	if first.PartsReused || first.PartSeconds == nil || first.PartCPUSeconds == nil || first.FinalSeconds == nil || first.FinalCPUSeconds == nil || first.CPUSeconds == nil {
		t.Fatalf("first budget: %+v", first)
	}
	if sum := *first.PartSeconds + *first.FinalSeconds; math.Abs(sum-first.Seconds) > 0.01*first.Seconds+1e-3 {
		t.Errorf("part runs %v s + final run %v s ≠ the tuning's %v s", *first.PartSeconds, *first.FinalSeconds, first.Seconds)
	}
	if !second.PartsReused || second.PartSeconds != nil || second.FinalSeconds == nil || second.FinalCPUSeconds == nil {
		t.Errorf("second budget, parts from the cache: %+v", second)
	}
	cfg.CostSitting = true
	timed, err := Compare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range timed.Rows {
		if r.PartsReused || r.PartSeconds == nil || r.FinalSeconds == nil {
			t.Errorf("cost sitting at ε = %g: %+v", r.Budget, r)
		}
	}
}
