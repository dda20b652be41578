package tuning

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// Every run of a network with a datanorm layer estimates its own
// normalisation, and one run's event — the base every tuner composes and
// calibrates — counts it before the DP-SGD steps.
func TestDPSGDTrainerDataNorm(t *testing.T) {
	arch, err := model.NewArch(model.Spec{Name: "dn", Layers: []model.LayerSpec{model.DataNorm(5, 0, 0), model.Flatten(), model.Linear(10)}}, 1, 28, 28, 10)
	if err != nil {
		t.Fatal(err)
	}
	tr := &DPSGDTrainer{Arch: arch, Data: tinyMNIST(64, 1), Val: tinyMNIST(20, 2), NoiseMultiplier: 1, SamplingRate: 0.25,
		ExpectedBatchSize: 16, Steps: 2, LearningRate: 0.1, ClipNorm: 1}
	g := accounting.Gaussian{NoiseMultiplier: 5, Sensitivity: 1}
	want := accounting.Composed{Events: []accounting.Event{accounting.Composed{Events: []accounting.Event{g, g}}, accounting.DPSGD(1, 0.25, 2)}}
	if !reflect.DeepEqual(tr.Event(), accounting.Event(want)) {
		t.Fatalf("event %#v, want %#v", tr.Event(), want)
	}
	seed := uint64(3)
	r, err := tr.Train(context.Background(), Candidate{Values: map[string]float64{}}, &seed)
	if err != nil || r.Model == nil {
		t.Fatalf("run: %v", err)
	}
	if v := r.Model.Buffer("dn1.var"); slices.Equal(v, []float32{1}) || slices.Equal(r.Model.Buffers, []float32{0, 1}) {
		t.Fatalf("buffers not estimated: %v", r.Model.Buffers)
	}
}
