package budget

import (
	"math"

	"github.com/dptune/dptune/privacy/accounting"
)

// DefaultOrders are the RDP orders Init writes into a new budget file. An
// existing file keeps the orders it was created with: changing this list
// never changes the meaning of a file.
var DefaultOrders = []float64{1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 128, 256}

// FilterEpsilon returns the RDP filter's total ε for per-order RDP totals
// rdp[j] at orders[j] and the file's δ, and the order attaining it:
//
//	ε_filter = min_j  rdp[j] + log((α_j−1)/α_j) − (log(δ/m) + log α_j)/(α_j − 1),
//
// with m = len(orders), clamped at 0 from below; it is 0 (order 0) when
// rdp is 0 at every order (nothing was released) and +∞ (order 0) when
// every order's total is infinite. The package documentation derives it:
// a release is admitted while FilterEpsilon ≤ the cap ε, and the
// admitted sequence is then (ε, δ)-DP even when each release was chosen
// after seeing the earlier ones. orders and rdp must have the same length.
func FilterEpsilon(orders, rdp []float64, delta float64) (eps, order float64) {
	return convert(orders, rdp, delta, len(orders))
}

// releaseEpsilon is the ε of one release's curve alone at delta: the
// non-adaptive conversion of Balle et al. 2020, Theorem 21 (m = 1).
func releaseEpsilon(orders, rdp []float64, delta float64) float64 {
	eps, _ := convert(orders, rdp, delta, 1)
	return eps
}

// convert is the conversion of RDP to (ε, δ)-DP with δ split evenly over m
// orders (see the package documentation, steps 3–5): Balle et al.'s
// conversion (accounting.RDPToDP) at δ/m.
func convert(orders, rdp []float64, delta float64, m int) (eps, order float64) {
	return accounting.RDPToDP(orders, rdp, delta/float64(m))
}

// addCurve returns a + b per order.
func addCurve(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] + b[i]
	}
	return out
}

// sameValue reports whether a and b agree within 1e-9 relative (both +∞
// counts as agreeing).
func sameValue(a, b float64) bool {
	if a == b {
		return true
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) || math.IsNaN(a) || math.IsNaN(b) {
		return false
	}
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}
