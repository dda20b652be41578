// Package gemm multiplies float32 matrices for dptune's per-sample gradient
// engine: C += A·B for the small, skinny shapes of the CNNs (output widths of
// 16 to 512, inner dimensions of 10 to 512).
//
// # Kernels
//
// Mul picks its micro-kernels at start-up for the machine it runs on
// (Kernel names the choice):
//
//   - "avx512" (amd64 with AVX-512F): an 8×32 block of C per call, 16
//     ZMM accumulators, each step of the inner dimension two loads of B,
//     eight broadcasts of A and sixteen fused multiply-adds
//     (kernel_avx512_amd64.s); a 16×16 kernel with embedded-broadcast FMAs
//     for a 16-wide column strip (the whole of C when n = 16). The rows and
//     columns these leave go to the AVX2 kernels.
//   - "avx2-fma" (amd64 with AVX2 and FMA): a 4×16 block per call, four
//     broadcasts of A against two 8-wide vectors of B at each step
//     (kernel_amd64.s); blocks at the right and bottom edges of C use it
//     with masked loads and stores.
//   - "go": plain Go loops, on other machines and architectures and in
//     builds with the purego tag.
//
// The environment variable DPTUNE_GEMM_KERNEL, read at start-up, forces a
// kernel ("avx2" or "avx2-fma", "avx512", "go"), so that benchmarks can
// compare kernels side by side; a name this machine cannot run leaves the
// fastest kernel in use and is reported by EnvError (dptune then refuses
// to start, one line, exit 2). SetKernel does the same for tests.
//
// The assembly kernels compute every element of C the same way: starting
// from C's value, one fused multiply-add per step p of the inner dimension,
// p = 0…k−1 in order (a block of the inner dimension stores C and the next
// reloads it, which rounds nothing). So "avx512" and "avx2-fma" give the
// same bits (TestKernelsBitIdentical); "go" rounds each product apart from
// its sum and differs in the last bits.
//
// The loop order follows the larger matrix: rows of A outer when B is the
// smaller one (convolution forward passes), columns of B outer in blocks of
// the inner dimension when it is the larger (per-example weight gradients,
// where B is an example's unfolded input). The package is pure Go in the
// sense that matters: no cgo, `go build` just works.
//
// A is addressed with separate row and column strides, so either A or its
// transpose can be used without copying; B and C are row-major with unit
// column stride.
package gemm

import "fmt"

// Mul adds A·B to C, where A is m×k with element (i, p) at
// a[i·rsA + p·csA], B is k×n with element (p, j) at b[p·ldb + j], and C is
// m×n with element (i, j) at c[i·ldc + j]. It panics if a slice is too
// short for its shape and strides, or a dimension or stride is negative.
func Mul(m, n, k int, a []float32, rsA, csA int, b []float32, ldb int, c []float32, ldc int) {
	if m == 0 || n == 0 || k == 0 {
		return
	}
	if m < 0 || n < 0 || k < 0 || rsA < 0 || csA < 0 || ldb < n || ldc < n {
		panic(fmt.Sprintf("gemm: bad shape m=%d n=%d k=%d strides A (%d, %d), ldb %d, ldc %d", m, n, k, rsA, csA, ldb, ldc))
	}
	if (m-1)*rsA+(k-1)*csA >= len(a) || (k-1)*ldb+n > len(b) || (m-1)*ldc+n > len(c) {
		panic(fmt.Sprintf("gemm: slices too short for m=%d n=%d k=%d: len(a)=%d len(b)=%d len(c)=%d", m, n, k, len(a), len(b), len(c)))
	}
	switch active.Load() {
	case useAVX512:
		mulAVX512(m, n, k, a, rsA, csA, b, ldb, c, ldc)
	case useAVX2:
		mulAVX2(m, n, k, a, rsA, csA, b, ldb, c, ldc)
	default:
		generic(m, n, k, a, rsA, csA, b, ldb, c, ldc)
	}
}

// generic is C += A·B in Go, four rows of C at a time so each row of B is
// read once per four rows.
func generic(m, n, k int, a []float32, rsA, csA int, b []float32, ldb int, c []float32, ldc int) {
	i := 0
	for ; i+4 <= m; i += 4 {
		c0 := c[i*ldc : i*ldc+n]
		c1 := c[(i+1)*ldc : (i+1)*ldc+n]
		c2 := c[(i+2)*ldc : (i+2)*ldc+n]
		c3 := c[(i+3)*ldc : (i+3)*ldc+n]
		for p := 0; p < k; p++ {
			a0, a1 := a[i*rsA+p*csA], a[(i+1)*rsA+p*csA]
			a2, a3 := a[(i+2)*rsA+p*csA], a[(i+3)*rsA+p*csA]
			br := b[p*ldb : p*ldb+n]
			for j, bv := range br {
				c0[j] += a0 * bv
				c1[j] += a1 * bv
				c2[j] += a2 * bv
				c3[j] += a3 * bv
			}
		}
	}
	for ; i < m; i++ {
		ci := c[i*ldc : i*ldc+n]
		for p := 0; p < k; p++ {
			av := a[i*rsA+p*csA]
			br := b[p*ldb : p*ldb+n]
			for j, bv := range br {
				ci[j] += av * bv
			}
		}
	}
}
