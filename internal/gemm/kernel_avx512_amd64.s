//go:build amd64 && !purego

#include "textflag.h"

// The AVX-512 micro-kernels. Like kernel4x16 (kernel_amd64.s) they load C
// into the accumulators, add A[r, p]·B[p, j] for p = 0…k−1 in order with
// one fused multiply-add per element and step, and store C back: the same
// operations on every element, so the results are bit for bit the AVX2
// kernel's.

// ROW32 adds A[r, p]·B[p, 0:32] to the accumulators lo, hi of row r:
// broadcast A[r, p] from addr into Z18, two FMAs with B in Z16, Z17.
#define ROW32(addr, lo, hi) \
	VBROADCASTSS addr, Z18 \
	VFMADD231PS Z16, Z18, lo \
	VFMADD231PS Z17, Z18, hi

// LOAD32 and STORE32 move C[r, 0:32], at addr and 64 bytes past it, to or
// from lo, hi.
#define LOAD32(addr, lo, hi) \
	VMOVUPS addr, lo \
	VMOVUPS 64 addr, hi

#define STORE32(addr, lo, hi) \
	VMOVUPS lo, addr \
	VMOVUPS hi, 64 addr

// func kernel8x32(k int, a *float32, rsA, csA int, b *float32, ldb int, c *float32, ldc int)
//
// Z0–Z15 accumulate C[r, 0:16] and C[r, 16:32] for rows r = 0…7. At each
// step p: load B[p, 0:32] into Z16, Z17; for each row broadcast A[r, p]
// and do two FMAs (16 per step, against 2 loads of B and 8 broadcasts).
// Rows 0–3 of A are addressed from SI, rows 4–7 from R12, with R8 = rsA
// and R13 = 3·rsA in bytes; C likewise from DX and BX with R11 = ldc and
// R14 = 3·ldc.
TEXT ·kernel8x32(SB), NOSPLIT, $0-64
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ rsA+16(FP), R8
	MOVQ csA+24(FP), R9
	MOVQ b+32(FP), DI
	MOVQ ldb+40(FP), R10
	MOVQ c+48(FP), DX
	MOVQ ldc+56(FP), R11
	SHLQ $2, R8
	SHLQ $2, R9
	SHLQ $2, R10
	SHLQ $2, R11
	LEAQ (R8)(R8*2), R13
	LEAQ (SI)(R8*4), R12
	LEAQ (R11)(R11*2), R14
	LEAQ (DX)(R11*4), BX
	LOAD32((DX), Z0, Z1)
	LOAD32((DX)(R11*1), Z2, Z3)
	LOAD32((DX)(R11*2), Z4, Z5)
	LOAD32((DX)(R14*1), Z6, Z7)
	LOAD32((BX), Z8, Z9)
	LOAD32((BX)(R11*1), Z10, Z11)
	LOAD32((BX)(R11*2), Z12, Z13)
	LOAD32((BX)(R14*1), Z14, Z15)
	TESTQ CX, CX
	JEQ store8x32

loop8x32:
	VMOVUPS (DI), Z16
	VMOVUPS 64(DI), Z17
	ROW32((SI), Z0, Z1)
	ROW32((SI)(R8*1), Z2, Z3)
	ROW32((SI)(R8*2), Z4, Z5)
	ROW32((SI)(R13*1), Z6, Z7)
	ROW32((R12), Z8, Z9)
	ROW32((R12)(R8*1), Z10, Z11)
	ROW32((R12)(R8*2), Z12, Z13)
	ROW32((R12)(R13*1), Z14, Z15)
	ADDQ R9, SI
	ADDQ R9, R12
	ADDQ R10, DI
	DECQ CX
	JNE loop8x32

