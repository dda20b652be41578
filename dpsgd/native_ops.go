package dpsgd

import (
	"math"

	"github.com/dptune/dptune/model"
)

// The native engine keeps activations positions-major: an example's feature
// map of C channels on an H×W grid is [H, W, C] (NHWC), so that each layer is
// one GEMM whose output width is a channel count.

// im2colNCHW unfolds examples xs (each [In, InH, InW], the dataset's layout)
// for convolution l into cols, one row of l.FanIn() per output position, in
// the (channel, kernel row, kernel column) order of the weight's
// [Out, In, kh, kw] layout; zero where the receptive field reaches into the
// padding. cols is [len(xs)·Positions, FanIn].
func im2colNCHW(l model.Layer, xs [][]float32, cols []float32) {
	k, K := l.Kernel, l.FanIn()
	r := 0
	for _, in := range xs {
		for oh := 0; oh < l.OutH; oh++ {
			for ow := 0; ow < l.OutW; ow++ {
				row := cols[r*K : (r+1)*K]
				r++
				r0, c0 := oh*l.Stride-l.Pad, ow*l.Stride-l.Pad
				j := 0
				for c := 0; c < l.In; c++ {
					plane := in[c*l.InH*l.InW : (c+1)*l.InH*l.InW]
					for ki := 0; ki < k; ki++ {
						rr := r0 + ki
						if rr < 0 || rr >= l.InH {
							clear(row[j : j+k])
							j += k
							continue
						}
						line := plane[rr*l.InW : (rr+1)*l.InW]
						if c0 >= 0 && c0+k <= l.InW {
							copy(row[j:j+k], line[c0:c0+k])
							j += k
							continue
						}
						for kj := 0; kj < k; kj++ {
							if cc := c0 + kj; cc < 0 || cc >= l.InW {
								row[j] = 0
							} else {
								row[j] = line[cc]
							}
							j++
						}
					}
				}
			}
		}
	}
}

// im2colNHWC unfolds n examples of in ([n, InH, InW, In]) for convolution l
// into cols ([n·Positions, Kernel²·In]) in (kernel row, kernel column,
// channel) order: each receptive-field pixel is one contiguous run of In
// channels. The weight must be permuted to the same order (permuteKernel).
func im2colNHWC(l model.Layer, n int, in, cols []float32) {
	k, C := l.Kernel, l.In
	K := k * k * C
	r := 0
	for e := 0; e < n; e++ {
		img := in[e*l.InH*l.InW*C : (e+1)*l.InH*l.InW*C]
		for oh := 0; oh < l.OutH; oh++ {
			for ow := 0; ow < l.OutW; ow++ {
				row := cols[r*K : (r+1)*K]
				r++
				r0, c0 := oh*l.Stride-l.Pad, ow*l.Stride-l.Pad
				j := 0
				for ki := 0; ki < k; ki++ {
					rr := r0 + ki
					for kj := 0; kj < k; kj++ {
						cc := c0 + kj
						if rr < 0 || rr >= l.InH || cc < 0 || cc >= l.InW {
							clear(row[j : j+C])
						} else {
							copy(row[j:j+C], img[(rr*l.InW+cc)*C:(rr*l.InW+cc+1)*C])
						}
						j += C
					}
				}
			}
		}
	}
}

// col2imNHWC is the adjoint of im2colNHWC: it adds each row of dcols back
// onto the input positions it was read from, in ([n, InH, InW, In]).
func col2imNHWC(l model.Layer, n int, dcols, in []float32) {
	k, C := l.Kernel, l.In
	K := k * k * C
	r := 0
	for e := 0; e < n; e++ {
		img := in[e*l.InH*l.InW*C : (e+1)*l.InH*l.InW*C]
		for oh := 0; oh < l.OutH; oh++ {
			for ow := 0; ow < l.OutW; ow++ {
				row := dcols[r*K : (r+1)*K]
				r++
				r0, c0 := oh*l.Stride-l.Pad, ow*l.Stride-l.Pad
				j := 0
				for ki := 0; ki < k; ki++ {
					rr := r0 + ki
					for kj := 0; kj < k; kj++ {
						cc := c0 + kj
						if rr >= 0 && rr < l.InH && cc >= 0 && cc < l.InW {
							dst := img[(rr*l.InW+cc)*C : (rr*l.InW+cc+1)*C]
							for c, v := range row[j : j+C] {
								dst[c] += v
							}
						}
						j += C
					}
				}
			}
		}
	}
}

