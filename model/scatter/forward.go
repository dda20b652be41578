package scatter

import "github.com/dptune/dptune/internal/gemm"

// rdft32 is the unnormalised forward 2-D DFT (numpy's fft2) of real m×n
// signals in float32 by matrix products, as idft32 is the inverse: the
// half spectrum X[k1, k2], k2 < h = n/2 + 1 (the rest follows from
// X[−k, −l] = conj X[k, l]), of a batch given in the transposed wide
// layout absBatch writes.
type rdft32 struct {
	m, n, h int
	rowN    []float32 // 2h×n: [C_h; −S_h] for length n
	colM    []float32 // dftMat(m)
}

func newRDFT32(m, n int) rdft32 {
	h := n/2 + 1
	d := rdft32{m: m, n: n, h: h, rowN: make([]float32, 2*h*n), colM: dftMat(m)}
	for k := 0; k < h; k++ {
		for t := 0; t < n; t++ {
			s, c := twiddle(k*t, n)
			d.rowN[k*n+t] = c
			d.rowN[(h+k)*n+t] = -s
		}
	}
	return d
}

// spectra writes the half spectra of the cnt real m×n signals U_i, given
// as ut (n × cnt·m, ut[c, i·m + r] = U_i[r, c]), to hr and hi (m×h each,
// one after another). The DFT along the rows is [C_h; −S_h]·ut, giving
// V_i = (U_i·F̄_n)ᵀ side by side; w (m × cnt·2h) receives the V_iᵀ in
// wide layout, and the DFT along the columns (C − iS)·V_iᵀ is one more
// product. pq is scratch of 4·m·h·cnt values.
func (d *rdft32) spectra(hr, hi, ut, w, pq []float32, cnt int) {
	m, n, h := d.m, d.n, d.h
	wu, wv := cnt*m, cnt*2*h
	pq = pq[:2*h*wu]
	clear(pq)
	gemm.Mul(2*h, wu, n, d.rowN, n, 1, ut, wu, pq, wu)
	p, q := pq[:h*wu], pq[h*wu:]
	for k := 0; k < h; k++ {
		for i := 0; i < cnt; i++ {
			vr, vi := p[k*wu+i*m:k*wu+(i+1)*m], q[k*wu+i*m:k*wu+(i+1)*m]
			for r := range vr {
				w[r*wv+i*2*h+k] = vr[r]
				w[r*wv+i*2*h+h+k] = vi[r]
			}
		}
	}
	pq = pq[:2*m*wv]
	clear(pq)
	gemm.Mul(2*m, wv, m, d.colM, m, 1, w, wv, pq, wv)
	p, q = pq[:m*wv], pq[m*wv:]
	for k := 0; k < m; k++ {
		for i := 0; i < cnt; i++ {
			o := k*wv + i*2*h
			pr, pi, qr, qi := p[o:o+h], p[o+h:o+2*h], q[o:o+h], q[o+h:o+2*h]
			or := hr[i*m*h+k*h : i*m*h+(k+1)*h]
			oi := hi[i*m*h+k*h : i*m*h+(k+1)*h]
			for c := range or {
				or[c] = pr[c] + qi[c]
				oi[c] = pi[c] - qr[c]
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

// halfNorm2 returns Σ|X|² over the whole m×n spectrum of a real signal
// whose half spectrum is sr, si.
func halfNorm2(sr, si []float32, m, n int) float64 {
	h := n/2 + 1
	var sum float64
	for r := 0; r < m; r++ {
		for c := 0; c < h; c++ {
			w := 2.0 // column c stands for itself and for n − c
			if c == 0 || 2*c == n {
				w = 1
			}
			a, b := float64(sr[r*h+c]), float64(si[r*h+c])
			sum += w * (a*a + b*b)
		}
	}
	return sum
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
