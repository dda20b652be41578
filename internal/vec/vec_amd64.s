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
