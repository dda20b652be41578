package dpsgd

import "github.com/dptune/dptune/model"

// avgPoolStage is average pooling without padding on positions-major
// feature maps ([n, H, W, C]); its backward pass spreads each output's
// gradient evenly over its window.
type avgPoolStage struct {
	l window
}

func init() {
	register("avgpool2d", rule{build: func(ls []model.Layer, _ bool) (stage, int) {
		p := ls[0].Kind.(model.AvgPool2dSpec)
		return &avgPoolStage{l: window{Layer: ls[0], Kernel: p.Kernel, Stride: p.Step()}}, 1
	}})
}

func (s *avgPoolStage) layer() model.Layer { return s.l.Layer }
func (s *avgPoolStage) prepare([]float32)  {}
func (s *avgPoolStage) exampleFloats() int { return s.l.OutSize() }
func (s *avgPoolStage) newBuffers(int) any { return nil }

func (s *avgPoolStage) forward(_ any, n int, in, out []float32) { avgPool(s.l, n, in, out) }

func (s *avgPoolStage) backward(_ any, n int, in, out, gOut, gIn []float32) {
	if gIn == nil {
		return
	}
	gIn = gIn[:n*s.l.InSize()]
	clear(gIn)
	avgUnpool(s.l, n, gOut, gIn)
}

// avgPool is average pooling with l's kernel and stride on n examples of in
// ([n, InH, InW, C]) into out ([n, OutH, OutW, C]).
func avgPool(l window, n int, in, out []float32) {
	C, k := l.In, l.Kernel
	inv := 1 / float32(k*k)
	o := 0
	for e := 0; e < n; e++ {
		base := e * l.InH * l.InW * C
		for oh := 0; oh < l.OutH; oh++ {
			for ow := 0; ow < l.OutW; ow++ {
				ov := out[o : o+C]
				clear(ov)
				for ki := 0; ki < k; ki++ {
					for kj := 0; kj < k; kj++ {
						p := base + ((oh*l.Stride+ki)*l.InW+ow*l.Stride+kj)*C
						for c, v := range in[p : p+C] {
							ov[c] += v
						}
					}
				}
				for c := range ov {
					ov[c] *= inv
				}
				o += C
			}
		}
	}
}

// avgUnpool adds to gIn each output gradient of g divided by k² over its
// window (the adjoint of avgPool).
func avgUnpool(l window, n int, g, gIn []float32) {
	C, k := l.In, l.Kernel
	inv := 1 / float32(k*k)
	o := 0
	for e := 0; e < n; e++ {
		base := e * l.InH * l.InW * C
		for oh := 0; oh < l.OutH; oh++ {
			for ow := 0; ow < l.OutW; ow++ {
				gv := g[o : o+C]
				for ki := 0; ki < k; ki++ {
					for kj := 0; kj < k; kj++ {
						p := base + ((oh*l.Stride+ki)*l.InW+ow*l.Stride+kj)*C
						dst := gIn[p : p+C]
						for c, v := range gv {
							dst[c] += v * inv
						}
					}
				}
				o += C
			}
		}
	}
}
