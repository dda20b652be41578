package audit

import (
	"context"
	"fmt"
	"math/rand/v2"

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
