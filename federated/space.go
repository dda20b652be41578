package federated

import (
	"fmt"
	"math"

	"github.com/dptune/dptune/tuning/space"
)

// The dimensions of a vote's space: the hyperparameters of the clients'
// local SGD (dpsgd.Config's LearningRate, Momentum and LRDecay).
const (
	LearningRate = "learning_rate" // learning rate η > 0; required
	Momentum     = "momentum"      // SGD momentum μ ∈ [0, 1)
	LRDecay      = "lr_decay"      // learning-rate decay per epoch γ ∈ (0, 1] (dpsgd.Config.LRDecay)
)

// MNISTSpace is the built-in candidate grid "mnist-vote", in the spirit of
// DP-Hype's Table III (whose values were lost): learning rate 1e-4 … 5
// (six values, from too small to learn in a local epoch to divergent) ×
// decay per epoch {1, 0.5} × momentum {0, 0.9}: 24 candidates, about a third
// of which train no better than guessing.
var MNISTSpace = space.Space{Name: "mnist-vote", Dims: []space.Dim{
	{Name: LearningRate, Values: []float64{1e-4, 1e-3, 1e-2, 0.1, 0.5, 5}, Log: true},
	{Name: LRDecay, Values: []float64{1, 0.5}},
	{Name: Momentum, Values: []float64{0, 0.9}},
}}

// CheckSpace returns an error unless s is a space the clients' local
// training can run: a search space (space.Space.Check: printable, distinct
// names, finite values, at most space.MaxCandidates candidates, with its
// errors word for word) without a categorical dimension, whose every
// dimension is one of LearningRate (required, positive and finite),
// Momentum (in [0, 1)) and LRDecay (in (0, 1]). A client runs it on the job
// the server sends: every client trains every candidate, and the vote
// vector has one entry per candidate.
func CheckSpace(s space.Space) error {
	if err := s.Check(); err != nil {
		return err
	}
	if err := CheckNumeric(s); err != nil {
		return err
	}
	seen := false
	for _, d := range s.Dims {
		for _, v := range d.Values {
			var ok bool
			switch d.Name {
			case LearningRate:
				ok, seen = v > 0 && !math.IsInf(v, 1), true
			case Momentum:
				ok = v >= 0 && v < 1
			case LRDecay:
				ok = v > 0 && v <= 1
			default:
				return fmt.Errorf("search space %s: unknown dimension %q (the vote's local training knows %q, %q and %q)", s.Name, d.Name, LearningRate, Momentum, LRDecay)
			}
			if !ok {
				return fmt.Errorf("search space %s: dimension %q has value %v out of range", s.Name, d.Name, v)
			}
		}
	}
	if !seen {
		return fmt.Errorf("search space %s has no %q dimension", s.Name, LearningRate)
	}
	return nil
}

// CheckNumeric returns an error naming the first categorical dimension of
// s: the clients' local SGD takes numeric dimensions only.
func CheckNumeric(s space.Space) error {
	for _, d := range s.Dims {
		if d.Choices != nil {
			return fmt.Errorf("search space %s: the vote's clients cannot tune the categorical dimension %q", s.Name, d.Name)
		}
	}
	return nil
}
