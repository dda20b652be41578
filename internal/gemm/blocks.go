package gemm

// microKernel is an assembly kernel that adds an mr×nr block
// A[0:mr, 0:k]·B[0:k, 0:nr] to C (arguments as for Mul, by the address of
// the block's first element), with the block of the inner dimension kc that
// the columns-outer loop order gives it.
type microKernel struct {
	run        func(k int, a *float32, rsA, csA int, b *float32, ldb int, c *float32, ldc int)
	mr, nr, kc int
}

var (
	avx2Block = microKernel{kernel4x16, 4, 16, 256}
	// kc×32 floats of B is 16 KB at kc = 128, as for the AVX2 kernel.
	avx512Wide = microKernel{kernel8x32, 8, 32, 128}
	avx512Tall = microKernel{kernel16x16, 16, 16, 256}
)

// tiles adds to C the part of A·B that whole mr×nr blocks cover, rows
// [0, mb) and columns [0, nb) with mb, nb the multiples of mr and nr, and
// returns mb and nb. The loop order follows the larger matrix: rows of A
// outer when B is the smaller one (a block of A stays in L1 while B is read
// again from cache for each); otherwise columns of B outer, in blocks of kc
// steps of the inner dimension (a kc×nr panel of B stays in L1 while A's
// rows stream past) — the shape of per-example weight gradients, where B
// (the unfolded input) is the large matrix.
func (u microKernel) tiles(m, n, k int, a []float32, rsA, csA int, b []float32, ldb int, c []float32, ldc int) (mb, nb int) {
	mb, nb = m-m%u.mr, n-n%u.nr
	if n <= m {
		for i := 0; i < mb; i += u.mr {
			for j := 0; j < nb; j += u.nr {
				u.run(k, &a[i*rsA], rsA, csA, &b[j], ldb, &c[i*ldc+j], ldc)
			}
		}
		return mb, nb
	}
	for p := 0; p < k; p += u.kc {
		kb := min(u.kc, k-p)
		for j := 0; j < nb; j += u.nr {
			for i := 0; i < mb; i += u.mr {
				u.run(kb, &a[i*rsA+p*csA], rsA, csA, &b[p*ldb+j], ldb, &c[i*ldc+j], ldc)
			}
		}
	}
	return mb, nb
}

// mulAVX2 is Mul with the AVX2/FMA kernels: 4×16 blocks, then the edges
// by the masked kernel.
func mulAVX2(m, n, k int, a []float32, rsA, csA int, b []float32, ldb int, c []float32, ldc int) {
	m4, n16 := avx2Block.tiles(m, n, k, a, rsA, csA, b, ldb, c, ldc)
	if n16 < n {
		mask := &tailMask[n-n16][0]
		for i := 0; i < m; i += 4 {
			kernelTail(k, min(4, m-i), &a[i*rsA], rsA, csA, &b[n16], ldb, &c[i*ldc+n16], ldc, mask)
		}
	}
	if m4 < m {
		for j := 0; j < n16; j += 16 {
			kernelTail(k, m-m4, &a[m4*rsA], rsA, csA, &b[j], ldb, &c[m4*ldc+j], ldc, &tailMask[16][0])
		}
	}
}

// tailMask[r] selects the first r of 16 columns for kernelTail.
var tailMask = func() (m [17][16]int32) {
	for r := range m {
		for j := range r {
			m[r][j] = -1
		}
	}
	return m
}()

// mulAVX512 is Mul with the AVX-512 kernels for the bulk: 8×32 blocks, and
// 16×16 blocks down a 16-wide column strip right of them (all of C when
// n = 16). The rows below either and the columns right of both go to
// mulAVX2 as sub-matrices.
func mulAVX512(m, n, k int, a []float32, rsA, csA int, b []float32, ldb int, c []float32, ldc int) {
	m8, n32 := avx512Wide.tiles(m, n, k, a, rsA, csA, b, ldb, c, ldc)
	if m8 < m && n32 > 0 {
		mulAVX2(m-m8, n32, k, a[m8*rsA:], rsA, csA, b, ldb, c[m8*ldc:], ldc)
	}
	if n-n32 >= 16 {
		m16, _ := avx512Tall.tiles(m, 16, k, a, rsA, csA, b[n32:], ldb, c[n32:], ldc)
		if m16 < m {
			mulAVX2(m-m16, 16, k, a[m16*rsA:], rsA, csA, b[n32:], ldb, c[m16*ldc+n32:], ldc)
		}
		n32 += 16
	}
	if n32 < n {
		mulAVX2(m, n-n32, k, a, rsA, csA, b[n32:], ldb, c[n32:], ldc)
	}
}
