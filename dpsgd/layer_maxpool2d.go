package dpsgd

import "github.com/dptune/dptune/model"

// maxPoolStage is max-pooling without padding on positions-major feature
// maps ([n, H, W, C]). It records, for each output, the index of its
// maximum (the first in window order on ties) and routes the gradient
// there.
type maxPoolStage struct {
	l window
}

type maxPoolBuffers struct{ arg []int32 }

func init() {
	register("maxpool2d", rule{build: func(ls []model.Layer, _ bool) (stage, int) {
		p := ls[0].Kind.(model.MaxPool2dSpec)
		return &maxPoolStage{l: window{Layer: ls[0], Kernel: p.Kernel, Stride: p.Step()}}, 1
	}})
}

func (s *maxPoolStage) layer() model.Layer { return s.l.Layer }
func (s *maxPoolStage) prepare([]float32)  {}
func (s *maxPoolStage) exampleFloats() int { return s.l.OutSize() }
func (s *maxPoolStage) newBuffers(chunk int) any {
	return &maxPoolBuffers{arg: make([]int32, chunk*s.l.OutSize())}
}

func (s *maxPoolStage) forward(b any, n int, in, out []float32) {
	l := s.l
	arg := b.(*maxPoolBuffers).arg
	if l.Kernel == 2 && l.Stride == 1 {
		maxPool2(n, l.InH, l.InW, l.In, in, out, arg)
		return
	}
	maxPool(l, n, in, out, arg)
}

func (s *maxPoolStage) backward(b any, n int, in, out, gOut, gIn []float32) {
	if gIn == nil {
		return
	}
	l := s.l
	gIn = gIn[:n*l.InSize()]
	clear(gIn)
	unpool(gOut[:n*l.OutSize()], b.(*maxPoolBuffers).arg, gIn)
}

// maxPool is max-pooling with l's kernel and stride on n examples of in
// ([n, InH, InW, C]) into out ([n, OutH, OutW, C]); arg records the index
// in in of each maximum.
func maxPool(l window, n int, in, out []float32, arg []int32) {
	C, k := l.In, l.Kernel
	o := 0
	for e := 0; e < n; e++ {
		base := e * l.InH * l.InW * C
		for oh := 0; oh < l.OutH; oh++ {
			for ow := 0; ow < l.OutW; ow++ {
				ov, oa := out[o:o+C], arg[o:o+C]
				first := base + (oh*l.Stride*l.InW+ow*l.Stride)*C
				copy(ov, in[first:first+C])
				for c := range oa {
					oa[c] = int32(first + c)
				}
				for ki := 0; ki < k; ki++ {
					for kj := 0; kj < k; kj++ {
						p := base + ((oh*l.Stride+ki)*l.InW+ow*l.Stride+kj)*C
						for c, v := range in[p : p+C] {
							if v > ov[c] {
								ov[c], oa[c] = v, int32(p+c)
							}
						}
					}
				}
				o += C
			}
		}
	}
}

// maxPool2 is max-pooling with a 2×2 window and stride 1 on n examples of in
// ([n, H, W, C]) into out ([n, H−1, W−1, C]); arg records, for each output,
// the index in in of the maximum (the first, in window order, on ties).
// Branch-free: the comparisons are random, and mispredicted branches cost
// more than the arithmetic.
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
