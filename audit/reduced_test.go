package audit

import (
	"context"
	"math"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/privacy/accounting"
	"gonum.org/v1/gonum/stat/distuv"
)

// TestReducedTuningMaxDistribution checks both ways of drawing the
// released value — K normals (K ≤ 64) and the inverse-CDF shortcut
// (K > 64) — against the order-statistic law P[max ≤ x] = Φ(x − b·μ)^K
// (Xiang et al., Algorithm 3, the density K·F^{K−1}·f): at each x, the
// empirical CDF of 20,000 trials must be within 5 binomial standard
// deviations.
func TestReducedTuningMaxDistribution(t *testing.T) {
	const n = 20000
	for _, k := range []int{1, 10, 64, 65, 1000, 1 << 20} {
		for b := range 2 {
			g := ReducedTuning{Mu: 1.5, Repetitions: accounting.FixedRepetitions(k)}
			rng := randsrc.Seeded(uint64(k), "reduced max")
			xs := make([]float64, n)
			for i := range xs {
				x, err := g.Trial(context.Background(), b, rng)
				if err != nil {
					t.Fatal(err)
				}
				xs[i] = x - float64(b)*g.Mu
			}
			// Points at the 5%, 25%, 50%, 75%, 95% quantiles of the max.
			for _, q := range []float64{0.05, 0.25, 0.5, 0.75, 0.95} {
				x := distuv.UnitNormal.Quantile(math.Pow(q, 1/float64(k)))
				below := 0
				for _, v := range xs {
					if v <= x {
						below++
					}
				}
				got := float64(below) / n
				if sd := math.Sqrt(q * (1 - q) / n); math.Abs(got-q) > 5*sd {
					t.Errorf("K = %d, b = %d: P[max ≤ %.4f] = %.4f, want %.4f ± %.4f", k, b, x, got, q, 5*sd)
				}
			}
		}
	}
}

// TestReducedTuningNothingReleased: with K ∼ Poisson(1), K = 0 (nothing
// released, statistic −Inf) has probability e^{−1}; with K ∼ Binary(L, s)
// the released value is a single draw with probability s.
func TestReducedTuningNothingReleased(t *testing.T) {
	const n = 20000
	g := ReducedTuning{Mu: 1, Repetitions: accounting.PoissonRepetitions(1)}
	rng := randsrc.Seeded(1, "reduced poisson")
	none := 0
	for range n {
		x, err := g.Trial(context.Background(), 1, rng)
		if err != nil {
			t.Fatal(err)
		}
		if math.IsInf(x, -1) {
			none++
		}
	}
	p := math.Exp(-1)
	if got, sd := float64(none)/n, math.Sqrt(p*(1-p)/n); math.Abs(got-p) > 5*sd {
		t.Errorf("P[nothing released] = %.4f, want e^−1 = %.4f ± %.4f", got, p, 5*sd)
	}
	// Binary(L = 1000, s = 0.5): P[max ≤ 0] = s·Φ(0) + (1−s)·Φ(0)^1000 = 0.25.
	g = ReducedTuning{Mu: 1, Repetitions: accounting.BinaryRepetitions(1000, 0.5)}
	below := 0
	for range n {
		x, err := g.Trial(context.Background(), 0, rng)
		if err != nil {
			t.Fatal(err)
		}
		if x <= 0 {
			below++
		}
	}
	if got, sd := float64(below)/n, math.Sqrt(0.25*0.75/n); math.Abs(got-0.25) > 5*sd {
		t.Errorf("Binary(1000, 0.5): P[max ≤ 0] = %.4f, want 0.25 ± %.4f", got, 5*sd)
	}
}

func TestReducedTuningErrors(t *testing.T) {
	rng := randsrc.Seeded(1, "errors")
	fixed := accounting.FixedRepetitions(1)
	for _, tc := range []struct {
		name string
		g    ReducedTuning
		b    int
	}{
		{"coin 2", ReducedTuning{Mu: 1, Repetitions: fixed}, 2},
		{"NaN μ", ReducedTuning{Mu: math.NaN(), Repetitions: fixed}, 0},
		{"infinite μ", ReducedTuning{Mu: math.Inf(1), Repetitions: fixed}, 1},
		{"no repetitions", ReducedTuning{Mu: 1}, 0},
		{"K = 0", ReducedTuning{Mu: 1, Repetitions: accounting.FixedRepetitions(0)}, 0},
	} {
		if _, err := tc.g.Trial(context.Background(), tc.b, rng); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if _, err := (ReducedTuning{Mu: 1, Repetitions: fixed}).Trial(context.Background(), 0, nil); err == nil {
		t.Error("nil rng: no error")
	}
}
