package scatter

import "github.com/dptune/dptune/internal/vec"

// rdft32 is the unnormalised forward 2-D DFT (numpy's fft2) of real m×n
// signals in float32 by matrix products, as idft32 is the inverse: the
// half spectrum X[k1, k2], k2 < h = n/2 + 1 (the rest follows from
// X[−k, −l] = conj X[k, l]), of a batch given in the transposed wide
// layout absBatch writes.
type rdft32 struct {
	m, n, h int
	sm      symDFT
	sn      symDFT // with −S for S: the rows' DFT C − iS gives Im = S·ut
}

func newRDFT32(m, n int) rdft32 {
	d := rdft32{m: m, n: n, h: n/2 + 1, sm: newSymDFT(m), sn: newSymDFT(n)}
	for i, v := range d.sn.s {
		d.sn.s[i] = -v
	}
	return d
}

// spectra writes the half spectra of the cnt real m×n signals U_i, given
// as ut (n × cnt·m, ut[c, i·m + r] = U_i[r, c]), to hr and hi (m×h each,
// one after another). The DFT along the rows, V = (C − iS)·ut for
// k ≤ n/2, gives the (U_i·F̄_n)ᵀ side by side; their transposes are put
// in w (m × cnt·2h) in wide layout, and the DFT along the columns
// (C − iS)·V_iᵀ is one more pair of products. y, sa and sb are scratch as
// for idft32.absBatch.
func (d *rdft32) spectra(hr, hi, ut, w, y, sa, sb []float32, cnt int) {
	m, n, h, g := d.m, d.n, d.h, d.sn.g
	wu, wv := cnt*m, cnt*2*h
	e, o := sb[:h*wu], sb[h*wu:(h+g)*wu]
	d.sn.products(e, o, ut, sa, wu)
	// Re V = e (rows k ≤ n/2), Im V = o (rows 1 ≤ k ≤ g; zero at 0 and
	// n/2), transposed to rows (i, r) and then placed in w.
	tr, ti := y[:wu*h], y[wu*h:wu*(h+g)]
	vec.Transpose(h, wu, e, tr)
	vec.Transpose(g, wu, o, ti)
	for i := 0; i < cnt; i++ {
		for r := 0; r < m; r++ {
			row := w[r*wv+i*2*h : r*wv+(i+1)*2*h]
			copy(row[:h], tr[(i*m+r)*h:(i*m+r+1)*h])
			row[h] = 0
			copy(row[h+1:h+1+g], ti[(i*m+r)*g:(i*m+r+1)*g])
			if n%2 == 0 {
				row[2*h-1] = 0
			}
		}
	}
	e, o = sb[:d.sm.h*wv], sb[d.sm.h*wv:(d.sm.h+d.sm.g)*wv]
	d.sm.products(e, o, w, sa, wv)
	for k := 0; k < m; k++ {
		c := d.sm.cRow(e, k, wv)
		s, sg := d.sm.sRow(o, k, wv)
		for i := 0; i < cnt; i++ {
			cr, ci := c[2*i*h:(2*i+1)*h], c[(2*i+1)*h:(2*i+2)*h]
			or, oi := hr[i*m*h+k*h:i*m*h+(k+1)*h], hi[i*m*h+k*h:i*m*h+(k+1)*h]
			if s == nil {
				copy(or, cr)
				copy(oi, ci)
				continue
			}
			// X = (C − iS)·V: Re = C·Vr + S·Vi, Im = C·Vi − S·Vr.
			sr, si := s[2*i*h:(2*i+1)*h], s[(2*i+1)*h:(2*i+2)*h]
			for j := range or {
				or[j] = cr[j] + sg*si[j]
				oi[j] = ci[j] - sg*sr[j]
			}
		}
	}
}

// toHalf writes columns 0…n/2 of the m×n complex spectrum to sr and si,
// rounded to float32.
func toHalf(sr, si []float32, spec []complex128, m, n int) {
	h := n/2 + 1
	for r := 0; r < m; r++ {
		for c, v := range spec[r*n : r*n+h] {
			sr[r*h+c], si[r*h+c] = float32(real(v)), float32(imag(v))
		}
	}
}

// blockifyHalf writes the m×n spectrum of a real signal, given as its
// half spectrum sr, si, to re and im in the block layout for a fold by k.
func blockifyHalf(re, im, sr, si []float32, m, n, k int) {
	h, bm, bn := n/2+1, m/k, n/k
	for r := 0; r < m; r++ {
		row, mr := r*h, ((m-r)%m)*h
		base := (r/bm)*k*bm*bn + (r%bm)*bn
		for j := 0; j < k; j++ {
			off, c0 := base+j*bm*bn, j*bn
			// Columns below h are stored; the others are conjugates of
			// row −r, column n − c.
			nd := min(max(h-c0, 0), bn)
			if nd > 0 {
				copy(re[off:off+nd], sr[row+c0:row+c0+nd])
				copy(im[off:off+nd], si[row+c0:row+c0+nd])
			}
			for c := nd; c < bn; c++ {
				src := mr + n - c0 - c
				re[off+c], im[off+c] = sr[src], -si[src]
			}
		}
	}
}
