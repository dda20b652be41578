package accounting

import (
	"fmt"
	"math"
)

// Distributions of the number of runs K of random-stop tuning.
const (
	TNB     = "tnb"     // truncated negative binomial TNB(η, γ)
	Poisson = "poisson" // Poisson(μ)
	// Binary is Xiang et al.'s eq. (21): K = 1 with probability S, K = L
	// otherwise. Only their GaussianSelect bound counts it.
	Binary = "binary"
	// Fixed is a point mass on K runs. Only GaussianSelect counts it.
	Fixed = "fixed"
)

// Repetitions is the distribution of the number of runs K in RepeatAndSelect:
//
//   - TNB(η, γ), η > −1, γ ∈ (0, 1), on {1, 2, …} (Papernot & Steinke 2022,
//     Definition 1; DP-HyPO, Definition B.1):
//     P[K = k] = (1−γ)^k/(γ^−η − 1) · Π_{ℓ<k} (ℓ+η)/(ℓ+1) for η ≠ 0,
//     P[K = k] = (1−γ)^k/(k·log(1/γ)) for η = 0 (logarithmic);
//     η = 1 is the geometric distribution P[K = k] = γ(1−γ)^{k−1}.
//   - Poisson(μ) on {0, 1, 2, …} (K = 0 releases nothing).
//   - Binary(L, s): K = 1 with probability s, K = L otherwise (Xiang et
//     al., eq. 21).
//   - Fixed(K): K runs, always.
type Repetitions struct {
	Distribution string  `json:"distribution"`    // TNB, Poisson, Binary or Fixed
	Eta          float64 `json:"eta,omitempty"`   // η, TNB only
	Gamma        float64 `json:"gamma,omitempty"` // γ, TNB only
	Mu           float64 `json:"mu,omitempty"`    // μ, Poisson only
	L            int     `json:"l,omitempty"`     // Binary's large K; Fixed's K
	S            float64 `json:"s,omitempty"`     // Binary's P[K = 1]
}

// BinaryRepetitions returns Xiang et al.'s eq. (21): K = 1 with
// probability s, K = l otherwise.
func BinaryRepetitions(l int, s float64) Repetitions {
	return Repetitions{Distribution: Binary, L: l, S: s}
}

// FixedRepetitions returns a point mass on k runs.
func FixedRepetitions(k int) Repetitions { return Repetitions{Distribution: Fixed, L: k} }

// TNBRepetitions returns TNB(η, γ). Check reports invalid parameters.
func TNBRepetitions(eta, gamma float64) Repetitions {
	return Repetitions{Distribution: TNB, Eta: eta, Gamma: gamma}
}

// PoissonRepetitions returns Poisson(μ).
func PoissonRepetitions(mu float64) Repetitions {
	return Repetitions{Distribution: Poisson, Mu: mu}
}

// TNBWithMean returns the TNB(η, γ) whose mean E[K] is mean, solving for γ
// by bisection on log γ (E[K] falls from +∞ to 1 as γ goes from 0 to 1). It
// returns an error unless η > −1 and mean > 1.
func TNBWithMean(eta, mean float64) (Repetitions, error) {
	if !(eta > -1) || math.IsInf(eta, 1) {
		return Repetitions{}, fmt.Errorf("accounting: TNB needs η > −1, have %v", eta)
	}
	if !(mean > 1) || math.IsInf(mean, 1) {
		return Repetitions{}, fmt.Errorf("accounting: a TNB's mean number of runs must be finite and above 1, have %v", mean)
	}
	lo, hi := -700.0, 0.0 // log γ
	for i := 0; i < 200 && hi-lo > 1e-13; i++ {
		mid := (lo + hi) / 2
		if TNBRepetitions(eta, math.Exp(mid)).Mean() > mean {
			lo = mid
		} else {
			hi = mid
		}
	}
	r := TNBRepetitions(eta, math.Exp((lo+hi)/2))
	if err := r.Check(); err != nil {
		return Repetitions{}, err
	}
	if m := r.Mean(); math.Abs(m-mean) > 1e-6*mean {
		return Repetitions{}, fmt.Errorf("accounting: no TNB with η = %v has mean %v (closest: %v)", eta, mean, m)
	}
	return r, nil
}

