package dpsgd

import "github.com/dptune/dptune/model"

// im2col unfolds one example's input of layer l, in = [In, InH, InW], into
// col = [OutH·OutW, In·Kernel²]: row p = (oh, ow) holds the receptive field
// of output position p, zero where it reaches into the padding, in the
// order (channel, kernel row, kernel column) of the weight's [Out, In, kh, kw]
// layout (PyTorch's F.unfold, transposed).
func im2col(l model.Layer, in, col []float32) {
	k, K := l.Kernel, l.FanIn()
	p := 0
	for oh := 0; oh < l.OutH; oh++ {
		for ow := 0; ow < l.OutW; ow++ {
			row := col[p*K : (p+1)*K]
			r0, c0 := oh*l.Stride-l.Pad, ow*l.Stride-l.Pad
			j := 0
			for c := 0; c < l.In; c++ {
				plane := in[c*l.InH*l.InW : (c+1)*l.InH*l.InW]
				for ki := 0; ki < k; ki++ {
					r := r0 + ki
					if r < 0 || r >= l.InH {
						clear(row[j : j+k])
						j += k
						continue
					}
					line := plane[r*l.InW : (r+1)*l.InW]
					for kj := 0; kj < k; kj++ {
						cc := c0 + kj
						if cc < 0 || cc >= l.InW {
							row[j] = 0
						} else {
							row[j] = line[cc]
						}
						j++
					}
				}
			}
			p++
		}
	}
}
