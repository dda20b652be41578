package scatter

import (
	"fmt"
	"math"
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

	fb filterBank
	lp []denseLowpass // per resolution r < J; nil: low-pass by FFT
	// dft and lp32 (per resolution r < J, dft from r = 1 on) compute the
	// second order in float32 (secondOrder32); nil: in float64 by FFT.
	dft      []idft32
	rdft     []rdft32
	lp32     []lowpass32
	psi32    [][][]float32 // fb.psi in float32, each level in block layout for its fold
	psiNorm2 [][]float64   // Σψ̂² of each level of fb.psi
	pool     sync.Pool     // *workspace
}

// workspace holds what one Transform call writes: FFT plans (gonum's plans
// keep internal buffers, so they are not shared) and the intermediate
// signals and spectra, each sized for the finest resolution it is used at.
type workspace struct {
	rowFFT  []*fourier.CmplxFFT // per resolution r: length np/2^r
	colFFT  []*fourier.CmplxFFT // per resolution r: length mp/2^r
	realFFT []*fourier.FFT      // per resolution r: real input, length np/2^r
	col     []complex128        // one column, length mp
	half    []complex128        // row spectra of a real signal, mp×(np/2+1)
	x       []float64           // the padded image, mp×np
	x0      []complex128        // spectrum of the padded image, mp×np
	z1      []complex128        // first-order wavelet product and its inverse
	u1      []float64           // U1 = |x ⋆ ψ|, at resolution j1
	u1c     []complex128        // spectrum of U1
	z2      []complex128        // second-order wavelet product and its inverse
	u2      []float64           // U2 = |U1 ⋆ ψ|, at resolution j2
	lp      []float64           // dense low-pass: G·U, oh×(np/2^r), and one output row
	spec    []complex128        // FFT low-pass: spectrum of U2
	s       []complex128        // FFT low-pass: spectrum of S, then S
	// float32 stage (transform32), for L signals at the finest resolution:
	ar, ai []float32 // a spectrum in block layout (blockify)
	zr, zi []float32 // L periodised wavelet products
	y, w   []float32 // the same in wide layout, their DFTs (idft32, rdft32)
	sa, sb []float32 // the DFTs' scratch (symDFT)
	mod1   []float32 // the L moduli U1 of one scale (wide, transposed)
	mod2   []float32 // the L moduli U2 of one scale
	energy []float64 // Σ|z'|² of each of them
	u1norm []float64 // ‖U1‖² of the L moduli U1 of one scale
	tf, st []float32 // the low-pass's scratch
	hr, hi []float32 // the half spectra of the L moduli U1 of one scale
	mean   []float32 // their means
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
	if mp <= maxDense && np <= maxDense {
		s.lp = make([]denseLowpass, J)
		for r := range s.lp {
			s.lp[r] = newDenseLowpass(s.fb.phi[r], mp>>r, np>>r, 1<<(J-r), s.oh, s.ow)
		}
		s.dft, s.rdft, s.lp32 = make([]idft32, J), make([]rdft32, J), make([]lowpass32, J)
		for r := range s.lp {
			s.lp32[r] = newLowpass32(s.lp[r])
			s.dft[r] = newIDFT32(mp>>r, np>>r)
			s.rdft[r] = newRDFT32(mp>>r, np>>r)
		}
		for n, levels := range s.fb.psi {
			n2, b := make([]float64, len(levels)), make([][]float32, len(levels))
			for r, f := range levels {
				for _, v := range f {
					n2[r] += v * v
				}
				// Level r of a wavelet of scale j is folded by 2^(j−r).
				b[r] = blockReal(f, mp>>r, np>>r, 1<<(n/L-r))
			}
			s.psiNorm2, s.psi32 = append(s.psiNorm2, n2), append(s.psi32, b)
		}
	}
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
		rowFFT:  make([]*fourier.CmplxFFT, s.j+1),
		colFFT:  make([]*fourier.CmplxFFT, s.j+1),
		realFFT: make([]*fourier.FFT, s.j+1),
		col:     make([]complex128, s.mp),
		half:    make([]complex128, s.mp*(s.np/2+1)),
		x:       make([]float64, full),
		x0:      make([]complex128, full),
		z1:      make([]complex128, full),
		u1:      make([]float64, full),
		u1c:     make([]complex128, full),
		z2:      make([]complex128, full/4),
		u2:      make([]float64, full/4),
		lp:      make([]float64, s.oh*s.np+s.ow),
		spec:    make([]complex128, full/4),
		s:       make([]complex128, out),
	}
	if s.dft != nil {
		batch, half := s.l*full, s.l*s.mp*(s.np/2+1)
		ws.ar, ws.ai = make([]float32, full), make([]float32, full)
		ws.zr, ws.zi = make([]float32, batch), make([]float32, batch)
		scratch := 2 * s.l * (full + s.mp + s.np)
		ws.y, ws.w = make([]float32, 2*batch), make([]float32, 2*batch)
		ws.sa, ws.sb = make([]float32, scratch), make([]float32, scratch)
		ws.mod1, ws.mod2 = make([]float32, batch), make([]float32, batch/4)
		ws.energy, ws.u1norm = make([]float64, s.l), make([]float64, s.l)
		ws.tf, ws.st = make([]float32, s.l*s.mp*s.ow), make([]float32, s.oh*s.ow)
		ws.hr, ws.hi, ws.mean = make([]float32, half), make([]float32, half), make([]float32, s.l)
	}
	for r := 0; r <= s.j; r++ {
		ws.rowFFT[r] = fourier.NewCmplxFFT(s.np >> r)
		ws.colFFT[r] = fourier.NewCmplxFFT(s.mp >> r)
		ws.realFFT[r] = fourier.NewFFT(s.np >> r)
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
	plane := s.oh * s.ow
	out := func(ch int) []float32 { return dst[ch*plane : (ch+1)*plane] }

	// Reflection padding (numpy's "reflect": the edge is not repeated).
	for r := 0; r < s.mp; r++ {
		sr := reflect(r-s.top, s.h)
		row := ws.x[r*s.np : (r+1)*s.np]
		src := img[sr*s.w : (sr+1)*s.w]
		for c := range row {
			row[c] = float64(src[reflect(c-s.left, s.w)])
		}
	}
	s.rfft2(ws, ws.x0, ws.x, 0)
	// S0 = x ⋆ φ, subsampled by 2^J.
	s.lowpass(ws, out(0), ws.x, ws.x0, 0)

	s2 := 1 + J*L // channel of the next S2 coefficient
	if s.dft != nil {
		s.transform32(ws, dst)
		return
	}
	for n1 := 0; n1 < J*L; n1++ {
		j1 := n1 / L
		m1, c1 := s.mp>>j1, s.np>>j1
		// U1 = |x ⋆ ψ_{j1,θ1}|, at resolution 2^j1.
		z := ws.z1[:m1*c1]
		k1 := 1 << j1
		foldMul(z, ws.x0, s.fb.psi[n1][0], s.mp, s.np, k1)
		u1 := ws.u1[:m1*c1]
		s.ifft2Abs(ws, u1, z, j1, 1/float64(m1*c1*k1*k1))
		second := j1+1 < J
		var spec []complex128
		if second || s.lp == nil {
			spec = ws.u1c[:m1*c1]
			s.rfft2(ws, spec, u1, j1)
		}
		// S1 = U1 ⋆ φ, subsampled to 2^J.
		s.lowpass(ws, out(1+n1), u1, spec, j1)
		if !second {
			continue
		}
		for n2 := (j1 + 1) * L; n2 < J*L; n2++ {
			j2 := n2 / L
			m2, c2 := s.mp>>j2, s.np>>j2
			// U2 = |U1 ⋆ ψ_{j2,θ2}|, at resolution 2^j2.
			z2 := ws.z2[:m2*c2]
			k2 := 1 << (j2 - j1)
			foldMul(z2, spec, s.fb.psi[n2][j1], m1, c1, k2)
			u2 := ws.u2[:m2*c2]
			s.ifft2Abs(ws, u2, z2, j2, 1/float64(m2*c2*k2*k2))
			var spec2 []complex128
			if s.lp == nil {
				spec2 = ws.spec[:m2*c2]
				s.rfft2(ws, spec2, u2, j2)
			}
			// S2 = U2 ⋆ φ, subsampled to 2^J.
			s.lowpass(ws, out(s2), u2, spec2, j2)
			s2++
		}
	}
}

