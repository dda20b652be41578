package tuning

import (
	"math/bits"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
)

// lemma1T is the exact iteration count of the noiseless search for
// n = (u* − u₀)/g, following the proof of Ding et al.'s Lemma 1: with
// n = 2^k − 1 + n′ (0 ≤ n′ < 2^k), k iterations double the step up to u₀ +
// (2^k − 1)g, each of the popcount(n′) set bits of n′ then costs a pass and
// a failure, and the step halves from 2^k to 0 in k + 1 failures.
func lemma1T(n int) int {
	k := bits.Len(uint(n+1)) - 1
	return 2*k + 1 + 2*bits.OnesCount(uint(n+1-(1<<k)))
}

// In the non-randomized world (all noise zero, Definition 5) the loop takes
// exactly lemma1T(n) iterations and ends with u = u*: for n = 2^j − 1 and for
// other n.
func TestDoublingNoiselessFollowsLemma1(t *testing.T) {
	g := 1.0 / 1024 // exact in binary, so thresholds compare exactly
	for _, n := range []int{1, 2, 3, 5, 7, 15, 31, 63, 100, 127, 200, 511, 700} {
		ustar := float64(n) * g
		var last Iteration
		sel, T, err := CappedSearch([]float64{ustar / 3, ustar}, CappedSearchConfig{Partitions: 10, Epsilon0: 1, Granularity: g, MaxIterations: 1000},
			nil, true, func(it Iteration) { last = it })
		if err != nil {
			t.Fatal(err)
		}
		if T != lemma1T(n) || last.U != ustar || sel != 1 {
			t.Errorf("n=%d: T = %d (Lemma 1: %d), final u = %v (u* = %v), s* = %d", n, T, lemma1T(n), last.U, ustar, sel)
		}
	}
}

// With kϵ large (noise scales ~1e-5) the search selects the argmax of
// utilities separated by more than 2g, in every seed.
func TestDoublingSelectsArgmaxWithLittleNoise(t *testing.T) {
	u := []float64{0.31, 0.77, 0.52, 0.9, 0.64, 0.12}
	for seed := uint64(0); seed < 20; seed++ {
		sel, _, err := CappedSearch(u, CappedSearchConfig{Partitions: 1000, Epsilon0: 100, Granularity: 0.01, MaxIterations: 100},
			randsrc.Seeded(seed, "test"), false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sel != 3 {
			t.Errorf("seed %d: selected %d, argmax 3", seed, sel)
		}
	}
}

// The cap stops the loop whatever happens.
func TestDoublingCap(t *testing.T) {
	_, T, err := CappedSearch([]float64{0.999}, CappedSearchConfig{Partitions: 10, Epsilon0: 1, Granularity: 1.0 / 1024, MaxIterations: 4}, nil, true, nil)
	if err != nil || T != 4 {
		t.Fatalf("T = %d, %v", T, err)
	}
	if DefaultMaxIterations(0, 0.01) != 34 { // ⌈5·log₂ 100⌉
		t.Errorf("default cap %d", DefaultMaxIterations(0, 0.01))
	}
	for _, c := range []CappedSearchConfig{{Partitions: 0, Epsilon0: 1, Granularity: 0.1, MaxIterations: 1},
		{Partitions: 1, Epsilon0: 0, Granularity: 0.1, MaxIterations: 1}, {Partitions: 1, Epsilon0: 1, Granularity: 1, MaxIterations: 1},
		{Partitions: 1, Epsilon0: 1, Granularity: 0.1, U0: 1, MaxIterations: 1}, {Partitions: 1, Epsilon0: 1, Granularity: 0.1}} {
		if c.Check() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
