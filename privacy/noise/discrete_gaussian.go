package noise

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
)

// MaxDiscreteSigma is the largest σ NewDiscreteGaussian and NoisyCount accept
// (10⁹). The sampler's expected run time does not depend on σ — Algorithm 3 of
// Canonne, Kamath & Steinke (2020) accepts a proposal with probability bounded
// away from zero, and each proposal takes O(1) expected Bernoulli draws — but
// the cap keeps every sample, and a count plus its noise, far inside int64
// (reaching 2⁶³ would need a deviation of over 9·10⁹ σ), and bounds the sizes
// of the big numbers in the acceptance test (σ² has at most 2·53 significant
// bits and t = ⌊σ⌋+1 at most 30).
const MaxDiscreteSigma = 1e9

// ErrOverflow is the error NoisyCount returns when count plus its noise does
// not fit in an int64.
var ErrOverflow = errors.New("noise: noisy count overflows int64")

// MaxDiscreteLaplaceScale is the largest scale NewDiscreteLaplace accepts
// (10⁹), for the same reasons as MaxDiscreteSigma.
const MaxDiscreteLaplaceScale = 1e9

// DiscreteGaussian is the discrete Gaussian distribution N_Z(0, Sigma²) on the
// integers: P[X = x] = exp(−x²/(2σ²)) / Σ_{y∈Z} exp(−y²/(2σ²)). Its variance is
// slightly below σ² and adding it to a sensitivity-Δ integer query satisfies
// ½(Δ/σ)²-concentrated DP, as the continuous Gaussian does (Canonne, Kamath &
// Steinke 2020, "The Discrete Gaussian for Differential Privacy", NeurIPS
// 2020). Sigma is in the units of the integer it perturbs; make values with
// NewDiscreteGaussian.
type DiscreteGaussian struct{ Sigma float64 }

// NewDiscreteGaussian returns N_Z(0, sigma²). It returns an error unless sigma
// is finite and 0 < sigma ≤ MaxDiscreteSigma.
func NewDiscreteGaussian(sigma float64) (DiscreteGaussian, error) {
	if err := checkScale("discrete Gaussian sigma", sigma, MaxDiscreteSigma); err != nil {
		return DiscreteGaussian{}, err
	}
	return DiscreteGaussian{Sigma: sigma}, nil
}

// Sample returns one exact draw of N_Z(0, d.Sigma²), using only rng.Uint64
// words and exact integer arithmetic: Algorithm 3 of Canonne, Kamath & Steinke
// (2020), rejection sampling from the discrete Laplace with scale
// t = ⌊σ⌋+1 (Algorithm 2), accepting a proposal Y with probability
// exp(−(|Y| − σ²/t)²/(2σ²)) (Algorithm 1). σ² is the exact square of the
// rational value of the float64 d.Sigma, so the distribution is exactly the
// discrete Gaussian with that σ. The one departure from exactness is that a
// proposal of magnitude ≥ 2⁶³ is rejected, an event of probability below
// exp(−10⁹).
//
// Sample panics if d.Sigma is not in (0, MaxDiscreteSigma]: a DiscreteGaussian
// that did not come from NewDiscreteGaussian is a programming error, and
// returning an un-noised 0 would silently break privacy. Values from user
// input must go through NewDiscreteGaussian or NoisyCount, which return errors.
func (d DiscreteGaussian) Sample(rng *rand.Rand) int64 {
	if err := checkScale("discrete Gaussian sigma", d.Sigma, MaxDiscreteSigma); err != nil {
		panic("noise: DiscreteGaussian.Sample: " + err.Error())
	}
	// σ = p/q exactly (q a power of two), σ² = p²/q², t = ⌊σ⌋+1.
	r := new(big.Rat).SetFloat64(d.Sigma)
	p, q := r.Num(), r.Denom()
	t := new(big.Int).SetInt64(int64(math.Floor(d.Sigma)) + 1)
	p2 := new(big.Int).Mul(p, p)
	q2 := new(big.Int).Mul(q, q)
	// (|Y| − σ²/t)²/(2σ²) = (|Y|·q²t − p²)² / (2·p²·q²·t²).
	q2t := new(big.Int).Mul(q2, t)
	den := new(big.Int).Mul(p2, q2)
	den.Mul(den, t)
	den.Mul(den, t)
	den.Lsh(den, 1)
	num := new(big.Int)
	one := big.NewInt(1)
	for {
		y, ok := discreteLaplace(rng, t, one)
		if !ok {
			continue
		}
		num.SetInt64(y)
		num.Abs(num)
		num.Mul(num, q2t)
		num.Sub(num, p2)
		num.Mul(num, num)
		if bernoulliExp(rng, num, den) {
			return y
		}
	}
}

