package scatter

import (
	"fmt"
	"math"
	"math/cmplx"
	"sync"

	"gonum.org/v1/gonum/dsp/fourier"
)

// Limits on the settings New accepts. They keep the filter bank and the
// output to a size that fits in memory; kymatio itself has no upper limits.
const (
	// MaxJ is the largest number of scales.
	MaxJ = 8
	// MaxL is the largest number of orientations.
	MaxL = 32
	// MaxPixels is the largest padded image (rows × columns).
	MaxPixels = 1 << 22
	// MaxFilterValues bounds J·L·(padded pixels), the size of the
	// wavelets at full resolution (the whole bank is less than 4/3 of it
	// plus the low-pass filter), 256 MiB of float64.
	MaxFilterValues = 1 << 25
)

// Scattering is the 2-D scattering transform of kymatio's Scattering2D
// (max order 2) for one image size, scale J and number of orientations L.
// Its filters are computed once by New and never change, so one Scattering
// may be used by several goroutines at once; each call of Transform borrows
// a work space from a pool, so Transform does not allocate once the pool is
// warm.
type Scattering struct {
	h, w int // input size
	j, l int // scales, orientations
	mp   int // padded rows (multiple of 2^J)
	np   int // padded columns (multiple of 2^J)
	top  int // rows of reflection padding above the image
	left int // columns of reflection padding left of the image
	k    int // output channels per input channel
	oh   int // output rows
	ow   int // output columns

	fb   filterBank
	pool sync.Pool // *workspace
}

// workspace holds what one Transform call writes: FFT plans (gonum's plans
// keep internal buffers, so they are not shared) and the intermediate
// spectra. Real signals are transformed two at a time, as the real and
// imaginary parts of one complex signal.
type workspace struct {
	rowFFT []*fourier.CmplxFFT // per resolution r: length np/2^r
	colFFT []*fourier.CmplxFFT // per resolution r: length mp/2^r
	col    []complex128        // one column, length mp
	x0     []complex128        // spectrum of the padded image, mp×np
	u1     [2][]complex128     // first-order signals and spectra at resolution j1
	u2     [2][]complex128     // second-order signals and spectra at resolution j2
	s      [2][]complex128     // low-passed spectra at resolution J
	z      []complex128        // the pair of outputs as one signal, resolution J
}

// NumChannels returns 1 + J·L + L²·J(J−1)/2, the number of scattering
// channels of order at most 2 per input channel (81 for J = 2, L = 8).
func NumChannels(J, L int) int {
	return 1 + J*L + L*L*J*(J-1)/2
}

// paddedSize returns kymatio's compute_padding(M, N, J): each side is
// padded to (⌊(side + 2^J)/2^J⌋ + 1)·2^J, a multiple of 2^J at least 2^J
// larger than the side.
func paddedSize(h, w, J int) (int, int) {
	f := 1 << J
	return ((h+f)/f + 1) * f, ((w+f)/f + 1) * f
}

// New returns the scattering transform for h×w images with J scales and L
// orientations. Its output per input channel is NumChannels(J, L) channels
// of ⌊h/2^J⌋×⌊w/2^J⌋ (7×7 for MNIST's 28×28, 8×8 for 32×32), as kymatio
// gives. New refuses, with an error, J outside 1…MaxJ, L outside 1…MaxL,
// sides smaller than 2^J (kymatio's own condition), images whose padded
// size exceeds MaxPixels and settings whose filter bank exceeds
// MaxFilterValues.
func New(h, w, J, L int) (*Scattering, error) {
	if err := Check(h, w, J, L); err != nil {
		return nil, err
	}
	f := 1 << J
	mp, np := paddedSize(h, w, J)
	s := &Scattering{
		h: h, w: w, j: J, l: L,
		mp: mp, np: np,
		top:  (mp - h) / 2,
		left: (np - w) / 2,
		k:    NumChannels(J, L),
		oh:   mp/f - 2,
		ow:   np/f - 2,
	}
	s.fb = newFilterBank(mp, np, J, L)
	s.pool.New = func() any { return s.newWorkspace() }
	return s, nil
}

