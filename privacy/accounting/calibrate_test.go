package accounting

import (
	"context"
	"errors"
	"math"
	"testing"
)

// Opacus, opacus/tests/accountants_test.py: test_get_noise_multiplier_rdp_epochs
// (ε = 8, δ = 1e-5, q = 0.04, 90 epochs → σ = 1.416) and _steps (2000 steps →
// σ = 1.3562). Opacus stops its bisection within 0.01 of the target ε and
// returns the upper end, so its σ is at or slightly above the exact one.
func TestCalibrateNoiseOpacusValues(t *testing.T) {
	acc := RDP{Orders: opacusOrders()}
	for _, c := range []struct {
		steps int
		want  float64
	}{{2250, 1.416}, {2000, 1.3562}} {
		sigma, err := CalibrateNoise(context.Background(), acc, func(s float64) Event { return DPSGD(s, 0.04, c.steps) }, 8, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		if sigma > c.want+5e-5 || sigma < c.want-0.01 {
			t.Errorf("%d steps: σ = %v, Opacus %v", c.steps, sigma, c.want)
		}
		// Never overshoots: ε(σ) ≤ target, and a slightly smaller σ exceeds it.
		g, _ := acc.Epsilon(DPSGD(sigma, 0.04, c.steps), 1e-5)
		h, _ := acc.Epsilon(DPSGD(sigma*(1-3e-6), 0.04, c.steps), 1e-5)
		if g.Epsilon > 8 || h.Epsilon <= 8 {
			t.Errorf("%d steps: ε(σ) = %v, ε(σ−) = %v around the target 8", c.steps, g.Epsilon, h.Epsilon)
		}
	}
}

// The never-overshoot property over a grid like Opacus's
// test_get_noise_multiplier_overshoot.
func TestCalibrateNoiseNeverOvershoots(t *testing.T) {
	for _, eps := range []float64{0.5, 1, 3, 8} {
		for _, q := range []float64{1e-3, 0.01, 0.1} {
			for _, delta := range []float64{1e-4, 1e-6} {
				steps := int(20 / q)
				sigma, err := CalibrateNoise(context.Background(), RDP{}, func(s float64) Event { return DPSGD(s, q, steps) }, eps, delta)
				if err != nil {
					t.Fatal(err)
				}
				g, _ := RDP{}.Epsilon(DPSGD(sigma, q, steps), delta)
				if g.Epsilon > eps || g.Epsilon < eps*(1-1e-3) {
					t.Errorf("ε=%v q=%v δ=%v: σ=%v gives ε=%v", eps, q, delta, sigma, g.Epsilon)
				}
			}
		}
	}
}

func TestCalibrateNoiseRejectsImpossibleBudgets(t *testing.T) {
	ev := func(s float64) Event { return DPSGD(s, 0.01, 100) }
	for _, c := range []struct{ eps, delta float64 }{{0, 1e-5}, {-1, 1e-5}, {math.Inf(1), 1e-5}, {1, 0}, {1, 1}, {1e-9, 1e-5}} {
		if _, err := CalibrateNoise(context.Background(), RDP{}, ev, c.eps, c.delta); err == nil {
			t.Errorf("ε=%v δ=%v accepted", c.eps, c.delta)
		}
	}
}

// The PLD accountant's calibration meets the target without overshooting,
// and needs less noise than RDP's.
func TestCalibrateNoisePLD(t *testing.T) {
	q, steps := 256.0/60000, 2350
	ev := func(s float64) Event { return DPSGD(s, q, steps) }
	sigma, err := CalibrateNoise(context.Background(), PLD{}, ev, 3, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := PLD{}.Epsilon(ev(sigma), 1e-5)
	h, _ := PLD{}.Epsilon(ev(sigma*(1-3e-6)), 1e-5)
	if g.Epsilon > 3 || h.Epsilon <= 3 {
		t.Errorf("σ=%v: ε = %v, slightly less noise ε = %v", sigma, g.Epsilon, h.Epsilon)
	}
	r, _ := CalibrateNoise(context.Background(), RDP{}, ev, 3, 1e-5)
	if sigma >= r {
		t.Errorf("PLD σ %v not below RDP σ %v", sigma, r)
	}
}

// CalibrateSteps returns the last number of steps within the budget.
func TestCalibrateSteps(t *testing.T) {
	ev := func(steps int) Event { return DPSGD(1.1, 256.0/60000, steps) }
	for _, acc := range []Accountant{RDP{}, PLD{}} {
		steps, err := CalibrateSteps(context.Background(), acc, ev, 3, 1e-5, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := acc.Epsilon(ev(steps), 1e-5)
		h, _ := acc.Epsilon(ev(steps+1), 1e-5)
		if g.Epsilon > 3 || h.Epsilon <= 3 {
			t.Errorf("%s: %d steps give ε = %v, one more %v", acc.Name(), steps, g.Epsilon, h.Epsilon)
		}
	}
	if s, err := CalibrateSteps(context.Background(), RDP{}, ev, 3, 1e-5, 100); s != 100 || err != nil {
		t.Errorf("capped: %d %v", s, err)
	}
	if _, err := CalibrateSteps(context.Background(), RDP{}, func(int) Event { return Gaussian{NoiseMultiplier: 0.1, Sensitivity: 1} }, 1, 1e-5, 10); err == nil {
		t.Error("a budget below one step accepted")
	}
}

// Calibration stops with the context's error when the context is cancelled
// (Ctrl-C during a slow PLD calibration), before asking the accountant again.
func TestCalibrationHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	ev := func(s float64) Event { calls++; return DPSGD(s, 0.01, 100) }
	if _, err := CalibrateNoise(ctx, PLD{}, ev, 3, 1e-5); !errors.Is(err, context.Canceled) || calls > 1 {
		t.Errorf("CalibrateNoise: %v after %d accountant calls", err, calls)
	}
	if _, err := CalibrateSteps(ctx, PLD{}, func(n int) Event { return DPSGD(1, 0.01, n) }, 3, 1e-5, 1<<20); !errors.Is(err, context.Canceled) {
		t.Errorf("CalibrateSteps: %v", err)
	}
}
