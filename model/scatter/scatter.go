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
// spectra.
type workspace struct {
	rowFFT []*fourier.CmplxFFT // per resolution r: length np/2^r
	colFFT []*fourier.CmplxFFT // per resolution r: length mp/2^r
	col    []complex128        // one column, length mp
	x0     []complex128        // spectrum of the padded image, mp×np
	u1     []complex128        // first-order spectrum at resolution j1
	u2     []complex128        // second-order spectrum at resolution j2
	s      []complex128        // low-passed output at resolution J
}

// NumChannels returns 1 + J·L + L²·J(J−1)/2, the number of scattering
// channels of order at most 2 per input channel (81 for J = 2, L = 8).
func NumChannels(J, L int) int {
	return 1 + J*L + L*L*J*(J-1)/2
}

// PaddedSize returns kymatio's compute_padding(M, N, J): each side is
// padded to (⌊(side + 2^J)/2^J⌋ + 1)·2^J, a multiple of 2^J at least 2^J
// larger than the side.
func PaddedSize(h, w, J int) (int, int) {
	f := 1 << J
	return ((h+f)/f + 1) * f, ((w+f)/f + 1) * f
}

// New returns the scattering transform for h×w images with J scales and L
// orientations. Its output per input channel is NumChannels(J, L) channels
// of ⌊h/2^J⌋×⌊w/2^J⌋ (7×7 for MNIST's 28×28, 8×8 for 32×32), as kymatio
// gives. New refuses, with an error, J outside 1…MaxJ, L outside 1…MaxL,
// sides smaller than 2^J (kymatio's own condition) and images whose padded
// size exceeds MaxPixels.
func New(h, w, J, L int) (*Scattering, error) {
	if J < 1 || J > MaxJ {
		return nil, fmt.Errorf("scatter: J = %d out of range 1…%d", J, MaxJ)
	}
	if L < 1 || L > MaxL {
		return nil, fmt.Errorf("scatter: L = %d out of range 1…%d", L, MaxL)
	}
	f := 1 << J
	if h < f || w < f {
		return nil, fmt.Errorf("scatter: image %d×%d has a side smaller than 2^J = %d", h, w, f)
	}
	if h > MaxPixels || w > MaxPixels {
		return nil, fmt.Errorf("scatter: image %d×%d too large (at most %d padded pixels)", h, w, MaxPixels)
	}
	mp, np := PaddedSize(h, w, J)
	if mp*np > MaxPixels {
		return nil, fmt.Errorf("scatter: image %d×%d too large: padded to %d×%d, more than %d pixels", h, w, mp, np, MaxPixels)
	}
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

// OutShape returns the number of output channels and the output rows and
// columns for one input channel: Transform's dst holds k·oh·ow values.
func (s *Scattering) OutShape() (k, oh, ow int) { return s.k, s.oh, s.ow }

// InShape returns the image rows and columns New was given.
func (s *Scattering) InShape() (h, w int) { return s.h, s.w }

// Params returns J and L.
func (s *Scattering) Params() (J, L int) { return s.j, s.l }

func (s *Scattering) newWorkspace() *workspace {
	ws := &workspace{
		rowFFT: make([]*fourier.CmplxFFT, s.j+1),
		colFFT: make([]*fourier.CmplxFFT, s.j+1),
		col:    make([]complex128, s.mp),
		x0:     make([]complex128, s.mp*s.np),
		u1:     make([]complex128, s.mp*s.np),
		u2:     make([]complex128, s.mp*s.np),
		s:      make([]complex128, (s.mp>>s.j)*(s.np>>s.j)),
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
// reflection padding to PaddedSize; the 2-D FFT; products with the filters
// in the Fourier domain; subsampling in the Fourier domain by periodisation;
// inverse FFT and modulus for each wavelet; the low-pass φ applied at the
// resolution of the last wavelet (2^j1 for S1, 2^j2 for S2) followed by
// subsampling to 2^J; and removal of one output row and column on each side.
// It is computed in float64 and rounded to float32 at the end.
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

func (s *Scattering) transform(ws *workspace, dst, img []float32) {
	J, L := s.j, s.l
	mp, np := s.mp, s.np
	plane := s.oh * s.ow

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
	ch := 0
	mulSub(ws.s, ws.x0, s.fb.phi[0], mp, np, 1<<J)
	s.emit(ws, dst[ch*plane:(ch+1)*plane])
	ch++

	s2 := 1 + J*L
	for n1 := 0; n1 < J*L; n1++ {
		j1 := n1 / L
		m1, n1c := mp>>j1, np>>j1
		u1 := ws.u1[:m1*n1c]
		// U1 = |x ⋆ ψ_{j1,θ1}|, at resolution 2^j1, then its spectrum.
		mulSub(u1, ws.x0, s.fb.psi[n1][0], mp, np, 1<<j1)
		s.fft2(ws, u1, j1, true)
		modulus(u1)
		s.fft2(ws, u1, j1, false)

		// S1 = U1 ⋆ φ, subsampled to 2^J.
		mulSub(ws.s, u1, s.fb.phi[j1], m1, n1c, 1<<(J-j1))
		s.emit(ws, dst[ch*plane:(ch+1)*plane])
		ch++

		for n2 := 0; n2 < J*L; n2++ {
			j2 := n2 / L
			if j2 <= j1 {
				continue
			}
			m2, n2c := mp>>j2, np>>j2
			u2 := ws.u2[:m2*n2c]
			// U2 = |U1 ⋆ ψ_{j2,θ2}|, at resolution 2^j2, then its spectrum.
			mulSub(u2, u1, s.fb.psi[n2][j1], m1, n1c, 1<<(j2-j1))
			s.fft2(ws, u2, j2, true)
			modulus(u2)
			s.fft2(ws, u2, j2, false)
			// S2 = U2 ⋆ φ, subsampled to 2^J.
			mulSub(ws.s, u2, s.fb.phi[j2], m2, n2c, 1<<(J-j2))
			s.emit(ws, dst[s2*plane:(s2+1)*plane])
			s2++
		}
	}
}

// emit inverts the spectrum ws.s at resolution 2^J and writes its real
// part, less one row and one column on each side, to out.
func (s *Scattering) emit(ws *workspace, out []float32) {
	s.fft2(ws, ws.s, s.j, true)
	nc := s.np >> s.j
	for r := 0; r < s.oh; r++ {
		src := ws.s[(r+1)*nc+1:]
		o := out[r*s.ow : (r+1)*s.ow]
		for c := range o {
			o[c] = float32(real(src[c]))
		}
	}
}

// fft2 transforms the (mp/2^res)×(np/2^res) row-major buf in place: the
// unnormalised forward DFT, or for inverse the DFT with exp(+2πi…) divided
// by the number of points (numpy's fft2 and ifft2).
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
	if inverse {
		scale := complex(1/float64(m*n), 0)
		for i := range buf[:m*n] {
			buf[i] *= scale
		}
	}
}

// mulSub writes to dst the product of the m×n spectrum src with the real
// filter f, subsampled by k in the Fourier domain as kymatio's
// subsample_fourier does: dst[a, b] = (1/k²) Σ_{i,j<k} (src·f)[a + i·m/k, b + j·n/k].
// Its inverse DFT is the inverse DFT of src·f sampled every k points.
func mulSub(dst, src []complex128, f []float64, m, n, k int) {
	if k == 1 {
		for i := range dst[:m*n] {
			dst[i] = src[i] * complex(f[i], 0)
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
		srow := src[r*n : (r+1)*n]
		frow := f[r*n : (r+1)*n]
		for c := 0; c < n; c++ {
			drow[c%dn] += srow[c] * complex(frow[c], 0)
		}
	}
	scale := complex(1/float64(k*k), 0)
	for i := range d {
		d[i] *= scale
	}
}

// modulus replaces each value by its absolute value.
func modulus(buf []complex128) {
	for i, v := range buf {
		buf[i] = complex(math.Hypot(real(v), imag(v)), 0)
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
