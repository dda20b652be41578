package job

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dptune/dptune/model"
)

// A network with a scatter front end trains on the features, computed on
// the first run (with progress) into the curator's cache (files 0600),
// and read back by the next run, which computes nothing and, seeded, gives
// the same model; Evaluate on the test images gives the report's accuracy.
func TestScatterTrainUsesFeatureCache(t *testing.T) {
	src, err := smallMNIST(40).WithModel(model.ScatterLinearMNIST)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "features")
	computed := map[string]int{}
	src.Features = FeatureCache{Dir: dir, Progress: func(set string, done, total int) {
		if done == total {
			computed[set] = total
		}
	}}
	seed := uint64(7)
	spec := TrainSpec{Data: src, Delta: 1e-5, NoiseMultiplier: 1, ClipNorm: 0.1, BatchSize: 10, Epochs: 2, LearningRate: 1, Momentum: 0.9, Seed: &seed}
	rel, _, err := Train(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if computed["train"] != 40 || computed["test"] != 20 {
		t.Fatalf("features computed: %v, want train 40 and test 20", computed)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.feat"))
	if len(files) != 2 {
		t.Fatalf("cache files %v, want 2", files)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", f, st.Mode().Perm(), err)
		}
	}
	clear(computed)
	again, _, err := Train(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(computed) != 0 {
		t.Errorf("the second run computed features again: %v", computed)
	}
	for k, v := range rel.Model.Params {
		if again.Model.Params[k] != v {
			t.Fatalf("parameter %d: %v from the cache, %v computed", k, again.Model.Params[k], v)
		}
	}
	_, test, _ := smallMNIST(40).Load()
	m, err := Evaluate(context.Background(), rel.Model, test.X, test.Y)
	if err != nil {
		t.Fatal(err)
	}
	if acc := rel.Report.(*TrainReport).TestAccuracy; acc == nil || *acc != m.Accuracy {
		t.Errorf("Evaluate on the images: %v, report %v", m.Accuracy, acc)
	}
}
