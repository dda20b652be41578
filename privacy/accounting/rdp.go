package accounting

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// DefaultOrders are the RDP orders the RDP accountant optimises over: Opacus's
// default set (1.1, 1.2, …, 10.9 and 12, 13, …, 63) plus 128, 256 and 512,
// which tighten the bound for small ε (large noise).
var DefaultOrders = func() []float64 {
	var o []float64
	for x := 1; x < 100; x++ {
		o = append(o, 1+float64(x)/10)
	}
	for a := 12; a < 64; a++ {
		o = append(o, float64(a))
	}
	return append(o, 128, 256, 512)
}()

// RDP is the Rényi-DP accountant (Mironov 2017, "Rényi Differential Privacy").
// The zero value uses DefaultOrders.
type RDP struct {
	// Orders are the RDP orders α > 1 to optimise over.
	Orders []float64
}

// Name returns "rdp".
func (RDP) Name() string { return "rdp" }

func init() {
	Register(Named{Name: "rdp", New: func() Accountant { return RDP{} }, Rank: 0,
		Describe: func(order float64) string {
			if order > 0 {
				return fmt.Sprintf("rdp accountant, order %g", order)
			}
			return "rdp accountant"
		}})
}

func (a RDP) orders() []float64 {
	if len(a.Orders) == 0 {
		return DefaultOrders
	}
	return a.Orders
}

// RDP returns the RDP ε(α) of e at each order, in the order of Orders:
//
//   - Gaussian: α/(2z²) for noise multiplier z = σ/Δ (Mironov 2017,
//     Proposition 7); Vote as the Gaussian with sensitivity √(2ℓ);
//     DiscreteGaussian as the Gaussian of the same z (Canonne, Kamath,
//     Steinke 2020, Theorem 4); DistributedDiscreteGaussian:
//     DistributedDiscreteGaussianRDP (Kairouz, Liu, Steinke 2021);
//   - Poisson-subsampled Gaussian: SubsampledGaussianRDP; Poisson
//     subsampling of any other event: Zhu & Wang 2019's general upper bound
//     (Theorem 6; see poissonSubsampledRDP), used for tuning on a subsample
//     (Koskela & Kulkarni 2023);
//   - Laplace: LaplaceRDP (Mironov 2017, Proposition 6);
//   - pure ε-DP (EpsilonDelta with δ = 0, AboveThreshold per iteration):
//     PureDPRDP;
//   - RepeatAndSelect and AdaptiveRepeatAndSelect: repeatAndSelectRDP
//     (Papernot & Steinke 2022, Theorems 2 and 6; DP-HyPO Theorem 1);
//   - NonPrivate: +∞;
//   - SelfComposed and Composed: the sum per order (Mironov 2017,
//     Proposition 1);
//   - WorstCase: the maximum per order.
//
// EpsilonDelta with δ > 0 (no RDP guarantee follows from it), alone or
// inside another event, gives an error wrapping ErrUnsupported.
func (a RDP) RDP(e Event) ([]float64, error) {
	return a.RDPContext(context.Background(), e)
}

// RDPContext is RDP that returns ctx's error soon after ctx is cancelled
// (GaussianSelect's integrals can take seconds).
func (a RDP) RDPContext(ctx context.Context, e Event) ([]float64, error) {
	orders := a.orders()
	for _, o := range orders {
		if !(o > 1) {
			return nil, fmt.Errorf("accounting: RDP order %v is not above 1", o)
		}
	}
	out := make([]float64, len(orders))
	if err := a.add(ctx, out, orders, e, 1); err != nil {
		return nil, err
	}
	return out, nil
}

