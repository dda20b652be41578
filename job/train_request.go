package job

import (
	"fmt"

	"github.com/dptune/dptune/dpsgd"
)

// TrainRequest is a training run as a person asks for it (the flags of
// dptune train and audit one-run, by whose names Given and the errors
// speak): Spec checks it and makes the TrainSpec; with Resume,
// CheckResume checks that there is a run to continue.
type TrainRequest struct {
	// Epsilon and Delta are the target; NoiseMultiplier, when "noise-multiplier"
	// is given, σ instead of calibrating it.
	Epsilon, Delta, NoiseMultiplier float64
	// ClipNorm is flat clipping's C; Clipping the rule.
	ClipNorm float64
	Clipping ClippingSettings
	// BatchSize, Epochs, LearningRate and Momentum: a built-in network's
	// own settings stand for those not given (and under automatic clipping
	// its η at C as η·C); with NonPrivate the learning rate and momentum not
	// given are DefaultNonPrivateLearningRate and DefaultNonPrivateMomentum.
	BatchSize, Epochs      int
	LearningRate, Momentum float64
	// Schedule names the learning-rate schedule ("constant" or "cosine").
	Schedule string
	EMADecay float64
	// Seed is the seed, when "seed" is given.
	Seed       uint64
	NonPrivate bool
	Accountant string
	// Budget is the curator's budget file ("" for none); Label says what
	// the run is, in it.
	Budget, Label string
	// Resume, if not "", is the release directory of an unfinished run to
	// continue (ResumeTrain), which takes no other setting.
	Resume string
	// Given are the settings given explicitly, by flag name.
	Given Given
}

// Spec checks r and returns its TrainSpec, reading the data with data
// once the settings that need none are checked; r is left with the
// settings the run takes (a network's own, the non-private defaults).
// note, if not nil, is told which network's settings stand for the ones
// not given, and how automatic clipping took its learning rate. A request
// is refused, before any work, with an error wrapping ErrInvalid that
// names the flag at fault: a bad clipping rule, a setting a non-private run
// does not take, both a target ε and a noise multiplier, a noise multiplier
// that is not positive and finite, an unknown schedule.
func (r *TrainRequest) Spec(data func() (Source, error), note func(string)) (TrainSpec, error) {
	if r.NonPrivate && !r.Given["lr"] {
		r.LearningRate = DefaultNonPrivateLearningRate
	}
	if r.NonPrivate && !r.Given["momentum"] {
		r.Momentum = DefaultNonPrivateMomentum
	}
	clipping, gamma, err := r.Clipping.Resolve(r.Given, true)
	if err != nil {
		return TrainSpec{}, err
	}
	if err := r.check(); err != nil {
		return TrainSpec{}, err
	}
	schedule, err := dpsgd.ParseSchedule(r.Schedule)
	if err != nil {
		return TrainSpec{}, invalidf("--lr-schedule: %v", err)
	}
	src, err := data()
	if err != nil {
		return TrainSpec{}, err
	}
	if note == nil {
		note = func(string) {}
	}
	if d, ok := NetworkDefaultsOn(src.Arch.Spec, src.Name); ok && !r.NonPrivate {
		r.useDefaults(d, note)
		note(fmt.Sprintf("settings of %s on %s: %s", src.Arch.Spec.Name, src.Name, d.Source))
	}
	clipNorm := r.ClipNorm
	if clipping == dpsgd.AutomaticClipping {
		clipNorm = 0
	}
	spec := TrainSpec{Data: src, Epsilon: r.Epsilon, Delta: r.Delta, ClipNorm: clipNorm, Clipping: clipping, AutoClipGamma: gamma, BatchSize: r.BatchSize,
		Epochs: r.Epochs, LearningRate: r.LearningRate, Momentum: r.Momentum, Schedule: schedule, EMADecay: r.EMADecay, NonPrivate: r.NonPrivate,
		Accountant: r.Accountant, Budget: r.Budget, Label: r.Label}
	if r.Given["seed"] {
		seed := r.Seed
		spec.Seed = &seed
	}
	if !r.NonPrivate {
		spec.NoiseMultiplier = r.NoiseMultiplier
	} else {
		spec.ClipNorm = 0
	}
	return spec, nil
}

// check checks the settings' combinations; the job checks their values.
func (r *TrainRequest) check() error {
	g := r.Given
	if r.NonPrivate {
		for _, name := range []string{"epsilon", "noise-multiplier", "clip-norm", "clipping", "auto-clip-gamma"} {
			if g[name] {
				return invalidf("--non-private takes no --%s", name)
			}
		}
		return nil
	}
	if g["noise-multiplier"] && g["epsilon"] {
		return invalidf("give --epsilon or --noise-multiplier, not both")
	}
	if g["noise-multiplier"] && !(r.NoiseMultiplier > 0) {
		return invalidf("--noise-multiplier %v must be positive and finite", r.NoiseMultiplier)
	}
	return nil
}

// useDefaults takes the network's own settings d for every setting not
// given. Under automatic clipping the network's clipping norm C is not
// used, and its learning rate η becomes η·C (Bu et al.'s equivalence),
// which note is told.
func (r *TrainRequest) useDefaults(d TrainDefaults, note func(string)) {
	g := r.Given
	if !g["batch-size"] {
		r.BatchSize = d.BatchSize
	}
	if !g["epochs"] {
		r.Epochs = d.Epochs
	}
	if !g["momentum"] {
		r.Momentum = d.Momentum
	}
	if r.Clipping.Rule == "automatic" {
		if !g["lr"] {
			r.LearningRate = d.LearningRate * d.ClipNorm
			note(fmt.Sprintf("automatic clipping: learning rate %g, the network's η = %g at C = %g times C", r.LearningRate, d.LearningRate, d.ClipNorm))
		}
		return
	}
	if !g["lr"] {
		r.LearningRate = d.LearningRate
	}
	if !g["clip-norm"] {
		r.ClipNorm = d.ClipNorm
	}
}

// CheckResume refuses, before any work, a resume given another setting or
// of a directory with no unfinished run (no checkpoint, CheckpointOf), and
// a Resume directory that cannot be written. Errors wrap ErrInvalid.
func (r TrainRequest) CheckResume() error {
	for _, name := range r.Given.names() {
		if name != "resume" {
			return invalidf("--resume takes no other flag: the run continues with the settings it kept (drop --%s)", name)
		}
	}
	if !CheckpointOf(r.Resume) {
		return invalidf("%s has no unfinished run to resume (no checkpoint in %s)", r.Resume, CheckpointPath(r.Resume))
	}
	if err := CheckOut(r.Resume); err != nil {
		return invalidWrapf(err, "--resume: %v", err)
	}
	return nil
}
