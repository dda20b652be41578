package job

import (
	"errors"
	"strings"
	"testing"

	"github.com/dptune/dptune/model"
)

// A built-in ScatterNet network's own settings fill every setting not
// given; a setting given keeps its value.
func TestTrainUsesNetworkDefaults(t *testing.T) {
	d, ok := NetworkDefaults(model.ScatterLinearMNIST)
	if !ok {
		t.Fatal("scatter-linear-mnist has no defaults")
	}
	r := TrainRequest{Epochs: 3, ClipNorm: 0.5, Clipping: ClippingSettings{Rule: "flat"}, Given: Given{"epochs": true, "clip-norm": true}}
	r.useDefaults(d, func(string) { t.Error("a note under flat clipping") })
	if r.BatchSize != d.BatchSize || r.LearningRate != d.LearningRate || r.Momentum != d.Momentum || r.Epochs != 3 || r.ClipNorm != 0.5 {
		t.Errorf("request %+v with defaults %+v", r, d)
	}
	// Under automatic clipping the network's η at C is η·C, and said so.
	r = TrainRequest{Clipping: ClippingSettings{Rule: "automatic"}}
	var notes []string
	r.useDefaults(d, func(n string) { notes = append(notes, n) })
	if r.LearningRate != d.LearningRate*d.ClipNorm || r.ClipNorm != 0 || len(notes) != 1 {
		t.Errorf("automatic clipping: request %+v, notes %q", r, notes)
	}
}

// A training request is refused before its data is read, with an error
// that wraps ErrInvalid and names the flag at fault.
func TestTrainRequestRefusedBeforeData(t *testing.T) {
	noData := func() (Source, error) {
		t.Error("the data was read")
		return Source{}, errors.New("no data")
	}
	flat := ClippingSettings{Rule: "flat"}
	for _, c := range []struct {
		r    TrainRequest
		want string
	}{
		{TrainRequest{Clipping: ClippingSettings{Rule: "auto"}}, `--clipping "auto": want flat or automatic`},
		{TrainRequest{Clipping: ClippingSettings{Rule: "automatic", Gamma: 0.01}, Given: Given{"clip-norm": true}}, "--clipping automatic takes no --clip-norm"},
		{TrainRequest{Clipping: flat, NonPrivate: true, Given: Given{"epsilon": true}}, "--non-private takes no --epsilon"},
		{TrainRequest{Clipping: flat, Given: Given{"epsilon": true, "noise-multiplier": true}}, "give --epsilon or --noise-multiplier, not both"},
		{TrainRequest{Clipping: flat, Given: Given{"noise-multiplier": true}}, "--noise-multiplier 0 must be positive and finite"},
		{TrainRequest{Clipping: flat, Schedule: "linear"}, "--lr-schedule: "},
	} {
		_, err := c.r.Spec(noData, nil)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q wrapping ErrInvalid", c.r, err, c.want)
		}
	}
}
