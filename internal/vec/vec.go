// Package vec holds the elementwise float32 loops of dptune's per-sample
// gradient engine — tanh and its derivative, sums and scaled sums of
// vectors — with AVX2 versions on amd64 that process eight floats per
// instruction (vec_amd64.s) and Go loops elsewhere, under the purego build
// tag, and for the last len%8 elements.
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