// Check returns the error New would return for these sizes, without
// building the filter bank; nil if New accepts them.
func Check(h, w, J, L int) error {
	if J < 1 || J > MaxJ {
		return fmt.Errorf("scatter: J = %d out of range 1…%d", J, MaxJ)
	}
	if L < 1 || L > MaxL {
		return fmt.Errorf("scatter: L = %d out of range 1…%d", L, MaxL)
	}
	f := 1 << J
	if h < f || w < f {
		return fmt.Errorf("scatter: image %d×%d has a side smaller than 2^J = %d", h, w, f)
	}
	if h > MaxPixels || w > MaxPixels {
		return fmt.Errorf("scatter: image %d×%d too large (at most %d padded pixels)", h, w, MaxPixels)
	}
	mp, np := paddedSize(h, w, J)
	if mp*np > MaxPixels {
		return fmt.Errorf("scatter: image %d×%d too large: padded to %d×%d, more than %d pixels", h, w, mp, np, MaxPixels)
	}
	if J*L*mp*np > MaxFilterValues {
		return fmt.Errorf("scatter: J = %d, L = %d on a %d×%d image need %d filter values, more than %d", J, L, h, w, J*L*mp*np, MaxFilterValues)
	}
	return nil
}

// OutShape returns the number of output channels and the output rows and
// columns for one input channel: Transform's dst holds k·oh·ow values.
func (s *Scattering) OutShape() (k, oh, ow int) { return s.k, s.oh, s.ow }

// InShape returns the image rows and columns New was given.
func (s *Scattering) InShape() (h, w int) { return s.h, s.w }

// Params returns J and L.
func (s *Scattering) Params() (J, L int) { return s.j, s.l }

func (s *Scattering) newWorkspace() *workspace {
	full := s.mp * s.np
	out := (s.mp >> s.j) * (s.np >> s.j)
	ws := &workspace{
		rowFFT: make([]*fourier.CmplxFFT, s.j+1),
		colFFT: make([]*fourier.CmplxFFT, s.j+1),
		col:    make([]complex128, s.mp),
		x0:     make([]complex128, full),
		z:      make([]complex128, out),
	}
	for i := range 2 {
		ws.u1[i] = make([]complex128, full)
		ws.u2[i] = make([]complex128, full/4)
		ws.s[i] = make([]complex128, out)
	}
	for r := 0; r <= s.j; r++ {
		ws.rowFFT[r] = fourier.NewCmplxFFT(s.np >> r)
		ws.colFFT[r] = fourier.NewCmplxFFT(s.mp >> r)
	}
	return ws
}

// Transform writes the scattering coefficients of img, an h×w image in
// row-major order, to dst, k·oh·ow values laid out [channel][row][column]
// with k, oh, ow from OutShape. The channels are in kymatio's order: S0;
// then S1 for j·L + θ; then S2 for (j1, θ1, j2, θ2) with j2 > j1, j1 the
// slowest and θ2 the fastest index. It returns an error, and writes
// nothing, when len(img) ≠ h·w or len(dst) ≠ k·oh·ow. Transform is safe for
// concurrent use.
//
// The computation is kymatio's scattering2d (kymatio/scattering2d/core):
// reflection padding to paddedSize; the 2-D FFT; products with the filters
// in the Fourier domain; subsampling in the Fourier domain by periodisation;
// inverse FFT and modulus for each wavelet; the low-pass φ applied at the
// resolution of the last wavelet (2^j1 for S1, 2^j2 for S2) followed by
// subsampling to 2^J; the real part of the inverse FFT; and removal of one
// output row and column on each side. It is computed in float64 and
// rounded to float32 at the end.
func (s *Scattering) Transform(dst, img []float32) error {
	if len(img) != s.h*s.w {
		return fmt.Errorf("scatter: image has %d values, want %d×%d = %d", len(img), s.h, s.w, s.h*s.w)
	}
	if len(dst) != s.k*s.oh*s.ow {
		return fmt.Errorf("scatter: output has room for %d values, want %d×%d×%d = %d", len(dst), s.k, s.oh, s.ow, s.k*s.oh*s.ow)
	}
	ws := s.pool.Get().(*workspace)
	s.transform(ws, dst, img)
	s.pool.Put(ws)
	return nil
}

