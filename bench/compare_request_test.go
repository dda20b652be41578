package bench

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dptune/dptune/job"
)

// A comparison's request is refused before any work, with an error that
// wraps job.ErrInvalid and names the flag at fault.
func TestCompareRequestRefused(t *testing.T) {
	src, err := job.Dataset("mnist", "")
	if err != nil {
		t.Fatal(err)
	}
	ok := CompareRequest{LRStride: 2, ClipStride: 5, Tuners: []string{CompareEntryIDs()[0]}, Budgets: []float64{1}, Delta: 1e-5, Seeds: 3,
		Epochs: 1, BatchSize: 256, MeanRuns: 10, ValSize: 5000, ScoreNoise: 20, GridScoreNoise: 100, VoteReps: 10,
		Clipping: job.ClippingSettings{Rule: "flat"}, Out: t.TempDir()}
	for _, c := range []struct {
		edit func(*CompareRequest)
		want string
	}{
		{func(r *CompareRequest) { r.Given = job.Given{"budget": true} }, "--budget: a benchmark is not a release"},
		{func(r *CompareRequest) { r.Seeds = 0 }, "--seeds 0 is outside [1, 1000]"},
		{func(r *CompareRequest) { r.ValSize = 60000 }, "--val-size 60000 must be at least 1 and below the nominal training-set size 60000"},
		{func(r *CompareRequest) { r.Budgets = []float64{0} }, "--epsilon 0: "},
		{func(r *CompareRequest) { r.Tuners = []string{"none"} }, `unknown --tuners entry "none" (want `},
		{func(r *CompareRequest) { r.TrainSubset, r.DevSplit = 1000, 1000 }, "--dev-split and --train-subset cannot be combined"},
		{func(r *CompareRequest) { r.Given = job.Given{"subsample": true}; r.Subsample = 0.5 }, "--subsample needs --selection-share"},
		{func(r *CompareRequest) { r.ReferenceSeeds = 4 }, "--reference-seeds 4 is outside [0, --seeds 3]"},
		{func(r *CompareRequest) { r.DefaultSettings = "epochs=1" }, "--default-settings needs --default-source"},
		{func(r *CompareRequest) { r.DefaultLabel = "mis-set" }, "--default-label names a default given by --default-settings"},
	} {
		r := ok
		c.edit(&r)
		_, _, err := r.Config(context.Background(), src)
		if err == nil || !errors.Is(err, job.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q, wrapping ErrInvalid; have %v", c.want, err)
		}
	}
	if _, _, err := ok.Config(context.Background(), src); err != nil {
		t.Errorf("a good request: %v", err)
	}
}
