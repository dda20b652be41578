package data

import (
	"math"
	"testing"
)

// poissonFixture is n one-pixel examples; dup > 0 makes every example the
// same image with label 0.
func poissonFixture(n int, dup bool) *Dataset {
	d := &Dataset{Name: "t", X: make([]float32, n), Y: make([]uint8, n), N: n, C: 1, H: 1, W: 1, Classes: 10}
	for i := 0; i < n; i++ {
		if !dup {
			d.X[i], d.Y[i] = float32(i), uint8(i%10)
		}
	}
	return d
}

// A Poisson subsample of ratio q keeps a Binomial(n, q) number of examples:
// within 5 standard deviations of qn, for distinct examples and for n
// copies of one example alike (each copy is its own draw).
func TestPoissonSubsampleSize(t *testing.T) {
	var key [32]byte
	key[3] = 9
	n := 20000
	for _, dup := range []bool{false, true} {
		for _, q := range []float64{0.05, 0.1, 0.5} {
			for name, f := range map[string]func(*Dataset) (*Dataset, error){
				"mac":    func(d *Dataset) (*Dataset, error) { return PoissonSubsampleMAC(d, q, key) },
				"seeded": func(d *Dataset) (*Dataset, error) { return PoissonSubsample(d, q, 7) },
			} {
				s, err := f(poissonFixture(n, dup))
				if err != nil {
					t.Fatal(err)
				}
				mean, sd := q*float64(n), math.Sqrt(float64(n)*q*(1-q))
				if math.Abs(float64(s.N)-mean) > 5*sd {
					t.Errorf("%s, duplicates %v, q = %v: kept %d of %d, want %.0f ± %.0f", name, dup, q, s.N, n, mean, 5*sd)
				}
			}
		}
	}
}

// Adding one example changes the subset by that example at most (add/remove
// adjacency of a Poisson subsample), also when it duplicates an example
// already there; the whole set at q = 1; another key gives another subset.
func TestPoissonSubsampleNeighbours(t *testing.T) {
	var key [32]byte
	key[0] = 1
	n := 3000
	d := poissonFixture(n, false)
	d.X[n-1], d.Y[n-1] = d.X[0], d.Y[0] // the last example duplicates the first
	less := d.Subset("less", func() []int {
		idx := make([]int, n-1)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}())
	full, err := PoissonSubsampleMAC(d, 0.3, key)
	if err != nil {
		t.Fatal(err)
	}
	part, err := PoissonSubsampleMAC(less, 0.3, key)
	if err != nil {
		t.Fatal(err)
	}
	if full.N < part.N || full.N > part.N+1 {
		t.Fatalf("one added example changed the subset from %d to %d examples", part.N, full.N)
	}
	for i := 0; i < part.N; i++ {
		if full.X[i] != part.X[i] || full.Y[i] != part.Y[i] {
			t.Fatalf("example %d of the subset differs once one example is added", i)
		}
	}
	all, err := PoissonSubsampleMAC(d, 1, key)
	if err != nil || all.N != n {
		t.Fatalf("q = 1 kept %d of %d (%v)", all.N, n, err)
	}
	key[31] ^= 1
	other, err := PoissonSubsampleMAC(d, 0.3, key)
	if err != nil {
		t.Fatal(err)
	}
	same := other.N == full.N
	for i := 0; same && i < full.N; i++ {
		same = other.X[i] == full.X[i]
	}
	if same {
		t.Fatal("a key differing in one bit gave the same subset")
	}
	for _, q := range []float64{0, -0.1, 1.5, math.NaN()} {
		if _, err := PoissonSubsampleMAC(d, q, key); err == nil {
			t.Errorf("ratio %v accepted", q)
		}
	}
}
