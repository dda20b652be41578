package dpsgd

import (
	"math"

	"github.com/dptune/dptune/model"
)

// groupNormStage is PyTorch's GroupNorm on positions-major feature maps
// ([n, P, C], P = 1 on flat features): each example's channels fall into
// Groups groups of consecutive channels, each group is normalised by its
// mean μ and biased variance σ² over its channels and positions
// (x̂ = (x − μ)/√(σ² + ε), ε = 10⁻⁵, statistics in float64), and channel c
// becomes γ_c·x̂ + β_c. It works per example, which is why Opacus
// recommends it where BatchNorm (which mixes the examples of a batch, so
// has no per-example gradient) cannot be used.
//
// Per-example gradients of the affine parameters are instantiated (2C
// floats): ∂γ_c = Σ_p g_{p,c}·x̂_{p,c}, ∂β_c = Σ_p g_{p,c}. The input
// gradient is, per group of M values, (γ·g − mean(γ·g) − x̂·mean(γ·g·x̂))/√(σ² + ε).
type groupNormStage struct {
	l      model.Layer
	groups int
	gamma  []float32 // in Net.Params
	beta   []float32
}

type groupNormBuffers struct {
	xhat []float32 // [n, P, C]
	rstd []float64 // [n, Groups]
	g    []float32 // per-example [∂γ, ∂β], [n, 2C]
}

func init() {
	register("groupnorm", rule{build: func(ls []model.Layer, _ bool) (stage, int) {
		return &groupNormStage{l: ls[0], groups: ls[0].Kind.(model.GroupNormSpec).Groups}, 1
	}})
}

func (s *groupNormStage) layer() model.Layer { return s.l }
func (s *groupNormStage) ghost() bool        { return false }
func (s *groupNormStage) exampleFloats() int { return s.l.InSize() + 2*s.l.Out + 2*s.groups }
func (s *groupNormStage) newBuffers(chunk int) any {
	l := s.l
	return &groupNormBuffers{xhat: make([]float32, chunk*l.InSize()), rstd: make([]float64, chunk*s.groups), g: make([]float32, chunk*2*l.Out)}
}

func (s *groupNormStage) prepare(p []float32) {
	l := s.l
	s.gamma = p[l.WeightOffset : l.WeightOffset+l.Out]
	s.beta = p[l.BiasOffset : l.BiasOffset+l.Out]
}

func (s *groupNormStage) forward(buf any, n int, in, out []float32) {
	b, l := buf.(*groupNormBuffers), s.l
	C, G := l.In, s.groups
	P, cg := l.InH*l.InW, l.In/s.groups
	M := float64(P * cg)
	for e := 0; e < n; e++ {
		x, xh, y := in[e*P*C:(e+1)*P*C], b.xhat[e*P*C:(e+1)*P*C], out[e*P*C:(e+1)*P*C]
		for g := 0; g < G; g++ {
			var sum, sum2 float64
			for p := 0; p < P; p++ {
				for _, v := range x[p*C+g*cg : p*C+(g+1)*cg] {
					sum += float64(v)
				}
			}
			mean := sum / M
			for p := 0; p < P; p++ {
				for _, v := range x[p*C+g*cg : p*C+(g+1)*cg] {
					d := float64(v) - mean
					sum2 += d * d
				}
			}
			rstd := 1 / math.Sqrt(sum2/M+model.GroupNormEpsilon)
			b.rstd[e*G+g] = rstd
			for p := 0; p < P; p++ {
				for c := g * cg; c < (g+1)*cg; c++ {
					v := float32((float64(x[p*C+c]) - mean) * rstd)
					xh[p*C+c] = v
					y[p*C+c] = v*s.gamma[c] + s.beta[c]
				}
			}
		}
	}
}

func (s *groupNormStage) backward(buf any, n int, in, out, gOut, gIn []float32) {
	if gIn == nil {
		return
	}
	b, l := buf.(*groupNormBuffers), s.l
	C, G := l.In, s.groups
	P, cg := l.InH*l.InW, l.In/s.groups
	M := float64(P * cg)
	for e := 0; e < n; e++ {
		g, xh, dx := gOut[e*P*C:(e+1)*P*C], b.xhat[e*P*C:(e+1)*P*C], gIn[e*P*C:(e+1)*P*C]
		for gr := 0; gr < G; gr++ {
			var m1, m2 float64
			for p := 0; p < P; p++ {
				for c := gr * cg; c < (gr+1)*cg; c++ {
					d := float64(g[p*C+c]) * float64(s.gamma[c])
					m1 += d
					m2 += d * float64(xh[p*C+c])
				}
			}
			m1, m2 = m1/M, m2/M
			rstd := b.rstd[e*G+gr]
			for p := 0; p < P; p++ {
				for c := gr * cg; c < (gr+1)*cg; c++ {
					d := float64(g[p*C+c]) * float64(s.gamma[c])
					dx[p*C+c] = float32(rstd * (d - m1 - float64(xh[p*C+c])*m2))
				}
			}
		}
	}
}

// grads writes example e's [∂γ, ∂β] to dst (2C).
func (s *groupNormStage) grads(b *groupNormBuffers, e int, gOut, dst []float32) {
	l := s.l
	C, P := l.In, l.InH*l.InW
	clear(dst)
	dg, db := dst[:C], dst[C:]
	g, xh := gOut[e*P*C:(e+1)*P*C], b.xhat[e*P*C:(e+1)*P*C]
	for p := 0; p < P; p++ {
		for c, v := range g[p*C : (p+1)*C] {
			dg[c] += v * xh[p*C+c]
			db[c] += v
		}
	}
}

func (s *groupNormStage) norms(buf any, n int, _, gOut []float32, norm2 []float64) {
	b, C := buf.(*groupNormBuffers), s.l.Out
	for k := 0; k < n; k++ {
		g := b.g[k*2*C : (k+1)*2*C]
		s.grads(b, k, gOut, g)
		norm2[k] += sq(g)
	}
}

func (s *groupNormStage) clippedSum(buf any, n int, _, _ []float32, f []float64, acc []float32) {
	b, l := buf.(*groupNormBuffers), s.l
	C := l.Out
	for k := 0; k < n; k++ {
		if f[k] == 0 {
			continue
		}
		g := b.g[k*2*C : (k+1)*2*C]
		axpy(acc[l.WeightOffset:l.WeightOffset+C], f[k], g[:C])
		axpy(acc[l.BiasOffset:l.BiasOffset+C], f[k], g[C:])
	}
}

func (s *groupNormStage) sum(buf any, n int, _, gOut []float32, acc []float32) {
	b, l := buf.(*groupNormBuffers), s.l
	C := l.Out
	g := b.g[:2*C]
	for k := 0; k < n; k++ {
		s.grads(b, k, gOut, g)
		axpy(acc[l.WeightOffset:l.WeightOffset+C], 1, g[:C])
		axpy(acc[l.BiasOffset:l.BiasOffset+C], 1, g[C:])
	}
}

func (s *groupNormStage) export(acc, out []float32) {
	l := s.l
	copy(out[l.WeightOffset:l.WeightOffset+l.Out], acc[l.WeightOffset:l.WeightOffset+l.Out])
	copy(out[l.BiasOffset:l.BiasOffset+l.Out], acc[l.BiasOffset:l.BiasOffset+l.Out])
}
