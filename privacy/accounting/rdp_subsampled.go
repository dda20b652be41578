package accounting

import (
	"context"
	"math"
)

// MaxSubsampledOrder is the largest order at which poissonSubsampledRDP
// evaluates Zhu & Wang's bound: the bound at order α needs the inner RDP at
// every integer 2 … ⌈α⌉, so larger orders (and α = +∞) would make the inner
// curve's grid unbounded. At orders above it the subsampled RDP is the inner
// RDP at that order (subsampling never costs more). DefaultOrders stay below
// it.
const MaxSubsampledOrder = 1024

// poissonSubsampledRDP returns, at each of orders, an upper bound on the RDP
// of running inner on a Poisson sample of the data (each example included
// independently with probability q ∈ [0, 1]) under add/remove-one
// neighbours, for ANY inner event the accountant can count — the general
// upper bound of Zhu & Wang 2019, "Poisson Subsampled Rényi Differential
// Privacy" (ICML), Theorem 6: for integer α ≥ 2, with ε(·) the inner RDP,
//
//	ε_sub(α) ≤ 1/(α−1) · log[ (1−q)^{α−1}·(1 + (α−1)q)
//	                          + C(α,2)·q²·(1−q)^{α−2}·e^{ε(2)}
//	                          + 3·Σ_{ℓ=3}^{α} C(α,ℓ)·q^ℓ·(1−q)^{α−ℓ}·e^{(ℓ−1)·ε(ℓ)} ]
//
// (see subsampledBound). Koskela & Kulkarni 2023, "Practical Differentially
// Private Hyperparameter Tuning with Subsampling" (NeurIPS), use it to count
// tuning on a subsample: a whole random-stop selection (RepeatAndSelect) run
// on one Poisson subsample of the data, amplified as one mechanism.
//
// The inner RDP is computed twice, each time in one call: once at orders
// itself and once on the integer grid 2, 3, …, N with N the largest ⌈α⌉ (at
// least 2) among the orders α ≤ MaxSubsampledOrder (subsampledGrid; sparser
// above order 64 when inner contains a GaussianSelect, whose integrals are
// slow). Each order α then gets
//
//	max(0, min(min over integers m' ≥ m of ε_sub(m'), ε(α))),
//	m = ⌈α⌉ for α > 2 and m = 2 for α ∈ (1, 2],
//
// which bounds the subsampled RDP at α: Rényi divergence is non-decreasing
// in its order, so ε_sub(α) ≤ ε_sub(m') for every m' ≥ α (the bound itself
// need not be monotone in the order), and Poisson subsampling never
// costs more than the unsampled mechanism (the subsampled output
// distributions are mixtures, and Rényi divergence is jointly
// quasi-convex), so ε_sub(α) ≤ ε(α). Orders above MaxSubsampledOrder get ε(α).
//
// q = 0 gives 0 at every order and q = 1 the inner curve, after the inner
// event has been checked (its RDP computed at orders). +∞ in the inner curve
// at any ℓ ≤ m makes the bound +∞ (and the result ε(α), itself +∞ for a
// monotone inner curve), never 0 or NaN. ctx's error is returned once ctx
// is cancelled.
func (a RDP) poissonSubsampledRDP(ctx context.Context, orders []float64, q float64, inner Event) ([]float64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	own := make([]float64, len(orders))
	if err := a.add(ctx, own, orders, inner, 1); err != nil {
		return nil, err
	}
	switch q {
	case 0:
		return make([]float64, len(orders)), nil
	case 1:
		return own, nil
	}
	top := 0
	for _, o := range orders {
		if o <= MaxSubsampledOrder {
			top = max(top, subsampledOrder(o))
		}
	}
	if top == 0 {
		return own, nil
	}
	grid, err := subsampledGrid(ctx, inner, orders, top)
	if err != nil {
		return nil, err
	}
	// best[m−2] is the least bound at any integer order m' ≥ m: the RDP at
	// m is at most the RDP at m' (non-decreasing in the order), so each is
	// a bound at m, and the bound itself need not be monotone.
	best := make([]float64, top-1)
	for m := top; m >= 2; m-- {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b := subsampledBound(q, grid, m)
		if m < top && !(b <= best[m-1]) && !math.IsNaN(best[m-1]) {
			b = best[m-1]
		}
		best[m-2] = b
	}
	out := make([]float64, len(orders))
	for i, o := range orders {
		out[i] = own[i]
		if o > MaxSubsampledOrder {
			continue
		}
		if b := best[subsampledOrder(o)-2]; b < out[i] || math.IsNaN(out[i]) {
			out[i] = b
		}
		// A sum of terms that is 1 up to rounding can come out just
		// below it at tiny q: an RDP is never negative.
		out[i] = math.Max(out[i], 0)
	}
	return out, nil
}

