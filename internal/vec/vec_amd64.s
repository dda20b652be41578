//go:build amd64 && !purego

#include "textflag.h"

// func tanhAVX2(x *float32, n int, c *[13][8]float32)
//
// Tanh32 on eight lanes at a time, in place: clamp to [c[0], c[1]] (x as
// the second source of VMAXPS/VMINPS, so that a NaN stays NaN), then the
// same multiplications and additions as the Go code, then one division.
TEXT ·tanhAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ c+16(FP), R8
	SHRQ $3, CX
	VMOVUPS 0(R8), Y14
	VMOVUPS 32(R8), Y15

tanhloop:
	VMOVUPS (SI), Y0
	VMAXPS Y0, Y14, Y0
	VMINPS Y0, Y15, Y0
	VMULPS Y0, Y0, Y1      // x²
	VMULPS 64(R8), Y1, Y2  // p = x²·A13
	VADDPS 96(R8), Y2, Y2  // + A11
	VMULPS Y1, Y2, Y2
	VADDPS 128(R8), Y2, Y2 // A9
	VMULPS Y1, Y2, Y2
	VADDPS 160(R8), Y2, Y2 // A7
	VMULPS Y1, Y2, Y2
	VADDPS 192(R8), Y2, Y2 // A5
	VMULPS Y1, Y2, Y2
	VADDPS 224(R8), Y2, Y2 // A3
	VMULPS Y1, Y2, Y2
	VADDPS 256(R8), Y2, Y2 // A1
	VMULPS Y0, Y2, Y2      // p·x
	VMULPS 288(R8), Y1, Y3 // q = x²·B6
	VADDPS 320(R8), Y3, Y3 // + B4
	VMULPS Y1, Y3, Y3
	VADDPS 352(R8), Y3, Y3 // B2
	VMULPS Y1, Y3, Y3
	VADDPS 384(R8), Y3, Y3 // B0
	VDIVPS Y3, Y2, Y2      // p/q
	VMOVUPS Y2, (SI)
	ADDQ $32, SI
	DECQ CX
	JNE tanhloop
	VZEROUPPER
	RET

// func tanhGradAVX2(grad, y *float32, n int): grad ← grad·(1 − y·y).
TEXT ·tanhGradAVX2(SB), NOSPLIT, $0-24
	MOVQ grad+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	MOVL $0x3f800000, AX   // 1.0
	MOVQ AX, X15
	VBROADCASTSS X15, Y15

gradloop:
	VMOVUPS (SI), Y0
	VMULPS Y0, Y0, Y0
	VSUBPS Y0, Y15, Y0     // 1 − y²
	VMULPS (DI), Y0, Y0    // g·(1 − y²)
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNE gradloop
	VZEROUPPER
	RET

// func addAVX2(y, x *float32, n int): y ← y + x.
TEXT ·addAVX2(SB), NOSPLIT, $0-24
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX

