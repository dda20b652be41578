// Package noise holds dptune's noise samplers for releases that must survive
// floating-point attacks.
//
// The rule: never release a float64 computed as value + σ·NormFloat64().
// Go's math/rand/v2 NormFloat64 is a ziggurat (Marsaglia & Tsang 2000): more
// than 99% of its draws are float64(int32(j))·float64(wn[i]) for a 7-bit strip
// index i and a 128-entry float32 table wn, so its outputs lie on a few
// lattices. An attacker who knows σ and the divisor of a released float can
// test, for each candidate true value, whether the release minus that value
// is exactly σ times a lattice point, and usually only the true value passes
// (Mironov 2012, "On significance of the least significant bits for
// differential privacy", CCS; Jin, McMurtry, Rubinstein & Ohrimenko 2022,
// "Are we there yet? Timing and floating-point attacks on differential
// privacy systems", IEEE S&P). attack_test.go runs that attack.
//
// The package has two samplers:
//
//   - DiscreteGaussian, an exact sampler of the discrete Gaussian N_Z(0, σ²)
//     on the integers (Canonne, Kamath & Steinke 2020, "The Discrete Gaussian
//     for Differential Privacy", NeurIPS 2020, Section 5, Algorithms 1–3),
//     with DiscreteLaplace (their Algorithm 2) beneath it. It uses only
//     uniform integers and exact rational arithmetic (math/big): no floating
//     point touches the sampled value. NoisyCount releases an integer count
//     with it; an integer release, or a fixed function of one, carries no
//     low-order bits to attack. Use it for every released score or count.
//   - SecureNormal and AddGaussian, the continuous Gaussian noise of DP-SGD's
//     gradient step, where the noisy values are model parameters rather than
//     releases of a single statistic. In secure mode each N(0,1) draw is the
//     sum of four independent draws divided by two, as Opacus's secure_mode
//     does (Holohan & Braghin 2021, "Secure Random Sampling in Differential
//     Privacy", ESORICS 2021): the sum of several lattice-valued draws no
//     longer lies on a lattice an attacker can enumerate. That defence also
//     assumes the generator is cryptographically secure; see SecureNormal.
//
// Randomness is always passed in explicitly as a *rand.Rand from math/rand/v2
// (internal/randsrc makes them: seeded ChaCha8 streams for reproducible runs,
// ChaCha8 keyed from crypto/rand otherwise).
package noise
