package accounting

import (
	"fmt"
	"math"
)

// DistributedDiscreteGaussian is an integer vector query released as the
// sum of Summands independent shares of discrete Gaussian noise
// N_ℤ(0, LocalStddev²)^Dimension, each added by one party before a secure
// summation (Kairouz, Liu & Steinke 2021, "The Distributed Discrete Gaussian
// Mechanism for Federated Learning with Secure Aggregation"). A sum of
// discrete Gaussians is not a discrete Gaussian; the paper's Theorem 1 bounds
// how far it is, and its Proposition 14 (Eq. 17) turns that into RDP — see
// DistributedDiscreteGaussianRDP.
//
// The sensitivities are in the query's integer units (DP-Hype's vote vector
// scaled by S has L2 sensitivity S·√(2ℓ) and L1 sensitivity 2ℓ·S under
// replace-one-client adjacency). Adjacency names the neighbouring relation
// the sensitivities hold under, e.g. "replace-one-client"; it is recorded so
// that a ledger says what kind of guarantee the event gives.
type DistributedDiscreteGaussian struct {
	LocalStddev   float64 `json:"local_stddev"` // σ of one share, integer units; ≥ 1/2
	Summands      int     `json:"summands"`     // shares in the released sum, ≥ 1
	Dimension     int     `json:"dimension"`    // coordinates of the query, ≥ 1
	L2Sensitivity float64 `json:"l2_sensitivity"`
	L1Sensitivity float64 `json:"l1_sensitivity"`
	Adjacency     string  `json:"adjacency,omitempty"`
}

// Type returns "distributed_discrete_gaussian".
func (DistributedDiscreteGaussian) Type() string { return "distributed_discrete_gaussian" }

func (d DistributedDiscreteGaussian) check() error {
	switch {
	case !(d.LocalStddev >= 0.5) || math.IsInf(d.LocalStddev, 1):
		return fmt.Errorf("accounting: distributed discrete Gaussian with local σ = %v: Theorem 1 needs σ ≥ 1/2", d.LocalStddev)
	case d.Summands < 1 || d.Dimension < 1:
		return fmt.Errorf("accounting: distributed discrete Gaussian with %d summands in %d dimensions", d.Summands, d.Dimension)
	case !(d.L2Sensitivity > 0) || !(d.L1Sensitivity >= d.L2Sensitivity) || math.IsInf(d.L1Sensitivity, 1):
		return fmt.Errorf("accounting: distributed discrete Gaussian with sensitivities L2 %v, L1 %v: need 0 < Δ₂ ≤ Δ₁ < ∞", d.L2Sensitivity, d.L1Sensitivity)
	}
	return nil
}

// Tau is Theorem 1's τ = 10·Σ_{k=1}^{n−1} exp(−2π²σ²·k/(k+1)) for n
// summands of local standard deviation σ: how far the sum is from a discrete
// Gaussian of variance nσ². It is 0 for one summand.
func (d DistributedDiscreteGaussian) Tau() float64 {
	t := 0.0
	s2 := d.LocalStddev * d.LocalStddev
	for k := 1; k < d.Summands; k++ {
		kk := float64(k)
		t += math.Exp(-2 * math.Pi * math.Pi * s2 * kk / (kk + 1))
	}
	return 10 * t
}

// DistributedDiscreteGaussianRDP is the RDP ε(α) of d at order α > 1
// (Kairouz, Liu & Steinke 2021, Proposition 14, Eq. 17, with τ of
// Theorem 1): with A = Δ₂²/(nσ²), B = Δ₁/(√n·σ) and dimension d,
//
//	ε(α) = min{ α/2·A + τd,  α/2·(A + 2Bτ + τ²d),  α/2·(√A + τ√d)² }.
//
// With τ = 0 (one summand) it is the discrete Gaussian's α·Δ₂²/(2σ²)
// (Canonne, Kamath & Steinke 2020, Theorem 4). Google's reference
// implementation (federated/distributed_dp, compute_rdp_dgaussian) computes
// the same three terms.
func DistributedDiscreteGaussianRDP(d DistributedDiscreteGaussian, alpha float64) (float64, error) {
	if err := d.check(); err != nil {
		return 0, err
	}
	if !(alpha > 1) {
		return 0, fmt.Errorf("accounting: RDP order %v is not above 1", alpha)
	}
	n := float64(d.Summands)
	dim := float64(d.Dimension)
	a := d.L2Sensitivity * d.L2Sensitivity / (n * d.LocalStddev * d.LocalStddev)
	b := d.L1Sensitivity / (math.Sqrt(n) * d.LocalStddev)
	tau := d.Tau()
	t1 := alpha/2*a + tau*dim
	t2 := alpha / 2 * (a + 2*b*tau + tau*tau*dim)
	r := math.Sqrt(a) + tau*math.Sqrt(dim)
	t3 := alpha / 2 * r * r
	return math.Min(t1, math.Min(t2, t3)), nil
}
