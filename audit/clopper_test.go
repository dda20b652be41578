package audit

import (
	"math"
	"testing"
)

// binomCDF returns P[Bin(n, p) ≤ k] as a function of p, summed term by
// term from the pmf C(n, j)·p^j·(1−p)^(n−j) in log space.
func binomCDF(k, n int) func(p float64) float64 {
	if k < 0 {
		return func(float64) float64 { return 0 }
	}
	if k >= n {
		return func(float64) float64 { return 1 }
	}
	lgn, _ := math.Lgamma(float64(n) + 1)
	lc := make([]float64, k+1) // log C(n, j)
	for j := range lc {
		a, _ := math.Lgamma(float64(j) + 1)
		b, _ := math.Lgamma(float64(n-j) + 1)
		lc[j] = lgn - a - b
	}
	return func(p float64) float64 {
		lp, lq := math.Log(p), math.Log1p(-p)
		sum := 0.0
		for j, c := range lc {
			sum += math.Exp(c + float64(j)*lp + float64(n-j)*lq)
		}
		return sum
	}
}

// bisect returns the p in (0, 1) where the monotone f crosses target,
// increasing says whether f increases in p.
func bisect(f func(float64) float64, target float64, increasing bool) float64 {
	lo, hi := 0.0, 1.0
	for range 64 {
		mid := (lo + hi) / 2
		if (f(mid) < target) == increasing {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// oracleCP is the Clopper–Pearson interval by its definition (Clopper &
// Pearson 1934): lo solves P[Bin(n, lo) ≥ k] = (1−c)/2, hi solves
// P[Bin(n, hi) ≤ k] = (1−c)/2, found by bisection on the binomial CDF — a
// computation independent of the Beta quantiles ClopperPearson uses.
func oracleCP(k, n int, c float64) (lo, hi float64) {
	tail := (1 - c) / 2
	lo, hi = 0, 1
	if k > 0 {
		cdf := binomCDF(k-1, n)
		lo = bisect(func(p float64) float64 { return 1 - cdf(p) }, tail, true)
	}
	if k < n {
		hi = bisect(binomCDF(k, n), tail, false)
	}
	return lo, hi
}

// TestClopperPearsonPublished checks the standard exact 95% intervals
// (e.g. R's binom.test: 5 of 10 gives [0.1871, 0.8129], 50 of 100 gives
// [0.3983, 0.6017]; 0 of 10 gives hi = 1 − 0.025^{1/10} = 0.3085 and 10 of
// 10 gives lo = 0.025^{1/10} = 0.6915) against both ClopperPearson and the
// bisection oracle, to 4 decimals.
func TestClopperPearsonPublished(t *testing.T) {
	for _, tc := range []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 10, 0, 0.3085},
		{5, 10, 0.1871, 0.8129},
		{10, 10, 0.6915, 1},
		{50, 100, 0.3983, 0.6017},
	} {
		lo, hi, err := ClopperPearson(tc.k, tc.n, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		olo, ohi := oracleCP(tc.k, tc.n, 0.95)
		for _, got := range [][2]float64{{lo, hi}, {olo, ohi}} {
			if math.Abs(got[0]-tc.lo) > 5e-5 || math.Abs(got[1]-tc.hi) > 5e-5 {
				t.Errorf("%d of %d: interval [%.6f, %.6f], published [%.4f, %.4f]", tc.k, tc.n, got[0], got[1], tc.lo, tc.hi)
			}
		}
	}
}

// TestClopperPearsonOracle compares ClopperPearson with the bisection
// oracle at the sample sizes an audit uses, and with the closed forms at
// k = 0 and k = n: hi = 1 − ((1−c)/2)^{1/n}, lo = ((1−c)/2)^{1/n}.
func TestClopperPearsonOracle(t *testing.T) {
	for _, tc := range []struct {
		k, n int
		c    float64
	}{
		{1, 10, 0.95}, {3, 7, 0.9}, {0, 50000, 0.95}, {1, 50000, 0.95}, {30, 50000, 0.95},
		{2500, 50000, 0.99}, {25000, 50000, 0.95}, {49990, 50000, 0.95}, {50000, 50000, 0.95},
	} {
		lo, hi, err := ClopperPearson(tc.k, tc.n, tc.c)
		if err != nil {
			t.Fatal(err)
		}
		olo, ohi := oracleCP(tc.k, tc.n, tc.c)
		if math.Abs(lo-olo) > 1e-9*math.Max(olo, 1e-3) || math.Abs(hi-ohi) > 1e-9*math.Max(ohi, 1e-3) {
			t.Errorf("%d of %d at %v: [%.12g, %.12g], oracle [%.12g, %.12g]", tc.k, tc.n, tc.c, lo, hi, olo, ohi)
		}
		tail := (1 - tc.c) / 2
		if tc.k == 0 && math.Abs(hi-(1-math.Pow(tail, 1/float64(tc.n)))) > 1e-12 {
			t.Errorf("0 of %d: hi = %v, closed form %v", tc.n, hi, 1-math.Pow(tail, 1/float64(tc.n)))
		}
		if tc.k == tc.n && math.Abs(lo-math.Pow(tail, 1/float64(tc.n))) > 1e-12 {
			t.Errorf("%d of %d: lo = %v, closed form %v", tc.n, tc.n, lo, math.Pow(tail, 1/float64(tc.n)))
		}
	}
}

func TestClopperPearsonErrors(t *testing.T) {
	for _, tc := range []struct {
		k, n int
		c    float64
	}{
		{0, 0, 0.95}, {-1, 10, 0.95}, {11, 10, 0.95}, {5, 10, 0}, {5, 10, 1}, {5, 10, math.NaN()}, {5, 10, -0.5},
	} {
		if _, _, err := ClopperPearson(tc.k, tc.n, tc.c); err == nil {
			t.Errorf("ClopperPearson(%d, %d, %v) gave no error", tc.k, tc.n, tc.c)
		}
	}
}