// lowpass writes to dst the real part of U ⋆ φ subsampled to 2^J, less one
// row and one column on each side, for the real signal u at resolution
// 2^res. With the dense operators (s.lp) it computes G·U·Hᵀ from u; without
// them it uses spec, the spectrum of u: the product with φ and the
// subsampling in the Fourier domain, then the inverse FFT at resolution
// 2^J.
func (s *Scattering) lowpass(ws *workspace, dst []float32, u []float64, spec []complex128, res int) {
	m, n := s.mp>>res, s.np>>res
	if s.lp != nil {
		s.lp[res].apply(dst, u, ws.lp, m, n, s.oh, s.ow)
		return
	}
	mo, no := s.mp>>s.j, s.np>>s.j
	z := ws.s
	k := 1 << (s.j - res)
	foldMul(z, spec, s.fb.phi[res], m, n, k)
	s.fft2(ws, z, s.j, true)
	scale := 1 / float64(mo*no*k*k)
	for r := 0; r < s.oh; r++ {
		src := z[(r+1)*no+1:]
		o := dst[r*s.ow : (r+1)*s.ow]
		for c := range o {
			o[c] = float32(real(src[c]) * scale)
		}
	}
}

// rfft2 writes to dst the unnormalised 2-D DFT (numpy's fft2) of the real
// (mp/2^res)×(np/2^res) row-major u: real FFTs of the rows, complex FFTs
// of the n/2+1 columns they give, and the other columns from the Hermitian
// symmetry X[−k, −l] = conj X[k, l] of a real signal's spectrum.
func (s *Scattering) rfft2(ws *workspace, dst []complex128, u []float64, res int) {
	m, n := s.mp>>res, s.np>>res
	h := n/2 + 1
	half := ws.half[:m*h]
	rf := ws.realFFT[res]
	for r := 0; r < m; r++ {
		rf.Coefficients(half[r*h:(r+1)*h], u[r*n:(r+1)*n])
	}
	col := ws.col[:m]
	cf := ws.colFFT[res]
	for c := 0; c < h; c++ {
		for r := range col {
			col[r] = half[r*h+c]
		}
		cf.Coefficients(col, col)
		for r, v := range col {
			dst[r*n+c] = v
		}
	}
	for r := 0; r < m; r++ {
		nr := ((m - r) % m) * n
		row := dst[r*n : (r+1)*n]
		for c := h; c < n; c++ {
			v := dst[nr+n-c]
			row[c] = complex(real(v), -imag(v))
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

// foldMul writes to dst the product of the m×n spectrum src with the real
// filter f, periodised onto (m/k)×(n/k): dst[a, b] = Σ_{i,j<k} (src·f)[a + i·m/k, b + j·n/k].
// This is k² times kymatio's subsample_fourier (the mean of the k²
// aliases); its inverse DFT is k² times the inverse DFT of src·f sampled
// every k points, and callers fold the 1/k² into their own scaling.
func foldMul(dst, src []complex128, f []float64, m, n, k int) {
	dm, dn := m/k, n/k
	d := dst[:dm*dn]
	for r := 0; r < m; r++ {
		drow := d[(r%dm)*dn : (r%dm+1)*dn]
		for c0 := 0; c0 < n; c0 += dn {
			srow := src[r*n+c0 : r*n+c0+dn]
			frow := f[r*n+c0 : r*n+c0+dn]
			if r < dm && c0 == 0 {
				for c, v := range srow {
					drow[c] = complex(real(v)*frow[c], imag(v)*frow[c])
				}
				continue
			}
			for c, v := range srow {
				drow[c] += complex(real(v)*frow[c], imag(v)*frow[c])
			}
		}
	}
}

// ifft2Abs writes |z'|·scale to the real u, where z' is the unnormalised
// inverse DFT of the (mp/2^res)×(np/2^res) spectrum z (which it
// overwrites): the row transforms in place, then each column transformed
// and its modulus written straight to u.
func (s *Scattering) ifft2Abs(ws *workspace, u []float64, z []complex128, res int, scale float64) {
	m, n := s.mp>>res, s.np>>res
	rf, cf := ws.rowFFT[res], ws.colFFT[res]
	for r := 0; r < m; r++ {
		row := z[r*n : (r+1)*n]
		rf.Sequence(row, row)
	}
	col := ws.col[:m]
	for c := 0; c < n; c++ {
		for r := range col {
			col[r] = z[r*n+c]
		}
		cf.Sequence(col, col)
		for r, v := range col {
			re, im := real(v), imag(v)
			u[r*n+c] = math.Sqrt(re*re+im*im) * scale
		}
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
