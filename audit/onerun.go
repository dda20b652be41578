package audit

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distuv"
)

// One-run auditing: Steinke, Nasr & Jagielski, "Privacy Auditing with One
// (1) Training Run" (NeurIPS 2023). m canaries are each included in the
// training set independently with probability 1/2 (S_i ∈ {−1, +1}); one
// model is trained; the auditor scores every canary and guesses +1 ("in")
// for the highest-scoring, −1 ("out") for the lowest and abstains on the
// rest. If training is (ε, δ)-DP, the number W of correct guesses among r
// guesses is stochastically dominated, up to a δ term, by Binomial(r,
// e^ε/(1+e^ε)) — the accuracy of ε-DP randomized response (their Theorem
// 3.1 and the p-value computation of their Algorithm 3 in the appendix).
// An ε whose p-value for the observed count is below 1 − confidence is
// rejected; ε_L is the largest ε so rejected.

// OneRunPValue is the p-value of v or more correct guesses among r
// guesses about m canaries under the hypothesis that training is (eps,
// delta)-DP (Steinke et al., Theorem 3.1):
//
//	p = P[Bin(r, q) ≥ v] + 2mδ · max_{i=1..v} (1/i)·P[v−i ≤ Bin(r, q) < v],
//	q = e^ε / (1 + e^ε),
//
// capped at 1. It needs 0 ≤ v ≤ r ≤ m, eps ≥ 0 and delta in [0, 1].
func OneRunPValue(m, r, v int, eps, delta float64) (float64, error) {
	if !(0 <= v && v <= r && r <= m) || !(eps >= 0) || math.IsInf(eps, 1) || !(delta >= 0 && delta <= 1) {
		return 0, fmt.Errorf("audit: one-run p-value needs 0 ≤ v ≤ r ≤ m and finite ε ≥ 0, δ in [0, 1]: have m = %d, r = %d, v = %d, ε = %v, δ = %v", m, r, v, eps, delta)
	}
	if v == 0 {
		return 1, nil
	}
	q := 1 / (1 + math.Exp(-eps))
	// P[Bin(r, q) ≥ v] = I_q(v, r − v + 1), the regularised incomplete beta
	// function: exact in the tail, where 1 − CDF would cancel.
	beta := mathext.RegIncBeta(float64(v), float64(r-v+1), q)
	var alpha float64
	if delta > 0 {
		b := distuv.Binomial{N: float64(r), P: q}
		var below float64 // P[v−i ≤ Bin(r, q) < v]
		for i := 1; i <= v; i++ {
			below += b.Prob(float64(v - i))
			alpha = max(alpha, below/float64(i))
		}
	}
	return min(1, beta+2*float64(m)*delta*alpha), nil
}

// OneRunEpsilon is ε_L, in nats, from v correct guesses among r about m
// canaries: the largest ε ≥ 0 whose OneRunPValue is at most 1 − confidence
// (found by bisection to 1e-6 nats; the p-value grows with ε), or 0 when ε
// = 0 itself is not rejected. With probability at least confidence, a
// training run that is (ε, delta)-DP yields ε_L ≤ ε.
func OneRunEpsilon(m, r, v int, delta, confidence float64) (float64, error) {
	if !(confidence > 0 && confidence < 1) {
		return 0, fmt.Errorf("audit: confidence %v is outside (0, 1)", confidence)
	}
	beta := 1 - confidence
	p := func(eps float64) (bool, error) {
		pv, err := OneRunPValue(m, r, v, eps, delta)
		return pv <= beta, err
	}
	rejected, err := p(0)
	if err != nil || !rejected {
		return 0, err
	}
	lo, hi := 0.0, 1.0
	for {
		rej, _ := p(hi)
		if !rej {
			break
		}
		if lo, hi = hi, 2*hi; hi > 1e3 {
			return lo, nil
		}
	}
	for hi-lo > 1e-6 {
		mid := (lo + hi) / 2
		if rej, _ := p(mid); rej {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// OneRunGuesses scores the guesses of Steinke et al.'s auditor: with the
// canaries ranked by score (higher: more likely included; ties broken by
// index), it guesses "in" for the r/2 highest and "out" for the r − r/2
// lowest, and returns how many of its r guesses are right (v). in[i] says
// whether canary i was included. It needs len(in) == len(scores) and r in
// [0, len(scores)].
func OneRunGuesses(scores []float64, in []bool, r int) (v int, err error) {
	m := len(scores)
	if len(in) != m || r < 0 || r > m {
		return 0, fmt.Errorf("audit: %d guesses about %d scores of %d canaries", r, m, len(in))
	}
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	plus := r / 2
	for _, i := range order[:plus] {
		if in[i] {
			v++
		}
	}
	for _, i := range order[m-(r-plus):] {
		if !in[i] {
			v++
		}
	}
	return v, nil
}

// OneRunBound is one guess count's outcome in OneRunAudit.
type OneRunBound struct {
	Guesses      int     `json:"guesses"`       // r: guesses made (half "in", half "out")
	Correct      int     `json:"correct"`       // v: right ones
	EpsilonLower float64 `json:"epsilon_lower"` // ε_L at this r, at the Bonferroni-split confidence
}

// OneRunAudit concludes ε_L from one training run's canary scores: for
// each guess count r in guesses it scores OneRunGuesses and bounds ε by
// OneRunEpsilon at confidence 1 − (1 − confidence)/len(guesses) — a union
// bound over the counts, so that the largest of them, returned, holds at
// confidence (the guess counts must be fixed before the scores are seen).
// It returns ε_L and every count's outcome.
func OneRunAudit(scores []float64, in []bool, guesses []int, delta, confidence float64) (float64, []OneRunBound, error) {
	if len(guesses) == 0 {
		return 0, nil, fmt.Errorf("audit: no guess counts")
	}
	each := 1 - (1-confidence)/float64(len(guesses))
	var best float64
	out := make([]OneRunBound, 0, len(guesses))
	for _, r := range guesses {
		v, err := OneRunGuesses(scores, in, r)
		if err != nil {
			return 0, nil, err
		}
		eps, err := OneRunEpsilon(len(scores), r, v, delta, each)
		if err != nil {
			return 0, nil, err
		}
		best = max(best, eps)
		out = append(out, OneRunBound{Guesses: r, Correct: v, EpsilonLower: eps})
	}
	return best, out, nil
}
