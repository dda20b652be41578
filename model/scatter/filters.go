package scatter

import (
	"math"

	"gonum.org/v1/gonum/dsp/fourier"
)

// kymatioPi is the value of π that kymatio's gabor_2d uses in its
// normalisation factor 2·3.1415·σ²/slant. It is kept so that the filters,
// and with them the coefficients, have kymatio's scale (π/3.1415 ≈ 1.00003
// at the zero frequency of the low-pass filter).
const kymatioPi = 3.1415

// gabor2D returns the M×N spatial Gabor filter of kymatio's gabor_2d,
// row-major, periodised over the offsets −2…2 in both directions:
//
//	g[x, y] = Σ_{ex,ey=−2..2} exp(−uᵀCu + i ξ (u₁ cos θ + u₂ sin θ)) / (2·3.1415·σ²/slant),
//	u = (x + ex·M, y + ey·N),  C = R diag(1, slant²) R⁻¹ / (2σ²),
//
// with x the row and y the column index and R the rotation by θ. As in
// kymatio, the entries of R are rounded to float32 before C is formed.
func gabor2D(M, N int, sigma, theta, xi, slant float64) []complex128 {
	c := float64(float32(math.Cos(theta)))
	s := float64(float32(math.Sin(theta)))
	// R = [[c, −s], [s, c]], R⁻¹ = [[c, s], [−s, c]], D = diag(1, slant²).
	d := slant * slant
	// R·D = [[c, −s·d], [s, c·d]]; (R·D)·R⁻¹:
	c00 := c*c + s*d*s
	c01 := c*s - s*d*c
	c10 := s*c - c*d*s
	c11 := s*s + c*d*c
	inv := 1 / (2 * sigma * sigma)
	c00 *= inv
	c01 *= inv
	c10 *= inv
	c11 *= inv
	kx := xi * math.Cos(theta)
	ky := xi * math.Sin(theta)

	g := make([]complex128, M*N)
	for ex := -2; ex <= 2; ex++ {
		for ey := -2; ey <= 2; ey++ {
			for x := 0; x < M; x++ {
				xx := float64(x + ex*M)
				for y := 0; y < N; y++ {
					yy := float64(y + ey*N)
					re := -(c00*xx*xx + (c01+c10)*xx*yy + c11*yy*yy)
					im := xx*kx + yy*ky
					m := math.Exp(re)
					sn, cs := math.Sincos(im)
					g[x*N+y] += complex(m*cs, m*sn)
				}
			}
		}
	}
	norm := complex(2*kymatioPi*sigma*sigma/slant, 0)
	for i := range g {
		g[i] /= norm
	}
	return g
}

// morlet2D returns kymatio's morlet_2d: the Gabor filter minus the multiple
// K of its envelope (the Gabor filter with ξ = 0) that gives it zero sum,
// K = Σ gabor / Σ envelope.
func morlet2D(M, N int, sigma, theta, xi, slant float64) []complex128 {
	wv := gabor2D(M, N, sigma, theta, xi, slant)
	env := gabor2D(M, N, sigma, theta, 0, slant)
	var sw, se complex128
	for i := range wv {
		sw += wv[i]
		se += env[i]
	}
	k := sw / se
	for i := range wv {
		wv[i] -= k * env[i]
	}
	return wv
}

// realDFT2 returns the real part of the unnormalised 2-D DFT
// X[k, l] = Σ x[m, n] exp(−2πi(km/M + ln/N)) of the M×N row-major x (the
// convention of numpy's and scipy's fft2). kymatio keeps only this real
// part of its filters' transforms.
func realDFT2(x []complex128, M, N int) []float64 {
	buf := make([]complex128, len(x))
	copy(buf, x)
	fft2(buf, M, N, fourier.NewCmplxFFT(N), fourier.NewCmplxFFT(M), make([]complex128, M), false)
	out := make([]float64, len(x))
	for i, v := range buf {
		out[i] = real(v)
	}
	return out
}

// periodizeFilter returns kymatio's periodize_filter_fft(x, res) of the
// M×N Fourier-domain filter x: the rows from ⌊M·2^−(res+1)⌋ on, ⌊M(1−2^−res)⌋
// of them, and the columns likewise are set to zero (the frequencies that
// would alias), and the result is folded onto (M/2^res)×(N/2^res):
// crop[k, l] = Σ_{i,j<2^res} x[k + i·M/2^res, l + j·N/2^res].
func periodizeFilter(x []float64, M, N, res int) []float64 {
	f := 1 << res
	startX := int(float64(M) * math.Pow(2, float64(-res-1)))
	lenX := int(float64(M) * (1 - math.Pow(2, float64(-res))))
	startY := int(float64(N) * math.Pow(2, float64(-res-1)))
	lenY := int(float64(N) * (1 - math.Pow(2, float64(-res))))
	m, n := M/f, N/f
	crop := make([]float64, m*n)
	for r := 0; r < M; r++ {
		if r >= startX && r < startX+lenX {
			continue
		}
		for c := 0; c < N; c++ {
			if c >= startY && c < startY+lenY {
				continue
			}
			crop[(r%m)*n+c%n] += x[r*N+c]
		}
	}
	return crop
}

// filterBank holds kymatio's filter_bank(M, N, J, L) in the Fourier domain:
// psi[j·L+θ][res] for res < min(j+1, max(J−1, 1)) and phi[res] for res < J,
// each a real (M/2^res)×(N/2^res) row-major array.
type filterBank struct {
	psi [][][]float64
	phi [][]float64
}

// newFilterBank builds kymatio's Morlet filter bank for the padded size
// M×N: for scale j < J and orientation index θ < L the Morlet filter with
// σ = 0.8·2^j, angle (⌊L − L/2 − 1⌋ − θ)·π/L, ξ = 3π/(4·2^j) and
// slant 4/L; and the low-pass filter, the Gabor filter with σ = 0.8·2^(J−1),
// ξ = 0, slant 1.
func newFilterBank(M, N, J, L int) filterBank {
	var fb filterBank
	psiLevels := J - 1
	if psiLevels < 1 {
		psiLevels = 1
	}
	thetaShift := int(float64(L) - float64(L)/2 - 1)
	for j := 0; j < J; j++ {
		for t := 0; t < L; t++ {
			sigma := 0.8 * math.Pow(2, float64(j))
			theta := float64(thetaShift-t) * math.Pi / float64(L)
			xi := 3.0 / 4.0 * math.Pi / math.Pow(2, float64(j))
			slant := 4.0 / float64(L)
			full := realDFT2(morlet2D(M, N, sigma, theta, xi, slant), M, N)
			nl := min(j+1, psiLevels)
			levels := make([][]float64, nl)
			for res := range levels {
				levels[res] = periodizeFilter(full, M, N, res)
			}
			fb.psi = append(fb.psi, levels)
		}
	}
	full := realDFT2(gabor2D(M, N, 0.8*math.Pow(2, float64(J-1)), 0, 0, 1), M, N)
	fb.phi = make([][]float64, J)
	for res := range fb.phi {
		fb.phi[res] = periodizeFilter(full, M, N, res)
	}
	return fb
}
