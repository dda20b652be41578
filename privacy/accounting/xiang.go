package accounting

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/integrate/quad"
)

// GaussianSelect is random-stop tuning (Algorithm 2 of Xiang et al.,
// "Selection leaks privacy") whose every run is a DP-SGD run reduced, by
// their Section 5.1, to one draw from N(0, 1) (without the example) or
// N(Mu, 1) (with it), K ∼ Repetitions runs and the largest released: the
// reduced game of their Fig. 5. Its RDP is their Algorithm 3 (see
// GaussianSelectRDP). Reduction names where Mu came from: "xiang-o" (their
// eq. 19, μ = τ√N/σ), "xiang-g" (the GDP central limit theorem, their
// Corollary 2) or "gdp-mu" (given).
//
// It is an APPROXIMATION, not a proved bound: the reduction replaces the
// number of steps that sample the example by its mean (eq. 17 → 18, a
// law-of-large-numbers step) or uses a central limit theorem. Every
// guarantee that counts it is labelled approximate, and it is never a
// default.
type GaussianSelect struct {
	Mu          float64     `json:"mu"`
	Repetitions Repetitions `json:"repetitions"`
	Reduction   string      `json:"reduction"`
}

// The xiang reductions label random-stop tuning of DP-SGD counted by
// GaussianSelect, an approximation: names people read in reports, not
// accountants New can make.
func init() {
	for i, name := range []string{"xiang-o", "xiang-g"} {
		Register(Named{Name: name, Approximation: "Xiang et al.'s Algorithm 3, an approximation", Rank: 3 + i,
			Describe: func(float64) string {
				return name + ": Xiang et al.'s Algorithm 3, an APPROXIMATION, not a proved bound"
			}})
	}
}

// Type returns "gaussian_select".
func (GaussianSelect) Type() string { return "gaussian_select" }

// XiangMu is μ = τ·√N/σ, the reduction of N DP-SGD steps at sampling rate τ
// and noise multiplier σ to one Gaussian shift (Xiang et al., eq. 19).
func XiangMu(tau, sigma float64, steps int) float64 {
	return tau * math.Sqrt(float64(steps)) / sigma
}

// MaxGaussianSelectMu is the largest shift μ GaussianSelectRDP computes;
// above it, it reports +∞.
// Beyond it the divergence integrals span thousands of standard deviations
// at the high orders and stop converging in float64 (μ = 20 already fails),
// while the answer is already no privacy: at μ = 10 even one run (K = 1)
// is the Gaussian mechanism with RDP α·50 and ε above 50 nats at δ = 10⁻⁵,
// and more runs only add to it.
const MaxGaussianSelectMu = 10

// GaussianSelectRDP is Xiang et al.'s Algorithm 3: the RDP at order α of
// releasing the largest of K ∼ rep draws from N(0, 1) against N(μ, 1),
// max{D_α(N_ξ‖N′_ξ), D_α(N′_ξ‖N_ξ)}. The density of the largest draw is
// E_K[K·Φ(x)^{K−1}]·φ(x) = G′(Φ(x))·φ(x) with G the probability generating
// function of K (closed forms for every Repetitions, so no tail of K is
// truncated); Poisson's K = 0 releases nothing, an atom of mass e^{−μ_K} in
// both worlds.
//
// The divergence integral ∫ p^α q^{1−α} is computed in log space: a scan at
// step 1/4 over [−(α+2)μ − 60, (α+2)μ + 60] finds the integrand's peak, the
// range where it is within e^{−80} of the peak is integrated by composite
// 20-point Gauss–Legendre (gonum integrate/quad) on panels of width 1/4,
// each bisected (up to 12 times) until its 10- and 20-point rules agree to
// 1e-10 per unit length of the peak-normalised integrand; the summed
// differences are the error estimate, and GaussianSelectRDP returns an error
// when it exceeds 1e-6 relative, which moves D_α by at most 1e-6/(α−1). (At large α the log integrand is a
// difference of terms near α·x²/2 ~ 10⁹, so float64 itself limits it to
// about 1e-7 relative; the trimmed tails add at most e^{−80} times the
// range, relative.)
//
// A shift μ above MaxGaussianSelectMu (+∞ included) gives +∞ at once, the
// trivial upper bound: no meaningful privacy is left there to count (see
// MaxGaussianSelectMu). It returns an error for μ < 0 or NaN, an invalid rep
// or α, a non-converged integral, and ctx's error soon after ctx is
// cancelled (checked every few thousand integrand evaluations).
func GaussianSelectRDP(ctx context.Context, mu float64, rep Repetitions, alpha float64) (float64, error) {
	if err := rep.Check(); err != nil {
		return 0, err
	}
	if !(mu >= 0) {
		return 0, fmt.Errorf("accounting: GaussianSelect needs a shift μ ≥ 0, have %v", mu)
	}
	if mu > MaxGaussianSelectMu {
		return math.Inf(1), nil // no meaningful privacy: counted as none
	}
	if !(alpha > 1) || math.IsInf(alpha, 1) {
		return 0, fmt.Errorf("accounting: RDP order %v is not in (1, ∞)", alpha)
	}
	if mu == 0 {
		return 0, nil
	}
	atom := math.Inf(-1) // log P[K = 0]
	if rep.Distribution == Poisson {
		atom = -rep.Mu
	}
	logP := func(x float64) float64 { return logMaxDensity(rep, x) }
	logQ := func(x float64) float64 { return logMaxDensity(rep, x-mu) }
	d1, err := renyi(ctx, logP, logQ, atom, mu, alpha)
	if err != nil {
		return 0, err
	}
	d2, err := renyi(ctx, logQ, logP, atom, mu, alpha)
	if err != nil {
		return 0, err
	}
	return math.Max(d1, d2), nil
}

