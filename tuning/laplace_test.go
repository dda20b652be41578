package tuning

import (
	"math"
	"sort"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
)

// The noise's distribution matches Laplace(b) by a Kolmogorov–Smirnov test,
// and every output lies on the grid (no input-dependent low-order bits).
func TestGridLaplace(t *testing.T) {
	rng := randsrc.Seeded(11, "test")
	for _, b := range []float64{0.05, 2, 40} {
		l, err := NewGridLaplace(b)
		if err != nil {
			t.Fatal(err)
		}
		const n = 20000
		x := 0.123456789
		s := make([]float64, n)
		for i := range s {
			y := l.Add(x, rng)
			if q := y / l.Granularity; q != math.Trunc(q) {
				t.Fatalf("output %v is off the grid %v", y, l.Granularity)
			}
			s[i] = y - x
		}
		sort.Float64s(s)
		var d float64
		for i, v := range s {
			var F float64
			if v < 0 {
				F = 0.5 * math.Exp(v/b)
			} else {
				F = 1 - 0.5*math.Exp(-v/b)
			}
			d = math.Max(d, math.Max(math.Abs(F-float64(i)/n), math.Abs(F-float64(i+1)/n)))
		}
		// KS critical value at level 0.001: 1.95/√n.
		if d > 1.95/math.Sqrt(n) {
			t.Errorf("b=%v: KS distance %v", b, d)
		}
		if f := l.EpsilonFactor(0.1); f < 1 || f > 1+1e-9 {
			t.Errorf("b=%v: ε factor %v", b, f)
		}
	}
	if _, err := NewGridLaplace(0); err == nil {
		t.Error("scale 0 accepted")
	}
}
