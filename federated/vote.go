package federated

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dptune/dptune/federated/secagg"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/noise"
)

// Mechanism is the public description of one DP-Hype vote: n clients each
// vote for ℓ of d candidates, scale their 0/1 vote vectors by S and add
// discrete Gaussian noise shares; the secure sum of at least ⌈(1−f)n⌉ of
// them is released.
type Mechanism struct {
	Clients        int     // n, 2 … secagg.MaxClients
	Candidates     int     // d
	VotesPerClient int     // ℓ, 1 … d
	NoiseStddev    float64 // σ: the released sum's noise standard deviation per candidate, in votes
	Scale          int64   // S: votes are scaled to S·v so the integer noise can be fine-grained
	Dropout        float64 // f ∈ [0, 1): the fraction of clients that may drop with the guarantee intact
	// Colluding is c, the clients that may collude with the server. They
	// know their own noise shares, so only the others' count as noise: the
	// shares are sized for ⌈(1−f)n⌉ − c honest survivors.
	Colluding int
}

// DefaultScale is the default S. With it every client's noise share has a
// standard deviation of hundreds of units or more, which makes Theorem 1's τ
// of Kairouz, Liu & Steinke underflow to 0: the sum is as private as one
// discrete Gaussian of the total variance.
const DefaultScale = 1 << 10

// MinSurvivors is ⌈(1−f)n⌉, the fewest clients whose noisy vectors make up
// a sum with the full noise; fewer and the round aborts.
func (m Mechanism) MinSurvivors() int {
	return int(math.Ceil((1 - m.Dropout) * float64(m.Clients) * (1 - 1e-12)))
}

// LocalStddev is the standard deviation of each client's discrete Gaussian
// share, in scaled units: S·σ/√((1−f)n − c), so that the honest shares
// among ⌈(1−f)n⌉ or more survivors, at least ⌈(1−f)n⌉ − c of them, have
// variance at least (Sσ)² together (DP-Hype's dropout appendix, with the
// colluders' shares left out).
func (m Mechanism) LocalStddev() float64 {
	return float64(m.Scale) * m.NoiseStddev / math.Sqrt(honestShares(m.Dropout, m.Clients, m.Colluding))
}

// honestShares is (1−f)n − c: the least number, before rounding up, of
// survivors' noise shares that the server and its c colluders do not know.
func honestShares(f float64, n, c int) float64 { return (1-f)*float64(n) - float64(c) }

// Check returns an error if m cannot run: bad sizes, σ not positive, a
// share whose σ is below ½ (Theorem 1's condition) or above the sampler's
// range, or a sum that could wrap modulo 2^64 (see MaxWrapProbability).
func (m Mechanism) Check() error {
	switch {
	case m.Clients < 2 || m.Clients > secagg.MaxClients:
		return fmt.Errorf("vote: %d clients: need 2 … %d", m.Clients, secagg.MaxClients)
	case m.Candidates < 1:
		return fmt.Errorf("vote: no candidates")
	case m.VotesPerClient < 1 || m.VotesPerClient > m.Candidates:
		return fmt.Errorf("vote: %d votes per client with %d candidates: need 1 … d", m.VotesPerClient, m.Candidates)
	case !(m.NoiseStddev > 0) || math.IsInf(m.NoiseStddev, 1):
		return fmt.Errorf("vote: noise standard deviation %v must be positive and finite", m.NoiseStddev)
	case m.Scale < 1 || m.Scale > 1<<30:
		return fmt.Errorf("vote: scale %d: need 1 … 2^30", m.Scale)
	case !(m.Dropout >= 0 && m.Dropout < 1):
		return fmt.Errorf("vote: dropout fraction %v: need 0 ≤ f < 1", m.Dropout)
	case m.MinSurvivors() < 2:
		return fmt.Errorf("vote: with f = %v only %d of %d clients need survive: a sum needs two", m.Dropout, m.MinSurvivors(), m.Clients)
	case m.Colluding < 0 || !(honestShares(m.Dropout, m.Clients, m.Colluding) > 0):
		return fmt.Errorf("vote: %d colluding clients with %d of %d surviving: need 0 ≤ c < (1−f)n", m.Colluding, m.MinSurvivors(), m.Clients)
	}
	if s := m.LocalStddev(); s < 0.5 || s > noise.MaxDiscreteSigma {
		return fmt.Errorf("vote: each client's noise σ = %v (S·σ/√((1−f)n − c)) is outside [0.5, %g]; change the scale", s, noise.MaxDiscreteSigma)
	}
	// No wrap: |S·Σv| ≤ S·n and the noise of n shares exceeds k·s·√n with
	// probability at most 2·exp(−k²/2) per coordinate (the discrete
	// Gaussian of parameter s is s²-sub-Gaussian: Canonne, Kamath & Steinke
	// 2020), a union bound over the candidates gives MaxWrapProbability.
	if bound := m.SumBound(); bound >= math.MaxInt64/2 {
		return fmt.Errorf("vote: a sum could wrap modulo 2^64 (bound %.3g); lower the scale or the noise", bound)
	}
	return nil
}

