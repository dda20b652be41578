package dpsgd

import (
	"github.com/dptune/dptune/internal/gemm"
	"github.com/dptune/dptune/model"
)

// linearStage is a linear layer (with the activation after it fused in) on
// n examples' features ([n, In]): forward a·Wᵀ + b, backward g·W.
//
// Per-example gradients never exist: example i's weight gradient is the
// outer product g_i·a_iᵀ, whose squared norm is ‖g_i‖²·‖a_i‖² (plus ‖g_i‖²
// for the bias) — the ghost norm of Goodfellow 2015 and Li et al. 2022 —
// and the clipped sum is one GEMM of the scaled output gradients with the
// inputs. (Instantiating would cost Out·In per example for nothing: one
// position, T = 1, makes ghost the cheaper way for any width above 1.)
//
// On an inner feature map laid out flat (model.Shape's FlatC, FlatHW) the
// engine's features are in (row, column, channel) order, PyTorch's in (channel, row, column): the weight's
// columns are permuted to match (permuteFeatures) and the gradient back.
type linearStage struct {
	l    model.Layer
	act  activation // fused, or nil
	w    []float32  // [Out, In], columns in the engine's feature order
	wT   []float32  // [In, Out]
	bias []float32  // in Net.Params
}

func init() {
	register("linear", rule{build: func(ls []model.Layer, _ bool) (stage, int) {
		act, used := fused(ls)
		return newLinearStage(ls[0], act), used
	}})
}

func newLinearStage(l model.Layer, act activation) *linearStage {
	return &linearStage{l: l, act: act, w: make([]float32, l.WeightSize()), wT: make([]float32, l.WeightSize())}
}

func (s *linearStage) layer() model.Layer { return s.l }
func (s *linearStage) ghost() bool        { return true }
func (s *linearStage) newBuffers(int) any { return nil }
func (s *linearStage) exampleFloats() int { return 0 }

func (s *linearStage) prepare(p []float32) {
	l := s.l
	w := p[l.WeightOffset : l.WeightOffset+l.WeightSize()]
	if l.FlatC > 0 {
		permuteFeatures(l.Out, l.FlatC, l.FlatHW, w, s.w, false)
	} else {
		copy(s.w, w)
	}
	transpose(l.Out, l.In, s.w, s.wT)
	s.bias = p[l.BiasOffset : l.BiasOffset+l.Out]
}

func (s *linearStage) forward(_ any, n int, in, out []float32) {
	l := s.l
	z := out[:n*l.Out]
	clear(z)
	gemm.Mul(n, l.Out, l.In, in, l.In, 1, s.wT, l.Out, z, l.Out)
	biasAct(z, s.bias, s.act)
}

func (s *linearStage) backward(_ any, n int, in, out, gOut, gIn []float32) {
	l := s.l
	g := gOut[:n*l.Out]
	maskAct(s.act, g, out)
	if gIn == nil {
		return
	}
	gIn = gIn[:n*l.In]
	clear(gIn)
	gemm.Mul(n, l.In, l.Out, g, l.Out, 1, s.w, l.In, gIn, l.In)
}

func (s *linearStage) norms(_ any, n int, in, gOut []float32, norm2 []float64) {
	l := s.l
	for k := 0; k < n; k++ {
		norm2[k] += sq(gOut[k*l.Out:(k+1)*l.Out]) * (sq(in[k*l.In:(k+1)*l.In]) + 1)
	}
}

func (s *linearStage) clippedSum(_ any, n int, in, gOut []float32, f []float64, acc []float32) {
	l := s.l
	for k := 0; k < n; k++ {
		scale(gOut[k*l.Out:(k+1)*l.Out], f[k])
	}
	// An example left out (factor 0) may have non-finite inputs, and
	// 0·∞ is NaN: the product runs over the others only.
	kept(f[:n], func(lo, hi int) {
		s.sum(nil, hi-lo, in[lo*l.In:hi*l.In], gOut[lo*l.Out:hi*l.Out], acc)
	})
}

func (s *linearStage) sum(_ any, n int, in, gOut []float32, acc []float32) {
	l := s.l
	gemm.Mul(l.Out, l.In, n, gOut, 1, l.Out, in, l.In, acc[l.WeightOffset:], l.In)
	sumRows(gOut[:n*l.Out], acc[l.BiasOffset:l.BiasOffset+l.Out], false)
}

func (s *linearStage) export(acc, out []float32) {
	l := s.l
	w, b := l.WeightOffset, l.BiasOffset
	if l.FlatC > 0 {
		permuteFeatures(l.Out, l.FlatC, l.FlatHW, acc[w:w+l.WeightSize()], out[w:w+l.WeightSize()], true)
	} else {
		copy(out[w:w+l.WeightSize()], acc[w:w+l.WeightSize()])
	}
	copy(out[b:b+l.Out], acc[b:b+l.Out])
}

// permuteFeatures writes the rows×(C·hw) matrix w, whose columns are in
// PyTorch's order (c, h, w), as dst with columns in (h, w, c) order, the
// order of the native engine's feature maps laid out flat; inverse
// reverses it.
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
