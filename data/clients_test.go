package data

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// labelled returns a dataset whose single pixel is the example's index, so
// a split can be checked for coverage.
func labelled(n, classes int) *Dataset {
	d := &Dataset{Name: "toy", X: make([]float32, n), Y: make([]uint8, n), N: n, C: 1, H: 1, W: 1, Classes: classes}
	for i := range n {
		d.X[i] = float32(i)
		d.Y[i] = uint8(i % classes)
	}
	return d
}

func TestSplitClientsCoversOnce(t *testing.T) {
	d := labelled(5000, 10)
	for _, alpha := range []float64{0, 0.1, 0.5, 1, 10} {
		parts, err := SplitClients(d, 7, alpha, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		var seen []int
		for _, p := range parts {
			for _, x := range p.X {
				seen = append(seen, int(x))
			}
		}
		slices.Sort(seen)
		for i, x := range seen {
			if i != x {
				t.Fatalf("α = %v: examples are not dealt exactly once (position %d holds %d)", alpha, i, x)
			}
		}
		if len(seen) != d.N {
			t.Fatalf("α = %v: %d of %d examples dealt", alpha, len(seen), d.N)
		}
	}
}

// TestSplitClientsSkew: the mean share of a client's most common label is
// 1/10 for a perfectly IID split of 10 balanced labels, near 1 at α = 0.05,
// and near 1/10 at α = 1000.
func TestSplitClientsSkew(t *testing.T) {
	d := labelled(20000, 10)
	top := func(alpha float64) float64 {
		parts, err := SplitClients(d, 10, alpha, rand.New(rand.NewPCG(3, 4)))
		if err != nil {
			t.Fatal(err)
		}
		s, m := 0.0, 0
		for _, counts := range LabelCounts(parts) {
			total := 0
			for _, c := range counts {
				total += c
			}
			if total > 0 {
				s += float64(slices.Max(counts)) / float64(total)
				m++
			}
		}
		return s / float64(m)
	}
	if f := top(0); f > 0.13 {
		t.Errorf("IID: top-label share %.3f, want ≈ 0.1", f)
	}
	if f := top(1000); f > 0.13 {
		t.Errorf("α = 1000: top-label share %.3f, want ≈ 0.1", f)
	}
	if f := top(0.05); f < 0.6 {
		t.Errorf("α = 0.05: top-label share %.3f, want most of each client's data in one label", f)
	}
}

func TestSplitClientsErrors(t *testing.T) {
	d := labelled(10, 2)
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct {
		n     int
		alpha float64
	}{{0, 0}, {11, 0}, {3, -1}} {
		if _, err := SplitClients(d, c.n, c.alpha, rng); err == nil {
			t.Errorf("%d clients, α = %v: no error", c.n, c.alpha)
		}
	}
}
