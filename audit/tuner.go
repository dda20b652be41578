package audit

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/dptune/dptune/dpsgd/accounting"
	"github.com/dptune/dptune/tuning"
)

// TunerCanary audits random-stop tuning (Xiang et al., Algorithm 2) on real
// DP-SGD runs in their ETCV setting with the score manipulation "first
// coordinate of w₀ − w_N": K ∼ Repetitions runs of Run (each a DPSGDCanary
// trial in the same world), each scored by its own statistic, and the best
// released; the adversary's statistic is the released score (−Inf when
// K = 0). The candidates do not matter to the canary, so the tuner's choice
// of hyperparameters is left out.
type TunerCanary struct {
	Run         DPSGDCanary
	Repetitions accounting.Repetitions
}

// Trial plays the tuning once on X (b = 0) or X′ (b = 1).
func (p TunerCanary) Trial(ctx context.Context, b int, rng *rand.Rand) (float64, error) {
	k, err := tuning.DrawRuns(p.Repetitions, rng)
	if err != nil {
		return 0, err
	}
	best := math.Inf(-1)
	for range k {
		s, err := p.Run.Trial(ctx, b, rng)
		if err != nil {
			return 0, err
		}
		best = max(best, s)
	}
	return best, nil
}
