package job

import (
	"context"
	"errors"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/noise"
	"github.com/dptune/dptune/tuning"
)

// tunePlan is a checked tuning: its tuner, the tuner's spec and the base
// run with its calibrated noise multiplier.
type tunePlan struct {
	tuner   tuning.Tuner
	spec    tuning.Spec
	trainer *tuning.DPSGDTrainer
	// final is the final run of a tuning with a selection share, its σ in
	// Config.NoiseMultiplier; nil without.
	final *tuning.Hyper
}

// plan looks up s.Tuner, checks s and calibrates the base run (for a
// partitioned tuner, the final run) so that the whole tuning, the tuner's
// Event, meets s's budget — all from nominal sizes and before any data is
// read.
func (s TuneSpec) plan(ctx context.Context) (*tunePlan, error) {
	tu, err := tuning.Lookup(s.Tuner)
	if err != nil {
		return nil, invalid(err)
	}
	validation, n, err := s.checkPlan(tu)
	if err != nil {
		return nil, err
	}
	spec, err := s.tunerSpec(tu, validation, n)
	if err != nil {
		return nil, err
	}
	t, err := s.trainerOf(tu, spec, n)
	if err != nil {
		return nil, err
	}
	var norm accounting.Event
	if t.Norm != nil {
		norm = t.Norm.Event()
	}
	if s.SelectionShare != 0 {
		final, err := s.finalHyper(t.Hyper())
		if err != nil {
			return nil, err
		}
		if s.Subsample != 0 {
			if err := tuning.CheckSubsample(s.Subsample, t.Hyper(), s.Space, t.ValSize); err != nil {
				return nil, invalid(err)
			}
			t.Subsample, t.ValSize = s.Subsample, tuning.SubsampleValSize(s.Subsample, t.ValSize)
		}
		sel, fin, err := s.calibrateSplit(ctx, tu, spec, norm, t.EventFor, final)
		if err != nil {
			return nil, err
		}
		t.NoiseMultiplier, final.Config.NoiseMultiplier = sel, fin
		return &tunePlan{tuner: tu, spec: spec, trainer: t, final: &final}, nil
	}
	sigma, err := tuning.CalibrateAfter(ctx, tu, spec, norm, t.EventFor, s.Epsilon, s.Delta)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		if sh, ok := tu.(tuning.Shortfall); ok {
			return nil, invalidWrapf(err, "ε = %g is too small: %s: %v", s.Epsilon, sh.Shortfall(spec, s.Delta), err)
		}
		return nil, invalidWrapf(err, "ε = %g at δ = %g is too small for this tuning: %v", s.Epsilon, s.Delta, err)
	}
	t.NoiseMultiplier = sigma
	return &tunePlan{tuner: tu, spec: spec, trainer: t}, nil
}

// checkPlan checks what s asks of tuner tu before any calibration: a tuner
// that can run as a job, the common settings, the clipping, the selection
// share and tuning subset, the validation (private: its size and score
// noise; public: a set disjoint from the training data) and the runs'
// batch size and epochs. It returns the validation the runs score on and
// the nominal size of the runs' training set (the validation split held
// out).
func (s TuneSpec) checkPlan(tu tuning.Tuner) (validation string, n int, err error) {
	_, runs := tu.(tuning.Runner)
	_, parts := tu.(tuning.Partitioned)
	if runs == parts {
		return "", 0, invalidf("the %s tuner cannot run as a job", s.Tuner)
	}
	for _, check := range []func() error{s.checkShare, s.checkCommon, s.checkClipping} {
		if err := check(); err != nil {
			return "", 0, err
		}
	}
	if s.SelectionShare != 0 && parts {
		return "", 0, invalidf("the %s tuner trains its own final run: it takes no selection share", s.Tuner)
	}
	if s.Subsample != 0 && s.SelectionShare == 0 {
		return "", 0, invalidf("a tuning subset needs a selection share: the released model is the final run on the whole set")
	}
	if validation, n, err = s.checkValidation(tu.Uses()); err != nil {
		return "", 0, err
	}
	if s.BatchSize > n {
		return "", 0, invalidf("batch size %d is outside [1, %d]", s.BatchSize, n)
	}
	if err := dpsgd.CheckEpochs(s.Epochs, float64(s.BatchSize)/float64(n)); err != nil {
		return "", 0, invalidf("epochs %d: %v", s.Epochs, err)
	}
	return validation, n, nil
}

