package tuning

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/dptune/dptune/dpsgd"
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

// With the tuning's one data normalisation (SharedDataNorm), a run's event
// is the run's own minus the estimate, every candidate's run takes the same
// released statistics, and a run before the estimate is released is
// refused.
func TestDPSGDTrainerSharedDataNorm(t *testing.T) {
	arch, err := model.NewArch(model.Spec{Name: "dn", Layers: []model.LayerSpec{model.DataNorm(5, 0, 0), model.Flatten(), model.Linear(10)}}, 1, 28, 28, 10)
	if err != nil {
		t.Fatal(err)
	}
	space := Space{Name: "two", Dims: []Dim{{Name: LearningRate, Values: []float64{0.05, 0.2}}}}
	tr := &DPSGDTrainer{Arch: arch, Data: tinyMNIST(64, 1), Val: tinyMNIST(20, 2), NoiseMultiplier: 1, SamplingRate: 0.25,
		ExpectedBatchSize: 16, Steps: 2, LearningRate: 0.1, ClipNorm: 1, Space: space, ScoreNoise: 3, ValSize: 20}
	own := tr.Event().(accounting.Composed) // {{estimate, steps}, score}
	tr.Norm = tr.Hyper().SharedDataNormOf(space)
	if tr.Norm == nil || tr.Norm.Mechanism != (dpsgd.DataNorm{NoiseMultiplier: 5, MeanClipNorm: model.DefaultDataNormMeanClip, SquareClipNorm: model.DefaultDataNormSquareClip}) {
		t.Fatalf("shared normalisation %+v", tr.Norm)
	}
	withEstimate := own.Events[0].(accounting.Composed)
	if !reflect.DeepEqual(withEstimate.Events[0], tr.Norm.Event()) {
		t.Fatalf("a run's own event %+v does not open with the estimate %+v", own, tr.Norm.Event())
	}
	minus := accounting.Composed{Events: []accounting.Event{withEstimate.Events[1], own.Events[1]}}
	if !reflect.DeepEqual(tr.Event(), accounting.Event(minus)) {
		t.Fatalf("shared: a run's event %+v, want its own minus the estimate %+v", tr.Event(), minus)
	}
	seed := uint64(3)
	if _, err := tr.Train(context.Background(), space.At(0), &seed); err == nil {
		t.Fatal("a run before the estimate was released trained")
	}
	tr.Norm.Estimate = &dpsgd.DataNormEstimate{Mean: []float32{0.25}, Variance: []float32{0.5}}
	for i := range 2 {
		r, err := tr.Train(context.Background(), space.At(i), &seed)
		if err != nil || r.Model == nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if !slices.Equal(r.Model.Buffers, []float32{0.25, 0.5}) {
			t.Fatalf("run %d's buffers %v, want the released estimate", i, r.Model.Buffers)
		}
	}
}

// SharedDataNormOf shares the datanorm layer's mechanism that every
// network of the tuning has, none for networks without one, and none when
// two networks' mechanisms differ (each run then counts its own).
func TestSharedDataNormOf(t *testing.T) {
	mk := func(name string, sigma float64) model.Arch {
		layers := []model.LayerSpec{model.Flatten(), model.Linear(10)}
		if sigma > 0 {
			layers = append([]model.LayerSpec{model.DataNorm(sigma, 0, 0)}, layers...)
		}
		a, err := model.NewArch(model.Spec{Name: name, Layers: layers}, 1, 28, 28, 10)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	space := Space{Name: "nets", Dims: []Dim{{Name: Network, Choices: []string{"a", "b"}, Values: []float64{0, 1}}}}
	for _, c := range []struct {
		a, b float64
		want float64 // 0: nil
	}{{0, 0, 0}, {5, 0, 5}, {5, 5, 5}, {5, 6, 0}} {
		h := Hyper{Arch: mk("base", 0), Networks: map[string]model.Arch{"a": mk("a", c.a), "b": mk("b", c.b)}}
		got := h.SharedDataNormOf(space)
		if (got == nil) != (c.want == 0) || got != nil && got.Mechanism.NoiseMultiplier != c.want {
			t.Errorf("networks with σ %v and %v: shared %+v, want σ %v", c.a, c.b, got, c.want)
		}
	}
}
