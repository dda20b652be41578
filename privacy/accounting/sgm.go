package accounting

import "math"

// SubsampledGaussianRDP is the RDP at order α of the Poisson-subsampled
// Gaussian mechanism with sampling rate q and noise multiplier σ (sensitivity
// 1, noise N(0, σ²)): log(A_α)/(α − 1) with
//
//	A_α = E_{z∼N(0,σ²)} [((1 − q) + q·exp((2z − 1)/(2σ²)))^α],
//
// Mironov, Talwar, Zhang 2019, "Rényi Differential Privacy of the Sampled
// Gaussian Mechanism": Section 3.3 (integer α, binomial expansion) and
// Section 3.4 (fractional α, the signed two-sided series with erfc terms) —
// the exact value at every order, as in Opacus and TensorFlow Privacy.
// Special cases: q = 0 gives 0, α = +∞ or a σ so small that 1/σ² overflows
// (σ ≲ 1e-154, where even the unsampled Gaussian's RDP is +∞ in float64)
// gives +∞ at once, q = 1 gives the Gaussian's α/(2σ²).
func SubsampledGaussianRDP(q, sigma, alpha float64) float64 {
	switch {
	case q == 0:
		return 0
	case math.IsInf(1/(sigma*sigma), 1) || math.IsInf(alpha, 1):
		return math.Inf(1)
	case q == 1:
		return alpha / (2 * sigma * sigma)
	}
	var logA float64
	if alpha == math.Trunc(alpha) && alpha < 1<<20 {
		logA = logAInt(q, sigma, int(alpha))
	} else {
		logA = logAFrac(q, sigma, alpha)
	}
	return logA / (alpha - 1)
}

// logAInt is log A_α for integer α: log Σ_{i=0}^{α} C(α,i) q^i (1−q)^{α−i} exp((i² − i)/(2σ²)).
func logAInt(q, sigma float64, alpha int) float64 {
	logA := math.Inf(-1)
	lq, l1q := math.Log(q), math.Log1p(-q)
	for i := 0; i <= alpha; i++ {
		fi := float64(i)
		t := logBinomAbs(float64(alpha), i) + fi*lq + float64(alpha-i)*l1q + (fi*fi-fi)/(2*sigma*sigma)
		logA = logAdd(logA, t)
	}
	return logA
}

// logAFrac is log A_α for fractional α: A_α = A0 + A1 with
//
//	A0 = Σ_i C(α,i) q^i (1−q)^{α−i} exp((i² − i)/(2σ²)) · ½ erfc((i − z0)/(√2 σ)),
//	A1 = Σ_i C(α,i) q^{α−i} (1−q)^i exp(((α−i)² − (α−i))/(2σ²)) · ½ erfc((z0 − (α−i))/(√2 σ)),
//
// z0 = σ² log(1/q − 1) + ½, summed until both terms fall below e^−30; the
// binomial coefficients of a fractional α change sign, so the sums are kept
// in log space with signs.
func logAFrac(q, sigma, alpha float64) float64 {
	a0, a1 := math.Inf(-1), math.Inf(-1)
	z0 := sigma*sigma*math.Log(1/q-1) + 0.5
	lq, l1q := math.Log(q), math.Log1p(-q)
	s2 := 2 * sigma * sigma
	positive := true // the sign of C(α, i), updated as i grows
	for i := 0; ; i++ {
		fi := float64(i)
		j := alpha - fi
		lc := logBinomAbs(alpha, i)
		if i > 0 && alpha-float64(i-1) < 0 {
			positive = !positive
		}
		t0 := lc + fi*lq + j*l1q
		t1 := lc + j*lq + fi*l1q
		e0 := math.Log(0.5) + logErfc((fi-z0)/(math.Sqrt2*sigma))
		e1 := math.Log(0.5) + logErfc((z0-j)/(math.Sqrt2*sigma))
		s0 := t0 + (fi*fi-fi)/s2 + e0
		s1 := t1 + (j*j-j)/s2 + e1
		if positive {
			a0, a1 = logAdd(a0, s0), logAdd(a1, s1)
		} else {
			a0, a1 = logSub(a0, s0), logSub(a1, s1)
		}
		if math.Max(s0, s1) < -30 || i > 100000 || math.IsNaN(a0) || math.IsNaN(a1) {
			break
		}
	}
	return logAdd(a0, a1)
}

// logBinomAbs is log |C(α, i)| = log|Γ(α+1)| − log Γ(i+1) − log|Γ(α−i+1)|.
func logBinomAbs(alpha float64, i int) float64 {
	a, _ := math.Lgamma(alpha + 1)
	b, _ := math.Lgamma(float64(i) + 1)
	c, _ := math.Lgamma(alpha - float64(i) + 1)
	return a - b - c
}

// logAdd is log(e^a + e^b).
func logAdd(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(b, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// logSub is log(e^a − e^b) for a ≥ b; NaN if b > a (a numerical failure the
// caller surfaces), −∞ if a == b.
func logSub(a, b float64) float64 {
	switch {
	case math.IsInf(b, -1):
		return a
	case a == b:
		return math.Inf(-1)
	case b > a:
		return math.NaN()
	}
	return a + math.Log1p(-math.Exp(b-a))
}

// logErfc is log erfc(x), using the asymptotic series
// erfc(x) ≈ exp(−x² − ½x⁻² + ⅝x⁻⁴ − 37/24 x⁻⁶ + 353/64 x⁻⁸)/(x√π)
// where erfc underflows (x > 25).
func logErfc(x float64) float64 {
	if x <= 25 {
		return math.Log(math.Erfc(x))
	}
	x2 := x * x
	return -math.Log(math.Pi)/2 - math.Log(x) - x2 - 0.5/x2 + 0.625/(x2*x2) - 37.0/24/(x2*x2*x2) + 353.0/64/(x2*x2*x2*x2)
}