// checkValidation checks s's validation for a tuner that uses uses and
// returns it ("private" for a tuner that scores on its own split) with
// the nominal size of the runs' training set.
func (s TuneSpec) checkValidation(uses tuning.Uses) (validation string, n int, err error) {
	n, validation = s.Data.NominalN, s.Validation
	if !uses.TrainerScores {
		if s.Validation != "" && s.Validation != "private" || s.PublicVal != nil {
			return "", 0, invalidf("the %s tuner scores on a private validation split only", s.Tuner)
		}
		validation = "private"
	}
	switch validation {
	case "private":
		if s.PublicVal != nil {
			return "", 0, invalidf("a public validation set needs validation \"public\"")
		}
		if s.ValSize < 100 || s.ValSize >= n/2 {
			return "", 0, invalidf("validation size %d is outside [100, %d)", s.ValSize, n/2)
		}
		if uses.TrainerScores && !(s.ScoreNoise > 0 && s.ScoreNoise <= noise.MaxDiscreteSigma) {
			return "", 0, invalidf("score noise multiplier %v must be a number in (0, %g]", s.ScoreNoise, noise.MaxDiscreteSigma)
		}
		return validation, n - s.ValSize, nil
	case "public":
		if s.PublicVal == nil {
			return "", 0, invalidf("validation \"public\" needs a public validation set: data you declare disjoint from the private training data")
		}
		if err := s.PublicVal.Check(); err != nil {
			return "", 0, err
		}
		if sameDir(s.PublicVal.Dir, s.Data.Dir) || (s.PublicVal.Dir == s.Data.Dir && s.PublicVal.Name == s.Data.Name) {
			return "", 0, invalidf("the public validation set %s is the private training data: public validation data must be disjoint from it", s.PublicVal.Dir)
		}
		return validation, n, nil
	}
	return "", 0, invalidf("validation %q: want private or public", s.Validation)
}

// tunerSpec is tu's spec of s (validation on runs of n nominal examples):
// its default candidate, its fixed number of runs for a tuner that trains
// every candidate once, its options, and the tuner's own checks.
func (s TuneSpec) tunerSpec(tu tuning.Tuner, validation string, n int) (tuning.Spec, error) {
	uses := tu.Uses()
	spec := tuning.Spec{Space: s.Space, Repetitions: s.Repetitions, Accountant: s.Accountant, Validation: validation, ValSize: s.ValSize,
		TrainN: n, BatchSize: s.BatchSize, Epochs: s.Epochs, Momentum: s.Momentum, Budget: s.Budget != "", Options: s.Options,
		Seed: s.Seed, Progress: s.Progress, Diagnostics: s.Diagnostics}
	var err error
	if spec.Default, spec.DefaultWeight, err = s.defaultCandidate(uses); err != nil {
		return spec, err
	}
	if !uses.Repetitions {
		// Every candidate runs once: the space's and the default, if any
		// (report.json's runs_distribution and mean_runs say what ran).
		spec.Repetitions = accounting.FixedRepetitions(spec.Candidates())
	}
	for _, check := range []func(tuning.Tuner, tuning.Spec) error{tuning.CheckOptions, tuning.CheckDefault} {
		if err := check(tu, spec); err != nil {
			return spec, invalid(err)
		}
	}
	if err := tu.Check(spec); err != nil {
		return spec, invalid(err)
	}
	if s.SelectionShare != 0 && s.Accountant != "" && s.Accountant != "rdp" {
		return spec, invalidf("a selection share composes proved bounds only: accountant %q", s.Accountant)
	}
	return spec, nil
}

// trainerOf is the trainer of spec's runs (of n nominal examples), before
// its noise is calibrated: the network's fixed settings, the clipping, the
// tuning's one data normalisation (a central tuner under proved
// accounting) and the private score's noise.
func (s TuneSpec) trainerOf(tu tuning.Tuner, spec tuning.Spec, n int) (*tuning.DPSGDTrainer, error) {
	networks, err := networksOf(s.Data, s.Space)
	if err != nil {
		return nil, err
	}
	q := float64(s.BatchSize) / float64(n)
	lr, clip := s.fixed()
	t := &tuning.DPSGDTrainer{Arch: s.Data.Arch, SamplingRate: q, ExpectedBatchSize: float64(s.BatchSize),
		Steps: dpsgd.StepsForEpochs(s.Epochs, q), Momentum: s.Momentum, LearningRate: lr, ClipNorm: clip,
		NominalN: n, Epochs: s.Epochs, Networks: networks, Space: s.Space, Default: spec.Default}
	s.clipRuns(t)
	if err := t.Hyper().CheckRuns(s.Space); err != nil {
		return nil, invalid(err)
	}
	if _, runs := tu.(tuning.Runner); runs && (s.Accountant == "" || s.Accountant == "rdp") {
		// A network with private data normalisation: estimated once
		// before the runs, released to each of them and counted once
		// (tuning.SharedDataNorm), not once per run. (A partitioned
		// tuner's final run estimates its own, the tuning's only one:
		// its part runs are non-private, covered by its search, or
		// refuse such a network.)
		t.Norm = t.Hyper().SharedDataNormOf(s.Space)
	}
	if spec.Validation == "private" && tu.Uses().TrainerScores {
		t.ScoreNoise, t.ValSize = s.ScoreNoise, s.ValSize
	}
	return t, nil
}