store8x32:
	STORE32((DX), Z0, Z1)
	STORE32((DX)(R11*1), Z2, Z3)
	STORE32((DX)(R11*2), Z4, Z5)
	STORE32((DX)(R14*1), Z6, Z7)
	STORE32((BX), Z8, Z9)
	STORE32((BX)(R11*1), Z10, Z11)
	STORE32((BX)(R11*2), Z12, Z13)
	STORE32((BX)(R14*1), Z14, Z15)
	VZEROUPPER
	RET

// LOAD2 and STORE2 move C[r, 0:16] and C[r+1, 0:16], at AX and AX + ldc
// (R11), to or from a0, a1, and advance AX by two rows.
#define LOAD2(a0, a1) \
	VMOVUPS (AX), a0 \
	VMOVUPS (AX)(R11*1), a1 \
	LEAQ (AX)(R11*2), AX

#define STORE2(a0, a1) \
	VMOVUPS a0, (AX) \
	VMOVUPS a1, (AX)(R11*1) \
	LEAQ (AX)(R11*2), AX

// FMA4 adds A[r, p]·B[p, 0:16] (B in Z16) to the accumulators of the four
// rows from base, with A[r, p] as an embedded broadcast; R8 = rsA and
// BX = 3·rsA in bytes.
#define FMA4(base, a0, a1, a2, a3) \
	VFMADD231PS.BCST (base), Z16, a0 \
	VFMADD231PS.BCST (base)(R8*1), Z16, a1 \
	VFMADD231PS.BCST (base)(R8*2), Z16, a2 \
	VFMADD231PS.BCST (base)(BX*1), Z16, a3

// func kernel16x16(k int, a *float32, rsA, csA int, b *float32, ldb int, c *float32, ldc int)
//
// Z0–Z15 accumulate C[r, 0:16] for rows r = 0…15. At each step p: load
// B[p, 0:16] into Z16 and do one FMA per row with A[r, p] as an embedded
// broadcast (16 FMAs against one load of B and 16 broadcasts). Rows of A
// are addressed from SI, R12, R13, R14 (four rows each, R8 = rsA and
// BX = 3·rsA in bytes); rows of C two at a time from AX (R11 = ldc).
TEXT ·kernel16x16(SB), NOSPLIT, $0-64
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ rsA+16(FP), R8
	MOVQ csA+24(FP), R9
	MOVQ b+32(FP), DI
	MOVQ ldb+40(FP), R10
	MOVQ c+48(FP), DX
	MOVQ ldc+56(FP), R11
	SHLQ $2, R8
	SHLQ $2, R9
	SHLQ $2, R10
	SHLQ $2, R11
	LEAQ (R8)(R8*2), BX
	LEAQ (SI)(R8*4), R12
	LEAQ (R12)(R8*4), R13
	LEAQ (R13)(R8*4), R14
	MOVQ DX, AX
	LOAD2(Z0, Z1)
	LOAD2(Z2, Z3)
	LOAD2(Z4, Z5)
	LOAD2(Z6, Z7)
	LOAD2(Z8, Z9)
	LOAD2(Z10, Z11)
	LOAD2(Z12, Z13)
	LOAD2(Z14, Z15)
	TESTQ CX, CX
	JEQ store16x16

loop16x16:
	VMOVUPS (DI), Z16
	FMA4(SI, Z0, Z1, Z2, Z3)
	FMA4(R12, Z4, Z5, Z6, Z7)
	FMA4(R13, Z8, Z9, Z10, Z11)
	FMA4(R14, Z12, Z13, Z14, Z15)
	ADDQ R9, SI
	ADDQ R9, R12
	ADDQ R9, R13
	ADDQ R9, R14
	ADDQ R10, DI
	DECQ CX
	JNE loop16x16

store16x16:
	MOVQ DX, AX
	STORE2(Z0, Z1)
	STORE2(Z2, Z3)
	STORE2(Z4, Z5)
	STORE2(Z6, Z7)
	STORE2(Z8, Z9)
	STORE2(Z10, Z11)
	STORE2(Z12, Z13)
	STORE2(Z14, Z15)
	VZEROUPPER
	RET
