package scatter

// maxAmplification bounds the amplification R of a first-order signal's
// float32 rounding error in the second order that secondOrder32 accepts
// (see there). R is 1.5–7 on MNIST's and CIFAR-10's images, where each
// unit of it costs about 7e-8 relative error in the channel; images whose
// second-order paths carry almost none of U1's energy (a 4×4 blob gives
// R ≈ 2.6e4) have U1 computed again in float64.
const maxAmplification = 5

// secondOrder32 writes S2 for one first-order signal U1 = |x ⋆ ψ_{j1,θ1}|,
// given spec, its spectrum at resolution 2^j1, to the channels from ch on
// (all j2 > j1, θ2 fastest), and returns the next channel. For each j2 the
// L wavelet products are formed and periodised in float64 (foldMul), then
// inverted together in float32 by idft32 (one product for the rows of all
// L, one per column pass), and their moduli low-passed together by
// lowpass32.
//
// When U1 itself carries float32 rounding (check), its relative error ε
// becomes ε·R in a product z = fold(Û1·ψ̂), R = ‖Û1‖·‖ψ̂‖ / (√(m1·n1)·‖z‖)
// (white noise through the filter, against the product's own norm); if R
// exceeds maxAmplification for any product, secondOrder32 writes nothing
// and returns ok = false, and the caller computes U1 in float64.
func (s *Scattering) secondOrder32(ws *workspace, dst []float32, spec []complex128, j1, ch int, check bool) (next int, ok bool) {
	if check && !s.foldSecond(ws, spec, j1, maxAmplification) {
		return ch, false
	}
	if !check {
		s.foldSecond(ws, spec, j1, 0)
	}
	L, plane := s.l, s.oh*s.ow
	off := 0
	for j2 := j1 + 1; j2 < s.j; j2++ {
		m2, c2 := s.mp>>j2, s.np>>j2
		k2 := 1 << (j2 - j1)
		size := m2 * 2 * c2
		d := &s.dft[j2]
		d.rows(ws.yf, ws.zf[off:off+L*size], L)
		scale := float32(1 / float64(m2*c2*k2*k2))
		for t := 0; t < L; t++ {
			d.colsAbs(ws.u2f[t*m2*c2:(t+1)*m2*c2], ws.yf[t*size:(t+1)*size], ws.pq, scale)
		}
		s.lp32[j2].apply(dst[ch*plane:], ws.u2f, ws.tf, L, m2, c2, s.oh, s.ow)
		ch += L
		off += L * size
	}
	return ch, true
}

// foldSecond writes the second-order products fold(Û1·ψ̂_{j2,θ2}) of spec
// for every j2 > j1 and θ2 to ws.zf, one group of L per j2 after another,
// as float32 rows [Re | Im]. With limit > 0 it stops and reports false as
// soon as a product's amplification R (see secondOrder32) exceeds limit.
func (s *Scattering) foldSecond(ws *workspace, spec []complex128, j1 int, limit float64) bool {
	m1, c1 := s.mp>>j1, s.np>>j1
	var sn float64
	if limit > 0 {
		sn = norm2(spec) / float64(m1*c1)
	}
	off := 0
	for n2 := (j1 + 1) * s.l; n2 < s.j*s.l; n2++ {
		j2 := n2 / s.l
		m2, c2 := s.mp>>j2, s.np>>j2
		z := ws.z2[:m2*c2]
		foldMul(z, spec, s.fb.psi[n2][j1], m1, c1, 1<<(j2-j1))
		zn := split(ws.zf[off:off+2*m2*c2], z, c2)
		if limit > 0 && sn*s.psiNorm2[n2][j1] > limit*limit*zn {
			return false
		}
		off += 2 * m2 * c2
	}
	return true
}

// split writes the complex rows of z (n values each) to dst as float32
// rows [Re | Im] of 2n values, and returns Σ|z|².
func split(dst []float32, z []complex128, n int) float64 {
	var sum float64
	for r := 0; r < len(z)/n; r++ {
		row := z[r*n : (r+1)*n]
		re := dst[2*r*n : (2*r+1)*n]
		im := dst[(2*r+1)*n : (2*r+2)*n]
		for c, v := range row {
			x, y := real(v), imag(v)
			re[c], im[c] = float32(x), float32(y)
			sum += x*x + y*y
		}
	}
	return sum
}

// norm2 returns Σ|z|².
func norm2(z []complex128) float64 {
	var sum float64
	for _, v := range z {
		sum += real(v)*real(v) + imag(v)*imag(v)
	}
	return sum
}
