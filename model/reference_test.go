package model

import "math"

// refForward is an independent float64 implementation of any Arch, written
// from PyTorch's definitions of its layers with plain loops on the
// (channel, row, column) layout: it returns the logits of one example x
// ([C, H, W]) under params p.
func refForward(n *Net, p []float64, x []float64) []float64 {
	act := x
	for _, l := range n.Layers {
		var W, b []float64
		if l.HasParams() {
			W = p[l.WeightOffset : l.WeightOffset+l.WeightSize()]
			b = p[l.BiasOffset : l.BiasOffset+l.Out]
		}
		c, h, w := l.In, l.InH, l.InW
		oh, ow := l.OutH, l.OutW
		out := make([]float64, l.OutSize())
		switch l.Kind {
		case ConvLayer:
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
						out[(o*oh+i)*ow+j] = s
					}
				}
			}
		case MaxPoolLayer, AvgPoolLayer:
			k := l.Kernel
			for o := 0; o < c; o++ {
				for i := 0; i < oh; i++ {
					for j := 0; j < ow; j++ {
						m, s := math.Inf(-1), 0.0
						for di := 0; di < k; di++ {
							for dj := 0; dj < k; dj++ {
								v := act[(o*h+i*l.Stride+di)*w+j*l.Stride+dj]
								m, s = math.Max(m, v), s+v
							}
						}
						if l.Kind == AvgPoolLayer {
							m = s / float64(k*k)
						}
						out[(o*oh+i)*ow+j] = m
					}
				}
			}
		case LinearLayer:
			for o := range out {
				s := b[o]
				for i := 0; i < l.In; i++ {
					s += W[o*l.In+i] * act[i]
				}
				out[o] = s
			}
		case GroupNormLayer:
			per := c / l.Groups * h * w // a group's channels are consecutive
			for g := 0; g < l.Groups; g++ {
				v := act[g*per : (g+1)*per]
				var mean, variance float64
				for _, e := range v {
					mean += e
				}
				mean /= float64(per)
				for _, e := range v {
					variance += (e - mean) * (e - mean)
				}
				variance /= float64(per)
				for i, e := range v {
					ch := (g*per + i) / (h * w)
					out[g*per+i] = (e-mean)/math.Sqrt(variance+GroupNormEpsilon)*W[ch] + b[ch]
				}
			}
		case ReLULayer:
			for i, v := range act {
				out[i] = math.Max(v, 0)
			}
		case TanhLayer:
			for i, v := range act {
				out[i] = math.Tanh(v)
			}
		case FlattenLayer:
			copy(out, act) // the (channel, row, column) layout is PyTorch's flatten order
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
