package data

import (
	"math"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
)

func TestPoissonSampleSizeAndInclusion(t *testing.T) {
	const n, q, steps = 1000, 0.05, 2000
	rng := randsrc.Seeded(1, "test")
	counts := make([]int, n)
	var total, total2 float64
	var idx []int
	for s := 0; s < steps; s++ {
		idx = PoissonSample(idx, n, q, rng)
		for k, i := range idx {
			if k > 0 && idx[k-1] >= i {
				t.Fatal("indices not increasing")
			}
			counts[i]++
		}
		total += float64(len(idx))
		total2 += float64(len(idx) * len(idx))
	}
	// Batch size is Binomial(n, q): mean nq = 50, variance nq(1-q) = 47.5.
	mean := total / steps
	variance := total2/steps - mean*mean
	if math.Abs(mean-n*q) > 4*math.Sqrt(n*q*(1-q)/steps) {
		t.Fatalf("mean batch %v, want %v", mean, n*q)
	}
	if math.Abs(variance-n*q*(1-q)) > 0.15*n*q*(1-q) {
		t.Fatalf("batch variance %v, want %v", variance, n*q*(1-q))
	}
	// Each index is included with probability q: counts are Binomial(steps, q),
	// mean 100, sd ≈ 9.7; over 1000 indices none should be 6 sd away.
	for i, c := range counts {
		if math.Abs(float64(c)-steps*q) > 6*math.Sqrt(steps*q*(1-q)) {
			t.Fatalf("index %d sampled %d times, want ≈ %v", i, c, steps*q)
		}
	}
}

func TestSplitIsAPartition(t *testing.T) {
	d := &Dataset{Name: "t", N: 10, C: 1, H: 1, W: 1, Classes: 10, X: make([]float32, 10), Y: make([]uint8, 10)}
	for i := range d.X {
		d.X[i], d.Y[i] = float32(i), uint8(i)
	}
	tr, va, err := Split(d, 3, randsrc.Seeded(2, "split"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint8]bool{}
	for _, part := range []*Dataset{tr, va} {
		for i, y := range part.Y {
			if seen[y] || part.X[i] != float32(y) {
				t.Fatalf("example %d repeated or mismatched", y)
			}
			seen[y] = true
		}
	}
	if tr.N != 7 || va.N != 3 || len(seen) != 10 {
		t.Fatalf("sizes %d/%d, %d distinct", tr.N, va.N, len(seen))
	}
	if _, _, err := Split(d, 11, randsrc.Seeded(2, "split")); err == nil {
		t.Fatal("validation larger than the set accepted")
	}
}
