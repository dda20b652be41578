package tuning

import (
	"math"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
)

// Project satisfies the KKT conditions of min ‖f − π‖² over S_{C,c}: one
// shift t with f_i = π_i + t where c/N < f_i < C/N, π_i + t ≤ c/N where
// f_i = c/N and π_i + t ≥ C/N where f_i = C/N; and f sums to 1.
func TestProjectKKT(t *testing.T) {
	rng := randsrc.Seeded(3, "test")
	for trial := 0; trial < 50; trial++ {
		n := 1 + rng.IntN(400)
		pi := make([]float64, n)
		var s float64
		for i := range pi {
			pi[i] = math.Exp(3 * rng.NormFloat64()) // very uneven densities
			s += pi[i]
		}
		for i := range pi {
			pi[i] /= s
		}
		c, C := 0.75, 2.0
		if trial%3 == 1 {
			c, C = 0.5, 1.25
		}
		f := Project(pi, c, C)
		lo, hi := c/float64(n), C/float64(n)
		var sum float64
		shift := math.NaN()
		for i := range f {
			sum += f[i]
			if f[i] < lo || f[i] > hi {
				t.Fatalf("f[%d] = %v outside [%v, %v]", i, f[i], lo, hi)
			}
			if f[i] > lo && f[i] < hi {
				d := f[i] - pi[i]
				if !math.IsNaN(shift) && math.Abs(d-shift) > 1e-12 {
					t.Fatalf("interior shifts differ: %v vs %v", d, shift)
				}
				shift = d
			}
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Fatalf("Σf = %v", sum)
		}
		if !math.IsNaN(shift) {
			for i := range f {
				if (f[i] == lo && pi[i]+shift > lo+1e-12) || (f[i] == hi && pi[i]+shift < hi-1e-12) {
					t.Fatalf("KKT violated at %d: π = %v, f = %v, t = %v", i, pi[i], f[i], shift)
				}
			}
		}
	}
	if Project([]float64{1}, 1.5, 2) != nil {
		t.Error("c > 1 accepted")
	}
}
