//go:build amd64 && !purego

package vec

import "golang.org/x/sys/cpu"

// haveAVX2 reports whether the AVX2 loops can run here.
var haveAVX2 = cpu.X86.HasAVX2

// The AVX2 loops of vec_amd64.s; n is a positive multiple of 8.
//
//go:noescape
func tanhAVX2(x *float32, n int, c *[13][8]float32)

//go:noescape
func tanhGradAVX2(grad, y *float32, n int)

//go:noescape
func addAVX2(y, x *float32, n int)

//go:noescape
func axpyAVX2(y *float32, a float32, x *float32, n int)

//go:noescape
func mulAddAVX2(y, a, b *float32, n int)

//go:noescape
func subSqAddAVX2(acc, x, m *float32, n int)

//go:noescape
func subMulAVX2(dst, x, m, r *float32, n int)

//go:noescape
func mulAddToAVX2(dst, a, b, c *float32, n int)

//go:noescape
func transpose8x8AVX2(a *float32, lda int, dst *float32, ldd int)
