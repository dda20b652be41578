package federated

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dptune/dptune/federated/secagg"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/noise"
)

// UpdateSum is the public description of one round of client-level
// DP-FedAvg (McMahan, Ramage, Talwar & Zhang 2018, "Learning Differentially
// Private Recurrent Language Models", Algorithm 1 with every client in every
// round and the flat clipping of its update) whose noisy sum goes through
// the secure summation, as in the distributed discrete Gaussian of Kairouz,
// Liu & Steinke 2021 (Algorithm 1, without its random rotation):
//
//  1. the client clips its model update Δ (parameter units) to L2 norm C;
//  2. scales it by S (integer units per parameter unit) and rounds every
//     coordinate to one of its two neighbouring integers at random, without
//     bias; each coordinate moves by less than 1, so the rounded vector x
//     has ‖x‖₂ < S·C + √d = B, whatever the randomness;
//  3. adds N_ℤ(0, LocalStddev²) per coordinate and sends the words modulo
//     2^64 to the secure sum.
//
// Under replace-one-client adjacency the sum moves by at most Δ₂ = 2B in L2
// and Δ₁ = 2√d·B in L1 (‖x‖₁ ≤ √d·‖x‖₂). LocalStddev is z·Δ₂/√((1−f)n − c),
// so the honest shares of a sum of ⌈(1−f)n⌉ or more have noise of standard
// deviation at least z·Δ₂ per coordinate, c colluders' shares aside: z is the noise multiplier in McMahan et al.'s sense,
// relative to the sensitivity. The server divides the sum by S times the
// number of updates in it (public: it is the survivors' count) and adds the
// mean to the global model.
type UpdateSum struct {
	Clients         int     // n
	Dimension       int     // d: the model's parameters
	ClipNorm        float64 // C, parameter units
	NoiseMultiplier float64 // z
	Scale           float64 // S, a power of two (DefaultUpdateScale)
	Dropout         float64 // f, as the vote's
	Colluding       int     // c, as the vote's: the shares are sized for ⌈(1−f)n⌉ − c honest survivors
}

// DefaultUpdateScale is the S that makes rounding cost at most 1% of the
// clipping norm in sensitivity: the least power of two with √d ≤ S·C/100.
func DefaultUpdateScale(d int, clip float64) float64 {
	return math.Exp2(math.Ceil(math.Log2(100 * math.Sqrt(float64(d)) / clip)))
}

// Bound is B = S·C + √d, the integer-unit L2 bound of a rounded update.
func (u UpdateSum) Bound() float64 { return u.Scale*u.ClipNorm + math.Sqrt(float64(u.Dimension)) }

// MinSurvivors is ⌈(1−f)n⌉, as Mechanism.MinSurvivors.
func (u UpdateSum) MinSurvivors() int {
	return int(math.Ceil((1 - u.Dropout) * float64(u.Clients) * (1 - 1e-12)))
}

// LocalStddev is each client's noise share, integer units:
// z·2B/√((1−f)n − c).
func (u UpdateSum) LocalStddev() float64 {
	return u.NoiseMultiplier * 2 * u.Bound() / math.Sqrt(honestShares(u.Dropout, u.Clients, u.Colluding))
}

// Check returns an error if u cannot run: bad sizes, a share's σ outside
// the sampler's range or below Theorem 1's ½, or a sum that could wrap
// modulo 2^64 (with probability above MaxWrapProbability).
func (u UpdateSum) Check() error {
	switch {
	case u.Clients < 2 || u.Clients > secagg.MaxClients:
		return fmt.Errorf("dp-fedavg: %d clients: need 2 … %d", u.Clients, secagg.MaxClients)
	case u.Dimension < 1 || u.Dimension > secagg.MaxLength:
		return fmt.Errorf("dp-fedavg: a model of %d parameters: need 1 … %d", u.Dimension, secagg.MaxLength)
	case !(u.ClipNorm > 0) || math.IsInf(u.ClipNorm, 1):
		return fmt.Errorf("dp-fedavg: update clipping norm %v must be positive and finite", u.ClipNorm)
	case !(u.NoiseMultiplier > 0) || math.IsInf(u.NoiseMultiplier, 1):
		return fmt.Errorf("dp-fedavg: noise multiplier %v must be positive and finite", u.NoiseMultiplier)
	case !(u.Scale >= 1) || math.IsInf(u.Scale, 1) || math.Exp2(math.Round(math.Log2(u.Scale))) != u.Scale:
		return fmt.Errorf("dp-fedavg: scale %v: need a power of two ≥ 1", u.Scale)
	case !(u.Dropout >= 0 && u.Dropout < 1) || u.MinSurvivors() < 2:
		return fmt.Errorf("dp-fedavg: dropout fraction %v with %d clients: need 0 ≤ f < 1 and two survivors", u.Dropout, u.Clients)
	case u.Colluding < 0 || !(honestShares(u.Dropout, u.Clients, u.Colluding) > 0):
		return fmt.Errorf("dp-fedavg: %d colluding clients with %d of %d surviving: need 0 ≤ c < (1−f)n", u.Colluding, u.MinSurvivors(), u.Clients)
	}
	if s := u.LocalStddev(); s < 0.5 || s > noise.MaxDiscreteSigma {
		return fmt.Errorf("dp-fedavg: each client's noise σ = %v (z·2B/√((1−f)n)) is outside [0.5, %g]; change the clipping norm or the noise", s, noise.MaxDiscreteSigma)
	}
	k := math.Sqrt(2 * math.Log(2*float64(u.Dimension)/MaxWrapProbability))
	if bound := float64(u.Clients)*u.Bound() + k*u.LocalStddev()*math.Sqrt(float64(u.Clients)); bound >= math.MaxInt64/2 {
		return fmt.Errorf("dp-fedavg: a sum could wrap modulo 2^64 (bound %.3g); lower the noise", bound)
	}
	return nil
}

