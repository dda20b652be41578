package accounting

import "math"

// LaplaceRDP is the RDP at order α > 1 of the Laplace mechanism with
// ε0 = Δ/b (sensitivity over scale), Mironov 2017, "Rényi Differential
// Privacy", Proposition 6 (Table II):
//
//	1/(α−1) · log( α/(2α−1)·e^{(α−1)ε0} + (α−1)/(2α−1)·e^{−αε0} ),
//
// which tends to ε0 as α → ∞. ε0 = +∞ (scale 0) gives +∞.
func LaplaceRDP(eps0, alpha float64) float64 {
	switch {
	case eps0 == 0:
		return 0
	case math.IsInf(eps0, 1):
		return math.Inf(1)
	case math.IsInf(alpha, 1):
		return eps0
	}
	// log of the sum, factoring out the first term.
	l := math.Log(alpha/(2*alpha-1)) + (alpha-1)*eps0 +
		math.Log1p((alpha-1)/alpha*math.Exp(-(2*alpha-1)*eps0))
	return l / (alpha - 1)
}

// PureDPRDP is the RDP at order α > 1 implied by (ε, 0)-DP: the Rényi
// divergence of ε-randomised response,
//
//	1/(α−1) · log( (e^{αε} + e^{(1−α)ε}) / (1 + e^ε) ),
//
// which bounds every ε-DP mechanism because each is a post-processing of
// randomised response (Kairouz, Oh, Viswanath 2015, Theorem 2.1) and Rényi
// divergence obeys data processing (Mironov 2017, Proposition 2 and §III).
// It is at most min(ε, αε²/2) (Bun & Steinke 2016, Proposition 3.3) and
// tends to ε as α → ∞.
func PureDPRDP(eps, alpha float64) float64 {
	switch {
	case eps == 0:
		return 0
	case math.IsInf(eps, 1):
		return math.Inf(1)
	case math.IsInf(alpha, 1):
		return eps
	}
	l := alpha*eps + math.Log1p(math.Exp((1-2*alpha)*eps)) - eps - math.Log1p(math.Exp(-eps))
	return math.Min(l/(alpha-1), eps)
}
