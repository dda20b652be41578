package audit

import (
	"math"
	"strings"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
)

// TestEpsilonLowerSeparated: a tuner that releases nothing on X (−Inf)
// and something on X′ is perfectly distinguishable; with 500 evaluation
// trials of each kind and no errors, FP⁺ = FN⁺ = 1 − 0.025^{1/500} (the
// Clopper–Pearson upper end for 0 of 500 at 95%), and ε_L =
// log((1 − δ − FN⁺)/FP⁺) by eq. (4).
func TestEpsilonLowerSeparated(t *testing.T) {
	stats0 := make([]float64, 1000)
	stats1 := make([]float64, 1000)
	for i := range stats0 {
		stats0[i] = math.Inf(-1)
		stats1[i] = float64(i % 7)
	}
	const delta = 1e-5
	lb, err := EpsilonLower(stats0, stats1, delta, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	up := 1 - math.Pow(0.025, 1.0/500)
	want := math.Log((1 - delta - up) / up)
	if !math.IsInf(lb.Threshold, -1) || lb.FP != 0 || lb.FN != 0 || lb.TrialsUsed != 1000 {
		t.Errorf("got %+v, want threshold −Inf, FP = FN = 0 on 1000 trials", lb)
	}
	if math.Abs(lb.FPUpper-up) > 1e-12 || math.Abs(lb.FNUpper-up) > 1e-12 || math.Abs(lb.EpsilonLower-want) > 1e-9 {
		t.Errorf("ε_L = %v (FP⁺ %v, FN⁺ %v), want %v (upper ends %v)", lb.EpsilonLower, lb.FPUpper, lb.FNUpper, want, up)
	}
}

// TestEpsilonLowerHalves checks that the threshold comes from the first
// halves only and the counts from the second halves only. The first halves
// separate perfectly at 0.5; the second halves hold 1 false positive of 10
// and 2 false negatives of 10, so ε_L is eq. (4) at the Clopper–Pearson
// upper ends for 1 of 10 and 2 of 10.
func TestEpsilonLowerHalves(t *testing.T) {
	stats0 := []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0 /* second half */, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0}
	stats1 := []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1 /* second half */, 1, -3, 1, 1, 1, 0, 1, 1, 1, 1}
	const delta, conf = 0.01, 0.9
	lb, err := EpsilonLower(stats0, stats1, delta, conf)
	if err != nil {
		t.Fatal(err)
	}
	_, fpHi, _ := ClopperPearson(1, 10, conf)
	_, fnHi, _ := ClopperPearson(2, 10, conf)
	want := max(math.Log((1-delta-fpHi)/fnHi), math.Log((1-delta-fnHi)/fpHi), 0)
	// The pooled first halves are {0, 1}: th = 0 separates them (guess 1
	// when > 0); −∞ and 1 do not.
	if lb.Threshold != 0 || lb.FP != 0.1 || lb.FN != 0.2 || lb.TrialsUsed != 20 {
		t.Errorf("got %+v, want threshold 0, FP 0.1, FN 0.2 on 20 trials", lb)
	}
	if math.Abs(lb.EpsilonLower-want) > 1e-12 || lb.FPUpper != fpHi || lb.FNUpper != fnHi {
		t.Errorf("ε_L = %v, want %v", lb.EpsilonLower, want)
	}
	if lb.Delta != delta || lb.Confidence != conf {
		t.Errorf("Delta, Confidence = %v, %v; want %v, %v", lb.Delta, lb.Confidence, delta, conf)
	}
}

// TestEpsilonLowerNoSignal: identical distributions have ε = 0, and the
// bound says so.
func TestEpsilonLowerNoSignal(t *testing.T) {
	rng := randsrc.Seeded(7, "no signal")
	stats0 := make([]float64, 20000)
	stats1 := make([]float64, 20000)
	for i := range stats0 {
		stats0[i], stats1[i] = rng.NormFloat64(), rng.NormFloat64()
	}
	lb, err := EpsilonLower(stats0, stats1, 1e-5, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if lb.EpsilonLower != 0 {
		t.Errorf("identical distributions: ε_L = %v, want 0 (%+v)", lb.EpsilonLower, lb)
	}
}

func TestEpsilonLowerErrors(t *testing.T) {
	ok := []float64{0, 1, 2}
	for _, tc := range []struct {
		name           string
		s0, s1         []float64
		delta, conf    float64
		wantSubstrings string
	}{
		{"one b=0 trial", []float64{0}, ok, 1e-5, 0.95, "at least 2"},
		{"no b=1 trials", ok, nil, 1e-5, 0.95, "at least 2"},
		{"NaN", ok, []float64{0, math.NaN()}, 1e-5, 0.95, "NaN"},
		{"negative δ", ok, ok, -1e-5, 0.95, "δ"},
		{"δ = 1", ok, ok, 1, 0.95, "δ"},
		{"NaN δ", ok, ok, math.NaN(), 0.95, "δ"},
		{"confidence 0", ok, ok, 1e-5, 0, "confidence"},
		{"confidence 1", ok, ok, 1e-5, 1, "confidence"},
	} {
		_, err := EpsilonLower(tc.s0, tc.s1, tc.delta, tc.conf)
		if err == nil || !strings.Contains(err.Error(), tc.wantSubstrings) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.wantSubstrings)
		}
	}
}

// TestCandidatesThinned checks the thinning to MaxThresholds candidates:
// −∞ first, then the smallest through the largest statistic, increasing.
func TestCandidatesThinned(t *testing.T) {
	a := make([]float64, 3000)
	b := make([]float64, 3000)
	for i := range a {
		a[i], b[i] = float64(2*i), float64(2*i+1)
	}
	c := candidates(a, b)
	if len(c) != MaxThresholds || !math.IsInf(c[0], -1) || c[1] != 0 || c[len(c)-1] != 5999 {
		t.Fatalf("%d candidates from %v to %v, want %d from −Inf, 0, …, 5999", len(c), c[0], c[len(c)-1], MaxThresholds)
	}
	for i := 1; i < len(c); i++ {
		if !(c[i] > c[i-1]) {
			t.Fatalf("candidates not increasing at %d: %v, %v", i, c[i-1], c[i])
		}
	}
}
