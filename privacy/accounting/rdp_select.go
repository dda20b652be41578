package accounting

import (
	"fmt"
	"math"
)

// repeatAndSelectRDP returns, at each order α of a, the RDP of running base
// K times with K ∼ rep and releasing only the best run, with candidate
// densities kept within [c, C] times the prior (C = c = 1: the densities do
// not adapt).
//
// TNB(η, γ) — Papernot & Steinke 2022, "Hyperparameter Tuning with Renyi
// Differential Privacy", Theorem 2, generalised by DP-HyPO (Wang et al.
// 2023), Theorem 1, which reduces to it when C = c:
//
//	ε'(α) = ε(α) + (1+η)(1 − 1/α̂)·ε(α̂) + (α/(α−1) + 1 + η)·log(C/c)
//	        + (1+η)·log(1/γ)/α̂ + log E[K]/(α−1),
//
// minimised over α̂ among the orders, and α̂ = ∞ with ε(∞) the base's pure ε
// when it has one (Papernot & Steinke: (ε, 0)-DP is (∞, ε)-RDP).
//
// Poisson(μ) — Papernot & Steinke 2022, Theorem 6 (restated as Theorem 5 in
// Xiang et al.'s Appendix A.1): if the base is (ε̂, δ̂)-DP with
// e^ε̂ ≤ 1 + 1/(α−1), then
//
//	ε'(α) = ε(α) + μ·δ̂ + log μ/(α−1);
//
// we take ε̂ = log(1 + 1/(α−1)) and δ̂ from the base's RDP by the conversion
// of RDPToDP (or 0 when the base's pure ε is at most ε̂). Adaptive densities
// with Poisson repetitions have no proved bound and give an error.
//
// Orders must be above 1 (RDP checks them).
func (a RDP) repeatAndSelectRDP(base Event, rep Repetitions, maxRatio, minRatio float64) ([]float64, error) {
	if err := rep.Check(); err != nil {
		return nil, err
	}
	orders := a.orders()
	rho, err := a.RDP(base)
	if err != nil {
		return nil, err
	}
	pure, hasPure, err := pureEpsilon(base)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(orders))
	logRatio := math.Log(maxRatio / minRatio)
	switch rep.Distribution {
	case TNB:
		eta1 := 1 + rep.Eta
		logMean := math.Log(rep.Mean())
		logInvGamma := -math.Log(rep.Gamma)
		// The α̂-dependent part does not depend on α: minimise it once.
		best := math.Inf(1)
		if hasPure {
			best = eta1 * pure
		}
		for j, ah := range orders {
			best = math.Min(best, eta1*(1-1/ah)*rho[j]+eta1*logInvGamma/ah)
		}
		for i, o := range orders {
			out[i] = rho[i] + best + (o/(o-1)+eta1)*logRatio + logMean/(o-1)
		}
	case Poisson:
		if logRatio != 0 {
			return nil, fmt.Errorf("accounting: adaptive repeat-and-select is proved only for TNB repetitions, not %s: %w", rep, ErrUnsupported)
		}
		for i, o := range orders {
			epsHat := math.Log1p(1 / (o - 1))
			deltaHat := 0.0
			if !hasPure || pure > epsHat {
				deltaHat = rdpDelta(orders, rho, epsHat)
			}
			out[i] = rho[i] + rep.Mu*deltaHat + math.Log(rep.Mu)/(o-1)
		}
	default:
		return nil, fmt.Errorf("accounting: Papernot & Steinke's bounds cover TNB and Poisson repetitions, not %s (GaussianSelect counts it for Gaussian-like bases): %w", rep, ErrUnsupported)
	}
	return out, nil
}

// rdpDelta is the smallest δ ≤ 1 such that RDP curve rho at orders implies
// (eps, δ)-DP, by Balle et al. 2020, Theorem 21 solved for δ:
// log δ = (α−1)(ε(α) − eps + log(1 − 1/α)) − log α.
func rdpDelta(orders, rho []float64, eps float64) float64 {
	best := 0.0 // log δ; δ ≤ 1 always holds
	for i, a := range orders {
		if a <= 1 || math.IsNaN(rho[i]) || math.IsInf(rho[i], 1) {
			continue
		}
		best = math.Min(best, (a-1)*(rho[i]-eps+math.Log1p(-1/a))-math.Log(a))
	}
	return math.Exp(best)
}
