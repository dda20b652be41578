package accounting

import (
	"context"
	"math"
	"testing"
)

// Xiang et al. (Section 3.2 and Appendix A.1) audit random-stop tuning of a
// (1, 0)-DP base with geometric repetitions (η = 1, γ = 1e-3): their tight
// example is (2.92, 1e-5)-DP — no valid bound can be lower — and they quote
// Papernot–Steinke's bound as (3.11, 1e-5). Ours uses more orders, so it
// may only be lower than 3.11.
func TestRepeatAndSelectXiangExample(t *testing.T) {
	ev := RepeatAndSelect{Event: EpsilonDelta{Epsilon: 1}, Repetitions: TNBRepetitions(1, 1e-3)}
	g, err := RDP{}.Epsilon(ev, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if g.Epsilon < 2.92 || g.Epsilon > 3.11 {
		t.Errorf("ε = %v, outside [2.92 (tight example), 3.11 (Papernot–Steinke as quoted)]", g.Epsilon)
	}
	// Liu & Talwar 2019: geometric repeat-and-select of an ε-DP base is
	// (3ε, 0)-DP: the basic accountant says exactly that, and the RDP bound
	// without its log E[K]/(α−1) term is at most 3ε at every order.
	b, err := Basic{}.Epsilon(ev, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "basic ε of geometric repeat-and-select", b.Epsilon, 3, 1e-12)
	acc := RDP{}
	rdp, _ := acc.RDP(ev)
	for i, a := range DefaultOrders {
		if r := rdp[i] - math.Log(1e3)/(a-1); r > 3+1e-12 {
			t.Errorf("α=%v: RDP minus the mean term %v > 3ε", a, r)
		}
	}
}

// DP-HyPO's Theorem 1 with C = c = 1 is Papernot–Steinke's Theorem 2, and
// its extra cost for C/c > 1 is (α/(α−1) + 1 + η)·log(C/c) at each order.
func TestAdaptiveReducesToPapernotSteinke(t *testing.T) {
	base := DPSGD(1.0, 0.01, 1000)
	rep := TNBRepetitions(0, 0.01)
	acc := RDP{}
	plain, err := acc.RDP(RepeatAndSelect{Event: base, Repetitions: rep})
	if err != nil {
		t.Fatal(err)
	}
	same, err := acc.RDP(AdaptiveRepeatAndSelect{Event: base, Repetitions: rep, MaxRatio: 1, MinRatio: 1})
	if err != nil {
		t.Fatal(err)
	}
	adaptive, err := acc.RDP(AdaptiveRepeatAndSelect{Event: base, Repetitions: rep, MaxRatio: 2, MinRatio: 0.75})
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range DefaultOrders {
		near(t, "C = c = 1", same[i], plain[i], 0)
		near(t, "C/c = 8/3", adaptive[i]-plain[i], (a/(a-1)+1)*math.Log(2/0.75), 1e-9)
	}
	if _, err := acc.RDP(AdaptiveRepeatAndSelect{Event: base, Repetitions: PoissonRepetitions(10), MaxRatio: 2, MinRatio: 1}); err == nil {
		t.Error("adaptive with Poisson repetitions accepted")
	}
	if _, err := acc.RDP(AdaptiveRepeatAndSelect{Event: base, Repetitions: rep, MaxRatio: 1, MinRatio: 2}); err == nil {
		t.Error("C < c accepted")
	}
}

// Papernot–Steinke Theorem 2 term by term for a Gaussian base, at a single
// pair of orders: ε(α) + (1+η)(1−1/α̂)ε(α̂) + (1+η)log(1/γ)/α̂ + log E[K]/(α−1).
func TestRepeatAndSelectTNBFormula(t *testing.T) {
	orders := []float64{4, 16}
	acc := RDP{Orders: orders}
	sigma, eta, gamma := 2.0, 0.5, 0.05
	rep := TNBRepetitions(eta, gamma)
	got, err := acc.RDP(RepeatAndSelect{Event: Gaussian{NoiseMultiplier: sigma, Sensitivity: 1}, Repetitions: rep})
	if err != nil {
		t.Fatal(err)
	}
	rho := func(a float64) float64 { return a / (2 * sigma * sigma) }
	second := math.Inf(1)
	for _, ah := range orders {
		second = math.Min(second, (1+eta)*(1-1/ah)*rho(ah)+(1+eta)*math.Log(1/gamma)/ah)
	}
	for i, a := range orders {
		near(t, "TNB repeat-and-select", got[i], rho(a)+second+math.Log(rep.Mean())/(a-1), 1e-12)
	}
}

// Papernot–Steinke Theorem 6 (Poisson repetitions) for a pure-DP base whose
// ε is small enough that δ̂ = 0: ε(α) + log μ/(α−1). And more runs cost more.
func TestRepeatAndSelectPoisson(t *testing.T) {
	acc := RDP{Orders: []float64{2, 3}} // ε̂ = log 2 and log 1.5 ≥ 0.3
	got, err := acc.RDP(RepeatAndSelect{Event: EpsilonDelta{Epsilon: 0.3}, Repetitions: PoissonRepetitions(20)})
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range acc.Orders {
		near(t, "Poisson repeat-and-select", got[i], PureDPRDP(0.3, a)+math.Log(20)/(a-1), 1e-12)
	}
	prev := 0.0
	for _, mu := range []float64{2, 10, 50} {
		g, err := RDP{}.Epsilon(RepeatAndSelect{Event: DPSGD(1, 0.01, 1000), Repetitions: PoissonRepetitions(mu)}, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		if g.Epsilon <= prev {
			t.Errorf("μ=%v: ε = %v not above %v", mu, g.Epsilon, prev)
		}
		prev = g.Epsilon
	}
}

// The σ of a base DP-SGD run calibrated so that the whole random-stop
// pipeline meets the total budget: the pipeline meets it, never overshoots,
// and needs more noise than the base alone would.
func TestCalibrateTuningBase(t *testing.T) {
	q, steps := 256.0/60000, 2350
	rep := mustTNB(t, 1, 10)
	pipeline := func(s float64) Event { return RepeatAndSelect{Event: DPSGD(s, q, steps), Repetitions: rep} }
	sigma, err := CalibrateNoise(context.Background(), RDP{}, pipeline, 3, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := RDP{}.Epsilon(pipeline(sigma), 1e-5)
	h, _ := RDP{}.Epsilon(pipeline(sigma*(1-3e-6)), 1e-5)
	if g.Epsilon > 3 || h.Epsilon <= 3 {
		t.Errorf("σ=%v: ε = %v, slightly less noise ε = %v", sigma, g.Epsilon, h.Epsilon)
	}
	alone, _ := CalibrateNoise(context.Background(), RDP{}, func(s float64) Event { return DPSGD(s, q, steps) }, 3, 1e-5)
	if sigma <= alone {
		t.Errorf("tuning base σ %v not above the single run's %v", sigma, alone)
	}
}
