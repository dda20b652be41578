//go:build !amd64 || purego

package vec

const haveAVX2 = false

func tanhAVX2(*float32, int, *[13][8]float32) { panic("vec: no AVX2 here") }
func tanhGradAVX2(_, _ *float32, _ int)       { panic("vec: no AVX2 here") }
func addAVX2(_, _ *float32, _ int)            { panic("vec: no AVX2 here") }
func axpyAVX2(*float32, float32, *float32, int) {
	panic("vec: no AVX2 here")
}
func mulAddAVX2(_, _, _ *float32, _ int)    { panic("vec: no AVX2 here") }
func subSqAddAVX2(_, _, _ *float32, _ int)  { panic("vec: no AVX2 here") }
func subMulAVX2(_, _, _, _ *float32, _ int) { panic("vec: no AVX2 here") }
func mulAddToAVX2(_, _, _, _ *float32, _ int) {
	panic("vec: no AVX2 here")
}
func transpose8x8AVX2(*float32, int, *float32, int) { panic("vec: no AVX2 here") }
