package dpsgd

import (
	"math"

	"github.com/dptune/dptune/model"
)

// layerNormStage is PyTorch's LayerNorm over all of an example's M = C·H·W
// values (model.LayerNormSpec): x̂ = (x − μ)/√(σ² + ε), ε = 10⁻⁵, with the
// example's own mean μ and biased variance σ² (in float64), then
// y = γ⊙x̂ + β elementwise. It works per example, so DP-SGD's per-example
// analysis holds as for any weight.
//
// The engine holds an example's values positions-major ([P, C]; or, for
// an inner feature map laid out flat, in (position, channel) order), γ
// and β in PyTorch's (channel, position) order: prepare transposes them
// to the engine's order and export transposes the gradients back.
//
// Per-example gradients are instantiated on the fly (2M floats, never
// stored): ∂γ = g⊙x̂, ∂β = g, so ‖∂‖² = Σ (g·x̂)² + Σ g². The input
// gradient is (γ⊙g − mean(γ⊙g) − x̂·mean(γ⊙g⊙x̂))/√(σ² + ε).
type layerNormStage struct {
	l     model.Layer
	C, P  int       // γ's PyTorch layout is [C, P]; the engine's [P, C]
	gamma []float32 // in the engine's order, [M]
	beta  []float32
}

type layerNormBuffers struct {
	xhat []float32 // [n, M]
	rstd []float64 // [n]
}

func init() {
	register("layernorm", rule{build: func(ls []model.Layer, _ bool) (stage, int) {
		l := ls[0]
		s := &layerNormStage{l: l, C: 1, P: l.InSize(), gamma: make([]float32, l.InSize()), beta: make([]float32, l.InSize())}
		switch {
		case !l.Flat:
			s.C, s.P = l.In, l.InH*l.InW
		case l.FlatC > 0:
			s.C, s.P = l.FlatC, l.FlatHW
		}
		return s, 1
	}})
}

func (s *layerNormStage) layer() model.Layer { return s.l }
func (s *layerNormStage) ghost() bool        { return false }
func (s *layerNormStage) exampleFloats() int { return s.l.InSize() + 2 }
func (s *layerNormStage) newBuffers(chunk int) any {
	return &layerNormBuffers{xhat: make([]float32, chunk*s.l.InSize()), rstd: make([]float64, chunk)}
}

func (s *layerNormStage) prepare(p []float32) {
	l, M := s.l, s.l.InSize()
	transpose(s.C, s.P, p[l.WeightOffset:l.WeightOffset+M], s.gamma)
	transpose(s.C, s.P, p[l.BiasOffset:l.BiasOffset+M], s.beta)
}

func (s *layerNormStage) forward(buf any, n int, in, out []float32) {
	b, M := buf.(*layerNormBuffers), s.l.InSize()
	for e := 0; e < n; e++ {
		x, xh, y := in[e*M:(e+1)*M], b.xhat[e*M:(e+1)*M], out[e*M:(e+1)*M]
		var sum, sum2 float64
		for _, v := range x {
			sum += float64(v)
		}
		mean := sum / float64(M)
		for _, v := range x {
			d := float64(v) - mean
			sum2 += d * d
		}
		rstd := 1 / math.Sqrt(sum2/float64(M)+model.LayerNormEpsilon)
		b.rstd[e] = rstd
		for i, v := range x {
			h := float32((float64(v) - mean) * rstd)
			xh[i] = h
			y[i] = h*s.gamma[i] + s.beta[i]
		}
	}
}

func (s *layerNormStage) backward(buf any, n int, in, out, gOut, gIn []float32) {
	if gIn == nil {
		return
	}
	b, M := buf.(*layerNormBuffers), s.l.InSize()
	for e := 0; e < n; e++ {
		g, xh, dx := gOut[e*M:(e+1)*M], b.xhat[e*M:(e+1)*M], gIn[e*M:(e+1)*M]
		var m1, m2 float64
		for i, v := range g {
			d := float64(v) * float64(s.gamma[i])
			m1 += d
			m2 += d * float64(xh[i])
		}
		m1, m2 = m1/float64(M), m2/float64(M)
		rstd := b.rstd[e]
		for i, v := range g {
			d := float64(v) * float64(s.gamma[i])
			dx[i] = float32(rstd * (d - m1 - float64(xh[i])*m2))
		}
	}
}

func (s *layerNormStage) norms(buf any, n int, _, gOut []float32, norm2 []float64) {
	b, M := buf.(*layerNormBuffers), s.l.InSize()
	for k := 0; k < n; k++ {
		g, xh := gOut[k*M:(k+1)*M], b.xhat[k*M:(k+1)*M]
		var w float64
		for i, v := range g {
			d := float64(v * xh[i])
			w += d * d
		}
		norm2[k] += w + sq(g)
	}
}

// add adds f times example k's [∂γ, ∂β] to acc.
func (s *layerNormStage) add(b *layerNormBuffers, k int, gOut []float32, f float64, acc []float32) {
	l, M := s.l, s.l.InSize()
	g, xh := gOut[k*M:(k+1)*M], b.xhat[k*M:(k+1)*M]
	dg, db, ff := acc[l.WeightOffset:l.WeightOffset+M], acc[l.BiasOffset:l.BiasOffset+M], float32(f)
	for i, v := range g {
		dg[i] += ff * (v * xh[i])
		db[i] += ff * v
	}
}

func (s *layerNormStage) clippedSum(buf any, n int, _, gOut []float32, f []float64, acc []float32) {
	for k := 0; k < n; k++ {
		if f[k] != 0 {
			s.add(buf.(*layerNormBuffers), k, gOut, f[k], acc)
		}
	}
}

func (s *layerNormStage) sum(buf any, n int, _, gOut []float32, acc []float32) {
	for k := 0; k < n; k++ {
		s.add(buf.(*layerNormBuffers), k, gOut, 1, acc)
	}
}

func (s *layerNormStage) export(acc, out []float32) {
	l, M := s.l, s.l.InSize()
	transpose(s.P, s.C, acc[l.WeightOffset:l.WeightOffset+M], out[l.WeightOffset:l.WeightOffset+M])
	transpose(s.P, s.C, acc[l.BiasOffset:l.BiasOffset+M], out[l.BiasOffset:l.BiasOffset+M])
}