// logMaxDensity is log(G′(Φ(x))·φ(x)), the log density of the largest of K
// ∼ rep draws from N(0, 1) (on the event K ≥ 1).
func logMaxDensity(rep Repetitions, x float64) float64 {
	logPhi := -x*x/2 - 0.5*math.Log(2*math.Pi)
	logF := logNormCDF(x)
	sf := normSF(x) // 1 − Φ(x), accurate in the upper tail
	var logG float64
	switch rep.Distribution {
	case Fixed:
		logG = math.Log(float64(rep.L)) + float64(rep.L-1)*logF
	case Binary:
		logG = math.Inf(-1)
		if rep.S > 0 {
			logG = math.Log(rep.S)
		}
		if rep.S < 1 {
			logG = logAdd(logG, math.Log1p(-rep.S)+math.Log(float64(rep.L))+float64(rep.L-1)*logF)
		}
	case Poisson:
		// G(z) = e^{μ(z−1)}: G′(Φ) = μ·e^{−μ(1−Φ)}.
		logG = math.Log(rep.Mu) - rep.Mu*sf
	case TNB:
		// G(z) = ((1 − (1−γ)z)^{−η} − 1)/(γ^{−η} − 1); with w = 1 − (1−γ)Φ =
		// γ + (1−γ)(1−Φ), G′ = η(1−γ)w^{−η−1}/(γ^{−η} − 1), and for η = 0
		// (logarithmic) G′ = (1−γ)/(w·log(1/γ)).
		g, eta := rep.Gamma, rep.Eta
		logW := math.Log(g + (1-g)*sf)
		if eta == 0 {
			logG = math.Log1p(-g) - logW - math.Log(-math.Log(g))
		} else {
			logG = math.Log(math.Abs(eta)) + math.Log1p(-g) - (eta+1)*logW - math.Log(math.Abs(math.Expm1(-eta*math.Log(g))))
		}
	}
	return logG + logPhi
}

// renyi is D_α(P‖Q) = log(∫ p^α q^{1−α} + P[atom])/(α − 1) for log
// densities lp, lq whose means are within [0, mu] (see GaussianSelectRDP).
func renyi(ctx context.Context, lp, lq func(float64) float64, logAtom, mu, alpha float64) (float64, error) {
	li := func(x float64) float64 { return alpha*lp(x) + (1-alpha)*lq(x) }
	const step, drop = 0.25, 80.0
	lo, hi := -(alpha+2)*mu-60, (alpha+2)*mu+60
	peak, at := math.Inf(-1), 0.0
	for i, x := 0, lo; x <= hi; i, x = i+1, x+step {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		if v := li(x); v > peak {
			peak, at = v, x
		}
	}
	if math.IsInf(peak, 0) || math.IsNaN(peak) {
		return 0, fmt.Errorf("accounting: GaussianSelect integrand has no finite peak (μ = %v, α = %v)", mu, alpha)
	}
	a, b := at, at
	for a > lo && li(a) > peak-drop {
		a -= step
	}
	for b < hi && li(b) > peak-drop {
		b += step
	}
	f := func(x float64) float64 { return math.Exp(li(x) - peak) }
	var total, errEst float64
	var panel func(x0, x1 float64, depth int)
	panel = func(x0, x1 float64, depth int) {
		fine := quad.Fixed(f, x0, x1, 20, quad.Legendre{}, 0)
		coarse := quad.Fixed(f, x0, x1, 10, quad.Legendre{}, 0)
		if d := math.Abs(fine - coarse); d > 1e-10*(x1-x0) && depth < 12 {
			mid := (x0 + x1) / 2
			panel(x0, mid, depth+1)
			panel(mid, x1, depth+1)
			return
		}
		total += fine
		errEst += math.Abs(fine - coarse)
	}
	for x := a; x < b; x += step {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		panel(x, x+step, 0)
	}
	if !(total > 0) || errEst > 1e-6*total {
		return 0, fmt.Errorf("accounting: GaussianSelect integral did not converge (μ = %v, α = %v: error estimate %v of %v)", mu, alpha, errEst, total)
	}
	fine := total
	// The atom: P[K = 0] in both worlds, so its term is P[atom]^α·P[atom]^{1−α}.
	return logAdd(peak+math.Log(fine), logAtom) / (alpha - 1), nil
}
