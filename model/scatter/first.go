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
// image's spectrum with the wavelets are formed and periodised in float64,
// inverted together in float32 (idft32), and the moduli U1 low-passed
// together (lowpass32); each U1 that feeds the second order is
// transformed back by a float64 FFT, or computed again in float64 if its
// float32 rounding would be amplified too much there.
func (s *Scattering) firstOrder32(ws *workspace, dst []float32, j1, ch int) int {
	L, plane := s.l, s.oh*s.ow
	m1, c1 := s.mp>>j1, s.np>>j1
	k1 := 1 << j1
	size := m1 * 2 * c1
	z, zf := ws.z1[:m1*c1], ws.zf[:L*size]
	for t := 0; t < L; t++ {
		foldMul(z, ws.x0, s.fb.psi[j1*L+t][0], s.mp, s.np, k1)
		split(zf[t*size:(t+1)*size], z, c1)
	}
	d := &s.dft[j1]
	d.rows(ws.yf, zf, L)
	scale := float32(1 / float64(m1*c1*k1*k1))
	u1f := ws.u1f[:L*m1*c1]
	for t := 0; t < L; t++ {
		d.colsAbs(u1f[t*m1*c1:(t+1)*m1*c1], ws.yf[t*size:(t+1)*size], ws.pq, scale)
	}
	s.lp32[j1].apply(dst[(1+j1*L)*plane:], u1f, ws.tf, L, m1, c1, s.oh, s.ow)
	if j1+1 >= s.j {
		return ch
	}
	u1, spec := ws.u1[:m1*c1], ws.u1c[:m1*c1]
	for t := 0; t < L; t++ {
		for i, v := range u1f[t*m1*c1 : (t+1)*m1*c1] {
			u1[i] = float64(v)
		}
		s.rfft2(ws, spec, u1, j1)
		next, ok := s.secondOrder32(ws, dst, spec, j1, ch, true)
		if !ok {
			// U1 = |x ⋆ ψ_{j1,θ1}| in float64, as the float64 path has it.
			foldMul(z, ws.x0, s.fb.psi[j1*L+t][0], s.mp, s.np, k1)
			s.ifft2Abs(ws, u1, z, j1, 1/float64(m1*c1*k1*k1))
			s.rfft2(ws, spec, u1, j1)
			next, _ = s.secondOrder32(ws, dst, spec, j1, ch, false)
		}
		ch = next
	}
	return ch
}
