package job

import (
	"context"
	"errors"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
)

// A tuning under automatic clipping with a stability constant below
// dpsgd.MinAutoClipGamma is refused before any data is read (review 45, M1:
// γ = 1e-300 was accepted, and a zero-gradient example's factor was +Inf);
// the floor itself is accepted by the check.
func TestTuneAutoClipGammaFloor(t *testing.T) {
	loaded := false
	for _, gamma := range []float64{1e-300, dpsgd.MinAutoClipGamma / 2} {
		s := withAutoClip(tuneLRs(nil))
		load := s.Data.Load
		s.Data.Load = func() (*data.Dataset, *data.Dataset, error) { loaded = true; return load() }
		s.AutoClipGamma = gamma
		if _, _, err := Tune(context.Background(), s); !errors.Is(err, ErrInvalid) {
			t.Errorf("γ = %v: %v, want ErrInvalid", gamma, err)
		}
		if _, err := EveryCandidate(context.Background(), s, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("EveryCandidate, γ = %v: %v, want ErrInvalid", gamma, err)
		}
	}
	if loaded {
		t.Error("a refused tuning read the data")
	}
	if err := dpsgd.CheckAutoClipGamma(dpsgd.MinAutoClipGamma); err != nil {
		t.Errorf("dpsgd.CheckAutoClipGamma(%v): %v", dpsgd.MinAutoClipGamma, err)
	}
}
