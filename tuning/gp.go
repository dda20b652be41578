package tuning

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// GP is the Gaussian-process surrogate of DP-HyPO's Algorithm 3 over a
// space's grid: a squared-exponential kernel on the normalised coordinates
// (Space.Coords), k(x, x') = s²·exp(−‖x − x'‖²/(2ℓ²)).
//
// Its hyperparameters are fixed, not fitted (with a handful of noisy scores
// a marginal-likelihood fit is unstable): length scale ℓ = LengthScale; prior
// mean the mean of the observed scores; signal variance s² their sample
// variance (at least 1e-4); observation noise variance NoiseRatio·s².
// Repeated scores of one candidate are pooled: their mean, with noise
// variance divided by their count, which is the same posterior.
type GP struct {
	LengthScale float64 // default 0.25
	NoiseRatio  float64 // default 0.1
	coords      [][]float64
	sum, sumsq  map[int]float64
	count       map[int]int
	order       []int // candidates in order of first observation
}

// NewGP returns a GP over the candidates of s with no observations.
func NewGP(s Space) *GP {
	g := &GP{LengthScale: 0.25, NoiseRatio: 0.1, sum: map[int]float64{}, sumsq: map[int]float64{}, count: map[int]int{}}
	for i := 0; i < s.Size(); i++ {
		g.coords = append(g.coords, s.Coords(i))
	}
	return g
}

// Observe adds a score of candidate i.
func (g *GP) Observe(i int, score float64) {
	if g.count[i] == 0 {
		g.order = append(g.order, i)
	}
	g.sum[i] += score
	g.sumsq[i] += score * score
	g.count[i]++
}

func (g *GP) kernel(a, b []float64, s2 float64) float64 {
	var d float64
	for k := range a {
		d += (a[k] - b[k]) * (a[k] - b[k])
	}
	return s2 * math.Exp(-d/(2*g.LengthScale*g.LengthScale))
}

// Posterior returns the posterior mean and standard deviation of the score
// at every candidate (Rasmussen & Williams 2006, Algorithm 2.1, by Cholesky
// factorisation). With no observations it returns zeros.
func (g *GP) Posterior() (mean, sd []float64) {
	N := len(g.coords)
	mean, sd = make([]float64, N), make([]float64, N)
	n := len(g.order)
	if n == 0 {
		return mean, sd
	}
	// Pooled observations, prior mean and signal variance from all scores.
	y := make([]float64, n)
	var m, total, total2 float64
	var cnt int
	for j, i := range g.order {
		y[j] = g.sum[i] / float64(g.count[i])
		total += g.sum[i]
		total2 += g.sumsq[i]
		cnt += g.count[i]
	}
	m = total / float64(cnt)
	s2 := 1e-4
	if cnt > 1 {
		s2 = math.Max(s2, (total2-float64(cnt)*m*m)/float64(cnt-1))
	}
	noise := g.NoiseRatio * s2
	K := mat.NewSymDense(n, nil)
	for a := 0; a < n; a++ {
		for b := a; b < n; b++ {
			k := g.kernel(g.coords[g.order[a]], g.coords[g.order[b]], s2)
			if a == b {
				k += noise / float64(g.count[g.order[a]])
			}
			K.SetSym(a, b, k)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(K) {
		return mean, sd // cannot happen with a positive nugget; stay uniform
	}
	r := mat.NewVecDense(n, nil)
	for j := range y {
		r.SetVec(j, y[j]-m)
	}
	var alpha mat.VecDense
	if err := ch.SolveVecTo(&alpha, r); err != nil {
		return mean, sd
	}
	ks := mat.NewDense(n, N, nil) // k(x_obs, x_*)
	for a := 0; a < n; a++ {
		for i := 0; i < N; i++ {
			ks.Set(a, i, g.kernel(g.coords[g.order[a]], g.coords[i], s2))
		}
	}
	var V mat.Dense // K⁻¹ k_*
	if err := ch.SolveTo(&V, ks); err != nil {
		return mean, sd
	}
	for i := 0; i < N; i++ {
		var mu, q float64
		for a := 0; a < n; a++ {
			kai := ks.At(a, i)
			mu += kai * alpha.AtVec(a)
			q += kai * V.At(a, i)
		}
		mean[i] = m + mu
		sd[i] = math.Sqrt(math.Max(0, s2-q))
	}
	return mean, sd
}

// softmax returns exp(β·s_i)/Σ exp(β·s_j).
func softmax(s []float64, beta float64) []float64 {
	m := math.Inf(-1)
	for _, v := range s {
		m = math.Max(m, beta*v)
	}
	out := make([]float64, len(s))
	var z float64
	for i, v := range s {
		out[i] = math.Exp(beta*v - m)
		z += out[i]
	}
	for i := range out {
		out[i] /= z
	}
	return out
}