// subsampledOrder is the integer order whose bound stands for order α > 1:
// ⌈α⌉, and 2 for α < 2.
func subsampledOrder(alpha float64) int {
	return max(2, int(math.Ceil(alpha)))
}

// subsampledBound is Zhu & Wang's Theorem 6 bound (see poissonSubsampledRDP)
// at integer order m ≥ 2 for sampling rate 0 < q < 1, with eps[ℓ−2] the
// inner RDP at order ℓ for ℓ = 2 … m (len(eps) ≥ m−1), summed in log space.
// It is +∞ if eps is +∞ at any ℓ ≤ m, NaN if eps is NaN there.
func subsampledBound(q float64, eps []float64, m int) float64 {
	fm := float64(m)
	lq, l1q := math.Log(q), math.Log1p(-q)
	log3 := math.Log(3)
	s := (fm-1)*l1q + math.Log1p((fm-1)*q)
	for l := 2; l <= m; l++ {
		e := eps[l-2]
		if math.IsInf(e, 1) || math.IsNaN(e) {
			return e
		}
		t := logBinomAbs(fm, l) + float64(l)*lq + float64(m-l)*l1q + float64(l-1)*e
		if math.IsInf(t, 1) {
			return t
		}
		if l >= 3 {
			t += log3
		}
		s = logAdd(s, t)
	}
	return s / (fm - 1)
}

// subsampledGrid returns the inner RDP ε(ℓ) at ℓ = 2 … top (element ℓ−2),
// computed in one call on an integer grid. The grid is every integer unless
// inner contains a GaussianSelect (the event approximate reports, whose RDP
// is numerical integrals whose cost grows with the order: 2 … 512 took a
// minute on two busy cores, the sparse grid 2.5 s); then it is every
// integer up to subsampledDenseOrders, the orders ⌈α⌉ the accountant needs,
// top, and above subsampledDenseOrders a geometric grid of ratio
// subsampledSparseRatio, and ε(ℓ) off the grid is ε at the next grid point above ℓ — an upper bound,
// as RDP is non-decreasing in the order and the bound of subsampledBound is
// non-decreasing in each ε(ℓ). (For RepeatAndSelect of DP-SGD the sparse
// grid would raise ε by up to 4% at σ ≥ 4, where the optimal order is 128 or
// more; the full grid costs milliseconds there.)
func subsampledGrid(ctx context.Context, inner Event, orders []float64, top int) ([]float64, error) {
	need := make(map[int]bool)
	for _, o := range orders {
		if o <= MaxSubsampledOrder {
			need[subsampledOrder(o)] = true
		}
	}
	sparse := approximate(inner)
	var ints []float64
	for l := 2; l <= top; l++ {
		if !sparse || l <= subsampledDenseOrders || need[l] || l == top || float64(l) >= subsampledSparseRatio*ints[len(ints)-1] {
			ints = append(ints, float64(l))
		}
	}
	rdp, err := RDP{Orders: ints}.RDPContext(ctx, inner)
	if err != nil {
		return nil, err
	}
	grid := make([]float64, top-1)
	j := len(ints) - 1
	for l := top; l >= 2; l-- {
		if j > 0 && float64(l) <= ints[j-1] {
			j--
		}
		grid[l-2] = rdp[j]
	}
	return grid, nil
}

// The sparse grid of subsampledGrid: every integer order up to
// subsampledDenseOrders, then successive orders at least
// subsampledSparseRatio apart.
const (
	subsampledDenseOrders = 64
	subsampledSparseRatio = 1.1
)
