package tuning

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dptune/dptune/dpsgd/accounting"
)

// DrawRuns draws the number of runs K from rep by inversion of its
// cumulative distribution, walking the pmf with its ratio recursion:
//
//	TNB(η, γ), η ≠ 0: P[K=1] = (1−γ)·η/(γ^−η − 1), P[K=k+1] = P[K=k]·(1−γ)(k+η)/(k+1);
//	TNB(0, γ):        P[K=1] = (1−γ)/log(1/γ),     P[K=k+1] = P[K=k]·(1−γ)·k/(k+1);
//	Poisson(μ):       P[K=0] = e^−μ,               P[K=k+1] = P[K=k]·μ/(k+1)
//
// (Papernot & Steinke 2022, Definition 1; DP-HyPO Definition B.1). It
// returns an error for invalid parameters or a Poisson mean above 700
// (e^−μ underflows).
func DrawRuns(rep accounting.Repetitions, rng *rand.Rand) (int, error) {
	if err := rep.Check(); err != nil {
		return 0, err
	}
	switch rep.Distribution {
	case accounting.Fixed:
		return rep.L, nil
	case accounting.Binary:
		if rng.Float64() < rep.S {
			return 1, nil
		}
		return rep.L, nil
	}
	u := rng.Float64()
	var k int
	var p float64
	next := func() {}
	switch rep.Distribution {
	case accounting.Poisson:
		if rep.Mu > 700 {
			return 0, fmt.Errorf("tuning: Poisson mean %v is too large to sample", rep.Mu)
		}
		k, p = 0, math.Exp(-rep.Mu)
		next = func() { p *= rep.Mu / float64(k+1); k++ }
	case accounting.TNB:
		k, p = 1, rep.PMF(1)
		g, eta := rep.Gamma, rep.Eta
		next = func() { p *= (1 - g) * (float64(k) + eta) / float64(k+1); k++ }
	}
	cum := p
	// The pmf decays geometrically; stop where the rest is below float64
	// resolution of u.
	for cum < u && k < 1<<30 {
		next()
		if p == 0 && k > 1 {
			break
		}
		cum += p
	}
	return k, nil
}
