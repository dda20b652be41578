package audit

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/noise"
	"github.com/dptune/dptune/tuning"
)

// NoisyScore audits the private validation score's release: the number of
// correct predictions (Count on X, Count + 1 on X′ — one more correctly
// predicted validation example) plus discrete Gaussian noise N_ℤ(0, Sigma²)
// (noise.NoisyCount); the statistic is the released integer.
type NoisyScore struct {
	Count int64
	Sigma float64
}

// Trial releases the count once on X (b = 0) or X′ (b = 1).
func (p NoisyScore) Trial(_ context.Context, b int, rng *rand.Rand) (float64, error) {
	v, err := noise.NoisyCount(p.Count+int64(b), p.Sigma, rng)
	return float64(v), err
}

// AboveThreshold audits Ding et al.'s capped AboveThreshold search
// (Algorithm 1, capped at Config.MaxIterations): on X the candidates'
// utilities are Utilities, on X′ the first is larger by 1/k (one training
// example changes one part: Lemma 2's sensitivity); the statistic is the
// utility level the search ends at (a function of which candidates passed
// which noisy thresholds).
type AboveThreshold struct {
	Config    tuning.CappedSearchConfig
	Utilities []float64
}

// Trial runs the search once on X (b = 0) or X′ (b = 1).
func (p AboveThreshold) Trial(_ context.Context, b int, rng *rand.Rand) (float64, error) {
	if len(p.Utilities) == 0 {
		return 0, fmt.Errorf("audit: the above-threshold search needs utilities")
	}
	u := append([]float64(nil), p.Utilities...)
	if b == 1 {
		u[0] += 1 / float64(p.Config.Partitions)
	}
	level := p.Config.U0
	_, _, err := tuning.CappedSearch(u, p.Config, rng, false, func(it tuning.Iteration) { level = it.U })
	return level, err
}

// scoreNoiseBound is the range of the score game's σ: the discrete
// Gaussian sampler's (noise.MaxDiscreteSigma).
var scoreNoiseBound = Bound{Flag: "score-noise", Check: func(label string, v float64) error {
	if !(v > 0 && v <= noise.MaxDiscreteSigma) {
		return fmt.Errorf("%s %v is outside (0, %g], the discrete Gaussian sampler's range", label, v, float64(noise.MaxDiscreteSigma))
	}
	return nil
}}

// The score game, registered as "score" (NoisyScore of a count of 1000;
// its claim is RDP of the discrete Gaussian), and the above-threshold game,
// registered as "above-threshold" (AboveThreshold with one candidate just
// below the first threshold u₀ + g, the step that X′'s extra 1/k can tip;
// its claims are the search's pure ε at its cap, "basic", and RDP).
func init() {
	Register(Game{Name: "score", Rank: 6,
		Help:   "the private score's integer count + discrete Gaussian",
		Fields: []string{"ScoreNoise"},
		Bounds: []Bound{scoreNoiseBound},
		Check: func(s Settings) error {
			if err := scoreNoiseBound.Check("score noise", s.ScoreNoise); err != nil {
				return invalid(err)
			}
			return nil
		},
		New: func(s Settings) (Protocol, Claims, error) {
			return NoisyScore{Count: 1000, Sigma: s.ScoreNoise}, Claims{"rdp": accounting.DiscreteGaussian{NoiseMultiplier: s.ScoreNoise, Sensitivity: 1}}, nil
		},
	})
	Register(Game{Name: "above-threshold", Rank: 7,
		Help:   "Ding et al.'s capped AboveThreshold search",
		Fields: []string{"AboveThreshold"},
		Check: func(s Settings) error {
			if err := s.AboveThreshold.Check(); err != nil {
				return invalid(err)
			}
			return nil
		},
		New: func(s Settings) (Protocol, Claims, error) {
			c := s.AboveThreshold
			e := accounting.AboveThreshold{Epsilon: c.IterationEpsilon(), MaxIterations: c.MaxIterations}
			return AboveThreshold{Config: c, Utilities: []float64{c.U0 + c.Granularity - 0.5/float64(c.Partitions)}}, Claims{"basic": e, "rdp": e}, nil
		},
	})
}
