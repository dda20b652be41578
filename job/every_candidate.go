package job

import (
	"context"
	"fmt"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// CandidateRun is one candidate of a space trained privately at a
// tuning's whole budget (EveryCandidate), with its clean scores. NOT
// PRIVATE: selecting on ValidationAccuracy, or on TestAccuracy, spends
// privacy no ledger counts.
type CandidateRun struct {
	Candidate map[string]float64 `json:"candidate"`
	Labels    map[string]string  `json:"labels,omitempty"`
	// NoiseMultiplier is the run's σ, calibrated so that the run alone
	// spends the whole (ε, δ).
	NoiseMultiplier float64 `json:"noise_multiplier"`
	// ValidationAccuracy is on the validation split the tuners of the
	// same TuneSpec hold out, without noise; TestAccuracy on the test set.
	// Failed runs (non-finite parameters) have neither.
	ValidationAccuracy float64 `json:"validation_accuracy"`
	TestAccuracy       float64 `json:"test_accuracy"`
	Failed             bool    `json:"failed,omitempty"`
}

// EveryCandidate trains every candidate of s.Space once, each with its own
// noise multiplier calibrated by RDP so that the run alone (its data
// normalisation included) spends s's whole (ε, δ), on the training split
// the tuners of s fit on (the keyed split holding out s.ValSize examples
// for s.Seed), and scores it on that validation split without noise and on
// the test set. These are the not-private references of a comparison:
// selection on clean validation scores, which is what most papers report
// with the single run's ε, and the oracle best test accuracy. progress, if
// not nil, is called after each run. Errors wrap ErrInvalid for settings no
// tuning could run with.
func EveryCandidate(ctx context.Context, s TuneSpec, progress func(done, total int)) ([]CandidateRun, error) {
	if err := s.checkCommon(); err != nil {
		return nil, err
	}
	n := s.Data.NominalN
	if s.ValSize < 100 || s.ValSize >= n/2 {
		return nil, invalidf("validation size %d is outside [100, %d)", s.ValSize, n/2)
	}
	n -= s.ValSize
	if s.BatchSize > n {
		return nil, invalidf("batch size %d is outside [1, %d]", s.BatchSize, n)
	}
	q := float64(s.BatchSize) / float64(n)
	if err := dpsgd.CheckEpochs(s.Epochs, q); err != nil {
		return nil, invalidf("epochs %d: %v", s.Epochs, err)
	}
	networks, err := networksOf(s.Data, s.Space)
	if err != nil {
		return nil, err
	}
	lr, clip := s.fixed()
	base := tuning.DPSGDTrainer{Arch: s.Data.Arch, SamplingRate: q, ExpectedBatchSize: float64(s.BatchSize),
		Steps: dpsgd.StepsForEpochs(s.Epochs, q), Momentum: s.Momentum, LearningRate: lr, ClipNorm: clip,
		NominalN: n, Epochs: s.Epochs, Networks: networks, Space: s.Space}
	if err := s.checkClipping(); err != nil {
		return nil, err
	}
	s.clipRuns(&base)
	if err := base.Hyper().CheckRuns(s.Space); err != nil {
		return nil, invalid(err)
	}
	train, test, err := s.Data.loadCtx(ctx, s.Warn)
	if err != nil {
		return nil, err
	}
	if base.Data, base.Val, err = keyedValidationSplit(train, s.ValSize, s.Data.NominalN, splitKey(s.Seed, nil)); err != nil {
		return nil, err
	}
	size := s.Space.Size()
	out := make([]CandidateRun, 0, size)
	for i := range size {
		c := s.Space.At(i)
		t := base
		t.Space = only(s.Space, c)
		sigma, err := accounting.CalibrateNoise(ctx, accounting.RDP{}, t.EventFor, s.Epsilon, s.Delta)
		if err != nil {
			return nil, fmt.Errorf("candidate %d: %w", i, err)
		}
		t.NoiseMultiplier = sigma
		r := CandidateRun{Candidate: c.Values, Labels: c.Labels, NoiseMultiplier: sigma}
		run, err := t.Train(ctx, c, s.Seed)
		if err != nil {
			return nil, fmt.Errorf("candidate %d: %w", i, err)
		}
		r.Failed = run.Failed
		if !run.Failed {
			m, err := dpsgd.Evaluate(ctx, run.Model, test.X, test.Y)
			if err != nil {
				return nil, err
			}
			r.ValidationAccuracy, r.TestAccuracy = run.Score, m.Accuracy
		}
		out = append(out, r)
		if progress != nil {
			progress(i+1, size)
		}
	}
	return out, nil
}

// only is the space of the one candidate c of s: each dimension keeps c's
// value (and a categorical one its choice), so that a trainer of that
// space counts exactly c's run.
func only(s tuning.Space, c tuning.Candidate) tuning.Space {
	out := tuning.Space{Name: fmt.Sprintf("%s[%d]", s.Name, c.Index)}
	for _, d := range s.Dims {
		one := tuning.Dim{Name: d.Name, Values: []float64{c.Values[d.Name]}, Log: d.Log}
		if d.Choices != nil {
			one.Choices = []string{c.Labels[d.Name]}
		}
		out.Dims = append(out.Dims, one)
	}
	return out
}