// Event is the privacy event of one round's sum of the given number of
// noisy updates (survivors ≥ MinSurvivors): client-level, replace-one-client,
// with the noise of the survivors' shares less the c colluders'.
func (u UpdateSum) Event(survivors int) accounting.DistributedDiscreteGaussian {
	b := u.Bound()
	return accounting.DistributedDiscreteGaussian{
		LocalStddev: u.LocalStddev(), Summands: survivors - u.Colluding, Dimension: u.Dimension,
		L2Sensitivity: 2 * b, L1Sensitivity: 2 * math.Sqrt(float64(u.Dimension)) * b, Adjacency: "replace-one-client",
	}
}

// Encode is a client's input to one round's secure sum: its update
// (Dimension float32s, parameter units) clipped to ClipNorm, scaled, rounded
// without bias, plus its discrete Gaussian share, as words modulo 2^64.
// rng draws both the rounding and the noise. Errors: a wrong length or a
// non-finite update.
func (u UpdateSum) Encode(update []float32, rng *rand.Rand) ([]uint64, error) {
	x, err := u.rounded(update, rng)
	if err != nil {
		return nil, err
	}
	dg, err := noise.NewDiscreteGaussian(u.LocalStddev())
	if err != nil {
		return nil, err
	}
	out := make([]uint64, len(x))
	for i, v := range x {
		out[i] = uint64(v + dg.Sample(rng))
	}
	return out, nil
}

// rounded is steps 1 and 2: the update clipped to ClipNorm, scaled by S,
// each coordinate rounded up with probability its fractional part.
func (u UpdateSum) rounded(update []float32, rng *rand.Rand) ([]int64, error) {
	if len(update) != u.Dimension {
		return nil, fmt.Errorf("dp-fedavg: an update of %d parameters, want %d", len(update), u.Dimension)
	}
	norm := 0.0
	for _, v := range update {
		norm += float64(v) * float64(v)
	}
	norm = math.Sqrt(norm)
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return nil, fmt.Errorf("dp-fedavg: the local update is not finite")
	}
	f := u.Scale
	if norm > u.ClipNorm {
		f *= u.ClipNorm / norm
	}
	x := make([]int64, len(update))
	for i, v := range update {
		y := f * float64(v)
		fl := math.Floor(y)
		x[i] = int64(fl)
		if rng.Float64() < y-fl {
			x[i]++
		}
	}
	return x, nil
}

// Decode turns the secure sum of survivors' encoded updates into their mean
// update in parameter units: the words read as signed integers, divided by
// S·survivors.
func (u UpdateSum) Decode(sum []uint64, survivors int) []float64 {
	out := make([]float64, len(sum))
	d := u.Scale * float64(survivors)
	for i, w := range sum {
		out[i] = float64(int64(w)) / d
	}
	return out
}

// CalibrateUpdates returns the least noise multiplier z (to 1e-6 relative)
// with which before (the vote's event), composed with rounds sums of u at
// its fewest survivors, is (eps, delta)-DP under the RDP accountant.
func CalibrateUpdates(ctx context.Context, u UpdateSum, before accounting.Event, rounds int, eps, delta float64) (float64, error) {
	u.NoiseMultiplier = 1
	if err := u.Check(); err != nil {
		return 0, err
	}
	z, err := accounting.CalibrateNoise(ctx, accounting.RDP{}, func(z float64) accounting.Event {
		c := u
		c.NoiseMultiplier = z
		if c.LocalStddev() < 0.5 {
			return accounting.NonPrivate{Reason: "share below Theorem 1's σ ≥ 1/2"}
		}
		return accounting.Composed{Events: []accounting.Event{before,
			accounting.SelfComposed{Event: c.Event(c.MinSurvivors()), Count: rounds}}}
	}, eps, delta)
	if err != nil {
		return 0, fmt.Errorf("dp-fedavg: calibrating the noise: %w", err)
	}
	u.NoiseMultiplier = z
	return z, u.Check()
}
