package accounting

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

// within runs f and fails the test if it has not returned after limit (the
// failure mode these tests guard against is a computation that never ends).
func within(t *testing.T, limit time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("still running after %v", limit)
	}
}

// A noise multiplier of 1e300 used to send the PLD accountant's grid
// coarsening into an endless loop (σ² overflows). Such noise gives ε = 0:
// the composed pair is within δ₀ ≤ 1000 · 4e-301 of identical, far below δ.
func TestPLDHugeNoise(t *testing.T) {
	for _, e := range []Event{DPSGD(1e300, 0.0042667, 1000), DPSGD(1e300, 1, 1000), Gaussian{NoiseMultiplier: 1e300, Sensitivity: 1},
		DPSGD(1e200, 0.5, 10), DPSGD(1e99, 0.0042667, 1000)} {
		var g Guarantee
		var err error
		within(t, 10*time.Second, func() { g, err = PLD{}.Epsilon(e, 1e-5) })
		if err != nil || g.Epsilon != 0 {
			t.Errorf("%+v: ε = %v, err %v; want 0", e, g.Epsilon, err)
		}
	}
}

// The (0, δ₀) bound that stands in for huge noise is the pair's total
// variation: it equals the Balle–Wang profile at ε = 0, computed
// independently, where both can be evaluated.
func TestHugeNoiseBoundIsTheProfileAtZero(t *testing.T) {
	for _, c := range []struct{ q, r float64 }{{1, 10}, {1, 1e3}, {0.01, 1e3}, {0.5, 1e6}} {
		want, _ := gaussianRemove{c.q, c.r}.profile(0)
		got := hugeNoiseBound(c.q, c.r).Delta
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("q = %v, r = %v: δ₀ = %v, profile(0) = %v", c.q, c.r, got, want)
		}
	}
}

// Shifts of 100 or 1e300 standard deviations used to run for a minute (or
// fail after 33 s at 1e5); they get the trivial bound +∞ at once (ε there
// is above 50 nats anyway), and a negative or NaN shift is an error. Within
// the range, a cancelled context stops the integrals within a second.
func TestGaussianSelectHugeMuAndCancel(t *testing.T) {
	for _, mu := range []float64{10.5, 100, 1e5, 1e300, math.Inf(1), math.NaN(), -1} {
		start := time.Now()
		r, err := GaussianSelectRDP(context.Background(), mu, FixedRepetitions(2), 2)
		if mu >= 0 && (err != nil || !math.IsInf(r, 1)) {
			t.Errorf("μ = %v: RDP %v, err %v; want +Inf", mu, r, err)
		}
		if !(mu >= 0) && err == nil {
			t.Errorf("μ = %v: no error", mu)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("μ = %v: answered after %v", mu, d)
		}
	}
	if g, err := (RDP{}).Epsilon(GaussianSelect{Mu: 1e300, Repetitions: FixedRepetitions(2)}, 1e-5); err != nil || !math.IsInf(g.Epsilon, 1) {
		t.Errorf("μ = 1e300: ε = %v, err %v; want +Inf", g.Epsilon, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var err error
	var cancelled time.Time
	var mu sync.Mutex
	timer := time.AfterFunc(100*time.Millisecond, func() {
		mu.Lock()
		cancelled = time.Now()
		mu.Unlock()
		cancel()
	})
	defer timer.Stop()
	within(t, 10*time.Second, func() {
		_, err = RDP{}.EpsilonContext(ctx, GaussianSelect{Mu: 10, Repetitions: FixedRepetitions(2)}, 1e-5)
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled after 100 ms: error %v, want context.Canceled", err)
	}
	mu.Lock()
	if d := time.Since(cancelled); d > time.Second {
		t.Errorf("returned %v after the cancellation", d)
	}
	mu.Unlock()
	if g, err := EpsilonContext(ctx, PLD{}, DPSGD(1, 0.01, 10), 1e-5); !errors.Is(err, context.Canceled) {
		t.Errorf("EpsilonContext on a cancelled context: %v, %v", g, err)
	}
}

// The sampled number of runs of an unbounded distribution is capped by its
// mean: above MaxMeanRuns a TNB or Poisson is refused before anything is
// drawn; Fixed and Binary are bounded by Check.
func TestCheckSampled(t *testing.T) {
	tnb, err := TNBWithMean(1, MaxMeanRuns-1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Repetitions{PoissonRepetitions(MaxMeanRuns), tnb, FixedRepetitions(1 << 30), BinaryRepetitions(1<<30, 0)} {
		if err := r.CheckSampled(); err != nil {
			t.Errorf("%v: %v", r, err)
		}
	}
	for _, r := range []Repetitions{PoissonRepetitions(MaxMeanRuns + 1), TNBRepetitions(1, 1e-9), TNBRepetitions(0, 1e-15), TNBRepetitions(-0.5, 1e-12)} {
		if err := r.CheckSampled(); err == nil {
			t.Errorf("%v (mean %v): no error", r, r.Mean())
		}
	}
}
