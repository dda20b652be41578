// Package vec holds the elementwise float32 loops of dptune's per-sample
// gradient engine — tanh and its derivative, sums, scaled sums and
// elementwise products of vectors, and the transpose of a matrix — with
// AVX2 versions on amd64 that process eight floats per instruction
// (vec_amd64.s) and Go loops elsewhere, under the purego build tag, and
// for the last len%8 elements.
//
// The AVX2 versions perform the same float32 operations in the same order
// as the Go loops (no fused multiply-adds), so both give the same bits.
package vec

// Tanh replaces every x[i] by tanh(x[i]), computed as Tanh32 does.
func Tanh(x []float32) {
	n := 0
	if haveAVX2 && len(x) >= 8 {
		n = len(x) &^ 7
		tanhAVX2(&x[0], n, &tanhConsts)
	}
	for i := n; i < len(x); i++ {
		x[i] = Tanh32(x[i])
	}
}

// TanhGrad multiplies g[i] by tanh's derivative 1 − y[i]², read off the
// output y[i] = tanh(x[i]). It panics if y is shorter than g.
func TanhGrad(g, y []float32) {
	y = y[:len(g)]
	n := 0
	if haveAVX2 && len(g) >= 8 {
		n = len(g) &^ 7
		tanhGradAVX2(&g[0], &y[0], n)
	}
	for i := n; i < len(g); i++ {
		v := y[i]
		g[i] *= 1 - v*v
	}
}

// Add adds x to y elementwise. It panics if x is shorter than y.
func Add(y, x []float32) {
	x = x[:len(y)]
	n := 0
	if haveAVX2 && len(y) >= 8 {
		n = len(y) &^ 7
		addAVX2(&y[0], &x[0], n)
	}
	for i := n; i < len(y); i++ {
		y[i] += x[i]
	}
}

// Axpy adds a·x to y elementwise (the product rounded to float32 before
// the sum). It panics if x is shorter than y.
func Axpy(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	n := 0
	if haveAVX2 && len(y) >= 8 {
		n = len(y) &^ 7
		axpyAVX2(&y[0], a, &x[0], n)
	}
	for i := n; i < len(y); i++ {
		y[i] += a * x[i]
	}
}

// MulAdd adds the elementwise product a⊙b to y (each product rounded to
// float32 before the sum). It panics if a or b is shorter than y.
func MulAdd(y, a, b []float32) {
	a, b = a[:len(y)], b[:len(y)]
	n := 0
	if haveAVX2 && len(y) >= 8 {
		n = len(y) &^ 7
		mulAddAVX2(&y[0], &a[0], &b[0], n)
	}
	for i := n; i < len(y); i++ {
		y[i] += a[i] * b[i]
	}
}

// SubSqAdd adds the squared differences (x − m)² to acc elementwise. It
// panics if x or m is shorter than acc.
func SubSqAdd(acc, x, m []float32) {
	x, m = x[:len(acc)], m[:len(acc)]
	n := 0
	if haveAVX2 && len(acc) >= 8 {
		n = len(acc) &^ 7
		subSqAddAVX2(&acc[0], &x[0], &m[0], n)
	}
	for i := n; i < len(acc); i++ {
		d := x[i] - m[i]
		acc[i] += d * d
	}
}

// SubMul writes (x − m)·r to dst elementwise. It panics if x, m or r is
// shorter than dst.
func SubMul(dst, x, m, r []float32) {
	x, m, r = x[:len(dst)], m[:len(dst)], r[:len(dst)]
	n := 0
	if haveAVX2 && len(dst) >= 8 {
		n = len(dst) &^ 7
		subMulAVX2(&dst[0], &x[0], &m[0], &r[0], n)
	}
	for i := n; i < len(dst); i++ {
		dst[i] = (x[i] - m[i]) * r[i]
	}
}

// MulAddTo writes a·b + c to dst elementwise (the product rounded to
// float32 before the sum). It panics if a, b or c is shorter than dst.
func MulAddTo(dst, a, b, c []float32) {
	a, b, c = a[:len(dst)], b[:len(dst)], c[:len(dst)]
	n := 0
	if haveAVX2 && len(dst) >= 8 {
		n = len(dst) &^ 7
		mulAddToAVX2(&dst[0], &a[0], &b[0], &c[0], n)
	}
	for i := n; i < len(dst); i++ {
		dst[i] = a[i]*b[i] + c[i]
	}
}

// Transpose writes the rows×cols row-major matrix a to dst as its
// cols×rows transpose, in 8×8 blocks with AVX2 and element by element at
// the edges. It panics if a or dst is shorter than rows·cols.
func Transpose(rows, cols int, a, dst []float32) {
	a, dst = a[:rows*cols], dst[:rows*cols]
	r8, c8 := 0, 0
	if haveAVX2 {
		r8, c8 = rows&^7, cols&^7
		for i := 0; i < r8; i += 8 {
			for j := 0; j < c8; j += 8 {
				transpose8x8AVX2(&a[i*cols+j], cols, &dst[j*rows+i], rows)
			}
		}
	}
	for i := 0; i < rows; i++ {
		d := dst[i:]
		j0 := 0
		if i < r8 {
			j0 = c8 // the blocks wrote columns [0, c8) of these rows
		}
		for j, v := range a[i*cols+j0 : (i+1)*cols] {
			d[(j0+j)*rows] = v
		}
	}
}