// NoisyCount returns count + N_Z(0, sigma²): an integer release of a count
// (sensitivity 1 under add/remove adjacency, so ½(1/sigma)²-concentrated DP)
// that has no low-order bits to attack. sigma is in counts. It returns an
// error if sigma is not finite and in (0, MaxDiscreteSigma], and ErrOverflow
// if the sum overflows int64. The noise is DiscreteGaussian.Sample (Canonne,
// Kamath & Steinke 2020, Algorithm 3).
func NoisyCount(count int64, sigma float64, rng *rand.Rand) (int64, error) {
	g, err := NewDiscreteGaussian(sigma)
	if err != nil {
		return 0, err
	}
	z := g.Sample(rng)
	if (z > 0 && count > math.MaxInt64-z) || (z < 0 && count < math.MinInt64-z) {
		// The message names neither the count nor the noise: either would
		// leak the other.
		return 0, ErrOverflow
	}
	return count + z, nil
}

// DiscreteLaplace is the discrete Laplace distribution on the integers with
// scale Scale: P[X = x] = (e^{1/Scale} − 1)/(e^{1/Scale} + 1) · e^{−|x|/Scale}
// (Canonne, Kamath & Steinke 2020, Section 5). Adding it to a sensitivity-Δ
// integer query satisfies (Δ/Scale)-DP. Scale is in the units of the integer
// it perturbs; make values with NewDiscreteLaplace.
type DiscreteLaplace struct{ Scale float64 }

// NewDiscreteLaplace returns the discrete Laplace with the given scale. It
// returns an error unless scale is finite and 0 < scale ≤
// MaxDiscreteLaplaceScale.
func NewDiscreteLaplace(scale float64) (DiscreteLaplace, error) {
	if err := checkScale("discrete Laplace scale", scale, MaxDiscreteLaplaceScale); err != nil {
		return DiscreteLaplace{}, err
	}
	return DiscreteLaplace{Scale: scale}, nil
}

// Sample returns one exact draw of the discrete Laplace with scale l.Scale by
// Algorithm 2 of Canonne, Kamath & Steinke (2020), with the scale written
// exactly as the rational t/s of the float64 l.Scale. As in
// DiscreteGaussian.Sample, draws of magnitude ≥ 2⁶³ are rejected (probability
// below exp(−10⁹)), and Sample panics if l did not come from
// NewDiscreteLaplace (l.Scale not in (0, MaxDiscreteLaplaceScale]).
func (l DiscreteLaplace) Sample(rng *rand.Rand) int64 {
	if err := checkScale("discrete Laplace scale", l.Scale, MaxDiscreteLaplaceScale); err != nil {
		panic("noise: DiscreteLaplace.Sample: " + err.Error())
	}
	r := new(big.Rat).SetFloat64(l.Scale)
	t, s := r.Num(), r.Denom()
	for {
		if y, ok := discreteLaplace(rng, t, s); ok {
			return y
		}
	}
}

// checkScale returns an error unless v is finite and 0 < v ≤ max.
func checkScale(what string, v, max float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%s %v is not finite", what, v)
	}
	if !(v > 0) {
		return fmt.Errorf("%s %v must be positive", what, v)
	}
	if v > max {
		return fmt.Errorf("%s %v exceeds the maximum %v", what, v, max)
	}
	return nil
}

// discreteLaplace runs one pass of Algorithm 2 of Canonne, Kamath & Steinke
// (2020), the discrete Laplace with scale t/s (t, s ≥ 1): it returns
// (Z, true) on acceptance and (0, false) when the pass rejects — the
// algorithm's own rejections (D = 0, or B = 1 with Y = 0) and Y ≥ 2⁶³, which
// does not fit an int64. The caller loops.
func discreteLaplace(rng *rand.Rand, t, s *big.Int) (int64, bool) {
	one := big.NewInt(1)
	// U uniform in {0, …, t−1}; D ~ Bernoulli(exp(−U/t)).
	u := uniformBelow(rng, t)
	if !bernoulliExp(rng, u, t) {
		return 0, false
	}
	// V ~ Geometric(1 − e⁻¹): the number of Bernoulli(exp(−1)) successes
	// before the first failure.
	var v uint64
	for bernoulliExp(rng, one, one) {
		v++
	}
	// X = U + t·V; Y = ⌊X/s⌋.
	x := new(big.Int).SetUint64(v)
	x.Mul(x, t)
	x.Add(x, u)
	y := x.Quo(x, s) // x, s ≥ 0, so truncation is floor
	// B ~ Bernoulli(1/2): the sign; reject −0 so 0 is not counted twice.
	neg := rng.Uint64()>>63 == 1
	if neg && y.Sign() == 0 {
		return 0, false
	}
	if !y.IsInt64() {
		return 0, false
	}
	z := y.Int64()
	if neg {
		z = -z
	}
	return z, true
}