// TransformChannels transforms a c-channel image, c·h·w values laid out
// [channel][row][column], channel by channel, and writes the results one
// after another to dst, c·k·oh·ow values: input channel i gives output
// channels i·k … i·k + k − 1 (kymatio's (c, k, oh, ow) output read as
// (c·k, oh, ow); 243×8×8 for a CIFAR-10 image). It returns an error, and
// writes nothing, when c < 1 or the lengths do not match.
func (s *Scattering) TransformChannels(dst, img []float32, c int) error {
	in, out := s.h*s.w, s.k*s.oh*s.ow
	if c < 1 || c > len(img) {
		return fmt.Errorf("scatter: %d channels", c)
	}
	if len(img) != c*in {
		return fmt.Errorf("scatter: image has %d values, want %d×%d×%d = %d", len(img), c, s.h, s.w, c*in)
	}
	if len(dst) != c*out {
		return fmt.Errorf("scatter: output has room for %d values, want %d×%d×%d×%d = %d", len(dst), c, s.k, s.oh, s.ow, c*out)
	}
	ws := s.pool.Get().(*workspace)
	for i := 0; i < c; i++ {
		s.transform(ws, dst[i*out:(i+1)*out], img[i*in:(i+1)*in])
	}
	s.pool.Put(ws)
	return nil
}

func (s *Scattering) transform(ws *workspace, dst, img []float32) {
	J, L := s.j, s.l
	mp, np := s.mp, s.np
	plane := s.oh * s.ow
	out := func(ch int) []float32 { return dst[ch*plane : (ch+1)*plane] }

	// Reflection padding (numpy's "reflect": the edge is not repeated).
	for r := 0; r < mp; r++ {
		sr := reflect(r-s.top, s.h)
		row := ws.x0[r*np : (r+1)*np]
		src := img[sr*s.w : (sr+1)*s.w]
		for c := range row {
			row[c] = complex(float64(src[reflect(c-s.left, s.w)]), 0)
		}
	}
	s.fft2(ws, ws.x0, 0, false)

	// S0 = x ⋆ φ, subsampled by 2^J.
	mulSub(ws.s[0], ws.x0, s.fb.phi[0], mp, np, 1<<J)
	s.emit(ws, 1, out(0), nil)

	s2 := 1 + J*L // channel of the next S2 coefficient
	for n1 := 0; n1 < J*L; {
		j1 := n1 / L
		m1, c1 := mp>>j1, np>>j1
		// Two first-order paths at a time when they share j1.
		cnt := 1
		if n1+1 < J*L && (n1+1)/L == j1 {
			cnt = 2
		}
		for i := range cnt {
			// U1 = |x ⋆ ψ_{j1,θ1}|, at resolution 2^j1.
			u := ws.u1[i][:m1*c1]
			mulSub(u, ws.x0, s.fb.psi[n1+i][0], mp, np, 1<<j1)
			s.fft2(ws, u, j1, true)
			modulus(u, 1/float64(m1*c1))
		}
		s.fwdReal(ws, ws.u1[0][:m1*c1], ws.u1[1][:m1*c1], cnt, j1)
		// S1 = U1 ⋆ φ, subsampled to 2^J.
		for i := range cnt {
			mulSub(ws.s[i], ws.u1[i][:m1*c1], s.fb.phi[j1], m1, c1, 1<<(J-j1))
		}
		if cnt == 2 {
			s.emit(ws, 2, out(1+n1), out(2+n1))
		} else {
			s.emit(ws, 1, out(1+n1), nil)
		}

		for i := range cnt {
			u1 := ws.u1[i][:m1*c1]
			for n2 := (j1 + 1) * L; n2 < J*L; {
				j2 := n2 / L
				m2, c2 := mp>>j2, np>>j2
				cnt2 := 1
				if n2+1 < J*L && (n2+1)/L == j2 {
					cnt2 = 2
				}
				for i2 := range cnt2 {
					// U2 = |U1 ⋆ ψ_{j2,θ2}|, at resolution 2^j2.
					u := ws.u2[i2][:m2*c2]
					mulSub(u, u1, s.fb.psi[n2+i2][j1], m1, c1, 1<<(j2-j1))
					s.fft2(ws, u, j2, true)
					modulus(u, 1/float64(m2*c2))
				}
				s.fwdReal(ws, ws.u2[0][:m2*c2], ws.u2[1][:m2*c2], cnt2, j2)
				// S2 = U2 ⋆ φ, subsampled to 2^J.
				for i2 := range cnt2 {
					mulSub(ws.s[i2], ws.u2[i2][:m2*c2], s.fb.phi[j2], m2, c2, 1<<(J-j2))
				}
				if cnt2 == 2 {
					s.emit(ws, 2, out(s2), out(s2+1))
				} else {
					s.emit(ws, 1, out(s2), nil)
				}
				s2 += cnt2
				n2 += cnt2
			}
		}
		n1 += cnt
	}
}

