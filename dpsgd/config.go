package dpsgd

import (
	"fmt"
	"math"
)

// Config is one DP-SGD run's hyperparameters.
type Config struct {
	// NoiseMultiplier σ: the noise added to the clipped sum is N(0, σ²C²) per coordinate.
	NoiseMultiplier float64
	// ClipNorm C: every example's gradient is clipped to L2 norm C over all parameters.
	ClipNorm float64
	// SamplingRate q ∈ (0, 1]: each example is in a step's batch with probability q;
	// the expected batch size is qN.
	SamplingRate float64
	// Steps is the number of DP-SGD steps (see StepsForEpochs).
	Steps int
	// LearningRate η > 0 and Momentum μ ∈ [0, 1) of SGD.
	LearningRate, Momentum float64
	// Seed makes the run reproducible: Poisson sampling and noise come from
	// ChaCha8 streams derived from it. Nil: both are keyed from crypto/rand.
	Seed *uint64
	// NonPrivate trains without noise (NoiseMultiplier must be 0): plain SGD
	// on Poisson-sampled batches, or, with ClipNorm > 0, per-example clipping
	// without noise (as the doubling tuner's partition runs use, so that the
	// clipping norm still matters). The event is NonPrivate.
	NonPrivate bool
}

// StepsForEpochs is the number of steps in epochs passes over n examples at
// sampling rate q: epochs·⌈1/q⌉, i.e. ⌈n / expected batch size⌉ steps per
// epoch, as Opacus's Poisson data loader and the reference PyTorch benchmark do.
func StepsForEpochs(epochs int, q float64) int {
	return epochs * int(math.Ceil(1/q-1e-9))
}

// Validate returns an error describing the first out-of-range field.
func (c Config) Validate() error {
	switch {
	case !(c.SamplingRate > 0 && c.SamplingRate <= 1):
		return fmt.Errorf("sampling rate %v is outside (0, 1]", c.SamplingRate)
	case c.Steps < 0:
		return fmt.Errorf("steps %d < 0", c.Steps)
	case !(c.LearningRate > 0) || math.IsInf(c.LearningRate, 1):
		return fmt.Errorf("learning rate %v must be positive and finite", c.LearningRate)
	case !(c.Momentum >= 0 && c.Momentum < 1):
		return fmt.Errorf("momentum %v is outside [0, 1)", c.Momentum)
	}
	if c.NonPrivate {
		if c.NoiseMultiplier != 0 {
			return fmt.Errorf("non-private training takes no noise multiplier")
		}
		if !(c.ClipNorm >= 0) || math.IsInf(c.ClipNorm, 1) {
			return fmt.Errorf("clipping norm %v must be 0 (none) or positive and finite", c.ClipNorm)
		}
		return nil
	}
	switch {
	case !(c.NoiseMultiplier > 0) || math.IsInf(c.NoiseMultiplier, 1):
		return fmt.Errorf("noise multiplier %v must be positive and finite (use non-private training for none)", c.NoiseMultiplier)
	case !(c.ClipNorm > 0) || math.IsInf(c.ClipNorm, 1):
		return fmt.Errorf("clipping norm %v must be positive and finite", c.ClipNorm)
	}
	return nil
}