// bernoulliExp returns true with probability exp(−γ) for the rational
// γ = num/den ≥ 0 (den > 0): Algorithm 1 of Canonne, Kamath & Steinke (2020).
// For γ ≤ 1 it draws A_k ~ Bernoulli(γ/k) for k = 1, 2, … until the first
// A_k = 0 and returns whether that k is odd; for γ > 1 it returns true only if
// ⌊γ⌋ draws of Bernoulli(exp(−1)) and one of Bernoulli(exp(−(γ − ⌊γ⌋))) all
// do. A negative γ, which callers never pass, is treated as 0.
func bernoulliExp(rng *rand.Rand, num, den *big.Int) bool {
	if num.Sign() <= 0 {
		return bernoulliExpUnit(rng, new(big.Int), den)
	}
	if num.Cmp(den) <= 0 {
		return bernoulliExpUnit(rng, num, den)
	}
	one := big.NewInt(1)
	whole, frac := new(big.Int).QuoRem(num, den, new(big.Int))
	if whole.IsUint64() {
		for k := whole.Uint64(); k > 0; k-- {
			if !bernoulliExpUnit(rng, one, one) {
				return false
			}
		}
	} else {
		for k := whole; k.Sign() > 0; k.Sub(k, one) {
			if !bernoulliExpUnit(rng, one, one) {
				return false
			}
		}
	}
	return bernoulliExpUnit(rng, frac, den)
}

// bernoulliExpUnit is the γ = num/den ∈ [0, 1] case of Algorithm 1: the
// alternating series exp(−γ) = Σ_k (−γ)^k/k! realised by the Bernoulli(γ/k)
// chain.
func bernoulliExpUnit(rng *rand.Rand, num, den *big.Int) bool {
	// Fast path: every γ/k = num/(den·k) with den·k in a uint64.
	if num.IsUint64() && den.IsUint64() {
		n, d := num.Uint64(), den.Uint64()
		k := uint64(1)
		for {
			hi, dk := bits.Mul64(d, k)
			if hi != 0 {
				break // den·k needs more than 64 bits; continue exactly below
			}
			if uniformBelowUint64(rng, dk) >= n { // A_k = 0
				return k%2 == 1
			}
			k++
		}
		return bernoulliExpUnitFrom(rng, num, den, k)
	}
	return bernoulliExpUnitFrom(rng, num, den, 1)
}

// bernoulliExpUnitFrom continues the Bernoulli(γ/k) chain of bernoulliExpUnit
// from k = k0 in big-integer arithmetic.
func bernoulliExpUnitFrom(rng *rand.Rand, num, den *big.Int, k0 uint64) bool {
	k := new(big.Int).SetUint64(k0)
	one := big.NewInt(1)
	dk := new(big.Int)
	for {
		dk.Mul(den, k)
		if uniformBelow(rng, dk).Cmp(num) >= 0 { // A_k = 0
			return k.Bit(0) == 1
		}
		k.Add(k, one)
	}
}

// uniformBelow returns an integer drawn uniformly from [0, d) for d > 0, by
// rejection sampling: it fills the bit length of d−1 with rng.Uint64 words
// (the leading word masked) and retries while the result is ≥ d, so fewer
// than two tries are expected. It returns 0 for d ≤ 1 without consuming
// randomness.
func uniformBelow(rng *rand.Rand, d *big.Int) *big.Int {
	if d.Cmp(big.NewInt(1)) <= 0 {
		return new(big.Int)
	}
	if d.IsUint64() {
		return new(big.Int).SetUint64(uniformBelowUint64(rng, d.Uint64()))
	}
	n := new(big.Int).Sub(d, big.NewInt(1)).BitLen() // > 64 here
	words := (n + 63) / 64
	buf := make([]byte, 8*words)
	topMask := ^uint64(0) >> (64*words - n) // keeps the leading word's n−64(words−1) bits
	x := new(big.Int)
	for {
		for w := range words {
			v := rng.Uint64()
			if w == 0 {
				v &= topMask
			}
			binary.BigEndian.PutUint64(buf[8*w:], v)
		}
		x.SetBytes(buf)
		if x.Cmp(d) < 0 {
			return x
		}
	}
}

// uniformBelowUint64 returns an integer drawn uniformly from [0, d) for
// d ≥ 1 by masking rng.Uint64 words to d−1's bit length and rejecting values
// ≥ d. It returns 0 for d = 1 without consuming randomness.
func uniformBelowUint64(rng *rand.Rand, d uint64) uint64 {
	if d <= 1 {
		return 0
	}
	mask := ^uint64(0) >> bits.LeadingZeros64(d-1)
	for {
		if x := rng.Uint64() & mask; x < d {
			return x
		}
	}
}
