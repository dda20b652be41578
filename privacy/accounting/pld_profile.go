package accounting

import "math"

// A privacyProfile is the hockey-stick curve of one dominating pair (P, Q)
// of a mechanism: δ(ε) = sup_S P(S) − e^ε·Q(S) = E_P[(1 − e^{ε−L})₊] + P(L = ∞)
// with privacy loss L = log(dP/dQ).
type privacyProfile interface {
	// profile returns δ(ε) and 1 − δ(ε), each computed without cancellation
	// where it is small (connectTheDots differences whichever is smaller).
	profile(eps float64) (delta, oneMinus float64)
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

// profile: L(x) = log(1 − q + q·e^{(2x−1)/(2r²)}) increases in x, so the
// optimal set is {x > x*} with t = e^ε − 1 + q = q·e^{(2x*−1)/(2r²)}:
// δ = P(x > x*) − e^ε·Q(x > x*) = q·Φ̄((x*−1)/r) − t·Φ̄(x*/r), and
// 1 − δ = P(x ≤ x*) + e^ε·Q(x > x*).
func (g gaussianRemove) profile(eps float64) (float64, float64) {
	t := math.Expm1(eps) + g.q
	if t <= 0 {
		return -math.Expm1(eps), math.Exp(eps) // every loss exceeds ε
	}
	x := g.r*g.r*math.Log(t/g.q) + 0.5
	d := math.Max(0, g.q*normSF((x-1)/g.r)-t*normSF(x/g.r))
	u := (1-g.q)*normCDF(x/g.r) + g.q*normCDF((x-1)/g.r) + math.Exp(eps)*normSF(x/g.r)
	return d, math.Min(1, u)
}

// gaussianAdd is the other direction of the Poisson-subsampled Gaussian:
// P = N(0, r²), Q = (1−q)·N(0, r²) + q·N(1, r²).
type gaussianAdd struct{ q, r float64 }

func (g gaussianAdd) lossRange() (float64, float64) { return math.Inf(-1), -math.Log1p(-g.q) }

// profile: L(x) = −log(1 − q + q·e^{(2x−1)/(2r²)}) decreases in x; the optimal
// set is {x < x*} with u = e^−ε − 1 + q = q·e^{(2x*−1)/(2r²)}:
// δ = e^ε·(u·Φ(x*/r) − q·Φ((x*−1)/r)), and
// 1 − δ = Φ̄(x*/r) + e^ε·((1−q)·Φ(x*/r) + q·Φ((x*−1)/r)).
func (g gaussianAdd) profile(eps float64) (float64, float64) {
	u := math.Expm1(-eps) + g.q
	if u <= 0 {
		return 0, 1 // no loss exceeds ε
	}
	x := g.r*g.r*math.Log(u/g.q) + 0.5
	e := math.Exp(eps)
	d := math.Max(0, e*(u*normCDF(x/g.r)-g.q*normCDF((x-1)/g.r)))
	om := normSF(x/g.r) + e*((1-g.q)*normCDF(x/g.r)+g.q*normCDF((x-1)/g.r))
	return d, math.Min(1, om)
}

// laplaceProfile is the Laplace mechanism with ε0 = Δ/b: L ∈ [−ε0, ε0] and
// δ(ε) = 1 − e^{(ε−ε0)/2} for |ε| < ε0 (e.g. Koskela et al. 2021,
// "Tight Differential Privacy for Discrete-Valued Mechanisms and for the
// Subsampled Gaussian Mechanism Using FFT", Section 5.1).
type laplaceProfile struct{ eps0 float64 }

func (l laplaceProfile) lossRange() (float64, float64) { return -l.eps0, l.eps0 }

func (l laplaceProfile) profile(eps float64) (float64, float64) {
	switch {
	case eps >= l.eps0:
		return 0, 1
	case eps <= -l.eps0:
		return -math.Expm1(eps), math.Exp(eps)
	}
	return -math.Expm1((eps - l.eps0) / 2), math.Exp((eps - l.eps0) / 2)
}

// randomisedResponse is the dominating pair of every (ε0, δ0)-DP mechanism
// (Kairouz, Oh, Viswanath 2015, Theorem 2.1): losses +∞ with probability δ0,
// ε0 with (1−δ0)e^{ε0}/(1+e^{ε0}) and −ε0 with (1−δ0)/(1+e^{ε0}).
type randomisedResponse struct{ eps0, delta0 float64 }

func (r randomisedResponse) lossRange() (float64, float64) { return -r.eps0, r.eps0 }

func (r randomisedResponse) profile(eps float64) (float64, float64) {
	d, e0 := r.delta0, r.eps0
	switch {
	case eps >= e0:
		return d, 1 - d
	case eps >= -e0:
		// δ = d + (1−d)(e^{ε0} − e^ε)/(1+e^{ε0}); 1 − δ = (1−d)(1 + e^ε)/(1+e^{ε0}).
		return d + (1-d)*(math.Exp(e0)-math.Exp(eps))/(1+math.Exp(e0)), (1 - d) * (1 + math.Exp(eps)) / (1 + math.Exp(e0))
	}
	return 1 - (1-d)*math.Exp(eps), (1 - d) * math.Exp(eps)
}

// Limits of the discretisation grid, in nats: below pldLowest the chord from
// (e^ε, δ) = (0, 1) stands in for the profile (exact for the grid's
// pessimism, see connectTheDots); above pldHighest the mass counts as +∞
// (e^ε would overflow float64 near 709).
const (
	pldLowest  = -18.42 // e^ε ≈ 1e-8
	pldHighest = 700
)

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
// The grid starts at the lowest loss or pldLowest, whichever is higher: below
// its first point the discrete profile is the chord from (x, δ) = (0, 1),
// which lies above the convex true profile, so the mass below is moved up
// (pessimistic). It ends where δ(ε) ≤ infTail (or at the highest loss, or
// pldHighest); the mass above becomes the mass at +∞. Slopes are computed
// from δ or 1 − δ, whichever is smaller, and forced nondecreasing by lowering
// (right to left), which only raises the discrete profile.
//
// ok is false if the grid would exceed maxPoints points. If the mass at +∞
// alone is at least enough, only it is returned (the caller's ε is +∞).
func connectTheDots(p privacyProfile, h, infTail, enough float64, maxPoints int) (d discretePLD, ok bool) {
	lo, hi := p.lossRange()
	lo = math.Max(lo, pldLowest)
	if math.IsInf(hi, 1) {
		for hi = math.Max(h, lo+h); hi < pldHighest; hi *= 2 {
			if dd, _ := p.profile(hi); dd <= infTail {
				break
			}
		}
	}
	hi = math.Min(hi, pldHighest)
	iLo, iHi := int(math.Floor(lo/h)), int(math.Ceil(hi/h))
	if top, _ := p.profile(float64(iHi) * h); top >= enough {
		return discretePLD{inf: top}, true
	}
	if iHi <= iLo {
		iHi = iLo + 1
	}
	n := iHi - iLo + 1
	if n > maxPoints {
		return discretePLD{}, false
	}
	x := make([]float64, n)  // e^{ε_i}
	dl := make([]float64, n) // δ(ε_i)
	om := make([]float64, n) // 1 − δ(ε_i)
	for k := range n {
		e := float64(iLo+k) * h
		x[k] = math.Exp(e)
		dl[k], om[k] = p.profile(e)
	}
	// Slopes on [x_k, x_{k+1}], from the smaller of δ and 1 − δ.
	s := make([]float64, n-1)
	for k := range s {
		if dl[k] < om[k] {
			s[k] = (dl[k+1] - dl[k]) / (x[k+1] - x[k])
		} else {
			s[k] = -(om[k+1] - om[k]) / (x[k+1] - x[k])
		}
		s[k] = math.Min(s[k], 0)
	}
	for k := len(s) - 2; k >= 0; k-- {
		s[k] = math.Min(s[k], s[k+1])
	}
	// The discrete profile, rebuilt from the right end: D_{n−1} = δ(ε_{n−1}),
	// D_k = D_{k+1} − s_k (x_{k+1} − x_k) ≥ δ(ε_k).
	D0 := dl[n-1]
	for k := n - 2; k >= 0; k-- {
		D0 -= s[k] * (x[k+1] - x[k])
	}
	out := discretePLD{lo: iLo, mass: make([]float64, n), inf: dl[n-1]}
	// Total mass 1: the chord from (0, 1) to (x_0, D_0) continues the profile.
	out.mass[0] = math.Max(0, 1-D0+s[0]*x[0])
	for k := 1; k < n-1; k++ {
		out.mass[k] = (s[k] - s[k-1]) * x[k]
	}
	out.mass[n-1] = -s[n-2] * x[n-1]
	for _, m := range out.mass {
		if math.IsNaN(m) || math.IsInf(m, 0) {
			return discretePLD{}, false
		}
	}
	if math.IsNaN(out.inf) {
		return discretePLD{}, false
	}
	return out, true
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
