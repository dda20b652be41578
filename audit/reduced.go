package audit

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
	"gonum.org/v1/gonum/stat/distuv"
)

// maxSampled is the largest number of runs K for which ReducedTuning draws
// the K normals one by one; above it, it draws their maximum directly.
const maxSampled = 64

// ReducedTuning is the reduced distinguishing game of private
// hyperparameter tuning (Xiang et al., Fig. 5 and Section 5.2): one run of
// the base algorithm (DP-SGD) is one draw from P = N(0, 1) on X or from
// P′ = N(Mu, 1) on X′ (their eq. (18); Mu is the base algorithm's μ of
// μ-GDP, eq. (19)); the tuner draws K ∼ Repetitions, makes K independent
// runs and releases the one with the largest score under the worst-case
// score evaluator q(x) = x (their Theorem 3 and Proposition 1), that is, the
// largest draw. The adversary's statistic is the released value itself, or
// −Inf when K = 0 and nothing is released. Xiang et al. audit this game
// with 10⁶ trials (Section 5.4).
type ReducedTuning struct {
	// Mu is the shift μ of P′, in units of the noise's standard deviation.
	Mu float64
	// Repetitions is the distribution of the number of runs K, drawn by
	// tuning.DrawRuns.
	Repetitions accounting.Repetitions
}

// Trial plays ReducedTuning once on X (b = 0) or X′ (b = 1) with rng and
// returns the released value: the maximum of K draws from N(b·Mu, 1), or
// −Inf when K = 0 (Xiang et al., Fig. 5). K comes first from rng
// (tuning.DrawRuns), then the draws. For K ≤ 64 it draws K normals
// (rng.NormFloat64); for K > 64 it draws the maximum directly by inversion:
// the maximum M of K independent N(0, 1) has P[M ≤ x] = Φ(x)^K, so with U
// uniform on (0, 1), Φ⁻¹(U^{1/K}) has exactly M's distribution; it is
// computed as −Φ⁻¹(1 − U^{1/K}) with 1 − U^{1/K} = −expm1(log(U)/K), which
// keeps the upper tail's precision when K is large. A trial takes
// microseconds, so ctx is not consulted. It returns an error when b is not
// 0 or 1, Mu is not finite, or Repetitions is invalid.
func (r ReducedTuning) Trial(ctx context.Context, b int, rng *rand.Rand) (float64, error) {
	if b != 0 && b != 1 {
		return 0, fmt.Errorf("audit: the coin b must be 0 or 1, have %d", b)
	}
	if math.IsNaN(r.Mu) || math.IsInf(r.Mu, 0) {
		return 0, fmt.Errorf("audit: the reduced tuning game needs a finite μ, have %v", r.Mu)
	}
	if rng == nil {
		return 0, fmt.Errorf("audit: the reduced tuning game needs a random source")
	}
	k, err := tuning.DrawRuns(r.Repetitions, rng)
	if err != nil {
		return 0, err
	}
	if k <= 0 {
		return math.Inf(-1), nil
	}
	var m float64
	if k <= maxSampled {
		m = rng.NormFloat64()
		for range k - 1 {
			m = max(m, rng.NormFloat64())
		}
	} else {
		// U uniform on the open interval (0, 1): 53 random bits, centred.
		u := (float64(rng.Uint64()>>11) + 0.5) / (1 << 53)
		m = -distuv.UnitNormal.Quantile(-math.Expm1(math.Log(u) / float64(k)))
	}
	return m + float64(b)*r.Mu, nil
}

// The reduced game, registered as "reduced". Its claims: Papernot–Steinke's
// bound for a Gaussian base of RDP α·μ²/2 ("rdp", for K ~ TNB or Poisson
// only, the proved bound's domain) and Xiang et al.'s Algorithm 3
// ("xiang-o", exact for this game).
func init() {
	Register(Game{Name: "reduced", Rank: 0,
		Help:   "the reduced tuning game (Fig. 5): max of K ~ --repeat draws\nfrom N(0,1) or N(--gdp-mu, 1)",
		Fields: []string{"Mu", "Repetitions"},
		Check: func(s Settings) error {
			if err := s.checkRepetitions(); err != nil {
				return err
			}
			if !(s.Mu > 0 && s.Mu <= accounting.MaxGaussianSelectMu) {
				return invalidf("μ = %v is outside (0, %d]: a larger shift leaves no meaningful privacy to audit (one run alone at μ = %d has ε above 50 nats)", s.Mu, accounting.MaxGaussianSelectMu, accounting.MaxGaussianSelectMu)
			}
			return nil
		},
		New: func(s Settings) (Protocol, Claims, error) {
			claims := Claims{"xiang-o": accounting.GaussianSelect{Mu: s.Mu, Repetitions: s.Repetitions, Reduction: "gdp-mu"}}
			if d := s.Repetitions.Distribution; d == accounting.TNB || d == accounting.Poisson {
				claims["rdp"] = accounting.RepeatAndSelect{Event: accounting.Gaussian{NoiseMultiplier: 1 / s.Mu, Sensitivity: 1}, Repetitions: s.Repetitions}
			}
			return ReducedTuning{Mu: s.Mu, Repetitions: s.Repetitions}, claims, nil
		},
	})
}