// fwdReal replaces the real signal a (imaginary parts zero), and b when
// cnt is 2, at resolution 2^res by its spectrum. Two real signals are
// transformed with one complex FFT of z = a + ib, whose spectrum Z gives
// A[k] = (Z[k] + conj Z[−k])/2 and B[k] = (Z[k] − conj Z[−k])/(2i).
func (s *Scattering) fwdReal(ws *workspace, a, b []complex128, cnt, res int) {
	if cnt == 1 {
		s.fft2(ws, a, res, false)
		return
	}
	for i := range a {
		a[i] = complex(real(a[i]), real(b[i]))
	}
	s.fft2(ws, a, res, false)
	m, n := s.mp>>res, s.np>>res
	for r := 0; r < m; r++ {
		nr := (m - r) % m
		for c := 0; c < n; c++ {
			nc := (n - c) % n
			k, nk := r*n+c, nr*n+nc
			if nk < k {
				continue
			}
			zk, zn := a[k], cmplx.Conj(a[nk])
			ak := (zk + zn) / 2
			bk := (zk - zn) * complex(0, -0.5)
			a[k], a[nk] = ak, cmplx.Conj(ak)
			b[k], b[nk] = bk, cmplx.Conj(bk)
		}
	}
}

// emit inverts the spectra ws.s[0] (and ws.s[1] when cnt is 2) at
// resolution 2^J and writes their real parts, less one row and one column
// on each side, to outA (and outB). The real parts of two inverse DFTs are
// the real and imaginary parts of the inverse DFT of H0 + iH1, where
// H[k] = (S[k] + conj S[−k])/2 is the Hermitian part of S.
func (s *Scattering) emit(ws *workspace, cnt int, outA, outB []float32) {
	m, n := s.mp>>s.j, s.np>>s.j
	z := ws.z
	if cnt == 1 {
		copy(z, ws.s[0])
	} else {
		sa, sb := ws.s[0], ws.s[1]
		for r := 0; r < m; r++ {
			nr := (m - r) % m
			for c := 0; c < n; c++ {
				nk := nr*n + (n-c)%n
				k := r*n + c
				ha := (sa[k] + cmplx.Conj(sa[nk])) / 2
				hb := (sb[k] + cmplx.Conj(sb[nk])) / 2
				z[k] = ha + complex(0, 1)*hb
			}
		}
	}
	s.fft2(ws, z, s.j, true)
	scale := 1 / float64(m*n)
	for r := 0; r < s.oh; r++ {
		src := z[(r+1)*n+1:]
		oa := outA[r*s.ow : (r+1)*s.ow]
		for c := range oa {
			oa[c] = float32(real(src[c]) * scale)
		}
		if cnt == 2 {
			ob := outB[r*s.ow : (r+1)*s.ow]
			for c := range ob {
				ob[c] = float32(imag(src[c]) * scale)
			}
		}
	}
}

