package job

import (
	"testing"

	"github.com/dptune/dptune/model"
)

// A tuning of a built-in ScatterNet network takes the network's own
// epochs, batch size and momentum for each flag not given; a flag given
// keeps its value, and another network keeps the flags' defaults.
func TestRunDefaults(t *testing.T) {
	d, ok := NetworkDefaults(model.ScatterLinearMNIST)
	if !ok {
		t.Fatal("scatter-linear-mnist has no defaults")
	}
	for _, c := range []struct {
		spec          model.Spec
		epochs, batch int
		momentum      float64
	}{{model.ScatterLinearMNIST, 2, d.BatchSize, d.Momentum}, {model.TBMNIST, 2, 256, 0}} {
		arch, err := model.NewArch(c.spec, 1, 28, 28, 10)
		if err != nil {
			t.Fatal(err)
		}
		spec := TuneSpec{Data: Source{Arch: arch}, Epochs: 2, BatchSize: 256}
		RunDefaults(spec.Data, Given{"epochs": true}, &spec.Epochs, &spec.BatchSize, &spec.Momentum)
		if spec.Epochs != c.epochs || spec.BatchSize != c.batch || spec.Momentum != c.momentum {
			t.Errorf("%s: epochs %d, batch %d, momentum %v; want %d, %d, %v", c.spec.Name, spec.Epochs, spec.BatchSize, spec.Momentum, c.epochs, c.batch, c.momentum)
		}
	}
}
