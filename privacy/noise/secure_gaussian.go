package noise

import "math/rand/v2"

// SecureNormal returns one standard normal N(0, 1) draw as
// (N₁ + N₂ + N₃ + N₄)/2 with Nᵢ = rng.NormFloat64(): the sum of 2n independent
// Gaussians divided by √(2n), with n = 2 as Opacus's secure_mode uses
// (Holohan & Braghin 2021, "Secure Random Sampling in Differential Privacy",
// ESORICS 2021). A single NormFloat64 lies on one of Go's 128 ziggurat
// lattices (see the package comment); a sum of four rounded draws is no longer
// confined to a set small enough to search, which is Holohan & Braghin's
// defence against the low-bit attack of Mironov (2012). The result has
// variance exactly 1.
//
// The security claim also needs an unpredictable generator: rng must be keyed
// from a cryptographic source, e.g. internal/randsrc.Crypto, whose ChaCha8 is
// documented by Go's math/rand/v2 as a cryptographically strong random
// generator and is keyed from crypto/rand. With a seeded stream the noise is
// as predictable as the seed.
func SecureNormal(rng *rand.Rand) float64 {
	return (rng.NormFloat64() + rng.NormFloat64() + rng.NormFloat64() + rng.NormFloat64()) / 2
}

// AddGaussian adds std·N(0, 1) to every element of dst, independently: the
// noise step of DP-SGD, with std = σ·C in gradient units. Each element is
// summed in float64 and rounded to float32 once. With secure it draws each
// N(0, 1) with SecureNormal (four NormFloat64 draws; see SecureNormal for the
// generator this requires), else with one rng.NormFloat64(). std = 0 leaves
// dst unchanged and consumes no randomness; a negative std gives the same
// distribution as |std|, and a NaN or infinite std makes dst NaN or infinite,
// so callers validate it. AddGaussian does not allocate.
func AddGaussian(dst []float32, std float64, secure bool, rng *rand.Rand) {
	if std == 0 {
		return
	}
	if secure {
		for k, v := range dst {
			dst[k] = float32(float64(v) + std*SecureNormal(rng))
		}
		return
	}
	for k, v := range dst {
		dst[k] = float32(float64(v) + std*rng.NormFloat64())
	}
}
