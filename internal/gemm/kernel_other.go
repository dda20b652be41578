//go:build !amd64 || purego

package gemm

const haveAVX2, haveAVX512 = false, false

func kernel4x16(k int, a *float32, rsA, csA int, b *float32, ldb int, c *float32, ldc int) {
	panic("gemm: no kernel on this platform")
}

func kernelTail(k, rows int, a *float32, rsA, csA int, b *float32, ldb int, c *float32, ldc int, mask *int32) {
	panic("gemm: no kernel on this platform")
}

func kernel8x32(k int, a *float32, rsA, csA int, b *float32, ldb int, c *float32, ldc int) {
	panic("gemm: no kernel on this platform")
}

func kernel16x16(k int, a *float32, rsA, csA int, b *float32, ldb int, c *float32, ldc int) {
	panic("gemm: no kernel on this platform")
}
