package main

import (
	"testing"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
)

// A built-in ScatterNet network's own settings fill every flag not given;
// a flag given keeps its value.
func TestTrainUsesNetworkDefaults(t *testing.T) {
	d, ok := job.NetworkDefaults(model.ScatterLinearMNIST)
	if !ok {
		t.Fatal("scatter-linear-mnist has no defaults")
	}
	cmd := newTrainCmd()
	if err := cmd.ParseFlags([]string{"--epochs", "3", "--clip-norm", "0.5"}); err != nil {
		t.Fatal(err)
	}
	var f trainFlags
	f.epochs, f.clipNorm = 3, 0.5
	f.useDefaults(cmd, d)
	if f.batchSize != d.BatchSize || f.lr != d.LearningRate || f.momentum != d.Momentum || f.epochs != 3 || f.clipNorm != 0.5 {
		t.Errorf("flags %+v with defaults %+v", f, d)
	}
}

func TestNetworkDefaultsOnlyForTheBuiltin(t *testing.T) {
	if _, ok := job.NetworkDefaults(model.OpacusMNIST); ok {
		t.Error("opacus-mnist has scatter defaults")
	}
	changed := model.ScatterLinearMNIST
	changed.Layers = []model.LayerSpec{model.Scatter(2, 8), model.Flatten(), model.Linear(10)}
	if _, ok := job.NetworkDefaults(changed); ok {
		t.Error("a different network under the built-in's name takes its defaults")
	}
	if _, ok := job.NetworkDefaults(model.ScatterCNNMNIST); !ok {
		t.Error("scatter-cnn-mnist has no defaults")
	}
}
