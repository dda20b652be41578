package model

import "math"

// refForward is an independent float64 implementation of the CNN, written
// from the PyTorch definition (DP-HyPO Appendix E.1) with plain loops: it
// returns the logits of one example x ([C, H, W]) under params p.
func refForward(n *Net, p []float64, x []float64) []float64 {
	a := n.Arch
	h, w, c := a.H, a.W, a.C
	act := x
	for _, l := range n.Layers {
		W := p[l.WeightOffset : l.WeightOffset+l.WeightSize()]
		b := p[l.BiasOffset : l.BiasOffset+l.Out]
		if l.Kind == ConvLayer {
			oh, ow := l.OutH, l.OutW
			out := make([]float64, l.Out*oh*ow)
			for o := 0; o < l.Out; o++ {
				for i := 0; i < oh; i++ {
					for j := 0; j < ow; j++ {
						s := b[o]
						for ci := 0; ci < c; ci++ {
							for ki := 0; ki < l.Kernel; ki++ {
								for kj := 0; kj < l.Kernel; kj++ {
									r, q := i*l.Stride-l.Pad+ki, j*l.Stride-l.Pad+kj
									if r < 0 || q < 0 || r >= h || q >= w {
										continue
									}
									s += W[((o*c+ci)*l.Kernel+ki)*l.Kernel+kj] * act[(ci*h+r)*w+q]
								}
							}
						}
						out[(o*oh+i)*ow+j] = math.Max(s, 0) // ReLU
					}
				}
			}
			// max-pool 2×2, stride 1
			ph, pw := oh-1, ow-1
			pooled := make([]float64, l.Out*ph*pw)
			for o := 0; o < l.Out; o++ {
				for i := 0; i < ph; i++ {
					for j := 0; j < pw; j++ {
						m := math.Inf(-1)
						for di := 0; di < 2; di++ {
							for dj := 0; dj < 2; dj++ {
								m = math.Max(m, out[(o*oh+i+di)*ow+j+dj])
							}
						}
						pooled[(o*ph+i)*pw+j] = m
					}
				}
			}
			act, c, h, w = pooled, l.Out, ph, pw
			continue
		}
		out := make([]float64, l.Out)
		for o := range out {
			s := b[o]
			for i := 0; i < l.In; i++ {
				s += W[o*l.In+i] * act[i]
			}
			out[o] = s
		}
		if l.Name != n.Layers[len(n.Layers)-1].Name {
			for i := range out {
				out[i] = math.Max(out[i], 0)
			}
		}
		act = out
	}
	return act
}

// refLoss is the softmax cross-entropy of one example under the reference forward.
func refLoss(n *Net, p []float64, x []float64, label int) float64 {
	z := refForward(n, p, x)
	m := math.Inf(-1)
	for _, v := range z {
		m = math.Max(m, v)
	}
	var s float64
	for _, v := range z {
		s += math.Exp(v - m)
	}
	return m + math.Log(s) - z[label]
}

func to64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
