package dpsgd

import (
	"github.com/dptune/dptune/internal/gemm"
	"github.com/dptune/dptune/internal/vec"
	"github.com/dptune/dptune/model"
)

// convStage is a convolution (with the activation after it fused in) on
// positions-major feature maps: its forward pass is one GEMM of the
// unfolded input (im2col, [n·P, K]) and the weight ([K, Out]), its backward
// pass to the input one GEMM and a col2im.
//
// Per-example gradients follow Opacus's grad sampler for nn.Conv2d: example
// i's weight gradient is the product of its output gradient and unfolded
// input, g_iᵀ·a_i ([Out, K], one GEMM per example; Goodfellow 2015,
// Rochette et al. 2019). It is always instantiated: the norm that enters
// the clip factor is that of the float32 vector g_i itself, and the same
// g_i is what is added, scaled, to the sum — so f·‖g_i‖ bounds the
// contribution up to the rounding of the one multiply f·g_i.
//
// No ghost norm. Bu et al. 2023 ("mixed ghost clipping") would take, where
// it is cheaper (on a CPU when P²·(Out + K) < Out·K: few output positions,
// many channels), the ghost norm ‖g_iᵀ·a_i‖²_F = Σ_{t,t'} (g_t·g_t')(a_t·a_t')
// from two P×P Gram matrices, and add the scaled output gradients in one
// GEMM. This engine did until review 45 (H1), and it is unsound in floating
// point: when the per-position terms cancel, the float32 Grams lose every
// digit of the small true sum and the estimate comes out far below ‖g_i‖
// (norm 90 taken for ≈ 0 at C = 1, a clipped contribution of 1171 under
// automatic clipping, whose factor reaches 1/γ). Float64 Grams with a
// rigorous error term would bound the exact g_i, but still not the vector
// actually added, which the float32 GEMM of the scaled output gradients
// computes with its own cancellation error — up to 1/γ times that error
// under automatic clipping. The factor must come from the norm of what is
// added, so the gradient is instantiated. No built-in network has a
// convolution of the ghost shape (all have large P), so their speed and
// their bytes are unchanged (TestOpacusMNISTBitForBit); a user spec with
// a late small feature map pays one Out·K per-example buffer and GEMM: on
// an MNIST CNN whose last convolution has a 2×2 output, about 8% of a
// DP-SGD step with 64 channels and a third with 256 (one core). The
// cancelling construction is TestCancellingConvClippedNormBounded.
type convStage struct {
	l    window
	act  activation // fused, or nil
	nchw bool       // reads the network's input in the dataset's [C, H, W] layout
	w    []float32  // [Out, K], K in (channel, row, column) order if nchw, else (row, column, channel)
	wT   []float32  // [K, Out]
	bias []float32  // in Net.Params
}

type convBuffers struct {
	cols, dcols []float32 // [n·P, K]
	g, gb       []float32 // per-example weight [n, Out·K] and bias [n, Out] gradients
}

func init() {
	register("conv2d", rule{raw: true, build: func(ls []model.Layer, raw bool) (stage, int) {
		act, used := fused(ls)
		return newConvStage(ls[0], act, raw), used
	}})
}

func newConvStage(ml model.Layer, act activation, nchw bool) *convStage {
	p := ml.Kind.(model.Conv2dSpec)
	l := window{Layer: ml, Kernel: p.Kernel, Stride: p.Step(), Pad: p.Padding}
	return &convStage{l: l, act: act, nchw: nchw, w: make([]float32, l.WeightSize()), wT: make([]float32, l.WeightSize())}
}

func (s *convStage) layer() model.Layer { return s.l.Layer }
func (s *convStage) ghost() bool        { return false }

func (s *convStage) newBuffers(chunk int) any {
	l := s.l
	P, K, O := l.Positions(), l.FanIn(), l.Out
	b := &convBuffers{cols: make([]float32, chunk*P*K), g: make([]float32, chunk*O*K), gb: make([]float32, chunk*O)}
	if !s.nchw {
		b.dcols = make([]float32, chunk*P*K)
	}
	return b
}

// exampleFloats is the buffer space one example of a chunk takes.
func (s *convStage) exampleFloats() int {
	l := s.l
	P, K, O := l.Positions(), l.FanIn(), l.Out
	return 2*P*K + O*K + O
}

func (s *convStage) prepare(p []float32) {
	l := s.l
	w := p[l.WeightOffset : l.WeightOffset+l.WeightSize()]
	if s.nchw {
		copy(s.w, w)
	} else {
		permuteKernel(l, w, s.w, false)
	}
	transpose(l.Out, l.FanIn(), s.w, s.wT)
	s.bias = p[l.BiasOffset : l.BiasOffset+l.Out]
}

func (s *convStage) forward(buf any, n int, in, out []float32) {
	b, l := buf.(*convBuffers), s.l
	P, K, O := l.Positions(), l.FanIn(), l.Out
	cols, z := b.cols[:n*P*K], out[:n*P*O]
	if s.nchw {
		im2colNCHW(l, n, in, cols)
	} else {
		im2colNHWC(l, n, in, cols)
	}
	clear(z)
	gemm.Mul(n*P, O, K, cols, K, 1, s.wT, O, z, O)
	biasAct(z, s.bias, s.act)
}

