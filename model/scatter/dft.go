package scatter

import (
	"math"

	"github.com/dptune/dptune/internal/gemm"
	"github.com/dptune/dptune/internal/vec"
)

// The float32 stage computes its 2-D DFTs as real matrix products
// (package gemm) on batches of cnt signals at once, laid out so that each
// large product is as wide as the whole batch rather than one signal (the
// micro-kernels then run on full blocks): a batch of m×n arrays A_i is
// stored "wide", as rows each holding row r of every A_i side by side, and
// a DFT along the columns of all of them is one product with the DFT
// matrix. Between the two directions the batch is transposed by
// whole-matrix transposes (vec.Transpose).
//
// With C[k, t] = cos(2πkt/n) and S[k, t] = sin(2πkt/n) the inverse DFT
// along the columns of a complex Z is (C + iS)·Z = (C·Zr − S·Zi) +
// i(S·Zr + C·Zi), and the forward one (C − iS)·Z. The values are the DFTs'
// up to float32 rounding: each is a sum of m, n or 2m products, so the
// error relative to the input's norm is a few units of float32 rounding
// (TestFloat32Stage).

// dftMat returns [C; S], 2n×n, row-major, rounded to float32.
func dftMat(n int) []float32 {
	cs := make([]float32, 2*n*n)
	for k := 0; k < n; k++ {
		for t := 0; t < n; t++ {
			s, c := twiddle(k*t, n)
			cs[k*n+t] = c
			cs[(n+k)*n+t] = s
		}
	}
	return cs
}

// twiddle returns sin and cos of 2π·(p mod n)/n, rounded to float32.
func twiddle(p, n int) (float32, float32) {
	s, c := math.Sincos(2 * math.Pi * float64(p%n) / float64(n))
	return float32(s), float32(c)
}

// idft32 is the unnormalised inverse 2-D DFT of m×n spectra followed by
// the modulus, for batches of cnt spectra.
type idft32 struct {
	m, n int
	colM []float32 // 2m×2m: [[C, −S], [S, C]] for length m
	colN []float32 // dftMat(n)
}

func newIDFT32(m, n int) idft32 {
	d := idft32{m: m, n: n, colM: make([]float32, 4*m*m), colN: dftMat(n)}
	for k := 0; k < m; k++ {
		for t := 0; t < m; t++ {
			s, c := twiddle(k*t, m)
			d.colM[k*2*m+t], d.colM[k*2*m+m+t] = c, -s
			d.colM[(m+k)*2*m+t], d.colM[(m+k)*2*m+m+t] = s, c
		}
	}
	return d
}

// absBatch writes |z'_i|·scale, where z'_i is the unnormalised inverse DFT
// of the i-th of cnt m×n spectra with real parts zr and imaginary parts
// zi (m·n values each, one after another), to ut as the wide layout of
// their transposes (n × cnt·m: ut[c, i·m + r] = |z'_i[r, c]|·scale), and
// Σ|z'_i|² to energy[i]. w (2·m·n·cnt values) and pq (4·m·n·cnt) are
// scratch.
//
// The transposes are whole-matrix ones (vec.Transpose): zr as cnt × m·n
// becomes m rows of (column, spectrum) pairs, the DFT along the columns is
// one product [[C, −S], [S, C]]·[Zr; Zi], and the transpose of its
// 2m × n·cnt result is the wide layout, row c holding [Re | Im] of column
// c of every Y_i, for the DFT along the rows, [C; S]·w, whose
// combination (C + iS) is taken with the modulus.
func (d *idft32) absBatch(ut []float32, energy []float64, zr, zi, w, pq []float32, cnt int, scale float32) {
	m, n := d.m, d.n
	bs, wa, wb := m*n, cnt*n, cnt*2*m
	vec.Transpose(cnt, bs, zr, w[:cnt*bs])
	vec.Transpose(cnt, bs, zi, w[cnt*bs:2*cnt*bs])
	pq = pq[:2*m*wa]
	clear(pq)
	gemm.Mul(2*m, wa, 2*m, d.colM, 2*m, 1, w, wa, pq, wa)
	vec.Transpose(2*m, wa, pq, w)
	pq = pq[:2*n*wb]
	clear(pq)
	gemm.Mul(2*n, wb, n, d.colN, n, 1, w, wb, pq, wb)
	p, q := pq[:n*wb], pq[n*wb:]
	clear(energy[:cnt])
	for c := 0; c < n; c++ {
		for i := 0; i < cnt; i++ {
			o := c*wb + i*2*m
			pr, pi, qr, qi := p[o:o+m], p[o+m:o+2*m], q[o:o+m], q[o+m:o+2*m]
			u := ut[c*cnt*m+i*m : c*cnt*m+(i+1)*m]
			var e float32
			for r := range u {
				re, im := pr[r]-qi[r], qr[r]+pi[r]
				a := re*re + im*im
				e += a
				u[r] = float32(math.Sqrt(float64(a))) * scale
			}
			energy[i] += float64(e)
		}
	}
}

// lowpass32 is denseLowpass in float32, for a batch of real signals in
// the transposed wide layout absBatch writes. Its terms are products of
// non-negative moduli with the low-pass filter's weights, so float32 sums
// lose nothing to cancellation.
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
// U_i given as ut, the wide layout of their transposes (n × cnt·m), using
// t (ow·cnt·m values) and st (ow·oh) as scratch: T = H·ut holds the
// (U_i·Hᵀ)ᵀ side by side, and each T_i·Gᵀ is S_iᵀ.
func (lp *lowpass32) apply(dst, ut, t, st []float32, cnt, m, n, oh, ow int) {
	wt := cnt * m
	t = t[:ow*wt]
	clear(t)
	gemm.Mul(ow, wt, n, lp.ht, 1, ow, ut, wt, t, wt)
	plane := oh * ow
	st = st[:plane]
	for i := 0; i < cnt; i++ {
		clear(st)
		gemm.Mul(ow, oh, m, t[i*m:], wt, 1, lp.gt, oh, st, oh)
		d := dst[i*plane : (i+1)*plane]
		for o := 0; o < oh; o++ {
			for p := 0; p < ow; p++ {
				d[o*ow+p] = st[p*oh+o]
			}
		}
	}
}
