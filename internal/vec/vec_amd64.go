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
