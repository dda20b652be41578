package scatter

import (
	"github.com/dptune/dptune/internal/gemm"
	"github.com/dptune/dptune/internal/vec"
)

// symDFT is the length-n DFT matrix [C; S] (C[k, t] = cos(2πkt/n),
// S[k, t] = sin(2πkt/n)) reduced by its symmetries, for products C·x and
// S·x along the rows of a matrix x. C is even and S odd in each index:
// C[k, t] = C[k, n−t] = C[n−k, t] and S[k, t] = −S[k, n−t] = −S[n−k, t].
// So with the row sums xs[t] = x[t] + x[n−t] and differences
// xd[t] = x[t] − x[n−t] (1 ≤ t ≤ g = ⌊(n−1)/2⌋; xs[0] = x[0] and, for
// even n, xs[n/2] = x[n/2]),
//
//	(C·x)[k] = (C·x)[n−k] = Σ_{t ≤ n/2} C[k, t]·xs[t]     k ≤ n/2
//	(S·x)[k] = −(S·x)[n−k] = Σ_{1 ≤ t ≤ g} S[k, t]·xd[t]  1 ≤ k ≤ g
//
// and (S·x)[0] = (S·x)[n/2] = 0: two products of about n/2 × n/2 instead
// of two of n × n, a quarter of the multiplications. (This is the
// symmetry of the dense DFT matrix, not a fast transform: the products
// stay dense.)
type symDFT struct {
	n, h, g int
	c       []float32 // h×h: C[k, t], k, t ≤ n/2 (h = n/2 + 1)
	s       []float32 // g×g: S[k, t], 1 ≤ k, t ≤ g
}

func newSymDFT(n int) symDFT {
	h, g := n/2+1, (n-1)/2
	d := symDFT{n: n, h: h, g: g, c: make([]float32, h*h), s: make([]float32, g*g)}
	for k := 0; k < h; k++ {
		for t := 0; t < h; t++ {
			_, d.c[k*h+t] = twiddle(k*t, n)
		}
	}
	for k := 1; k <= g; k++ {
		for t := 1; t <= g; t++ {
			d.s[(k-1)*g+t-1], _ = twiddle(k*t, n)
		}
	}
	return d
}

// products writes (C·x)[k] for k ≤ n/2 to the rows of e (h×wd) and
// (S·x)[k] for 1 ≤ k ≤ g to the rows of o (g×wd), for the n×wd row-major
// x, using sx ((h + g)·wd values) as scratch for xs and xd.
func (d *symDFT) products(e, o, x, sx []float32, wd int) {
	n, h, g := d.n, d.h, d.g
	xs, xd := sx[:h*wd], sx[h*wd:(h+g)*wd]
	copy(xs[:wd], x[:wd])
	for t := 1; t <= g; t++ {
		a, b := x[t*wd:(t+1)*wd], x[(n-t)*wd:(n-t+1)*wd]
		s, df := xs[t*wd:(t+1)*wd], xd[(t-1)*wd:t*wd]
		copy(s, a)
		vec.Add(s, b)
		copy(df, a)
		vec.Axpy(df, -1, b)
	}
	if n%2 == 0 {
		copy(xs[(n/2)*wd:(n/2+1)*wd], x[(n/2)*wd:(n/2+1)*wd])
	}
	e, o = e[:h*wd], o[:g*wd]
	clear(e)
	clear(o)
	gemm.Mul(h, wd, h, d.c, h, 1, xs, wd, e, wd)
	gemm.Mul(g, wd, g, d.s, g, 1, xd, wd, o, wd)
}

// sRow returns row k of S·x from the o of products, and the sign it
// carries: for k ≤ n/2 row k − 1 of o with sign 1, for k > n/2 row
// n − k − 1 with sign −1; nil where S·x is zero (k = 0, k = n/2).
func (d *symDFT) sRow(o []float32, k, wd int) ([]float32, float32) {
	switch {
	case k >= 1 && k <= d.g:
		return o[(k-1)*wd : k*wd], 1
	case k > d.n/2:
		return o[(d.n-k-1)*wd : (d.n-k)*wd], -1
	}
	return nil, 0
}

// cRow returns row k of C·x from the e of products.
func (d *symDFT) cRow(e []float32, k, wd int) []float32 {
	if k > d.n/2 {
		k = d.n - k
	}
	return e[k*wd : (k+1)*wd]
}
