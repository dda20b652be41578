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
			b = p[l.BiasOffset : l.BiasOffset+l.BiasSize()]
		}
		c, h, w := l.In, l.InH, l.InW
		oh, ow := l.OutH, l.OutW
		out := make([]float64, l.OutSize())
		switch k := l.Kind.(type) {
		case Conv2dSpec:
			kernel, stride, pad := k.Kernel, k.Step(), k.Padding
			for o := 0; o < l.Out; o++ {
				for i := 0; i < oh; i++ {
					for j := 0; j < ow; j++ {
						s := b[o]
						for ci := 0; ci < c; ci++ {
							for ki := 0; ki < kernel; ki++ {
								for kj := 0; kj < kernel; kj++ {
									r, q := i*stride-pad+ki, j*stride-pad+kj
									if r < 0 || q < 0 || r >= h || q >= w {
										continue
									}
									s += W[((o*c+ci)*kernel+ki)*kernel+kj] * act[(ci*h+r)*w+q]
								}
							}
						}
						out[(o*oh+i)*ow+j] = s
					}
				}
			}
		case MaxPool2dSpec, AvgPool2dSpec:
			var kernel, stride int
			_, isAvg := l.Kind.(AvgPool2dSpec)
			if m, ok := l.Kind.(MaxPool2dSpec); ok {
				kernel, stride = m.Kernel, m.Step()
			} else {
				a := l.Kind.(AvgPool2dSpec)
				kernel, stride = a.Kernel, a.Step()
			}
			for o := 0; o < c; o++ {
				for i := 0; i < oh; i++ {
					for j := 0; j < ow; j++ {
						m, s := math.Inf(-1), 0.0
						for di := 0; di < kernel; di++ {
							for dj := 0; dj < kernel; dj++ {
								v := act[(o*h+i*stride+di)*w+j*stride+dj]
								m, s = math.Max(m, v), s+v
							}
						}
						if isAvg {
							m = s / float64(kernel*kernel)
						}
						out[(o*oh+i)*ow+j] = m
					}
				}
			}
		case LinearSpec:
			for o := range out {
				s := b[o]
				for i := 0; i < l.In; i++ {
					s += W[o*l.In+i] * act[i]
				}
				out[o] = s
			}
		case GroupNormSpec:
			per := c / k.Groups * h * w // a group's channels are consecutive
			for g := 0; g < k.Groups; g++ {
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
		case LayerNormSpec:
			var mean, variance float64
			for _, e := range act {
				mean += e
			}
			mean /= float64(len(act))
			for _, e := range act {
				variance += (e - mean) * (e - mean)
			}
			variance /= float64(len(act))
			for i, e := range act { // γ and β have the input's (channel, row, column) layout
				out[i] = (e-mean)/math.Sqrt(variance+LayerNormEpsilon)*W[i] + b[i]
			}
		case GELUSpec:
			for i, v := range act {
				out[i] = 0.5 * v * (1 + math.Erf(v/math.Sqrt2))
			}
		case SiLUSpec:
			for i, v := range act {
				out[i] = v / (1 + math.Exp(-v))
			}
		case ReLUSpec:
			for i, v := range act {
				out[i] = math.Max(v, 0)
			}
		case TanhSpec:
			for i, v := range act {
				out[i] = math.Tanh(v)
			}
		case FlattenSpec:
			copy(out, act) // the (channel, row, column) layout is PyTorch's flatten order
		case ScatterSpec:
			copy(out, act) // the network's input is the transform's output (Arch.Input)
		case DataNormSpec:
			mean, variance := n.Buffers[l.BufferOffset:l.BufferOffset+c], n.Buffers[l.BufferOffset+c:l.BufferOffset+2*c]
			for i, v := range act {
				ch := i / (h * w)
				if variance[ch] > 0 {
					out[i] = (v - float64(mean[ch])) / math.Sqrt(float64(variance[ch])+DataNormEpsilon)
				}
			}
		default:
			panic("refForward: no reference for layer type " + l.Kind.Type())
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
