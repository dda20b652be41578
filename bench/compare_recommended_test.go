package bench

import (
	"context"
	"testing"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/tuning"
)

// The recommended tuner runs in a comparison at its own fixed settings —
// K, the private validation (a sixth of the nominal size, inside its
// subset), the subset, the share — not the comparison's, with the default
// row's settings as its default candidate; its row states the share and
// subset its report gives.
func TestCompareRecommended(t *testing.T) {
	space := tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.5, 0.05}}}}
	cfg := CompareConfig{Data: tinySource(12000), Space: space, Entries: []CompareEntry{{Tuner: tuning.RecommendedName}},
		Budgets: []float64{8}, Delta: 1e-5, Seeds: []uint64{1}, Epochs: 1, BatchSize: 200, MeanRuns: 30, ValSize: 100, ScoreNoise: 50, GridScoreNoise: 5,
		Default: &job.TrainDefaults{BatchSize: 200, Epochs: 1, LearningRate: 0.5, Momentum: 0, ClipNorm: 0.5, Source: "a test's"}, Dir: t.TempDir()}
	spec, err := compareSpec(cfg, cfg.Entries[0], 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	if spec.ValSize != 0 || spec.ScoreNoise != 0 || spec.Validation != "" || spec.Default == nil || *spec.Default != *cfg.Default {
		t.Errorf("spec: validation %q of %d, score noise %v, default %+v; want the preset's (zero here) and the default row's", spec.Validation, spec.ValSize, spec.ScoreNoise, spec.Default)
	}
	rep, err := Compare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 || !rep.Rows[0].Released || rep.Rows[0].SelectionShare != 0.1 || rep.Rows[0].Subsample != 0.1 || !rep.Rows[0].IncludesDefault {
		t.Errorf("rows %+v", rep.Rows)
	}
}
