package bench

import (
	"testing"

	"github.com/dptune/dptune/tuning"
)

// A doubling row cached before its final run was counted at the selected
// candidate's epochs is recounted: 16 candidates × 500 parts, 16 × 30
// part epochs, then one final run of the selected 20 epochs.
func TestRecountPartitioned(t *testing.T) {
	var s CompareSettings
	s.Candidates, s.Epochs = 16, 1
	s.Doubling.Partitions, s.Doubling.PartEpochs = 500, 30
	old := CompareRow{Tuner: tuning.DoublingName, Runs: 8001, TrainingEpochs: 481, Selected: map[string]float64{tuning.Epochs: 20}}
	got := s.recountPartitioned(old)
	if got.Runs != 16*500+1 || got.TrainingEpochs != 16*30+20 {
		t.Errorf("recounted runs %d, epochs %g; want %d, %d", got.Runs, got.TrainingEpochs, 16*500+1, 16*30+20)
	}
	grid := CompareRow{Tuner: "grid", Runs: 16, TrainingEpochs: 240}
	if g := s.recountPartitioned(grid); g.Runs != 16 || g.TrainingEpochs != 240 {
		t.Errorf("a grid row changed: %+v", g)
	}
}