// fft2 transforms the (mp/2^res)×(np/2^res) row-major buf in place: the
// unnormalised forward DFT X[k] = Σ x[u] exp(−2πi k·u/size) (numpy's fft2),
// or for inverse the unnormalised DFT with exp(+2πi…), which is numpy's
// ifft2 times the number of points; callers divide by it.
func (s *Scattering) fft2(ws *workspace, buf []complex128, res int, inverse bool) {
	fft2(buf, s.mp>>res, s.np>>res, ws.rowFFT[res], ws.colFFT[res], ws.col, inverse)
}

func fft2(buf []complex128, m, n int, rowFFT, colFFT *fourier.CmplxFFT, col []complex128, inverse bool) {
	for r := 0; r < m; r++ {
		row := buf[r*n : (r+1)*n]
		if inverse {
			rowFFT.Sequence(row, row)
		} else {
			rowFFT.Coefficients(row, row)
		}
	}
	col = col[:m]
	for c := 0; c < n; c++ {
		for r := range col {
			col[r] = buf[r*n+c]
		}
		if inverse {
			colFFT.Sequence(col, col)
		} else {
			colFFT.Coefficients(col, col)
		}
		for r, v := range col {
			buf[r*n+c] = v
		}
	}
}

// mulSub writes to dst the product of the m×n spectrum src with the real
// filter f, subsampled by k in the Fourier domain as kymatio's
// subsample_fourier does: dst[a, b] = (1/k²) Σ_{i,j<k} (src·f)[a + i·m/k, b + j·n/k].
// Its inverse DFT is the inverse DFT of src·f sampled every k points.
func mulSub(dst, src []complex128, f []float64, m, n, k int) {
	if k == 1 {
		for i, v := range src[:m*n] {
			dst[i] = complex(real(v)*f[i], imag(v)*f[i])
		}
		return
	}
	dm, dn := m/k, n/k
	d := dst[:dm*dn]
	for i := range d {
		d[i] = 0
	}
	for r := 0; r < m; r++ {
		drow := d[(r%dm)*dn : (r%dm+1)*dn]
		for c0 := 0; c0 < n; c0 += dn {
			srow := src[r*n+c0 : r*n+c0+dn]
			frow := f[r*n+c0 : r*n+c0+dn]
			for c, v := range srow {
				drow[c] += complex(real(v)*frow[c], imag(v)*frow[c])
			}
		}
	}
	scale := 1 / float64(k*k)
	for i, v := range d {
		d[i] = complex(real(v)*scale, imag(v)*scale)
	}
}

// modulus replaces each value v by |v|·scale.
func modulus(buf []complex128, scale float64) {
	for i, v := range buf {
		re, im := real(v), imag(v)
		buf[i] = complex(math.Sqrt(re*re+im*im)*scale, 0)
	}
}

// reflect maps index i of the infinitely reflected extension of a sequence
// of length n (numpy's "reflect" padding: …, x2, x1, x0, x1, x2, …) to an
// index in 0…n−1.
func reflect(i, n int) int {
	if n == 1 {
		return 0
	}
	p := 2 * (n - 1)
	i %= p
	if i < 0 {
		i += p
	}
	if i >= n {
		i = p - i
	}
	return i
}
