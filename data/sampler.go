package data

import (
	"fmt"
	"math/rand/v2"
)

// PoissonSample appends to dst[:0] the indices in [0, n) of a Poisson sample:
// each index is included independently with probability q, in increasing
// order. This is the sampling the subsampled-Gaussian RDP analysis assumes
// (Mironov, Talwar, Zhang 2019, Definition 2 — "Sampled Gaussian Mechanism");
// the size of the sample is Binomial(n, q) and is itself random.
//
// It panics if q is outside [0, 1]; callers validate q first (see CheckSamplingRate).
func PoissonSample(dst []int, n int, q float64, rng *rand.Rand) []int {
	if !(q >= 0 && q <= 1) {
		panic(fmt.Sprintf("data.PoissonSample: sampling rate %v outside [0, 1]", q))
	}
	dst = dst[:0]
	for i := 0; i < n; i++ {
		if rng.Float64() < q {
			dst = append(dst, i)
		}
	}
	return dst
}

// CheckSamplingRate returns an error unless 0 < q ≤ 1.
func CheckSamplingRate(q float64) error {
	if !(q > 0 && q <= 1) {
		return fmt.Errorf("sampling rate %v is outside (0, 1]", q)
	}
	return nil
}