// Check returns an error unless the distribution and its parameters are
// valid: η > −1 and γ ∈ (0, 1) for TNB, μ ≥ 1 for Poisson.
func (r Repetitions) Check() error {
	switch r.Distribution {
	case TNB:
		if !(r.Eta > -1) || math.IsInf(r.Eta, 1) {
			return fmt.Errorf("accounting: TNB needs η > −1, have %v", r.Eta)
		}
		if !(r.Gamma > 0 && r.Gamma < 1) {
			return fmt.Errorf("accounting: TNB needs γ in (0, 1), have %v", r.Gamma)
		}
	case Poisson:
		// Papernot & Steinke's bound has a log μ/(α−1) term that goes to −∞
		// as μ → 0; like dp_accounting, count only μ ≥ 1.
		if !(r.Mu >= 1) || math.IsInf(r.Mu, 1) {
			return fmt.Errorf("accounting: Poisson number of runs needs a finite mean μ ≥ 1, have %v", r.Mu)
		}
	case Binary:
		if r.L < 1 || r.L > 1<<30 || !(r.S >= 0 && r.S <= 1) {
			return fmt.Errorf("accounting: binary number of runs needs 1 ≤ L ≤ 2^30 and s in [0, 1], have L = %d, s = %v", r.L, r.S)
		}
	case Fixed:
		if r.L < 1 || r.L > 1<<30 {
			return fmt.Errorf("accounting: a fixed number of runs must be in [1, 2^30], have %d", r.L)
		}
	default:
		return fmt.Errorf("accounting: unknown distribution of the number of runs %q (want %q, %q, %q or %q)", r.Distribution, TNB, Poisson, Binary, Fixed)
	}
	return nil
}

// MaxMeanRuns is the largest mean number of runs E[K] of a distribution
// dptune draws K from (tuning.DrawRuns): above it Poisson's e^{−μ}
// underflows, and a tuning that expects more runs is out of reach of any
// machine dptune targets. Settings above it are refused before any work —
// never truncated, which would change the distribution the accounting
// assumes.
const MaxMeanRuns = 700

// CheckSampled returns Check's error, or, for the distributions of
// unbounded support (TNB, Poisson), an error when E[K] is above
// MaxMeanRuns: the check of a distribution K is drawn from (accounting
// alone needs only Check; Fixed and Binary are point masses bounded by it).
func (r Repetitions) CheckSampled() error {
	if err := r.Check(); err != nil {
		return err
	}
	if r.Distribution != TNB && r.Distribution != Poisson {
		return nil
	}
	if m := r.Mean(); !(m <= MaxMeanRuns) {
		return fmt.Errorf("accounting: %s has a mean of %.6g runs; dptune draws the number of runs only for means up to %d", r, m, MaxMeanRuns)
	}
	return nil
}

// Mean is E[K]: η(1−γ)/(γ(1−γ^η)) for TNB with η ≠ 0, (1/γ − 1)/log(1/γ) for
// η = 0 (DP-HyPO, Definition B.1), μ for Poisson, s + (1−s)L for Binary, K
// for Fixed.
func (r Repetitions) Mean() float64 {
	switch r.Distribution {
	case Poisson:
		return r.Mu
	case Binary:
		return r.S + (1-r.S)*float64(r.L)
	case Fixed:
		return float64(r.L)
	}
	g, eta := r.Gamma, r.Eta
	lg := math.Log(g)
	if eta == 0 {
		return (1/g - 1) / -lg
	}
	return eta * (1 - g) / (g * -math.Expm1(eta*lg))
}

// PMF is P[K = k].
func (r Repetitions) PMF(k int) float64 {
	switch r.Distribution {
	case Binary:
		p := 0.0
		if k == 1 {
			p += r.S
		}
		if k == r.L {
			p += 1 - r.S
		}
		return p
	case Fixed:
		if k == r.L {
			return 1
		}
		return 0
	}
	if r.Distribution == Poisson {
		if k < 0 {
			return 0
		}
		lf, _ := math.Lgamma(float64(k) + 1)
		return math.Exp(float64(k)*math.Log(r.Mu) - r.Mu - lf)
	}
	if k < 1 {
		return 0
	}
	g, eta, fk := r.Gamma, r.Eta, float64(k)
	if eta == 0 {
		return math.Exp(fk*math.Log1p(-g)) / (fk * -math.Log(g))
	}
	// Π_{ℓ<k} (ℓ+η)/(ℓ+1) = Γ(k+η)/(Γ(η)·k!); its sign is that of η, as is
	// the sign of γ^−η − 1, so the ratio is positive.
	a, _ := math.Lgamma(fk + eta)
	b, _ := math.Lgamma(eta)
	c, _ := math.Lgamma(fk + 1)
	norm := math.Abs(math.Expm1(-eta * math.Log(g)))
	return math.Exp(fk*math.Log1p(-g)+a-b-c) / norm
}

func (r Repetitions) String() string {
	switch r.Distribution {
	case Poisson:
		return fmt.Sprintf("Poisson(μ = %g)", r.Mu)
	case Binary:
		return fmt.Sprintf("Binary(L = %d, s = %g)", r.L, r.S)
	case Fixed:
		return fmt.Sprintf("Fixed(K = %d)", r.L)
	}
	return fmt.Sprintf("TNB(η = %g, γ = %.6g)", r.Eta, r.Gamma)
}
