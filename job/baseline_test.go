package job

import (
	"testing"

	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/tuning"
)

// A tuning of a network with published settings names its baseline (the
// one `dptune train` of those settings at the same ε and δ) and says
// whether the candidate it selected runs exactly those settings.
func TestTuneBaseline(t *testing.T) {
	arch := model.Arch{Spec: model.TBMNIST, C: 1, H: 28, W: 28, Classes: 10}
	s := TuneSpec{Data: Source{Name: "fashion-mnist", Arch: arch, NominalN: 60000}, Epsilon: 3, Delta: 1e-5,
		Epochs: 40, BatchSize: 2048, Momentum: 0.9}
	b, ok := s.Baseline()
	if !ok || b.BatchSize != 2048 || b.LearningRate != 4 || b.Epochs != 40 || b.ClipNorm != 0.1 ||
		b.Command != "dptune train --dataset fashion-mnist --model tb-mnist --epsilon 3 --delta 1e-05" {
		t.Fatalf("baseline %+v, %v", b, ok)
	}
	for _, tc := range []struct {
		values map[string]float64
		labels map[string]string
		want   bool
	}{
		{map[string]float64{tuning.LearningRate: 4, tuning.ClipNorm: 0.1}, nil, true},
		{map[string]float64{tuning.LearningRate: 2, tuning.ClipNorm: 0.1}, nil, false},
		{map[string]float64{tuning.LearningRate: 4, tuning.ClipNorm: 0.1, tuning.Epochs: 20}, nil, false},
		{map[string]float64{tuning.LearningRate: 4, tuning.ClipNorm: 0.1, tuning.Network: 1}, map[string]string{tuning.Network: "scatter-linear-mnist"}, false},
		{map[string]float64{tuning.LearningRate: 4, tuning.ClipNorm: 0.1, tuning.Network: 0}, map[string]string{tuning.Network: "tb-mnist"}, true},
		{map[string]float64{tuning.LearningRate: 4, tuning.ClipNorm: 0.1, tuning.LRSchedule: 1}, map[string]string{tuning.LRSchedule: "cosine"}, false},
	} {
		if got := s.isBaseline(b, tc.values, tc.labels); got != tc.want {
			t.Errorf("%v %v: selected is baseline %v, want %v", tc.values, tc.labels, got, tc.want)
		}
	}
	// A candidate that leaves out the learning rate and clipping norm runs
	// the network's own (s.fixed): the published ones.
	if !s.isBaseline(b, map[string]float64{}, nil) {
		t.Error("the network's own settings are not its baseline")
	}
	s.Data.Arch.Spec = model.OpacusMNIST
	if _, ok := s.Baseline(); ok {
		t.Error("a network without published settings has a baseline")
	}
}
