package scatter

import (
	"math"

	"github.com/dptune/dptune/internal/gemm"
)

// idft32 is the unnormalised inverse 2-D DFT of m×n spectra, written as
// two real matrix products in float32 (package gemm) so that a batch of
// spectra — the L second-order wavelet products of one |U1| at one scale —
// is inverted by two large products and L small ones instead of
// (m + n)·L FFTs. With C[k, t] = cos(2πkt/n) and S[k, t] = sin(2πkt/n):
//
//	rows: Y = [Zr | Zi]·[[C, S], [−S, C]]      (the DFT along each row)
//	cols: P = Cm·Y, Q = Sm·Y                   (along each column)
//	      Re z' = P_r − Q_i,  Im z' = Q_r + P_i
//
// where P_r, P_i are the left and right halves of P. The outputs are the
// DFTs' values up to float32 rounding: each is a sum of m or n products,
// so the error relative to the spectrum's norm is a few units of float32
// rounding (TestFloat32Stage).
type idft32 struct {
	m, n int
	row  []float32 // 2n×2n, [[C, S], [−S, C]] for length n
	col  []float32 // 2m×m, [Cm; Sm] for length m
}

func newIDFT32(m, n int) idft32 {
	d := idft32{m: m, n: n, row: make([]float32, 4*n*n), col: make([]float32, 2*m*m)}
	for k := 0; k < n; k++ {
		for t := 0; t < n; t++ {
			s, c := twiddle(k*t, n)
			d.row[k*2*n+t] = c
			d.row[k*2*n+n+t] = s
			d.row[(n+k)*2*n+t] = -s
			d.row[(n+k)*2*n+n+t] = c
		}
	}
	for t := 0; t < m; t++ {
		for k := 0; k < m; k++ {
			s, c := twiddle(k*t, m)
			d.col[t*m+k] = c
			d.col[(m+t)*m+k] = s
		}
	}
	return d
}

// twiddle returns sin and cos of 2π·(p mod n)/n, rounded to float32.
func twiddle(p, n int) (float32, float32) {
	s, c := math.Sincos(2 * math.Pi * float64(p%n) / float64(n))
	return float32(s), float32(c)
}

// rows writes to y the DFT along the rows of the cnt spectra whose real
// and imaginary parts are zr and zi (each cnt·m×n, one spectrum after
// another): y = zr·[C, S] + zi·[−S, C], cnt·m rows [Re | Im] of 2n.
func (d *idft32) rows(y, zr, zi []float32, cnt int) {
	n, n2 := d.n, 2*d.n
	y = y[:cnt*d.m*n2]
	clear(y)
	gemm.Mul(cnt*d.m, n2, n, zr, n, 1, d.row[:n*n2], n2, y, n2)
	gemm.Mul(cnt*d.m, n2, n, zi, n, 1, d.row[n*n2:], n2, y, n2)
}

// colsAbs finishes the transform of one spectrum whose row DFTs are y
// (m×2n): it writes |z'|·scale to u (m×n), using pq (2m×2n) as scratch,
// and returns Σ|z'|².
func (d *idft32) colsAbs(u, y, pq []float32, scale float32) float64 {
	m, n, n2 := d.m, d.n, 2*d.n
	pq = pq[:2*m*n2]
	clear(pq)
	gemm.Mul(2*m, n2, m, d.col, m, 1, y, n2, pq, n2)
	var sum float64
	for r := 0; r < m; r++ {
		p := pq[r*n2 : (r+1)*n2]
		q := pq[(m+r)*n2 : (m+r+1)*n2]
		o := u[r*n : (r+1)*n]
		pr, pi := p[:n], p[n:n2]
		qr, qi := q[:n], q[n:n2]
		var rs float32
		for c := range o {
			re, im := pr[c]-qi[c], qr[c]+pi[c]
			a := re*re + im*im
			rs += a
			o[c] = float32(math.Sqrt(float64(a))) * scale
		}
		sum += float64(rs)
	}
	return sum
}

// lowpass32 is denseLowpass in float32 for a batch of real signals:
// G·U·Hᵀ for each of cnt m×n signals stored one after another. Its terms
// are products of non-negative moduli with the low-pass filter's weights,
// so float32 sums lose nothing to cancellation.
type lowpass32 struct {
	gt []float32 // Gᵀ: m×oh
	ht []float32 // Hᵀ: n×ow
}

func newLowpass32(lp denseLowpass) lowpass32 {
	return lowpass32{gt: toFloat32(lp.gt), ht: toFloat32(lp.ht)}
}

func toFloat32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// apply writes G·U_i·Hᵀ (oh×ow) to dst[i·oh·ow:] for the cnt m×n signals
// U_i in u, using t (cnt·m·ow values) as scratch for U·Hᵀ.
func (lp *lowpass32) apply(dst, u, t []float32, cnt, m, n, oh, ow int) {
	t = t[:cnt*m*ow]
	clear(t)
	gemm.Mul(cnt*m, ow, n, u, n, 1, lp.ht, ow, t, ow)
	plane := oh * ow
	d := dst[:cnt*plane]
	clear(d)
	for i := 0; i < cnt; i++ {
		gemm.Mul(oh, ow, m, lp.gt, 1, oh, t[i*m*ow:], ow, d[i*plane:], ow)
	}
}
