package dpsgd

import "math"

// relu is the rectifier max(x, 0); its derivative is 1[y > 0].
type relu struct{}

func init() { registerActivation("relu", relu{}) }

// biasApply is branch-free: the signs are random, and mispredicted
// branches cost more than the arithmetic.
func (relu) biasApply(z, bias []float32) {
	C := len(bias)
	for r := 0; r+C <= len(z); r += C {
		row := z[r : r+C]
		for c, b := range bias {
			row[c] = max(row[c]+b, 0) // +0 for −0: Go's max(−0, 0) is +0
		}
	}
}

func (relu) apply(in, out []float32) {
	for i, v := range in[:len(out)] {
		out[i] = max(v, 0)
	}
}

// mask zeroes g where the output y is not positive, branch-free: y ≥ +0
// always (biasApply, apply), and y > 0 iff its bits are > 0.
func (relu) mask(g, y []float32) {
	y = y[:len(g)]
	for i, v := range y {
		keep := uint32(-b2i(math.Float32bits(v) != 0))
		g[i] = math.Float32frombits(math.Float32bits(g[i]) & keep)
	}
}
