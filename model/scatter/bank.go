package scatter

import "slices"

// Bank is what a Scattering computes with, for writing the same transform
// in another form (package model's ONNX export): the geometry of its
// padding and output and its filters in the Fourier domain, exactly those
// Transform uses (kymatio's filter_bank and compute_padding; see the
// package documentation).
type Bank struct {
	J, L int // scales, orientations
	H, W int // image rows and columns
	M, N int // padded rows and columns (multiples of 2^J)
	// OH, OW are the output rows and columns: M/2^J − 2 and N/2^J − 2
	// (the unpadding removes one on each side).
	OH, OW int
	// RowSource[r] is the image row that row r of the padded image copies
	// (reflection padding without repeating the edge, numpy's "reflect"),
	// for 0 ≤ r < M; ColSource likewise for the columns.
	RowSource, ColSource []int
	// Psi[j·L+θ][res] is the wavelet ψ_{j,θ} at resolution 2^res, for
	// res < min(j+1, max(J−1, 1)); Phi[res] the low-pass φ at 2^res, for
	// res < J. Each is real, (M/2^res)×(N/2^res), row-major, indexed by
	// frequency as numpy's fft2 output is.
	Psi [][][]float64
	Phi [][]float64
}

// Bank returns a copy of the filter bank and geometry of s.
func (s *Scattering) Bank() Bank {
	b := Bank{J: s.j, L: s.l, H: s.h, W: s.w, M: s.mp, N: s.np, OH: s.oh, OW: s.ow,
		RowSource: make([]int, s.mp), ColSource: make([]int, s.np)}
	for r := range b.RowSource {
		b.RowSource[r] = reflect(r-s.top, s.h)
	}
	for c := range b.ColSource {
		b.ColSource[c] = reflect(c-s.left, s.w)
	}
	for _, levels := range s.fb.psi {
		cp := make([][]float64, len(levels))
		for r, f := range levels {
			cp[r] = slices.Clone(f)
		}
		b.Psi = append(b.Psi, cp)
	}
	for _, f := range s.fb.phi {
		b.Phi = append(b.Phi, slices.Clone(f))
	}
	return b
}

// Lowpass returns the last step of the transform for a real signal U at
// resolution 2^res (0 ≤ res < J) as the two real matrices of
// S = G·U·Hᵀ (see denseLowpass): the product with φ in the Fourier
// domain, the subsampling to 2^J, the inverse DFT, the real part and the
// unpadding. gt is Gᵀ, (M/2^res)×OH, and ht is Hᵀ, (N/2^res)×OW, both
// row-major. Transform computes the same map (by these matrices for padded
// sides up to 128, else in the Fourier domain: equal to rounding).
func (s *Scattering) Lowpass(res int) (gt, ht []float64) {
	if s.lp != nil {
		return slices.Clone(s.lp[res].gt), slices.Clone(s.lp[res].ht)
	}
	lp := newDenseLowpass(s.fb.phi[res], s.mp>>res, s.np>>res, 1<<(s.j-res), s.oh, s.ow)
	return lp.gt, lp.ht
}
