package scatter

// transform32 computes S1 and S2 (channels 1 on) from the image's spectrum
// ws.x0, with the inverse DFTs and low-passes in float32: for each scale
// j1, firstOrder32.
func (s *Scattering) transform32(ws *workspace, dst []float32) {
	ch := 1 + s.j*s.l // the first S2 channel
	for j1 := 0; j1 < s.j; j1++ {
		ch = s.firstOrder32(ws, dst, j1, ch)
	}
}

// firstOrder32 writes S1 for the L wavelets of scale j1 to channels
// 1 + j1·L … and, for j1 < J − 1, the S2 of each (secondOrder32) from
// channel ch on, returning the next S2 channel. The L products of the
// image's spectrum with the wavelets, periodised to 2^j1 (fold32), are
// inverted together in float32 (idft32), and the moduli U1 low-passed
// together (lowpass32); the U1 that feed the second order are
// transformed together (spectra32), and one whose float32 rounding the
// second order would amplify too much is computed again in float64.
func (s *Scattering) firstOrder32(ws *workspace, dst []float32, j1, ch int) int {
	L, plane := s.l, s.oh*s.ow
	m1, c1 := s.mp>>j1, s.np>>j1
	k1, bs := 1<<j1, m1*c1
	blockify(ws.ar, ws.ai, ws.x0, s.mp, s.np, k1)
	for t := 0; t < L; t++ {
		fold32(ws.zr[t*bs:], ws.zi[t*bs:], ws.ar, ws.ai, s.psi32[j1*L+t][0], bs, k1*k1)
	}
	scale := float32(1 / float64(bs*k1*k1))
	s.dft[j1].absBatch(ws.mod1, ws.energy, ws.zr, ws.zi, ws.y, ws.w, ws.sa, ws.sb, L, scale)
	for t, e := range ws.energy[:L] {
		ws.u1norm[t] = e * float64(scale) * float64(scale) // ‖U1‖²
	}
	s.lp32[j1].apply(dst[(1+j1*L)*plane:], ws.mod1, ws.tf, ws.st, L, m1, c1, s.oh, s.ow)
	if j1+1 >= s.j {
		return ch
	}
	s.spectra32(ws, j1)
	hs := m1 * (c1/2 + 1)
	for t := 0; t < L; t++ {
		sr, si := ws.hr[t*hs:(t+1)*hs], ws.hi[t*hs:(t+1)*hs]
		next, ok := s.secondOrder32(ws, dst, sr, si, j1, ch, ws.u1norm[t])
		if !ok {
			s.exactU1(ws, sr, si, j1, t)
			next, _ = s.secondOrder32(ws, dst, sr, si, j1, ch, 0)
		}
		ch = next
	}
	return ch
}

// spectra32 writes to ws.hr, ws.hi the half spectra of the L moduli U1 of
// scale j1 in ws.mod1 (rdft32). Each U1's mean is taken out before the
// float32 transform and put back into the zero frequency, so that the
// rounding is relative to U1's variations, not to its (large, positive)
// mean; mod1 is left without it.
func (s *Scattering) spectra32(ws *workspace, j1 int) {
	L := s.l
	m1, c1 := s.mp>>j1, s.np>>j1
	bs, hs := m1*c1, m1*(c1/2+1)
	u := ws.mod1[:L*bs] // c1 rows of L·m1: row c holds column c of each U1
	for t := 0; t < L; t++ {
		var sum float64
		for c := 0; c < c1; c++ {
			for _, v := range u[c*L*m1+t*m1 : c*L*m1+(t+1)*m1] {
				sum += float64(v)
			}
		}
		mu := float32(sum / float64(bs))
		for c := 0; c < c1; c++ {
			seg := u[c*L*m1+t*m1 : c*L*m1+(t+1)*m1]
			for i := range seg {
				seg[i] -= mu
			}
		}
		ws.mean[t] = mu
	}
	s.rdft[j1].spectra(ws.hr, ws.hi, u, ws.w, ws.y, ws.sa, ws.sb, L)
	for t := 0; t < L; t++ {
		ws.hr[t*hs] += float32(float64(ws.mean[t]) * float64(bs))
	}
}

// exactU1 computes U1 = |x ⋆ ψ_{j1,θ1}| (θ1 = t) in float64, as the
// float64 path does, and writes its half spectrum to sr, si.
func (s *Scattering) exactU1(ws *workspace, sr, si []float32, j1, t int) {
	m1, c1 := s.mp>>j1, s.np>>j1
	k1, bs := 1<<j1, m1*c1
	z, u1, spec := ws.z1[:bs], ws.u1[:bs], ws.u1c[:bs]
	foldMul(z, ws.x0, s.fb.psi[j1*s.l+t][0], s.mp, s.np, k1)
	s.ifft2Abs(ws, u1, z, j1, 1/float64(bs*k1*k1))
	s.rfft2(ws, spec, u1, j1)
	toHalf(sr, si, spec, m1, c1)
}
