package accounting

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// MaxNoiseMultiplier bounds the search of CalibrateNoise.
const MaxNoiseMultiplier = 1e4

// ErrOutOfReach is wrapped by CalibrateNoise's error when even
// MaxNoiseMultiplier spends more than the target: the event's other parts
// alone exceed the budget.
var ErrOutOfReach = errors.New("out of reach")

// CalibrateNoise returns the smallest noise multiplier σ, to within a relative
// 1e-6, such that acc certifies event(σ) as (ε, delta)-DP with ε ≤ targetEps.
// It brackets σ (starting from the RDP accountant's answer when acc is
// another accountant and RDP can count the event, since the tighter
// accountants need less noise), then bisects, and always returns the upper
// end of the bracket, so the result never overshoots the target (the bug of
// Opacus issue #346). It assumes ε decreases as σ grows, which holds for
// every event built from Gaussian mechanisms, including RepeatAndSelect of
// DP-SGD (use it to calibrate the base run of a tuning pipeline).
//
// It returns an error if targetEps or delta is out of range, if even
// σ = MaxNoiseMultiplier does not meet the target, or ctx's error if ctx is
// cancelled (checked before every accountant call).
func CalibrateNoise(ctx context.Context, acc Accountant, event func(noiseMultiplier float64) Event, targetEps, delta float64) (float64, error) {
	if err := CheckEpsilon(targetEps); err != nil {
		return 0, fmt.Errorf("accounting: %w", err)
	}
	if err := CheckDelta(delta); err != nil {
		return 0, fmt.Errorf("accounting: %w", err)
	}
	meets := func(sigma float64) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		g, err := EpsilonContext(ctx, acc, event(sigma), delta)
		return g.Epsilon <= targetEps, err
	}
	hi := 1.0
	if _, isRDP := acc.(RDP); !isRDP {
		if s, err := CalibrateNoise(ctx, RDP{}, event, targetEps, delta); err == nil {
			hi = s
		}
	}
	// Bracket: event(lo) misses the target, event(hi) meets it.
	lo := 0.0
	ok, err := meets(hi)
	if err != nil {
		return 0, err
	}
	if ok {
		for lo = hi / 2; lo > 1e-9; lo /= 2 {
			ok, err := meets(lo)
			if err != nil {
				return 0, err
			}
			if !ok {
				break
			}
			hi = lo
		}
	} else {
		for !ok {
			lo, hi = hi, 2*hi
			if hi > MaxNoiseMultiplier {
				return 0, fmt.Errorf("accounting: ε = %v at δ = %v is %w: even noise multiplier %g spends more", targetEps, delta, ErrOutOfReach, MaxNoiseMultiplier)
			}
			if ok, err = meets(hi); err != nil {
				return 0, err
			}
		}
	}
	for hi-lo > 1e-6*hi {
		mid := (lo + hi) / 2
		ok, err := meets(mid)
		if err != nil {
			return 0, err
		}
		if ok {
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

// CalibrateSteps returns the largest number of steps T ≤ maxSteps such that
// acc certifies event(T) as (ε, delta)-DP with ε ≤ targetEps, assuming ε
// grows with T. It returns an error if targetEps or delta is out of range, if
// not even one step fits the budget, or ctx's error if ctx is cancelled. A
// result equal to maxSteps may mean the search hit its cap.
func CalibrateSteps(ctx context.Context, acc Accountant, event func(steps int) Event, targetEps, delta float64, maxSteps int) (int, error) {
	if err := CheckEpsilon(targetEps); err != nil {
		return 0, fmt.Errorf("accounting: %w", err)
	}
	if err := CheckDelta(delta); err != nil {
		return 0, fmt.Errorf("accounting: %w", err)
	}
	meets := func(steps int) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		g, err := EpsilonContext(ctx, acc, event(steps), delta)
		return g.Epsilon <= targetEps, err
	}
	ok, err := meets(1)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("accounting: not even one step fits ε = %v at δ = %v", targetEps, delta)
	}
	lo, hi := 1, 2 // lo meets the target; hi is a candidate above it
	for {
		if hi >= maxSteps {
			hi = maxSteps
			if ok, err = meets(hi); err != nil || ok {
				return hi, err
			}
			break
		}
		if ok, err = meets(hi); err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := meets(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}
