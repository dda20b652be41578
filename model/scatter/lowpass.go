package scatter

import "gonum.org/v1/gonum/dsp/fourier"

// maxDense is the largest padded side for which New builds the dense
// low-pass operators; larger images are low-passed through the FFT, whose
// cost grows more slowly with the size.
const maxDense = 128

// denseLowpass is kymatio's last step for a real signal U at resolution
// 2^r, written as one real linear map: the product with the low-pass φ in
// the Fourier domain, the subsampling to 2^J by periodisation, the inverse
// FFT, the real part and the removal of one sample on each side. kymatio's
// φ is the Gabor filter with θ = 0, ξ = 0 and slant 1, an isotropic
// Gaussian whose periodised Fourier transform, at every resolution, is an
// outer product a⊗b of a real, even row factor and column factor; so the
// map is separable, S = G·U·Hᵀ, with
//
//	G[o, i] = k_a[(2^(J−r)·(o+1) − i) mod m],  k_a = ifft(a) (real),
//
// H likewise from b, o the output row (0 ≤ o < oh) and i the row of the
// m×n signal U. The "+1" is the unpadding; the subsampling keeps every
// 2^(J−r)-th sample of the circular convolution U ⋆ ifft2(φ). It gives
// the values of the Fourier-domain computation up to rounding (see
// TestDenseLowpass) and replaces its forward FFT, filter product,
// periodisation and inverse FFT by m·n·oh + oh·ow·n multiply-adds.
type denseLowpass struct {
	gt []float64 // Gᵀ: m×oh, row-major (gt[i·oh + o] = G[o, i])
	ht []float64 // Hᵀ: n×ow, row-major (ht[i·ow + p] = H[p, i])
}

// newDenseLowpass builds the operator for the m×n Fourier-domain low-pass
// phi (a level of filterBank.phi), subsampling factor f = 2^(J−r) and
// output oh×ow. The row factor is phi's first column and the column factor
// its first row divided by phi[0] (the value at the zero frequency, which
// is positive).
func newDenseLowpass(phi []float64, m, n, f, oh, ow int) denseLowpass {
	a := make([]float64, m)
	for k := range a {
		a[k] = phi[k*n]
	}
	b := make([]float64, n)
	for l := range b {
		b[l] = phi[l] / phi[0]
	}
	ka, kb := realIFFT(a), realIFFT(b)
	lp := denseLowpass{gt: make([]float64, m*oh), ht: make([]float64, n*ow)}
	for o := 0; o < oh; o++ {
		for i := 0; i < m; i++ {
			lp.gt[i*oh+o] = ka[mod(f*(o+1)-i, m)]
		}
	}
	for p := 0; p < ow; p++ {
		for i := 0; i < n; i++ {
			lp.ht[i*ow+p] = kb[mod(f*(p+1)-i, n)]
		}
	}
	return lp
}

// realIFFT returns the real part of numpy's ifft of the real sequence a,
// (1/len a)·Σ_k a[k] exp(2πi·k·x/len a).
func realIFFT(a []float64) []float64 {
	n := len(a)
	z := make([]complex128, n)
	for i, v := range a {
		z[i] = complex(v, 0)
	}
	fourier.NewCmplxFFT(n).Sequence(z, z)
	out := make([]float64, n)
	for i, v := range z {
		out[i] = real(v) / float64(n)
	}
	return out
}

func mod(i, n int) int {
	i %= n
	if i < 0 {
		i += n
	}
	return i
}

// apply writes G·U·Hᵀ, oh×ow, to dst for the m×n row-major u, using t
// (at least oh·(n + ow) values) as scratch for G·U and one output row.
func (lp *denseLowpass) apply(dst []float32, u, t []float64, m, n, oh, ow int) {
	gu, acc := t[:oh*n], t[oh*n:oh*n+ow]
	for i := range gu {
		gu[i] = 0
	}
	for i := 0; i < m; i++ {
		row := u[i*n : (i+1)*n]
		g := lp.gt[i*oh : (i+1)*oh]
		for o, w := range g {
			to := gu[o*n : (o+1)*n]
			for c, v := range row {
				to[c] += w * v
			}
		}
	}
	for o := 0; o < oh; o++ {
		for p := range acc {
			acc[p] = 0
		}
		for c, v := range gu[o*n : (o+1)*n] {
			h := lp.ht[c*ow : (c+1)*ow]
			for p, w := range h {
				acc[p] += v * w
			}
		}
		d := dst[o*ow : (o+1)*ow]
		for p, v := range acc {
			d[p] = float32(v)
		}
	}
}