// MaxWrapProbability bounds the probability that some coordinate of the sum
// leaves the int64 range, where Check's bound applies.
const MaxWrapProbability = 0x1p-40

// Event is the privacy event of a sum of the given number of noisy vote
// vectors (survivors ≥ MinSurvivors): the distributed discrete Gaussian
// with, under replace-one-client adjacency, L2 sensitivity S·√(2ℓ) and L1
// sensitivity 2ℓ·S (a client's vote moves from ℓ candidates to ℓ others),
// whose noise is the survivors' shares less the c colluders'.
func (m Mechanism) Event(survivors int) accounting.DistributedDiscreteGaussian {
	l := float64(m.VotesPerClient)
	s := float64(m.Scale)
	return accounting.DistributedDiscreteGaussian{
		LocalStddev: m.LocalStddev(), Summands: survivors - m.Colluding, Dimension: m.Candidates,
		L2Sensitivity: s * math.Sqrt(2*l), L1Sensitivity: 2 * l * s, Adjacency: "replace-one-client",
	}
}

// Calibrate returns m with NoiseStddev set to the least σ (to 1e-6
// relative) whose vote, with the fewest survivors allowed, is
// (eps, delta)-DP at client level under the RDP accountant.
func Calibrate(ctx context.Context, m Mechanism, eps, delta float64) (Mechanism, error) {
	m.NoiseStddev = 1
	if err := m.Check(); err != nil {
		return m, err
	}
	sigma, err := accounting.CalibrateNoise(ctx, accounting.RDP{}, func(s float64) accounting.Event {
		c := m
		c.NoiseStddev = s
		if c.LocalStddev() < 0.5 {
			return accounting.NonPrivate{Reason: "share below Theorem 1's σ ≥ 1/2"}
		}
		return c.Event(c.MinSurvivors())
	}, eps, delta)
	if err != nil {
		return m, fmt.Errorf("vote: calibrating the noise: %w", err)
	}
	m.NoiseStddev = sigma
	return m, m.Check()
}

// TopVotes returns the vote vector of scores: 1 at the ℓ best candidates
// and 0 elsewhere. Ties are broken by the public rule "lower index first";
// a NaN score ranks below every number.
func TopVotes(scores []float64, l int) []int64 {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	key := func(i int) float64 {
		if math.IsNaN(scores[i]) {
			return math.Inf(-1)
		}
		return scores[i]
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(key(b), key(a)) })
	v := make([]int64, len(scores))
	for _, i := range idx[:min(l, len(idx))] {
		v[i] = 1
	}
	return v
}

// NoisyShare is a client's input to the secure sum: S·votes plus its noise
// share N_ℤ(0, LocalStddev²) per candidate (the exact sampler of
// noise.DiscreteGaussian), as words modulo 2^64.
func (m Mechanism) NoisyShare(votes []int64, rng *rand.Rand) ([]uint64, error) {
	if len(votes) != m.Candidates {
		return nil, fmt.Errorf("vote: %d votes for %d candidates", len(votes), m.Candidates)
	}
	dg, err := noise.NewDiscreteGaussian(m.LocalStddev())
	if err != nil {
		return nil, err
	}
	out := make([]uint64, len(votes))
	for i, v := range votes {
		out[i] = uint64(m.Scale*v + dg.Sample(rng))
	}
	return out, nil
}

// Winner reads the secure sum as signed integers and returns the argmax
// (lowest index on ties) — the only thing the vote releases.
func Winner(sum []uint64) int {
	best := 0
	for i, w := range sum {
		if int64(w) > int64(sum[best]) {
			best = i
		}
	}
	return best
}