// permuteKernel writes w ([Out, In, k, k], PyTorch) as dst ([Out, k, k, In]),
// the order of im2colNHWC; inverse reverses it.
func permuteKernel(l model.Layer, w, dst []float32, inverse bool) {
	k, C := l.Kernel, l.In
	for o := 0; o < l.Out; o++ {
		for c := 0; c < C; c++ {
			for ki := 0; ki < k; ki++ {
				for kj := 0; kj < k; kj++ {
					a := ((o*C+c)*k+ki)*k + kj
					b := ((o*k+ki)*k+kj)*C + c
					if inverse {
						dst[a] = w[b]
					} else {
						dst[b] = w[a]
					}
				}
			}
		}
	}
}

// permuteFeatures writes the rows×(C·hw) matrix w, whose columns are in
// PyTorch's flatten order (c, h, w), as dst with columns in (h, w, c) order,
// the order of the native engine's pooled activations; inverse reverses it.
func permuteFeatures(rows, C, hw int, w, dst []float32, inverse bool) {
	F := C * hw
	for o := 0; o < rows; o++ {
		for c := 0; c < C; c++ {
			for s := 0; s < hw; s++ {
				a, b := o*F+c*hw+s, o*F+s*C+c
				if inverse {
					dst[a] = w[b]
				} else {
					dst[b] = w[a]
				}
			}
		}
	}
}

// transpose writes the rows×cols matrix a as dst (cols×rows).
func transpose(rows, cols int, a, dst []float32) {
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			dst[j*rows+i] = a[i*cols+j]
		}
	}
}

// biasReLU adds bias (length C) to every row of z ([rows, C]) and applies
// the ReLU in place. Branch-free: the signs are random, and mispredicted
// branches cost more than the arithmetic.
func biasReLU(z, bias []float32) {
	C := len(bias)
	for r := 0; r+C <= len(z); r += C {
		row := z[r : r+C]
		for c, b := range bias {
			row[c] = max(row[c]+b, 0) // +0 for −0: Go's max(−0, 0) is +0
		}
	}
}

// maskReLU zeroes g where the ReLU output a is not positive (its gradient),
// branch-free: a ≥ +0 always (biasReLU), and a > 0 iff its bits are > 0.
func maskReLU(g, a []float32) {
	a = a[:len(g)]
	for i, v := range a {
		keep := uint32(-b2i(math.Float32bits(v) != 0))
		g[i] = math.Float32frombits(math.Float32bits(g[i]) & keep)
	}
}

// b2i is 1 for true and 0 for false (compiled to a SETcc, no branch).
func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// maxPool2 is max-pooling with a 2×2 window and stride 1 on n examples of in
// ([n, H, W, C]) into out ([n, H−1, W−1, C]); arg records, for each output,
// the index in in of the maximum (the first, in window order, on ties).
// Branch-free, like biasReLU.
func maxPool2(n, H, W, C int, in, out []float32, arg []int32) {
	o := 0
	for e := 0; e < n; e++ {
		base := e * H * W * C
		for h := 0; h < H-1; h++ {
			for w := 0; w < W-1; w++ {
				p00 := base + (h*W+w)*C
				r00 := in[p00 : p00+C]
				r01 := in[p00+C : p00+2*C]
				r10 := in[p00+W*C : p00+W*C+C]
				r11 := in[p00+W*C+C : p00+W*C+2*C]
				ov, oa := out[o:o+C], arg[o:o+C]
				for c := range ov {
					best, bi := r00[c], int32(p00+c)
					v := r01[c]
					k := b2i(v > best)
					best, bi = max(best, v), bi+k*int32(C)
					v = r10[c]
					k = b2i(v > best)
					best, bi = max(best, v), bi+k*(int32(p00+W*C+c)-bi)
					v = r11[c]
					k = b2i(v > best)
					best, bi = max(best, v), bi+k*(int32(p00+W*C+C+c)-bi)
					ov[c], oa[c] = best, bi
				}
				o += C
			}
		}
	}
}

// unpool adds each pooled gradient g[j] to din[arg[j]].
func unpool(g []float32, arg []int32, din []float32) {
	for j, v := range g {
		din[arg[j]] += v
	}
}

// sq is Σ v², accumulated in float64.
func sq(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return s
}
