package audit

import (
	"fmt"

	"gonum.org/v1/gonum/stat/distuv"
)

// ClopperPearson returns the two-sided exact confidence interval [lo, hi]
// for the success probability p of a binomial with k successes in n trials
// (Clopper & Pearson 1934, "The use of confidence or fiducial limits
// illustrated in the case of the binomial", Biometrika 26(4); the method
// Xiang et al. use for FP and FN, Section 2.2 and Appendix A.3):
//
//	lo = Beta quantile at (1−c)/2 with parameters (k, n−k+1), and lo = 0 when k = 0;
//	hi = Beta quantile at (1+c)/2 with parameters (k+1, n−k), and hi = 1 when k = n,
//
// with c = confidence. Equivalently, lo solves P[Bin(n, lo) ≥ k] = (1−c)/2
// and hi solves P[Bin(n, hi) ≤ k] = (1−c)/2, so each end alone is a
// one-sided bound at confidence (1+c)/2. Both ends are probabilities in
// [0, 1]. It returns an error unless n ≥ 1, 0 ≤ k ≤ n and 0 < confidence < 1.
func ClopperPearson(k, n int, confidence float64) (lo, hi float64, err error) {
	if n < 1 {
		return 0, 0, fmt.Errorf("audit: Clopper–Pearson needs at least one trial, have n = %d", n)
	}
	if k < 0 || k > n {
		return 0, 0, fmt.Errorf("audit: Clopper–Pearson needs 0 ≤ k ≤ n, have k = %d, n = %d", k, n)
	}
	if !(confidence > 0 && confidence < 1) {
		return 0, 0, fmt.Errorf("audit: confidence must be in (0, 1), have %v", confidence)
	}
	tail := (1 - confidence) / 2
	lo, hi = 0, 1
	if k > 0 {
		lo = distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(tail)
	}
	if k < n {
		hi = distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(1 - tail)
	}
	return lo, hi, nil
}
