package tuning

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// DoublingConfig are the parameters of the doubling search (Ding et al.,
// "Revisiting Hyperparameter Tuning with Differential Privacy" / "Constant-
// overhead DP tuning", Algorithm 1).
type DoublingConfig struct {
	Partitions    int     // k: the utilities are means over k disjoint parts (sensitivity 1/k, Lemma 2)
	Epsilon0      float64 // ϵ: the privacy of one iteration
	Granularity   float64 // g: utility step unit, in (0, 1)
	U0            float64 // u₀: utility lower bound, in [0, 1)
	MaxIterations int     // T_max: the cap, fixed before the data is seen
}

// Check returns an error for parameters outside the algorithm's domain.
func (c DoublingConfig) Check() error {
	switch {
	case c.Partitions < 1:
		return fmt.Errorf("tuning: %d partitions", c.Partitions)
	case !(c.Epsilon0 > 0) || math.IsInf(c.Epsilon0, 1):
		return fmt.Errorf("tuning: per-iteration ϵ = %v must be positive and finite", c.Epsilon0)
	case !(c.Granularity >= 1e-9 && c.Granularity < 1):
		return fmt.Errorf("tuning: granularity g = %v is outside [1e-9, 1)", c.Granularity)
	case !(c.U0 >= 0 && c.U0 < 1):
		return fmt.Errorf("tuning: u₀ = %v is outside [0, 1)", c.U0)
	case c.MaxIterations < 1:
		return fmt.Errorf("tuning: iteration cap %d must be at least 1", c.MaxIterations)
	}
	return nil
}

// DefaultMaxIterations is the cap T_max = ⌈5·log₂ n⌉ with n = (1 − u₀)/g,
// at least 1. Ding et al.'s Figure 4 finds T ≈ 3·log n iterations in
// practice, with multipliers between 1 and 5; we cap at the top of that range
// so the cap rarely binds, and account the cap, not the realised T.
func DefaultMaxIterations(u0, g float64) int {
	n := (1 - u0) / g
	return max(1, int(math.Ceil(5*math.Log2(math.Max(n, 2)))))
}

// Iteration is one iteration of the search, for the curator's trace and the
// paper's figures.
type Iteration struct {
	T        int     `json:"t"`
	U        float64 `json:"u"`        // u after the iteration
	Step     int     `json:"step"`     // step after the iteration
	Accepted int     `json:"accepted"` // candidate accepted, −1 if none
}

// DoublingSearch runs the doubling AboveThreshold loop of Algorithm 1 (lines
// 12–34) on the utilities u_s (each a mean over the k parts, in [0, 1]),
// candidates in their public order: threshold û = u + step·g + Lap(2/(kϵ));
// the first candidate with u_s + Lap(4/(kϵ)) ≥ û is recorded as s*, u grows
// by step·g and step doubles; if none passes, step halves (⌊step/2⌋). It
// stops when step = 0, u ≥ 1, or after cfg.MaxIterations iterations,
// whatever happens — the cap makes the guarantee unconditional:
// MaxIterations·ϵ·EpsilonFactor pure DP (accounting.AboveThreshold).
//
// The noise is GridLaplace from rng; noiseless runs the paper's
// "non-randomized world" (Definition 5). It returns s* (−1 if no candidate
// ever passed), the realised number of iterations T, and, if trace is not
// nil, calls it after each iteration.
func DoublingSearch(u []float64, cfg DoublingConfig, rng *rand.Rand, noiseless bool, trace func(Iteration)) (sel, T int, err error) {
	if err := cfg.Check(); err != nil {
		return -1, 0, err
	}
	if len(u) == 0 {
		return -1, 0, fmt.Errorf("tuning: no candidates")
	}
	k := float64(cfg.Partitions)
	thr, err := NewGridLaplace(2 / (k * cfg.Epsilon0))
	if err != nil {
		return -1, 0, err
	}
	cand, _ := NewGridLaplace(4 / (k * cfg.Epsilon0))
	noise := func(l GridLaplace, x float64) float64 {
		if noiseless {
			return x
		}
		return l.Add(x, rng)
	}
	sel, cur, step := -1, cfg.U0, 1
	for step != 0 && cur < 1 && T < cfg.MaxIterations {
		T++
		hat := noise(thr, cur+float64(step)*cfg.Granularity)
		accepted := -1
		for s, us := range u {
			if noise(cand, us) >= hat {
				accepted = s
				break
			}
		}
		if accepted >= 0 {
			sel = accepted
			cur += cfg.Granularity * float64(step)
			step *= 2
		} else {
			step /= 2
		}
		if trace != nil {
			trace(Iteration{T: T, U: cur, Step: step, Accepted: accepted})
		}
	}
	return sel, T, nil
}

// IterationEpsilon is the ϵ one iteration is charged: cfg.Epsilon0 times the
// grid noise's factor for sensitivity 1/k (GridLaplace.EpsilonFactor).
func (c DoublingConfig) IterationEpsilon() float64 {
	k := float64(c.Partitions)
	l, _ := NewGridLaplace(2 / (k * c.Epsilon0))
	m, _ := NewGridLaplace(4 / (k * c.Epsilon0))
	return c.Epsilon0 * math.Max(l.EpsilonFactor(1/k), m.EpsilonFactor(1/k))
}
