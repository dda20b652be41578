package scatter

// maxAmplification bounds the amplification R of a first-order signal's
// float32 rounding error in the second order that secondOrder32 accepts
// (see there). R is 1.5–7 on MNIST's and CIFAR-10's images, where each
// unit of it costs about 1e-7 relative error in the channel; images whose
// second-order paths carry almost none of U1's energy (a 4×4 blob gives
// R ≈ 2.6e4) have U1 computed again in float64.
const maxAmplification = 4

// secondOrder32 writes S2 for one first-order signal U1 = |x ⋆ ψ_{j1,θ1}|,
// given its half spectrum sr, si at resolution 2^j1 (rdft32), to the
// channels from ch on (all j2 > j1, θ2 fastest), and returns the next
// channel. For each j2 the L wavelet products are formed and periodised
// in float32 (fold32), inverted together by idft32 (two matrix products
// for all L), and their moduli low-passed together by lowpass32.
//
// When U1 itself carries float32 rounding (u1 > 0, u1 = ‖U1‖² =
// ‖Û1‖²/(m1·n1)), its relative error ε becomes ε·R in a product
// z = fold(Û1·ψ̂), R = ‖Û1‖·‖ψ̂‖ / (√(m1·n1)·‖z‖) (white noise through the
// filter, against the product's own norm); if R exceeds maxAmplification
// for any product, secondOrder32 stops and returns ok = false, and the
// caller computes U1 in float64 and calls it again with u1 = 0. ‖z‖
// comes from the inverse DFT's output by Parseval's identity.
func (s *Scattering) secondOrder32(ws *workspace, dst, sr, si []float32, j1, ch int, u1 float64) (next int, ok bool) {
	L, plane := s.l, s.oh*s.ow
	m1, c1 := s.mp>>j1, s.np>>j1
	for j2 := j1 + 1; j2 < s.j; j2++ {
		m2, c2 := s.mp>>j2, s.np>>j2
		k2, bs := 1<<(j2-j1), m2*c2
		blockifyHalf(ws.ar, ws.ai, sr, si, m1, c1, k2)
		for t := 0; t < L; t++ {
			fold32(ws.zr[t*bs:], ws.zi[t*bs:], ws.ar, ws.ai, s.psi32[j2*L+t][j1], bs, k2*k2)
		}
		s.dft[j2].absBatch(ws.mod2, ws.energy, ws.zr, ws.zi, ws.y, ws.w, ws.sa, ws.sb, L, float32(1/float64(bs*k2*k2)))
		if u1 > 0 {
			for t, e := range ws.energy[:L] {
				// Σ|z'|² = bs·Σ|z|² for the unnormalised inverse DFT z'.
				if u1*s.psiNorm2[j2*L+t][j1]*float64(bs) > maxAmplification*maxAmplification*e {
					return ch, false
				}
			}
		}
		s.lp32[j2].apply(dst[ch*plane:], ws.mod2, ws.tf, ws.st, L, m2, c2, s.oh, s.ow)
		ch += L
	}
	return ch, true
}
