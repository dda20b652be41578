package job

import (
	"slices"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/tuning"
)

// checkClipping checks s's clipping rule before any work: flat clipping
// takes no stability constant; automatic clipping (Bu et al. 2023, AUTO-S)
// takes a positive, finite one and a space without a clipping-norm
// dimension — its runs have no clipping norm to choose (every clipped
// gradient has norm below 1, the sensitivity). Errors wrap ErrInvalid.
func (s TuneSpec) checkClipping() error {
	switch s.Clipping {
	case dpsgd.FlatClipping:
		if s.AutoClipGamma != 0 {
			return invalidf("flat clipping takes no stability constant (γ = %v is automatic clipping's)", s.AutoClipGamma)
		}
		return nil
	case dpsgd.AutomaticClipping:
		if err := dpsgd.CheckAutoClipGamma(s.AutoClipGamma); err != nil {
			return invalid(err)
		}
		if hasDim(s.Space, tuning.ClipNorm) {
			return invalidf("automatic clipping takes no clipping norm, but search space %s has a %s dimension: drop it (every clipped gradient has norm below 1)", s.Space.Name, tuning.ClipNorm)
		}
		return nil
	}
	return invalidf("unknown clipping %v", s.Clipping)
}

// hasDim reports whether space has a dimension called name.
func hasDim(space tuning.Space, name string) bool {
	return slices.ContainsFunc(space.Dims, func(d tuning.Dim) bool { return d.Name == name })
}

// clipRuns gives t's runs s's clipping rule: under automatic clipping its
// stability constant and clipping norm 1 (the sensitivity).
func (s TuneSpec) clipRuns(t *tuning.DPSGDTrainer) {
	if s.Clipping == dpsgd.AutomaticClipping {
		t.Clipping, t.AutoClipGamma, t.ClipNorm = dpsgd.AutomaticClipping, s.AutoClipGamma, 1
	}
}

// clippingFacts are what a tuning's release states of its clipping:
// "automatic" and γ under automatic clipping, nothing under flat clipping
// (whose releases are as they were).
func (s TuneSpec) clippingFacts() (string, float64) {
	if s.Clipping == dpsgd.AutomaticClipping {
		return s.Clipping.String(), s.AutoClipGamma
	}
	return "", 0
}

// autoClipLearningRate is the learning rate that stands for flat
// clipping's η at clipping norm c under automatic clipping: η·c (with every
// gradient clipped, flat clipping at c and rate η steps as automatic
// clipping at rate η·c; dpsgd.AutoClipFactor).
func autoClipLearningRate(eta, c float64) float64 { return eta * c }

// WithoutClipNorm is space without its clipping-norm dimension, named so:
// the default space of a tuning with automatic clipping, which has no
// clipping norm to choose. A space without one is returned as it is.
func WithoutClipNorm(space tuning.Space) tuning.Space {
	if !hasDim(space, tuning.ClipNorm) {
		return space
	}
	out := space
	out.Name = space.Name + " without " + tuning.ClipNorm
	out.Dims = slices.DeleteFunc(slices.Clone(space.Dims), func(d tuning.Dim) bool { return d.Name == tuning.ClipNorm })
	return out
}
