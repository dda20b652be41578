package tuning

import "math"

// Project returns the L2 projection of the density pi (one probability per
// candidate, uniform prior) onto S_{C,c} = {f : c/N ≤ f_i ≤ C/N, Σ f_i = 1},
// DP-HyPO's problem (3.1) on a grid. By the KKT conditions the projection is
// f_i = clip(pi_i + t, c/N, C/N) with the shift t that makes Σ f = 1; the sum
// increases in t, so t is found by bisection (to float64 resolution; the
// bounds hold exactly, the sum is 1 up to ~1e-15 and samplers normalise). It
// needs c ≤ 1 ≤ C (else S is empty) and returns nil otherwise.
func Project(pi []float64, minRatio, maxRatio float64) []float64 {
	n := float64(len(pi))
	if len(pi) == 0 || !(minRatio <= 1 && 1 <= maxRatio) {
		return nil
	}
	lo, hi := minRatio/n, maxRatio/n
	sum := func(t float64) float64 {
		var s float64
		for _, p := range pi {
			s += math.Min(hi, math.Max(lo, p+t))
		}
		return s
	}
	// Bracket: at t_lo every f_i = lo (sum ≤ 1), at t_hi every f_i = hi.
	pmin, pmax := math.Inf(1), math.Inf(-1)
	for _, p := range pi {
		pmin, pmax = math.Min(pmin, p), math.Max(pmax, p)
	}
	tl, th := lo-pmax, hi-pmin
	for range 200 {
		m := (tl + th) / 2
		if sum(m) < 1 {
			tl = m
		} else {
			th = m
		}
	}
	t := th // Σ f ≥ 1 here, by at most the bisection's last step
	f := make([]float64, len(pi))
	for i, p := range pi {
		f[i] = math.Min(hi, math.Max(lo, p+t))
	}
	return f
}
