package tuning

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// The posterior against the textbook formulas μ* = m + k*ᵀ(K + Σ)⁻¹(y − m),
// σ*² = s² − k*ᵀ(K + Σ)⁻¹k*, computed with an explicit inverse, on three
// observations (one candidate observed twice, pooled).
func TestGPPosteriorClosedForm(t *testing.T) {
	s := Space{Name: "t", Dims: []Dim{{Name: "a", Values: LinearGrid(0, 1, 5)}, {Name: "b", Values: LinearGrid(0, 1, 4)}}}
	g := NewGP(s)
	obs := []struct {
		i int
		y float64
	}{{3, 0.8}, {11, 0.5}, {3, 0.7}, {17, 0.9}}
	for _, o := range obs {
		g.Observe(o.i, o.y)
	}
	mean, sd := g.Posterior()

	// Independent computation.
	all := []float64{0.8, 0.5, 0.7, 0.9}
	var m, v float64
	for _, y := range all {
		m += y / 4
	}
	for _, y := range all {
		v += (y - m) * (y - m) / 3
	}
	s2 := math.Max(v, 1e-4)
	noise := 0.1 * s2
	pts := []int{3, 11, 17}
	ys := []float64{0.75, 0.5, 0.9}
	noiseOf := []float64{noise / 2, noise, noise}
	k := func(i, j int) float64 {
		a, b := s.Coords(i), s.Coords(j)
		d := (a[0]-b[0])*(a[0]-b[0]) + (a[1]-b[1])*(a[1]-b[1])
		return s2 * math.Exp(-d/(2*0.25*0.25))
	}
	K := mat.NewDense(3, 3, nil)
	for a := range 3 {
		for b := range 3 {
			K.Set(a, b, k(pts[a], pts[b]))
		}
		K.Set(a, a, K.At(a, a)+noiseOf[a])
	}
	var inv mat.Dense
	if err := inv.Inverse(K); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < s.Size(); i++ {
		ks := mat.NewVecDense(3, []float64{k(i, pts[0]), k(i, pts[1]), k(i, pts[2])})
		r := mat.NewVecDense(3, []float64{ys[0] - m, ys[1] - m, ys[2] - m})
		var w mat.VecDense
		w.MulVec(&inv, r)
		mu := m + mat.Dot(ks, &w)
		var u mat.VecDense
		u.MulVec(&inv, ks)
		sdv := math.Sqrt(math.Max(0, s2-mat.Dot(ks, &u)))
		if math.Abs(mu-mean[i]) > 1e-9 || math.Abs(sdv-sd[i]) > 1e-9 {
			t.Errorf("candidate %d: (%v, %v), closed form (%v, %v)", i, mean[i], sd[i], mu, sdv)
		}
	}
}
