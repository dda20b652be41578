package bench

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
)

// A seeds measurement refuses, before any run, a network without published
// settings on its dataset and networks of two datasets; its report section
// lists each run and the mean with its interval.
func TestSeeds(t *testing.T) {
	mnist := tinySource(600)
	if _, err := Seeds(context.Background(), SeedsConfig{Sources: []job.Source{mnist}, Epsilon: 3, Delta: 1e-5, Seeds: []uint64{1}, Dir: t.TempDir()}); !errors.Is(err, job.ErrInvalid) {
		t.Errorf("tb-mnist on mnist (no published settings): %v", err)
	}
	fashion := mnist
	fashion.Name = "fashion-mnist"
	other, err := mnist.WithModel(model.ScatterLinearMNIST)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Seeds(context.Background(), SeedsConfig{Sources: []job.Source{fashion, other}, Epsilon: 3, Delta: 1e-5, Seeds: []uint64{1}, Dir: t.TempDir()}); !errors.Is(err, job.ErrInvalid) {
		t.Errorf("two datasets: %v", err)
	}
	d, _ := job.NetworkDefaultsOn(model.TBMNIST, "fashion-mnist")
	rep := SeedsReport{Dataset: "fashion-mnist", Epsilon: 3, Delta: 1e-5, Command: "dptune bench seeds", Runs: []SeedsRun{
		{Network: "tb-mnist", Seed: 1, Settings: d, TestAccuracy: 0.8661}, {Network: "tb-mnist", Seed: 2, Settings: d, TestAccuracy: 0.8649}}}
	c := SeedsCell{Network: "tb-mnist", Settings: d, Seeds: 2}
	c.Accuracy, c.CI95 = meanCI95([]float64{0.8661, 0.8649})
	rep.Cells = []SeedsCell{c}
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var w strings.Builder
	if _, err := seedsSection(&w, found{"seeds.json", "seeds.json", raw}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Command: `dptune bench seeds`", "| tb-mnist | batch 2048, 40 epochs, η = 4, momentum 0.9, C = 0.1: Tramèr & Boneh", "0.8661 (seed 1), 0.8649 (seed 2)", "0.8655 ± 0.0076"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("the section lacks %q:\n%s", want, w.String())
		}
	}
}
