package accounting

import "math"

// A privacyProfile is the hockey-stick curve of one dominating pair (P, Q)
// of a mechanism: δ(ε) = sup_S P(S) − e^ε·Q(S) = E_P[(1 − e^{ε−L})₊] + P(L = ∞)
// with privacy loss L = log(dP/dQ).
type privacyProfile interface {
	delta(eps float64) float64
	// lossRange returns bounds on L's finite values; ±Inf where unbounded.
	lossRange() (lo, hi float64)
}

// gaussianRemove is the Poisson-subsampled Gaussian with sampling rate q and
// noise-to-sensitivity ratio r, in the direction where the neighbour holds
// the extra example: P = (1−q)·N(0, r²) + q·N(1, r²), Q = N(0, r²). q = 1 is
// the Gaussian mechanism, whose profile is Balle & Wang 2018, "Improving the
// Gaussian Mechanism for Differential Privacy", Theorem 8:
// Φ(1/(2r) − εr) − e^ε·Φ(−1/(2r) − εr).
type gaussianRemove struct{ q, r float64 }

func (g gaussianRemove) lossRange() (float64, float64) {
	if g.q == 1 {
		return math.Inf(-1), math.Inf(1)
	}
	return math.Log1p(-g.q), math.Inf(1)
}

// delta: L(x) = log(1 − q + q·e^{(2x−1)/(2r²)}) increases in x, so the
// optimal set is {x > x*} with t = e^ε − 1 + q = q·e^{(2x*−1)/(2r²)}, and
// δ = q·Φ̄((x*−1)/r) − t·Φ̄(x*/r).
func (g gaussianRemove) delta(eps float64) float64 {
	t := math.Expm1(eps) + g.q
	if t <= 0 {
		return -math.Expm1(eps) // every loss exceeds ε
	}
	x := g.r*g.r*math.Log(t/g.q) + 0.5
	return math.Max(0, g.q*normSF((x-1)/g.r)-t*normSF(x/g.r))
}

// gaussianAdd is the other direction of the Poisson-subsampled Gaussian:
// P = N(0, r²), Q = (1−q)·N(0, r²) + q·N(1, r²).
type gaussianAdd struct{ q, r float64 }

func (g gaussianAdd) lossRange() (float64, float64) { return math.Inf(-1), -math.Log1p(-g.q) }

// delta: L(x) = −log(1 − q + q·e^{(2x−1)/(2r²)}) decreases in x; the optimal
// set is {x < x*} with u = e^−ε − 1 + q = q·e^{(2x*−1)/(2r²)}, and
// δ = e^ε·(u·Φ(x*/r) − q·Φ((x*−1)/r)).
func (g gaussianAdd) delta(eps float64) float64 {
	u := math.Expm1(-eps) + g.q
	if u <= 0 {
		return 0 // no loss exceeds ε
	}
	x := g.r*g.r*math.Log(u/g.q) + 0.5
	return math.Max(0, math.Exp(eps)*(u*normCDF(x/g.r)-g.q*normCDF((x-1)/g.r)))
}

// laplaceProfile is the Laplace mechanism with ε0 = Δ/b: L ∈ [−ε0, ε0] and
// δ(ε) = 1 − e^{(ε−ε0)/2} for |ε| < ε0 (e.g. Koskela et al. 2021,
// "Tight Differential Privacy for Discrete-Valued Mechanisms and for the
// Subsampled Gaussian Mechanism Using FFT", Section 5.1).
type laplaceProfile struct{ eps0 float64 }

func (l laplaceProfile) lossRange() (float64, float64) { return -l.eps0, l.eps0 }

func (l laplaceProfile) delta(eps float64) float64 {
	switch {
	case eps >= l.eps0:
		return 0
	case eps <= -l.eps0:
		return -math.Expm1(eps)
	}
	return -math.Expm1((eps - l.eps0) / 2)
}

// randomisedResponse is the dominating pair of every (ε0, δ0)-DP mechanism
// (Kairouz, Oh, Viswanath 2015, Theorem 2.1): losses +∞ with probability δ0,
// ε0 with (1−δ0)e^{ε0}/(1+e^{ε0}) and −ε0 with (1−δ0)/(1+e^{ε0}).
type randomisedResponse struct{ eps0, delta0 float64 }

