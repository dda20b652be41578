package accounting

import (
	"math"
	"testing"
)

// TestDistributedDiscreteGaussianRDP checks Proposition 14 against values
// computed independently (Python, from the formula in Kairouz, Liu & Steinke
// 2021, Eq. 17) where each of the first two terms is the smallest.
func TestDistributedDiscreteGaussianRDP(t *testing.T) {
	for _, c := range []struct {
		e           DistributedDiscreteGaussian
		alpha, want float64
	}{
		// 10 candidates: the second term (0.3740 τ) is the smallest.
		{DistributedDiscreteGaussian{LocalStddev: 0.6, Summands: 3, Dimension: 10, L2Sensitivity: math.Sqrt2, L1Sensitivity: 2}, 1.5, 3.5174554908816686},
		// One coordinate at a high order: the first term.
		{DistributedDiscreteGaussian{LocalStddev: 0.6, Summands: 3, Dimension: 1, L2Sensitivity: math.Sqrt2, L1Sensitivity: 2}, 8, 7.781389941475583},
		{DistributedDiscreteGaussian{LocalStddev: 1, Summands: 3, Dimension: 2, L2Sensitivity: math.Sqrt2, L1Sensitivity: 2}, 2, 0.6677396732286922},
	} {
		got, err := DistributedDiscreteGaussianRDP(c.e, c.alpha)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-c.want) > 1e-12*c.want {
			t.Errorf("%+v at α = %v: ε = %.16g, want %.16g", c.e, c.alpha, got, c.want)
		}
	}
}

// TestDistributedDiscreteGaussianLimits checks two closed forms: one summand
// is the discrete Gaussian (τ = 0, CKS 2020 Theorem 4), and for two
// summands τ = 10·exp(−π²σ²).
func TestDistributedDiscreteGaussianLimits(t *testing.T) {
	one := DistributedDiscreteGaussian{LocalStddev: 3, Summands: 1, Dimension: 50, L2Sensitivity: 2, L1Sensitivity: 4}
	for _, alpha := range []float64{1.5, 2, 32} {
		got, err := DistributedDiscreteGaussianRDP(one, alpha)
		if err != nil {
			t.Fatal(err)
		}
		if want := alpha * 4 / (2 * 9); math.Abs(got-want) > 1e-15 {
			t.Errorf("one summand at α = %v: ε = %v, want α·Δ²/(2σ²) = %v", alpha, got, want)
		}
	}
	two := DistributedDiscreteGaussian{LocalStddev: 0.8, Summands: 2, Dimension: 1, L2Sensitivity: 1, L1Sensitivity: 1}
	if got, want := two.Tau(), 10*math.Exp(-math.Pi*math.Pi*0.64); math.Abs(got-want) > 1e-15 {
		t.Errorf("τ for two summands = %v, want %v", got, want)
	}
	// With σ large, τ vanishes and the sum is the Gaussian of variance nσ².
	big := DistributedDiscreteGaussian{LocalStddev: 40, Summands: 10, Dimension: 100, L2Sensitivity: 40 * math.Sqrt2, L1Sensitivity: 80}
	got, err := RDP{Orders: []float64{2}}.RDP(big)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * 2.0 / (2 * 10); math.Abs(got[0]-want) > 1e-12 {
		t.Errorf("RDP at α = 2 = %v, want the Gaussian's %v", got[0], want)
	}
}

func TestDistributedDiscreteGaussianErrors(t *testing.T) {
	good := DistributedDiscreteGaussian{LocalStddev: 1, Summands: 3, Dimension: 2, L2Sensitivity: 1, L1Sensitivity: 1}
	for _, bad := range []func(*DistributedDiscreteGaussian){
		func(e *DistributedDiscreteGaussian) { e.LocalStddev = 0.49 },
		func(e *DistributedDiscreteGaussian) { e.LocalStddev = math.NaN() },
		func(e *DistributedDiscreteGaussian) { e.Summands = 0 },
		func(e *DistributedDiscreteGaussian) { e.Dimension = 0 },
		func(e *DistributedDiscreteGaussian) { e.L2Sensitivity = 0 },
		func(e *DistributedDiscreteGaussian) { e.L1Sensitivity = 0.5 },
	} {
		e := good
		bad(&e)
		if _, err := (RDP{}).RDP(e); err == nil {
			t.Errorf("%+v: no error", e)
		}
	}
	if _, err := (PLD{}).Epsilon(good, 1e-5); err == nil {
		t.Error("the PLD accountant counted a distributed discrete Gaussian")
	}
	var l Ledger
	l.Add("vote (client-level)", good)
	b, err := l.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Ledger
	if err := back.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if back.Entries[0].Event != Event(good) {
		t.Errorf("round trip gave %+v", back.Entries[0].Event)
	}
}
