package scatter

import "github.com/dptune/dptune/internal/vec"

// The float32 stage periodises a product of a spectrum with a filter
// (kymatio's subsample_fourier after the product, as foldMul does) by
// storing both in block layout: an m×n array to be folded by k onto
// (m/k)×(n/k) is stored as its k² blocks of (m/k)×(n/k), block (i, j)
// (rows i·m/k…, columns j·n/k…) at offset (i·k + j)·(m/k)·(n/k), each
// row-major. The fold is then a sum of k² elementwise products of
// contiguous vectors (fold32).

// blockify writes the m×n complex src to re and im in the block layout
// for a fold by k, rounded to float32.
func blockify(re, im []float32, src []complex128, m, n, k int) {
	bm, bn := m/k, n/k
	for r := 0; r < m; r++ {
		for j := 0; j < k; j++ {
			off := ((r/bm)*k+j)*bm*bn + (r%bm)*bn
			row := src[r*n+j*bn : r*n+(j+1)*bn]
			dr, di := re[off:off+bn], im[off:off+bn]
			for c, v := range row {
				dr[c], di[c] = float32(real(v)), float32(imag(v))
			}
		}
	}
}

// blockReal returns the real m×n f in the block layout for a fold by k,
// rounded to float32.
func blockReal(f []float64, m, n, k int) []float32 {
	bm, bn := m/k, n/k
	out := make([]float32, m*n)
	for r := 0; r < m; r++ {
		for c := 0; c < n; c++ {
			out[((r/bm)*k+c/bn)*bm*bn+(r%bm)*bn+c%bn] = float32(f[r*n+c])
		}
	}
	return out
}

// fold32 writes to zr, zi (bs values each) the periodised product
// Σ_b (ar_b + i·ai_b)⊙f_b over the blocks b < blocks of bs values of the
// spectrum ar, ai and the real filter f, all in block layout.
func fold32(zr, zi, ar, ai, f []float32, bs, blocks int) {
	zr, zi = zr[:bs], zi[:bs]
	clear(zr)
	clear(zi)
	for b := 0; b < blocks; b++ {
		fb := f[b*bs : (b+1)*bs]
		vec.MulAdd(zr, ar[b*bs:(b+1)*bs], fb)
		vec.MulAdd(zi, ai[b*bs:(b+1)*bs], fb)
	}
}
