// Package gemm multiplies float32 matrices for dptune's per-sample gradient
// engine: C += A·B for the small, skinny shapes of the CNNs (output widths of
// 16 to 512, inner dimensions of 10 to 512).
//
// On amd64 with AVX2 and FMA the work is done by an assembly micro-kernel
// that computes a 4×16 block of C per call, broadcasting four elements of A
// and multiplying them with two 8-wide vectors of B at each step of the inner
// dimension (kernel_amd64.s); blocks at the right and bottom edges of C use
// the same kernel with masked loads and stores. The loop order follows the
// larger matrix: rows of A outer when B is the smaller one (convolution
// forward passes), columns of B outer in blocks of kc steps of the inner
// dimension when it is the larger (per-example weight gradients, where B is
// an example's unfolded input). Machines without AVX2/FMA, and builds with
// the purego tag, use plain Go loops. The package is pure Go in the sense
// that matters: no cgo, `go build` just works.
//
// A is addressed with separate row and column strides, so either A or its
// transpose can be used without copying; B and C are row-major with unit
// column stride.
package gemm

import "fmt"

// kc is the block of the inner dimension for the columns-outer loop order.
const kc = 256

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
	if !haveKernel {
		generic(m, n, k, a, rsA, csA, b, ldb, c, ldc)
		return
	}
	m4, n16 := m&^3, n&^15
	if n <= m {
		// Rows of A outer: a 4×k block of A stays in L1 while B, the
		// smaller matrix, is read again from cache for each.
		for i := 0; i < m4; i += 4 {
			for j := 0; j < n16; j += 16 {
				kernel4x16(k, &a[i*rsA], rsA, csA, &b[j], ldb, &c[i*ldc+j], ldc)
			}
		}
	} else {
		// Columns of B outer, in blocks of kc steps of the inner dimension
		// (a kc×16 panel of B, 16 KB, stays in L1 while A's rows stream
		// past): the shape of per-example weight gradients, where B (the
		// unfolded input) is the large matrix.
		for p := 0; p < k; p += kc {
			kb := min(kc, k-p)
			for j := 0; j < n16; j += 16 {
				for i := 0; i < m4; i += 4 {
					kernel4x16(kb, &a[i*rsA+p*csA], rsA, csA, &b[p*ldb+j], ldb, &c[i*ldc+j], ldc)
				}
			}
		}
	}
	// The edges: columns right of the blocks (all rows), then the rows
	// below them, by the masked kernel.
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

// Kernel names the micro-kernel Mul uses on this machine, chosen at
// start-up: "avx2-fma" or "go" (no AVX2/FMA, another architecture, or the
// purego build tag).
func Kernel() string {
	if haveKernel {
		return "avx2-fma"
	}
	return "go"
}
