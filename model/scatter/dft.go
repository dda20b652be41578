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

// twiddle returns sin and cos of 2π·(p mod n)/n, rounded to float32.
func twiddle(p, n int) (float32, float32) {
	s, c := math.Sincos(2 * math.Pi * float64(p%n) / float64(n))
	return float32(s), float32(c)
}

// idft32 is the unnormalised inverse 2-D DFT of m×n spectra followed by
// the modulus, for batches of cnt spectra.
type idft32 struct {
	m, n   int
	sm, sn symDFT
}

func newIDFT32(m, n int) idft32 {
	return idft32{m: m, n: n, sm: newSymDFT(m), sn: newSymDFT(n)}
}

// absBatch writes |z'_i|·scale, where z'_i is the unnormalised inverse DFT
// of the i-th of cnt m×n spectra with real parts zr and imaginary parts
// zi (m·n values each, one after another), to ut as the wide layout of
// their transposes (n × cnt·m: ut[c, i·m + r] = |z'_i[r, c]|·scale), and
// Σ|z'_i|² to energy[i]. y and w (2·m·n·cnt values each), sa and sb
// (2·cnt·(m·n + m + n) each) are scratch.
//
// zr and zi, as cnt × m·n matrices, are transposed into m rows of
// (column, spectrum) pairs; the DFT along the columns, Y = (C + iS)·Z, is
// two symmetric products for each part (symDFT); the transpose of
// [Re Y; Im Y] (2m × n·cnt) is the wide layout, row c holding [Re | Im] of
// column c of every Y_i, for the DFT along the rows, whose combination
// (C + iS) is taken with the modulus.
func (d *idft32) absBatch(ut []float32, energy []float64, zr, zi, y, w, sa, sb []float32, cnt int, scale float32) {
	m, n := d.m, d.n
	bs, wa, wb := m*n, cnt*n, cnt*2*m
	xr, xi := w[:m*wa], w[m*wa:2*m*wa]
	vec.Transpose(cnt, bs, zr, xr)
	vec.Transpose(cnt, bs, zi, xi)
	h, g := d.sm.h, d.sm.g
	er, or := sb[:h*wa], sb[h*wa:(h+g)*wa]
	ei, oi := sb[(h+g)*wa:(2*h+g)*wa], sb[(2*h+g)*wa:2*(h+g)*wa]
	d.sm.products(er, or, xr, sa, wa)
	d.sm.products(ei, oi, xi, sa, wa)
	for k := 0; k < m; k++ {
		yr, yi := y[k*wa:(k+1)*wa], y[(m+k)*wa:(m+k+1)*wa]
		copy(yr, d.sm.cRow(er, k, wa))
		copy(yi, d.sm.cRow(ei, k, wa))
		if sr, sg := d.sm.sRow(or, k, wa); sr != nil {
			si, _ := d.sm.sRow(oi, k, wa)
			vec.Axpy(yr, -sg, si)
			vec.Axpy(yi, sg, sr)
		}
	}
	vec.Transpose(2*m, wa, y, w)
	p, q := sb[:d.sn.h*wb], sb[d.sn.h*wb:(d.sn.h+d.sn.g)*wb]
	d.sn.products(p, q, w, sa, wb)
	clear(energy[:cnt])
	for u := 0; u < n; u++ {
		qu, sg := d.sn.sRow(q, u, wb)
		modulusRow(ut[u*cnt*m:(u+1)*cnt*m], energy, d.sn.cRow(p, u, wb), qu, sg, cnt, m, scale)
	}
}

// modulusRow writes one row of absBatch's output: for each spectrum i,
// z' = (P + iQ)·… with P = p and Q = sg·q (q nil: zero) as rows
// [Re | Im] of m, Re z' = P_r − Q_i and Im z' = Q_r + P_i; u[i·m + r] =
// |z'|·scale, and energy[i] += Σ|z'|².
func modulusRow(u []float32, energy []float64, p, q []float32, sg float32, cnt, m int, scale float32) {
	for i := 0; i < cnt; i++ {
		pr, pi := p[2*i*m:(2*i+1)*m], p[(2*i+1)*m:(2*i+2)*m]
		o := u[i*m : (i+1)*m]
		var e float32
		if q == nil {
			for r := range o {
				a := pr[r]*pr[r] + pi[r]*pi[r]
				e += a
				o[r] = float32(math.Sqrt(float64(a))) * scale
			}
		} else {
			qr, qi := q[2*i*m:(2*i+1)*m], q[(2*i+1)*m:(2*i+2)*m]
			for r := range o {
				re, im := pr[r]-sg*qi[r], sg*qr[r]+pi[r]
				a := re*re + im*im
				e += a
				o[r] = float32(math.Sqrt(float64(a))) * scale
			}
		}
		energy[i] += float64(e)
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
