package accounting

import (
	"fmt"
	"math"
)

// MaxNoiseMultiplier bounds the search of CalibrateNoise.
const MaxNoiseMultiplier = 1e4

// CalibrateNoise returns the smallest noise multiplier σ, to within a relative
// 1e-6, such that acc certifies event(σ) as (ε, delta)-DP with ε ≤ targetEps.
// The search doubles σ until the target is met, then bisects, and always
// returns the upper end of the bracket, so the result never overshoots the
// target (the bug of Opacus issue #346). It assumes ε decreases as σ grows,
// which holds for the Gaussian and subsampled-Gaussian events.
//
// It returns an error if targetEps or delta is out of range, or if even
// σ = MaxNoiseMultiplier does not meet the target.
func CalibrateNoise(acc Accountant, event func(noiseMultiplier float64) Event, targetEps, delta float64) (float64, error) {
	if err := CheckEpsilon(targetEps); err != nil {
		return 0, fmt.Errorf("accounting: %w", err)
	}
	if err := CheckDelta(delta); err != nil {
		return 0, fmt.Errorf("accounting: %w", err)
	}
	eps := func(sigma float64) (float64, error) {
		g, err := acc.Epsilon(event(sigma), delta)
		return g.Epsilon, err
	}
	lo, hi := 0.0, 1.0
	for {
		e, err := eps(hi)
		if err != nil {
			return 0, err
		}
		if e <= targetEps {
			break
		}
		lo, hi = hi, 2*hi
		if hi > MaxNoiseMultiplier {
			return 0, fmt.Errorf("accounting: ε = %v at δ = %v is out of reach: even noise multiplier %g spends more", targetEps, delta, MaxNoiseMultiplier)
		}
	}
	for hi-lo > 1e-6*hi {
		mid := (lo + hi) / 2
		e, err := eps(mid)
		if err != nil {
			return 0, err
		}
		if e <= targetEps {
			hi = mid
		} else {
			lo = mid
		}
	}
	if math.IsNaN(hi) {
		return 0, fmt.Errorf("accounting: calibration failed")
	}
	return hi, nil
}
