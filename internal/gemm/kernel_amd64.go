//go:build amd64 && !purego

package gemm

import "golang.org/x/sys/cpu"

// haveAVX2 reports whether the AVX2/FMA micro-kernels can run here, and
// haveAVX512 whether the AVX-512 ones can too (they leave strips and edges
// to the AVX2 ones). x/sys/cpu also checks that the OS saves the vector
// registers.
var (
	haveAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	haveAVX512 = haveAVX2 && cpu.X86.HasAVX512F
)

// kernel4x16 adds the 4×16 block A[0:4, 0:k]·B[0:k, 0:16] to C (strides in
// elements, as for Mul). Implemented in kernel_amd64.s.
//
//go:noescape
func kernel4x16(k int, a *float32, rsA, csA int, b *float32, ldb int, c *float32, ldc int)

// kernelTail adds the block A[0:rows, 0:k]·B[0:k, 0:16] to C like
// kernel4x16, for a block at the edge of C: rows ≤ 4, and only the columns
// j with mask[j] = −1 are read or written (mask has 16 lanes). Implemented
// in kernel_amd64.s.
//
//go:noescape
func kernelTail(k, rows int, a *float32, rsA, csA int, b *float32, ldb int, c *float32, ldc int, mask *int32)

// kernel8x32 adds the 8×32 block A[0:8, 0:k]·B[0:k, 0:32] to C with
// AVX-512. Implemented in kernel_avx512_amd64.s.
//
//go:noescape
func kernel8x32(k int, a *float32, rsA, csA int, b *float32, ldb int, c *float32, ldc int)

// kernel16x16 adds the 16×16 block A[0:16, 0:k]·B[0:k, 0:16] to C with
// AVX-512. Implemented in kernel_avx512_amd64.s.
//
//go:noescape
func kernel16x16(k int, a *float32, rsA, csA int, b *float32, ldb int, c *float32, ldc int)