func (s *convStage) backward(buf any, n int, in, out, gOut, gIn []float32) {
	b, l := buf.(*convBuffers), s.l
	P, K, O := l.Positions(), l.FanIn(), l.Out
	g := gOut[:n*P*O]
	maskAct(s.act, g, out)
	if gIn == nil {
		return
	}
	dcols := b.dcols[:n*P*K]
	clear(dcols)
	gemm.Mul(n*P, K, O, g, O, 1, s.w, K, dcols, K)
	gIn = gIn[:n*l.InSize()]
	clear(gIn)
	col2imNHWC(l, n, dcols, gIn)
}

func (s *convStage) norms(buf any, n int, _, gOut []float32, norm2 []float64) {
	b, l := buf.(*convBuffers), s.l
	P, K, O := l.Positions(), l.FanIn(), l.Out
	for k := 0; k < n; k++ {
		gk, ak := gOut[k*P*O:(k+1)*P*O], b.cols[k*P*K:(k+1)*P*K]
		g, gb := b.g[k*O*K:(k+1)*O*K], b.gb[k*O:(k+1)*O]
		clear(g)
		gemm.Mul(O, K, P, gk, 1, O, ak, K, g, K)
		sumRows(gk, gb, true)
		norm2[k] += sq(g) + sq(gb) // the norm of exactly what clippedSum adds
	}
}

func (s *convStage) clippedSum(buf any, n int, _, gOut []float32, f []float64, acc []float32) {
	b, l := buf.(*convBuffers), s.l
	K, O := l.FanIn(), l.Out
	accW, accB := acc[l.WeightOffset:l.WeightOffset+O*K], acc[l.BiasOffset:l.BiasOffset+O]
	for k := 0; k < n; k++ {
		if f[k] == 0 {
			continue // a non-finite gradient is left out
		}
		axpy(accW, f[k], b.g[k*O*K:(k+1)*O*K])
		axpy(accB, f[k], b.gb[k*O:(k+1)*O])
	}
}

func (s *convStage) sum(buf any, n int, _, gOut []float32, acc []float32) {
	s.sumCols(buf.(*convBuffers).cols, n, gOut, acc)
}

// sumCols adds the gradient sum of n examples, from their unfolded inputs
// cols and output gradients gOut, to acc.
func (s *convStage) sumCols(cols []float32, n int, gOut []float32, acc []float32) {
	l := s.l
	P, K, O := l.Positions(), l.FanIn(), l.Out
	gemm.Mul(O, K, n*P, gOut, 1, O, cols, K, acc[l.WeightOffset:], K)
	sumRows(gOut[:n*P*O], acc[l.BiasOffset:l.BiasOffset+O], false)
}

func (s *convStage) export(acc, out []float32) {
	l := s.l
	w, b := l.WeightOffset, l.BiasOffset
	if s.nchw {
		copy(out[w:w+l.WeightSize()], acc[w:w+l.WeightSize()])
	} else {
		permuteKernel(l, acc[w:w+l.WeightSize()], out[w:w+l.WeightSize()], true)
	}
	copy(out[b:b+l.Out], acc[b:b+l.Out])
}

// im2colNCHW unfolds n examples of in (each [In, InH, InW], the dataset's
// layout) for convolution l into cols, one row of l.FanIn() per output
// position, in the (channel, kernel row, kernel column) order of the
// weight's [Out, In, kh, kw] layout; zero where the receptive field reaches
// into the padding. cols is [n·Positions, FanIn].
func im2colNCHW(l window, n int, in, cols []float32) {
	k, K := l.Kernel, l.FanIn()
	size := l.InSize()
	r := 0
	for e := 0; e < n; e++ {
		x := in[e*size : (e+1)*size]
		for oh := 0; oh < l.OutH; oh++ {
			for ow := 0; ow < l.OutW; ow++ {
				row := cols[r*K : (r+1)*K]
				r++
				r0, c0 := oh*l.Stride-l.Pad, ow*l.Stride-l.Pad
				j := 0
				for c := 0; c < l.In; c++ {
					plane := x[c*l.InH*l.InW : (c+1)*l.InH*l.InW]
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
func im2colNHWC(l window, n int, in, cols []float32) { unfoldNHWC(l, n, in, cols, false) }

// col2imNHWC is the adjoint of im2colNHWC: it adds each row of dcols back
// onto the input positions it was read from, in ([n, InH, InW, In]).
func col2imNHWC(l window, n int, dcols, in []float32) { unfoldNHWC(l, n, in, dcols, true) }

// unfoldNHWC walks every receptive-field pixel of n examples of img for
// convolution l beside its run of In channels in cols: copying the pixel
// into the run (zeros where the field reaches into the padding), or, with
// adjoint, adding the run back onto the pixel (nothing for the padding).
func unfoldNHWC(l window, n int, img, cols []float32, adjoint bool) {
	k, C := l.Kernel, l.In
	K := k * k * C
	size := l.InH * l.InW * C
	r := 0
	for e := 0; e < n; e++ {
		x := img[e*size : (e+1)*size]
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
						run := row[j : j+C]
						j += C
						inside := rr >= 0 && rr < l.InH && cc >= 0 && cc < l.InW
						switch {
						case adjoint && inside:
							vec.Add(x[(rr*l.InW+cc)*C:(rr*l.InW+cc+1)*C], run)
						case inside:
							copy(run, x[(rr*l.InW+cc)*C:(rr*l.InW+cc+1)*C])
						case !adjoint:
							clear(run)
						}
					}
				}
			}
		}
	}
}

// permuteKernel writes w ([Out, In, k, k], PyTorch) as dst ([Out, k, k, In]),
// the order of im2colNHWC; inverse reverses it.
func permuteKernel(l window, w, dst []float32, inverse bool) {
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
