package audit

import (
	"fmt"
	"math"

	"github.com/dptune/dptune/privacy/accounting"
	"gonum.org/v1/gonum/stat"
)

// GDPEstimate fits μ-Gaussian differential privacy to the game's
// statistics and converts it to ε at delta, the estimate Nasr et al.
// ("Tight Auditing of Differentially Private Machine Learning", USENIX
// Security 2023, Section 5) report beside their confidence bound: with the
// statistic N(m₀, s²) on X (stats0) and N(m₁, s²) on X′ (stats1), the
// trade-off between the two is exactly μ-GDP's (Dong, Roth & Su 2022) with
//
//	μ̂ = (mean₁ − mean₀) / √((var₀ + var₁)/2),
//
// and ε̂ is the ε of μ̂-GDP at delta (accounting.GDPEpsilon). It is an
// ESTIMATE, never a lower bound: it carries no confidence, and it is right
// only where the statistics are Gaussian of one variance — the DP-SGD game
// at sampling rate 1, where μ = √T/σ exactly; with Poisson sampling the
// statistic is a mixture and the fit says little. A negative μ̂ (X′ scores
// lower) gives ε̂ = 0.
//
// It returns an error when either side has fewer than 2 statistics, one
// is not finite, or the pooled variance is 0.
func GDPEstimate(stats0, stats1 []float64, delta float64) (mu, eps float64, err error) {
	m0, v0, err := meanVar(stats0)
	if err != nil {
		return 0, 0, err
	}
	m1, v1, err := meanVar(stats1)
	if err != nil {
		return 0, 0, err
	}
	pooled := (v0 + v1) / 2
	if !(pooled > 0) {
		return 0, 0, fmt.Errorf("audit: GDP fit: the statistics have no variance")
	}
	mu = (m1 - m0) / math.Sqrt(pooled)
	if mu <= 0 {
		return mu, 0, nil
	}
	return mu, accounting.GDPEpsilon(mu, delta), nil
}

// meanVar is the mean and unbiased variance of s (gonum's
// stat.MeanVariance), after checking that there are at least 2 finite
// statistics.
func meanVar(s []float64) (mean, variance float64, err error) {
	if len(s) < 2 {
		return 0, 0, fmt.Errorf("audit: GDP fit: %d statistics, need at least 2", len(s))
	}
	for _, v := range s {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, 0, fmt.Errorf("audit: GDP fit: statistic %v is not finite", v)
		}
	}
	mean, variance = stat.MeanVariance(s, nil)
	return mean, variance, nil
}
