//go:build amd64 && !purego

#include "textflag.h"

// func kernel4x16(k int, a *float32, rsA, csA int, b *float32, ldb int, c *float32, ldc int)
//
// Y0–Y7 accumulate C[r, 0:8] and C[r, 8:16] for rows r = 0…3, starting
// from C's values (so that splitting k into blocks rounds exactly as one
// pass does). At each step p of the inner dimension: load B[p, 0:16] into
// Y8, Y9; broadcast A[r, p] into Y10–Y13; eight fused multiply-adds.
TEXT ·kernel4x16(SB), NOSPLIT, $0-64
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
	LEAQ (SI)(R8*1), R12
	LEAQ (R12)(R8*1), R13
	LEAQ (R13)(R8*1), R14
	MOVQ DX, BX
	VMOVUPS (BX), Y0
	VMOVUPS 32(BX), Y1
	ADDQ R11, BX
	VMOVUPS (BX), Y2
	VMOVUPS 32(BX), Y3
	ADDQ R11, BX
	VMOVUPS (BX), Y4
	VMOVUPS 32(BX), Y5
	ADDQ R11, BX
	VMOVUPS (BX), Y6
	VMOVUPS 32(BX), Y7
	TESTQ CX, CX
	JEQ store

loop:
	VMOVUPS (DI), Y8
	VMOVUPS 32(DI), Y9
	VBROADCASTSS (SI), Y10
	VBROADCASTSS (R12), Y11
	VBROADCASTSS (R13), Y12
	VBROADCASTSS (R14), Y13
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y10, Y1
	VFMADD231PS Y8, Y11, Y2
	VFMADD231PS Y9, Y11, Y3
	VFMADD231PS Y8, Y12, Y4
	VFMADD231PS Y9, Y12, Y5
	VFMADD231PS Y8, Y13, Y6
	VFMADD231PS Y9, Y13, Y7
	ADDQ R9, SI
	ADDQ R9, R12
	ADDQ R9, R13
	ADDQ R9, R14
	ADDQ R10, DI
	DECQ CX
	JNE loop

store:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ R11, DX
	VMOVUPS Y2, (DX)
	VMOVUPS Y3, 32(DX)
	ADDQ R11, DX
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ R11, DX
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	VZEROUPPER
	RET

// func kernelTail(k, rows int, a *float32, rsA, csA int, b *float32, ldb int, c *float32, ldc int, mask *int32)
//
// kernel4x16 for a block at the matrix's edge: only rows ≤ 4 rows of A and
// C, and only the columns whose lanes of mask[0:16] are all ones, are read
// or written (masked loads and stores never touch the others). Rows past
// the last are computed from row 0 and discarded.
TEXT ·kernelTail(SB), NOSPLIT, $0-80
	MOVQ k+0(FP), CX
	MOVQ rows+8(FP), BX
	MOVQ a+16(FP), SI
	MOVQ rsA+24(FP), R8
	MOVQ csA+32(FP), R9
	MOVQ b+40(FP), DI
	MOVQ ldb+48(FP), R10
	MOVQ c+56(FP), DX
	MOVQ ldc+64(FP), R11
	MOVQ mask+72(FP), AX
	VMOVDQU (AX), Y14
	VMOVDQU 32(AX), Y15
	SHLQ $2, R8
	SHLQ $2, R9
	SHLQ $2, R10
	SHLQ $2, R11
	LEAQ (SI)(R8*1), R12
	CMPQ BX, $2
	CMOVQLT SI, R12
	LEAQ (R12)(R8*1), R13
	CMPQ BX, $3
	CMOVQLT SI, R13
	LEAQ (R13)(R8*1), R14
	CMPQ BX, $4
	CMOVQLT SI, R14
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ DX, AX
	VMASKMOVPS (AX), Y14, Y0
	VMASKMOVPS 32(AX), Y15, Y1
	CMPQ BX, $2
	JLT tailloop
	ADDQ R11, AX
	VMASKMOVPS (AX), Y14, Y2
	VMASKMOVPS 32(AX), Y15, Y3
	CMPQ BX, $3
	JLT tailloop
	ADDQ R11, AX
	VMASKMOVPS (AX), Y14, Y4
	VMASKMOVPS 32(AX), Y15, Y5
	CMPQ BX, $4
	JLT tailloop
	ADDQ R11, AX
	VMASKMOVPS (AX), Y14, Y6
	VMASKMOVPS 32(AX), Y15, Y7

tailloop:
	TESTQ CX, CX
	JEQ tailstore
	VMASKMOVPS (DI), Y14, Y8
	VMASKMOVPS 32(DI), Y15, Y9
	VBROADCASTSS (SI), Y10
	VBROADCASTSS (R12), Y11
	VBROADCASTSS (R13), Y12
	VBROADCASTSS (R14), Y13
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y10, Y1
	VFMADD231PS Y8, Y11, Y2
	VFMADD231PS Y9, Y11, Y3
	VFMADD231PS Y8, Y12, Y4
	VFMADD231PS Y9, Y12, Y5
	VFMADD231PS Y8, Y13, Y6
	VFMADD231PS Y9, Y13, Y7
	ADDQ R9, SI
	ADDQ R9, R12
	ADDQ R9, R13
	ADDQ R9, R14
	ADDQ R10, DI
	DECQ CX
	JMP tailloop

tailstore:
	VMASKMOVPS Y0, Y14, (DX)
	VMASKMOVPS Y1, Y15, 32(DX)
	CMPQ BX, $2
	JLT taildone
	ADDQ R11, DX
	VMASKMOVPS Y2, Y14, (DX)
	VMASKMOVPS Y3, Y15, 32(DX)
	CMPQ BX, $3
	JLT taildone
	ADDQ R11, DX
	VMASKMOVPS Y4, Y14, (DX)
	VMASKMOVPS Y5, Y15, 32(DX)
	CMPQ BX, $4
	JLT taildone
	ADDQ R11, DX
	VMASKMOVPS Y6, Y14, (DX)
	VMASKMOVPS Y7, Y15, 32(DX)

taildone:
	VZEROUPPER
	RET