func (r randomisedResponse) lossRange() (float64, float64) { return -r.eps0, r.eps0 }

func (r randomisedResponse) delta(eps float64) float64 {
	d, e0 := r.delta0, r.eps0
	switch {
	case eps >= e0:
		return d
	case eps >= -e0:
		return d + (1-d)*(math.Exp(e0)-math.Exp(eps))/(1+math.Exp(e0))
	}
	return 1 - (1-d)*math.Exp(eps)
}

// discretePLD is a privacy loss distribution on the grid {i·h}: mass[k] is
// the probability of loss (lo+k)·h, and inf the probability of loss +∞.
type discretePLD struct {
	lo   int
	mass []float64
	inf  float64
}

// connectTheDots returns the pessimistic discretisation of profile p on the
// grid of spacing h of Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022,
// "Connect the Dots: Tighter Discrete Approximations of Privacy Loss
// Distributions", Section 3: the discrete PLD whose profile, as a function of
// x = e^ε, is the piecewise-linear interpolation of p's profile through the
// grid points ε_i = i·h. The profile is convex in x, so the interpolation
// lies above it: the discrete pair dominates (P, Q) at every ε, domination
// survives composition (by Blackwell's theorem; see Doroshenko et al.,
// Section 2, and Zhu, Dong, Wang 2022, "Optimal Accounting of Differential
// Privacy via Characteristic Function"), and every ε derived from it is an
// upper bound.
//
// The grid runs from the lowest loss (or the point below which P puts less
// than ~1e-15 of its mass; the rest is moved up to it, which is pessimistic)
// to the point where δ(ε) ≤ infTail; the mass above becomes the mass at +∞.
func connectTheDots(p privacyProfile, h, infTail float64) discretePLD {
	lo, hi := p.lossRange()
	if math.IsInf(lo, -1) {
		// Walk down until δ(ε) is 1 − e^ε up to ~1e-15: the mass of P below
		// ε is then negligible.
		for lo = -h; p.delta(lo)+math.Expm1(lo) > 1e-15 && lo > -1e4; lo *= 2 {
		}
	}
	if math.IsInf(hi, 1) {
		for hi = math.Max(h, lo+h); p.delta(hi) > infTail && hi < 1e4; hi = 2 * math.Max(hi, h) {
		}
	}
	iLo, iHi := int(math.Floor(lo/h)), int(math.Ceil(hi/h))
	if iHi == iLo {
		iHi++
	}
	n := iHi - iLo + 1
	x := make([]float64, n) // e^{ε_i}
	d := make([]float64, n) // δ(ε_i)
	for k := range n {
		e := float64(iLo+k) * h
		x[k], d[k] = math.Exp(e), p.delta(e)
	}
	// Slopes of the interpolation: s[k] on [x_k, x_{k+1}], nondecreasing for
	// a convex profile (enforced against rounding).
	s := make([]float64, n-1)
	for k := range s {
		s[k] = (d[k+1] - d[k]) / (x[k+1] - x[k])
		if k > 0 && s[k] < s[k-1] {
			s[k] = s[k-1]
		}
	}
	out := discretePLD{lo: iLo, mass: make([]float64, n), inf: d[n-1]}
	out.mass[0] = 1 - d[0] + s[0]*x[0]
	for k := 1; k < n-1; k++ {
		out.mass[k] = (s[k] - s[k-1]) * x[k]
	}
	out.mass[n-1] = -s[n-2] * x[n-1]
	for k, m := range out.mass {
		if m < 0 {
			out.mass[k] = 0
		}
	}
	return out
}

// logMGF is log E[e^{λL}; L < ∞].
func (d discretePLD) logMGF(lambda, h float64) float64 {
	m := math.Inf(-1)
	for k, p := range d.mass {
		if p > 0 {
			m = math.Max(m, math.Log(p)+lambda*float64(d.lo+k)*h)
		}
	}
	var s float64
	for k, p := range d.mass {
		if p > 0 {
			s += math.Exp(math.Log(p) + lambda*float64(d.lo+k)*h - m)
		}
	}
	return m + math.Log(s)
}
