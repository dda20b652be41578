package scatter

import "github.com/dptune/dptune/internal/gemm"

// rdft32 is the unnormalised forward 2-D DFT (numpy's fft2) of real m×n
// signals in float32 by matrix products, as idft32 is the inverse: the
// half spectrum, columns 0…h−1 with h = n/2 + 1 (the rest follows from
// X[−k, −l] = conj X[k, l]). With C[t, k] = cos(2πkt/n), S likewise:
//
//	rows: Y = U·[C_h, −S_h]              (m rows [Re | Im] of 2h)
//	cols: P = Cm·Y, Q = Sm·Y
//	      Re X = P_r + Q_i,  Im X = P_i − Q_r
type rdft32 struct {
	m, n, h int
	row     []float32 // n×2h, [C_h, −S_h]
	col     []float32 // 2m×m, [Cm; Sm]
}

func newRDFT32(m, n int) rdft32 {
	h := n/2 + 1
	d := rdft32{m: m, n: n, h: h, row: make([]float32, 2*n*h), col: newIDFT32(m, 1).col}
	for t := 0; t < n; t++ {
		for k := 0; k < h; k++ {
			s, c := twiddle(k*t, n)
			d.row[t*2*h+k] = c
			d.row[t*2*h+h+k] = -s
		}
	}
	return d
}

// rows writes to y the DFT along the rows of the cnt real m×n signals in
// u (one after another): cnt·m rows [Re | Im] of 2h.
func (d *rdft32) rows(y, u []float32, cnt int) {
	h2 := 2 * d.h
	y = y[:cnt*d.m*h2]
	clear(y)
	gemm.Mul(cnt*d.m, h2, d.n, u, d.n, 1, d.row, h2, y, h2)
}

// cols finishes the transform of one signal whose row DFTs are y (m×2h):
// it writes the half spectrum to sr and si (m×h each), using pq (2m×2h)
// as scratch.
func (d *rdft32) cols(sr, si, y, pq []float32) {
	m, h, h2 := d.m, d.h, 2*d.h
	pq = pq[:2*m*h2]
	clear(pq)
	gemm.Mul(2*m, h2, m, d.col, m, 1, y, h2, pq, h2)
	for r := 0; r < m; r++ {
		p := pq[r*h2 : (r+1)*h2]
		q := pq[(m+r)*h2 : (m+r+1)*h2]
		or, oi := sr[r*h:(r+1)*h], si[r*h:(r+1)*h]
		pr, pi := p[:h], p[h:h2]
		qr, qi := q[:h], q[h:h2]
		for c := range or {
			or[c] = pr[c] + qi[c]
			oi[c] = pi[c] - qr[c]
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
		mr := ((m - r) % m) * h
		for c := 0; c < n; c++ {
			i := ((r/bm)*k+c/bn)*bm*bn + (r%bm)*bn + c%bn
			if c < h {
				re[i], im[i] = sr[r*h+c], si[r*h+c]
			} else {
				re[i], im[i] = sr[mr+n-c], -si[mr+n-c]
			}
		}
	}
}
