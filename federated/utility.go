package federated

import "math"

// GoodSelectionBound is DP-Hype's Theorem V.1: given the noiseless vote
// counts (counts[i] votes for candidate i) and which candidates are good,
// the argmax of the counts plus independent N(0, σ²) noise per candidate
// selects a good candidate with probability at least
//
//	1 − |B|·Φ(−Δ/(√2·σ)),   Δ = min_{g∈G} counts[g] − max_{b∈B} counts[b]
//
// (the paper's Equation 3 gap; Φ the standard normal CDF), clipped to
// [0, 1]. Our derivation of the lost formula: a bad b beats a fixed good g
// only if Z_b − Z_g ≥ counts[g] − counts[b] ≥ Δ, where Z_b − Z_g ~ N(0, 2σ²);
// a union bound over B. It is 1 when no candidate is bad and 0 when none is
// good. σ is the released sum's noise standard deviation in votes
// (Mechanism.NoiseStddev); the bound is for the paper's continuous noise,
// which the distributed discrete Gaussian at scale S matches to within its
// 1/S rounding.
func GoodSelectionBound(counts []float64, good []bool, sigma float64) float64 {
	minGood, maxBad := math.Inf(1), math.Inf(-1)
	bad := 0
	for i, c := range counts {
		if good[i] {
			minGood = math.Min(minGood, c)
		} else {
			maxBad = math.Max(maxBad, c)
			bad++
		}
	}
	switch {
	case bad == 0:
		return 1
	case math.IsInf(minGood, 1):
		return 0
	}
	gap := minGood - maxBad
	tail := 0.5 * math.Erfc(gap/(2*sigma)) // Φ(−Δ/(√2σ)) = ½·erfc(Δ/(2σ))
	return math.Max(0, 1-float64(bad)*tail)
}

// BestCaseGoodSelection is GoodSelectionBound at the most favourable vote
// counts m's settings allow: every one of the n clients votes for the same
// ℓ candidates, which are the good ones (Δ = n, |B| = d − ℓ). Below 1/2,
// even a unanimous vote is selected little better than at random: the
// noise (σ = m.NoiseStddev votes) swamps it.
func (m Mechanism) BestCaseGoodSelection() float64 {
	counts := make([]float64, m.Candidates)
	good := make([]bool, m.Candidates)
	for i := 0; i < m.VotesPerClient && i < m.Candidates; i++ {
		counts[i], good[i] = float64(m.Clients), true
	}
	return GoodSelectionBound(counts, good, m.NoiseStddev)
}
