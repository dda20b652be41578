package tuning

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// GridLaplace adds Laplace noise safely for floating point: the value is
// snapped to a grid of spacing Granularity (a power of two) and noise is a
// two-sided geometric multiple of the spacing, i.e. discrete Laplace with
// P(Z = z·g) ∝ exp(−|z|·g/b). Outputs then lie on a regular grid, which
// defeats the attack of Mironov 2012 ("On significance of the least
// significant bits for differential privacy") on textbook floating-point
// Laplace samples, whose set of reachable outputs depends on the input. It
// is the approach of google/differential-privacy's secure noise generation,
// here with an injectable random source so that seeded runs reproduce.
//
// Why this covers the floating-point rule ("never release a float
// with float noise added"; Mironov 2012): every output is k·g for an integer k, g a
// power of two and |k| < 2⁵³, so it is exactly representable and carries no
// bits beyond the integer k — it is a discrete Laplace count in units of g,
// as DP-Hype's and the score's integer releases are. In the doubling tuner
// the noisy values are not even released: only the outcomes of comparing
// them (which candidate passed), from which the selection follows.
//
// Privacy: snapping can move a value by g/2, so a query of sensitivity Δ
// becomes one of sensitivity Δ + g, and discrete Laplace with scale b is
// ((Δ+g)/b)-DP. Granularity is chosen as the largest power of two at most
// b·2⁻⁴⁰, so the factor (1 + g/Δ) is far below float64 resolution of ε for
// the doubling tuner's Δ = 1/k; EpsilonFactor reports it for the ledger.
type GridLaplace struct {
	Scale       float64 // b
	Granularity float64 // g
}

// NewGridLaplace returns the sampler for scale b > 0.
func NewGridLaplace(scale float64) (GridLaplace, error) {
	if !(scale > 0) || math.IsInf(scale, 1) {
		return GridLaplace{}, fmt.Errorf("tuning: Laplace scale %v must be positive and finite", scale)
	}
	_, e := math.Frexp(scale * 0x1p-40)
	return GridLaplace{Scale: scale, Granularity: math.Ldexp(1, e-1)}, nil
}

// EpsilonFactor is (Δ + g)/Δ: by how much snapping multiplies ε for a query
// of sensitivity Δ.
func (l GridLaplace) EpsilonFactor(sensitivity float64) float64 {
	return (sensitivity + l.Granularity) / sensitivity
}

// Add returns x snapped to the grid plus discrete Laplace noise.
func (l GridLaplace) Add(x float64, rng *rand.Rand) float64 {
	g := l.Granularity
	return (math.Round(x/g) + float64(l.geometric(rng)-l.geometric(rng))) * g
}

// geometric draws G ≥ 0 with P(G = j) = (1 − p)·p^j, p = exp(−g/b), by
// inversion: G = ⌊log U / log p⌋ for U uniform on (0, 1] with 53 random bits.
func (l GridLaplace) geometric(rng *rand.Rand) int64 {
	u := 1 - rng.Float64() // (0, 1]
	return int64(math.Floor(math.Log(u) * l.Scale / -l.Granularity))
}
