package job

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// Every refused request wraps ErrInvalid and is refused before the data is
// read: the source's loader is never called.
func TestRefusalsComeBeforeTheData(t *testing.T) {
	loads := 0
	src := Source{Name: "counted", Arch: model.MNIST, NominalN: 1000, Load: func() (*data.Dataset, *data.Dataset, error) {
		loads++
		return nil, nil, errors.New("the data was read")
	}}
	space := tuning.Space{Name: "s", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.1}}}}
	seed := uint64(1)
	train := TrainSpec{Data: src, Epsilon: 1, Delta: 1e-5, ClipNorm: 1, BatchSize: 100, Epochs: 1, LearningRate: 0.5}
	tune := TuneSpec{Data: src, Tuner: "randomstop", Space: space, Epsilon: 8, Delta: 1e-5, Epochs: 1, BatchSize: 100,
		Repetitions: accounting.PoissonRepetitions(2), Validation: "private", ValSize: 200, ScoreNoise: 10}
	trains := map[string]func(*TrainSpec){
		"batch above nominal":  func(s *TrainSpec) { s.BatchSize = 1001 },
		"zero learning rate":   func(s *TrainSpec) { s.LearningRate = 0 },
		"overflowing epochs":   func(s *TrainSpec) { s.Epochs = 1 << 62 },
		"impossible ε":         func(s *TrainSpec) { s.Epsilon = 1e-9 },
		"gdp for a guarantee":  func(s *TrainSpec) { s.Accountant = "gdp" },
		"seeded under budget":  func(s *TrainSpec) { s.Seed, s.Budget = &seed, "any.budget" },
		"non-private with σ":   func(s *TrainSpec) { s.NonPrivate, s.NoiseMultiplier = true, 1 },
		"no nominal size":      func(s *TrainSpec) { s.Data.NominalN = 0 },
		"momentum 1":           func(s *TrainSpec) { s.Momentum = 1 },
		"infinite clipping":    func(s *TrainSpec) { s.ClipNorm = math.Inf(1) },
		"negative noise":       func(s *TrainSpec) { s.NoiseMultiplier = -1 },
		"delta out of range":   func(s *TrainSpec) { s.Delta = 1 },
		"zero batch":           func(s *TrainSpec) { s.BatchSize = 0 },
		"unknown accountant":   func(s *TrainSpec) { s.Accountant = "moments" },
		"epochs below one":     func(s *TrainSpec) { s.Epochs = 0 },
		"no loader":            func(s *TrainSpec) { s.Data.Load = nil },
		"epsilon not positive": func(s *TrainSpec) { s.Epsilon = 0 },
	}
	for name, f := range trains {
		s := train
		f(&s)
		if _, _, err := Train(context.Background(), s); !errors.Is(err, ErrInvalid) {
			t.Errorf("train, %s: %v", name, err)
		}
	}
	tunes := map[string]func(*TuneSpec){
		"unknown tuner":      func(s *TuneSpec) { s.Tuner = "bayes" },
		"unknown dimension":  func(s *TuneSpec) { s.Space.Dims[0].Name = "lr" },
		"public without set": func(s *TuneSpec) { s.Validation = "public" },
		"public is private":  func(s *TuneSpec) { s.Validation, s.PublicVal = "public", &src },
		"gp with poisson":    func(s *TuneSpec) { s.Tuner, s.Options = "gp", tuning.DefaultGPOptions().Values() },
		"gp with c = 0":      func(s *TuneSpec) { s.Tuner, s.Options = "gp", tuning.GPOptions{MaxRatio: 2, Beta: 1}.Values() },
		"validation too big": func(s *TuneSpec) { s.ValSize = 500 },
		"no score noise":     func(s *TuneSpec) { s.ScoreNoise = 0 },
		"budget too small":   func(s *TuneSpec) { s.Epsilon = 0.01 },
		"doubling, small ε": func(s *TuneSpec) {
			s.Tuner, s.Options = "doubling", tuning.DoublingOptions{Partitions: 2, Epsilon0: 1, Granularity: 0.01, PartEpochs: 1}.Values()
		},
		"doubling, more parts than validation examples": func(s *TuneSpec) {
			s.Tuner, s.Options = "doubling", tuning.DoublingOptions{Partitions: 300, Epsilon0: 0.1, Granularity: 0.01, PartEpochs: 1}.Values()
		},
		"doubling, part batch above a part": func(s *TuneSpec) {
			s.Tuner, s.Options = "doubling", tuning.DoublingOptions{Partitions: 9, Epsilon0: 0.1, Granularity: 0.01, PartEpochs: 1, PartBatch: 500}.Values()
		},
		"seeded under budget": func(s *TuneSpec) { s.Seed, s.Budget = &seed, "any.budget" },
		"xiang for doubling": func(s *TuneSpec) {
			s.Tuner, s.Accountant, s.Options = "doubling", "xiang-o", tuning.DoublingOptions{Partitions: 2, Epsilon0: 0.1, Granularity: 0.1, PartEpochs: 1}.Values()
		},
		"xiang, private scores": func(s *TuneSpec) { s.Accountant = "xiang-o" },
	}
	for name, f := range tunes {
		s := tune
		s.Space.Dims = []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.1}}}
		f(&s)
		if _, _, err := Tune(context.Background(), s); !errors.Is(err, ErrInvalid) {
			t.Errorf("tune, %s: %v", name, err)
		}
	}
	if _, err := Account(context.Background(), AccountSpec{Solve: "epsilon", NoiseMultiplier: 1, SamplingRate: 2, Steps: 10, Delta: 1e-5}); !errors.Is(err, ErrInvalid) {
		t.Errorf("account, sampling rate 2: %v", err)
	}
	if loads != 0 {
		t.Errorf("the data was read %d times by refused requests", loads)
	}
}
