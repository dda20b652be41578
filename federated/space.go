package federated

import (
	"fmt"
	"math"
	"slices"

	"github.com/dptune/dptune/internal/textsafe"
)

// The dimensions of a vote's space: the hyperparameters of the clients'
// local SGD (dpsgd.Config's LearningRate, Momentum and LRDecay).
const (
	LearningRate = "learning_rate" // learning rate η > 0; required
	Momentum     = "momentum"      // SGD momentum μ ∈ [0, 1)
	LRDecay      = "lr_decay"      // learning-rate decay per epoch γ ∈ (0, 1] (dpsgd.Config.LRDecay)
)

// MaxCandidates is the largest number of candidates a vote's space may
// have (2^20, the bound of package tuning's spaces): every client trains
// every candidate, and the vote vector has one entry per candidate.
const MaxCandidates = 1 << 20

// Dim is one named dimension of a Space: its grid of values, spaced on a
// log scale if Log.
type Dim struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
	Log    bool      `json:"log"`
}

// Space is the grid of candidates a vote chooses among: every combination
// of its dimensions' values, the first dimension varying slowest, so that
// candidate i is the same point for every client. Its JSON, which the Job
// carries to the clients, is that of a search space of package tuning:
// {"name": …, "dims": [{"name": …, "values": […], "log": …}, …]}.
type Space struct {
	Name string `json:"name"`
	Dims []Dim  `json:"dims"`
}

// MNISTSpace is the built-in candidate grid "mnist-vote", in the spirit of
// DP-Hype's Table III (whose values were lost): learning rate 1e-4 … 5
// (six values, from too small to learn in a local epoch to divergent) ×
// decay per epoch {1, 0.5} × momentum {0, 0.9}: 24 candidates, about a third
// of which train no better than guessing.
var MNISTSpace = Space{Name: "mnist-vote", Dims: []Dim{
	{Name: LearningRate, Values: []float64{1e-4, 1e-3, 1e-2, 0.1, 0.5, 5}, Log: true},
	{Name: LRDecay, Values: []float64{1, 0.5}},
	{Name: Momentum, Values: []float64{0, 0.9}},
}}

// Size is the number of candidates, the product of the dimensions' value
// counts, or math.MaxInt if that exceeds MaxCandidates (CheckSpace refuses
// such a space).
func (s Space) Size() int {
	n, _ := s.size()
	return n
}

// size is Size and the index of the dimension at which the product first
// exceeds MaxCandidates, or −1.
func (s Space) size() (n, over int) {
	n = 1
	for k, d := range s.Dims {
		if m := len(d.Values); m > 0 && n > MaxCandidates/m {
			return math.MaxInt, k
		}
		n *= len(d.Values)
	}
	return n, -1
}

// At returns the hyperparameters of candidate i (0 ≤ i < Size), by
// dimension name.
func (s Space) At(i int) map[string]float64 {
	c := make(map[string]float64, len(s.Dims))
	stride := s.Size()
	for _, d := range s.Dims {
		stride /= len(d.Values)
		c[d.Name] = d.Values[i/stride%len(d.Values)]
	}
	return c
}

// CheckSpace returns an error unless s is a space the clients' local
// training can run: at least one dimension; names that are printable text
// (no control characters, valid UTF-8: they reach terminals), non-empty and
// distinct; every dimension one of LearningRate (required, positive and
// finite), Momentum (in [0, 1)) and LRDecay (in (0, 1]), with at least one
// value, positive on a log scale; at most MaxCandidates candidates. A
// client runs it on the job the server sends.
func CheckSpace(s Space) error {
	if !textsafe.Printable(s.Name) {
		return fmt.Errorf("search space name %q holds control characters or invalid UTF-8", s.Name)
	}
	for _, d := range s.Dims {
		if !textsafe.Printable(d.Name) {
			return fmt.Errorf("search space %s: dimension name %q holds control characters or invalid UTF-8", s.Name, d.Name)
		}
	}
	if len(s.Dims) == 0 {
		return fmt.Errorf("search space %s has no dimensions", s.Name)
	}
	if err := s.checkGrid(); err != nil {
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

// checkGrid returns an error if a dimension's name is empty or repeated, it
// has no values, a value is NaN or infinite (or not positive on a log
// scale), or there are more than MaxCandidates candidates.
func (s Space) checkGrid() error {
	names := make(map[string]bool, len(s.Dims))
	for _, d := range s.Dims {
		bad := slices.IndexFunc(d.Values, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || (d.Log && v <= 0) })
		switch {
		case d.Name == "" || names[d.Name]:
			return fmt.Errorf("search space %s: dimension name %q is empty or repeated", s.Name, d.Name)
		case len(d.Values) == 0:
			return fmt.Errorf("search space %s: dimension %q has no values", s.Name, d.Name)
		case bad >= 0:
			return fmt.Errorf("search space %s: dimension %q has value %v", s.Name, d.Name, d.Values[bad])
		}
		names[d.Name] = true
	}
	if _, k := s.size(); k >= 0 {
		return fmt.Errorf("search space %s: more than MaxCandidates = %d candidates (at dimension %q, %d values)", s.Name, MaxCandidates, s.Dims[k].Name, len(s.Dims[k].Values))
	}
	return nil
}
