package tuning

import (
	"errors"
	"reflect"
	"testing"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// subsampleHyper runs batch sizes {100, 200} for 2 epochs of 10,000
// nominal examples.
func subsampleHyper() (Hyper, Space) {
	h := Hyper{Arch: model.Arch{}, NominalN: 10000, Epochs: 2,
		Config: dpsgd.Config{SamplingRate: 0.01, ExpectedBatchSize: 100, Steps: 200, LearningRate: 1, ClipNorm: 1}}
	return h, Space{Name: "b", Dims: []Dim{{Name: BatchSize, Values: []float64{100, 200}}}}
}

// On a tuning subset of ratio q a candidate keeps its sampling rate B/N and
// steps (so its event is the whole set's), and its expected batch, the
// divisor of the noisy sum, is q·B.
func TestSubsampleKeepsRateAndSteps(t *testing.T) {
	h, s := subsampleHyper()
	sub := h
	sub.Subsample = 0.1
	for _, b := range []float64{100, 200} {
		c := Candidate{Values: map[string]float64{BatchSize: b}}
		_, whole, err := h.Run(c)
		if err != nil {
			t.Fatal(err)
		}
		_, part, err := sub.Run(c)
		if err != nil {
			t.Fatal(err)
		}
		if part.SamplingRate != b/10000 || part.Steps != whole.Steps || part.ExpectedBatchSize != 0.1*b {
			t.Errorf("batch %v on the subset: rate %v, %d steps, expected batch %v; want %v, %d, %v", b, part.SamplingRate, part.Steps, part.ExpectedBatchSize, b/10000, whole.Steps, 0.1*b)
		}
	}
	e1, _ := h.Event(s, 2)
	e2, _ := sub.Event(s, 2)
	if !reflect.DeepEqual(e1, e2) {
		t.Errorf("the subset's run event %+v differs from the whole set's %+v", e2, e1)
	}
}

// A selection's ledger on a subset is one amplified event of all its
// entries; without a subsample, or with nothing run, it is unchanged.
func TestSubsampledLedger(t *testing.T) {
	var l accounting.Ledger
	a, b := accounting.DPSGD(2, 0.01, 100), accounting.DiscreteGaussian{NoiseMultiplier: 5, Sensitivity: 1}
	l.Add("a", a)
	l.Add("b", b)
	got := SubsampledLedger(0.1, "sel", l)
	want := accounting.PoissonSampled{SamplingRate: 0.1, Event: accounting.Composed{Events: []accounting.Event{a, b}}}
	if len(got.Entries) != 1 || got.Entries[0].Label != "sel" || !reflect.DeepEqual(got.Entries[0].Event, want) {
		t.Errorf("ledger %+v, want one entry %+v", got, want)
	}
	if r := SubsampledLedger(0, "sel", l); !reflect.DeepEqual(r, l) {
		t.Error("no subsample changed the ledger")
	}
	if r := SubsampledLedger(0.1, "sel", accounting.Ledger{}); len(r.Entries) != 0 {
		t.Error("an empty ledger gained an entry")
	}
}

// CheckSubsample refuses a ratio outside (0, 1], an expected batch under
// one example, too few validation examples in the subset, and a run that
// estimates its own data normalisation.
func TestCheckSubsample(t *testing.T) {
	h, s := subsampleHyper()
	if err := CheckSubsample(0.1, h, s, 5000); err != nil {
		t.Fatalf("a workable subset refused: %v", err)
	}
	for name, f := range map[string]func() error{
		"ratio 0":         func() error { return CheckSubsample(0, h, s, 5000) },
		"ratio 1.01":      func() error { return CheckSubsample(1.01, h, s, 5000) },
		"batch under one": func() error { return CheckSubsample(0.005, h, s, 0) },
		"validation 99":   func() error { return CheckSubsample(0.1, h, s, 990) },
		"own data norm": func() error {
			d := h
			d.Arch = model.Arch{Spec: model.Spec{Layers: []model.LayerSpec{model.DataNorm(1, 1, 1)}}}
			return CheckSubsample(0.1, d, s, 5000)
		},
	} {
		if err := f(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want an error wrapping ErrInvalid", name, err)
		}
	}
	if got := SubsampleValSize(0.1, 5000); got != 500 {
		t.Errorf("SubsampleValSize(0.1, 5000) = %d, want 500", got)
	}
}