// add adds times × the RDP of e to acc.
func (a RDP) add(ctx context.Context, acc, orders []float64, e Event, times float64) error {
	each := func(f func(alpha float64) float64) {
		for i, o := range orders {
			acc[i] += times * f(o)
		}
	}
	switch v := e.(type) {
	case Gaussian:
		r, err := v.ratio()
		if err != nil {
			return err
		}
		each(func(o float64) float64 { return SubsampledGaussianRDP(1, r, o) })
	case Vote:
		g, err := v.gaussian()
		if err != nil {
			return err
		}
		return a.add(ctx, acc, orders, g, times)
	case DiscreteGaussian:
		g, err := v.gaussian()
		if err != nil {
			return err
		}
		return a.add(ctx, acc, orders, g, times)
	case DistributedDiscreteGaussian:
		for i, o := range orders {
			r, err := DistributedDiscreteGaussianRDP(v, o)
			if err != nil {
				return err
			}
			acc[i] += times * r
		}
	case Laplace:
		eps, err := v.epsilon()
		if err != nil {
			return err
		}
		each(func(o float64) float64 { return LaplaceRDP(eps, o) })
	case EpsilonDelta:
		if err := v.check(); err != nil {
			return err
		}
		if v.Delta > 0 {
			return fmt.Errorf("accounting: the rdp accountant cannot count an (ε, δ) guarantee with δ = %v > 0: %w", v.Delta, ErrUnsupported)
		}
		each(func(o float64) float64 { return PureDPRDP(v.Epsilon, o) })
	case AboveThreshold:
		if err := v.check(); err != nil {
			return err
		}
		each(func(o float64) float64 { return float64(v.MaxIterations) * PureDPRDP(v.Epsilon, o) })
	case PoissonSampled:
		g, ok := v.Event.(Gaussian)
		if ok {
			r, err := g.ratio()
			if err != nil {
				return err
			}
			if !(v.SamplingRate >= 0 && v.SamplingRate <= 1) {
				return fmt.Errorf("accounting: sampling rate %v is outside [0, 1]", v.SamplingRate)
			}
			each(func(o float64) float64 { return SubsampledGaussianRDP(v.SamplingRate, r, o) })
			break
		}
		if !(v.SamplingRate >= 0 && v.SamplingRate <= 1) {
			return fmt.Errorf("accounting: sampling rate %v is outside [0, 1]", v.SamplingRate)
		}
		sub, err := a.poissonSubsampledRDP(ctx, orders, v.SamplingRate, v.Event)
		if err != nil {
			return err
		}
		for i := range acc {
			acc[i] += times * sub[i]
		}
	case GaussianSelect:
		for i, o := range orders {
			r, err := GaussianSelectRDP(ctx, v.Mu, v.Repetitions, o)
			if err != nil {
				return err
			}
			acc[i] += times * r
		}
	case RepeatAndSelect:
		sel, err := a.repeatAndSelectRDP(v.Event, v.Repetitions, 1, 1)
		if err != nil {
			return err
		}
		for i := range acc {
			acc[i] += times * sel[i]
		}
	case AdaptiveRepeatAndSelect:
		if err := v.check(); err != nil {
			return err
		}
		sel, err := a.repeatAndSelectRDP(v.Event, v.Repetitions, v.MaxRatio, v.MinRatio)
		if err != nil {
			return err
		}
		for i := range acc {
			acc[i] += times * sel[i]
		}
	case SelfComposed:
		if v.Count < 0 {
			return fmt.Errorf("accounting: composition count %d < 0", v.Count)
		}
		if v.Count == 0 {
			return nil
		}
		return a.add(ctx, acc, orders, v.Event, times*float64(v.Count))
	case Composed:
		for _, ev := range v.Events {
			if err := a.add(ctx, acc, orders, ev, times); err != nil {
				return err
			}
		}
	case WorstCase:
		if len(v.Events) == 0 {
			return errors.New("accounting: a worst case of no events")
		}
		worst := make([]float64, len(orders))
		for k, ev := range v.Events {
			one := make([]float64, len(orders))
			if err := a.add(ctx, one, orders, ev, 1); err != nil {
				return err
			}
			for i := range worst {
				if k == 0 || one[i] > worst[i] || math.IsNaN(one[i]) {
					worst[i] = one[i]
				}
			}
		}
		for i := range acc {
			acc[i] += times * worst[i]
		}
	case NonPrivate:
		for i := range acc {
			acc[i] = math.Inf(1)
		}
	default:
		return unsupported("rdp", e)
	}
	return nil
}

// Epsilon converts the RDP of e to (ε, delta)-DP, minimising over the orders.
func (a RDP) Epsilon(e Event, delta float64) (Guarantee, error) {
	return a.EpsilonContext(context.Background(), e, delta)
}

// EpsilonContext is Epsilon that returns ctx's error soon after ctx is
// cancelled.
func (a RDP) EpsilonContext(ctx context.Context, e Event, delta float64) (Guarantee, error) {
	if err := CheckDelta(delta); err != nil {
		return Guarantee{}, fmt.Errorf("accounting: %w", err)
	}
	rdp, err := a.RDPContext(ctx, e)
	if err != nil {
		return Guarantee{}, err
	}
	eps, order := RDPToDP(a.orders(), rdp, delta)
	return Guarantee{Epsilon: eps, Delta: delta, Accountant: "rdp", Order: order, Approximate: approximate(e)}, nil
}

// approximate reports whether e contains an event whose RDP is an
// approximation rather than a proved bound (GaussianSelect).
func approximate(e Event) bool {
	switch v := e.(type) {
	case GaussianSelect:
		return true
	case PoissonSampled:
		return approximate(v.Event)
	case SelfComposed:
		return approximate(v.Event)
	case Composed:
		for _, ev := range v.Events {
			if approximate(ev) {
				return true
			}
		}
	case WorstCase:
		for _, ev := range v.Events {
			if approximate(ev) {
				return true
			}
		}
	case RepeatAndSelect:
		return approximate(v.Event)
	case AdaptiveRepeatAndSelect:
		return approximate(v.Event)
	}
	return false
}

// RDPToDP converts RDP guarantees rdp[i] at orders[i] into the smallest ε
// such that the mechanism is (ε, delta)-DP, and the order attaining it, by
// Balle et al. 2020, "Hypothesis Testing Interpretations and Renyi
// Differential Privacy", Theorem 21 (the conversion Opacus and TensorFlow
// Privacy use):
//
//	ε = min over α of  ε(α) + log((α−1)/α) − (log δ + log α)/(α − 1).
//
// ε is clamped at 0 from below, and is 0 when the RDP is 0 at every order
// (no mechanism ran). If every order gives +∞ (or NaN), ε is +∞ and the
// order 0.
func RDPToDP(orders, rdp []float64, delta float64) (eps, order float64) {
	zero := true
	for _, r := range rdp {
		zero = zero && r == 0
	}
	if zero {
		return 0, 0
	}
	eps = math.Inf(1)
	logDelta := math.Log(delta)
	for i, a := range orders {
		if a <= 1 || math.IsNaN(rdp[i]) || math.IsInf(rdp[i], 1) {
			continue
		}
		e := rdp[i] + math.Log1p(-1/a) - (logDelta+math.Log(a))/(a-1)
		if e < eps {
			eps, order = e, a
		}
	}
	return math.Max(eps, 0), order
}
