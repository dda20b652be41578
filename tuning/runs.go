package tuning

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dptune/dptune/privacy/accounting"
)

// DrawRuns draws the number of runs K from rep by inversion of its
// cumulative distribution, walking the pmf with its ratio recursion:
//
//	TNB(η, γ), η ≠ 0: P[K=1] = (1−γ)·η/(γ^−η − 1), P[K=k+1] = P[K=k]·(1−γ)(k+η)/(k+1);
//	TNB(0, γ):        P[K=1] = (1−γ)/log(1/γ),     P[K=k+1] = P[K=k]·(1−γ)·k/(k+1);
//	Poisson(μ):       P[K=0] = e^−μ,               P[K=k+1] = P[K=k]·μ/(k+1)
//
// (Papernot & Steinke 2022, Definition 1; DP-HyPO Definition B.1). It
// returns an error for invalid parameters or a mean number of runs above
// accounting.MaxMeanRuns (rep.CheckSampled), and an error — never a
// truncated K, which would change the distribution the accounting assumes —
// in the rare event (probability at most MaxMeanRuns/MaxRuns by Markov's
// inequality) that K exceeds MaxRuns.
func DrawRuns(rep accounting.Repetitions, rng *rand.Rand) (int, error) {
	if err := rep.CheckSampled(); err != nil {
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
	for cum < u {
		if k >= MaxRuns {
			return 0, fmt.Errorf("tuning: the draw of the number of runs from %s exceeded %d", rep, MaxRuns)
		}
		next()
		if p == 0 && k > 1 {
			break
		}
		cum += p
	}
	return k, nil
}

// MaxRuns is the largest number of runs K DrawRuns returns.
const MaxRuns = 1 << 20