addloop:
	VMOVUPS (DI), Y0
	VADDPS (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNE addloop
	VZEROUPPER
	RET

// func axpyAVX2(y *float32, a float32, x *float32, n int): y ← y + a·x.
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	VBROADCASTSS a+8(FP), Y15
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	SHRQ $3, CX

axpyloop:
	VMULPS (SI), Y15, Y0
	VADDPS (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNE axpyloop
	VZEROUPPER
	RET

// func mulAddAVX2(y, a, b *float32, n int): y ← y + a⊙b (the product
// rounded to float32 before the sum).
TEXT ·mulAddAVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $3, CX

muladdloop:
	VMOVUPS (SI), Y0
	VMULPS (DX), Y0, Y0
	VADDPS (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ CX
	JNE muladdloop
	VZEROUPPER
	RET

// func subSqAddAVX2(acc, x, m *float32, n int): acc ← acc + (x − m)².
TEXT ·subSqAddAVX2(SB), NOSPLIT, $0-32
	MOVQ acc+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ m+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $3, CX

subsqloop:
	VMOVUPS (SI), Y0
	VSUBPS (DX), Y0, Y0
	VMULPS Y0, Y0, Y0
	VADDPS (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ CX
	JNE subsqloop
	VZEROUPPER
	RET

// func subMulAVX2(dst, x, m, r *float32, n int): dst ← (x − m)·r.
TEXT ·subMulAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ m+16(FP), DX
	MOVQ r+24(FP), R8
	MOVQ n+32(FP), CX
	SHRQ $3, CX

submulloop:
	VMOVUPS (SI), Y0
	VSUBPS (DX), Y0, Y0
	VMULPS (R8), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, R8
	ADDQ $32, DI
	DECQ CX
	JNE submulloop
	VZEROUPPER
	RET

// func mulAddToAVX2(dst, a, b, c *float32, n int): dst ← a·b + c.
TEXT ·mulAddToAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ c+24(FP), R8
	MOVQ n+32(FP), CX
	SHRQ $3, CX

muladdtoloop:
	VMOVUPS (SI), Y0
	VMULPS (DX), Y0, Y0
	VADDPS (R8), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, R8
	ADDQ $32, DI
	DECQ CX
	JNE muladdtoloop
	VZEROUPPER
	RET

// func transpose8x8AVX2(a *float32, lda int, dst *float32, ldd int)
//
// Writes the 8×8 block at a (rows lda floats apart) transposed at dst
// (rows ldd floats apart): unpack pairs of rows, shuffle pairs of pairs,
// then swap 128-bit halves.
TEXT ·transpose8x8AVX2(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), AX
	MOVQ dst+16(FP), DI
	MOVQ ldd+24(FP), BX
	SHLQ $2, AX
	SHLQ $2, BX

	VMOVUPS (SI), Y0
	ADDQ AX, SI
	VMOVUPS (SI), Y1
	ADDQ AX, SI
	VMOVUPS (SI), Y2
	ADDQ AX, SI
	VMOVUPS (SI), Y3
	ADDQ AX, SI
	VMOVUPS (SI), Y4
	ADDQ AX, SI
	VMOVUPS (SI), Y5
	ADDQ AX, SI
	VMOVUPS (SI), Y6
	ADDQ AX, SI
	VMOVUPS (SI), Y7

	VUNPCKLPS Y1, Y0, Y8  // a0 b0 a1 b1 | a4 b4 a5 b5
	VUNPCKHPS Y1, Y0, Y9  // a2 b2 a3 b3 | a6 b6 a7 b7
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15

	VSHUFPS $0x44, Y10, Y8, Y0  // a0 b0 c0 d0 | a4 b4 c4 d4
	VSHUFPS $0xEE, Y10, Y8, Y1  // a1 b1 c1 d1 | a5 ...
	VSHUFPS $0x44, Y11, Y9, Y2  // a2 ...
	VSHUFPS $0xEE, Y11, Y9, Y3  // a3 ...
	VSHUFPS $0x44, Y14, Y12, Y4 // e0 f0 g0 h0 | e4 ...
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7

	VPERM2F128 $0x20, Y4, Y0, Y8  // column 0
	VPERM2F128 $0x20, Y5, Y1, Y9  // column 1
	VPERM2F128 $0x20, Y6, Y2, Y10 // column 2
	VPERM2F128 $0x20, Y7, Y3, Y11 // column 3
	VPERM2F128 $0x31, Y4, Y0, Y12 // column 4
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15

	VMOVUPS Y8, (DI)
	ADDQ BX, DI
	VMOVUPS Y9, (DI)
	ADDQ BX, DI
	VMOVUPS Y10, (DI)
	ADDQ BX, DI
	VMOVUPS Y11, (DI)
	ADDQ BX, DI
	VMOVUPS Y12, (DI)
	ADDQ BX, DI
	VMOVUPS Y13, (DI)
	ADDQ BX, DI
	VMOVUPS Y14, (DI)
	ADDQ BX, DI
	VMOVUPS Y15, (DI)
	VZEROUPPER
	RET
