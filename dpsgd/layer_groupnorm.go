package dpsgd

import (
	"math"

	"github.com/dptune/dptune/internal/vec"
	"github.com/dptune/dptune/model"
)

// groupNormStage is PyTorch's GroupNorm on positions-major feature maps
// ([n, P, C], P = 1 on flat features): each example's channels fall into
// Groups groups of consecutive channels, each group is normalised by its
// mean μ and biased variance σ² over its channels and positions
// (x̂ = (x − μ)/√(σ² + ε), ε = 10⁻⁵; two passes, the per-channel sums over
// the positions in float32, their sums over a group in float64), and
// channel c becomes γ_c·x̂ + β_c. It works per example, which is why Opacus
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
	// Per-channel scratch of one example ([C] each): the backward pass's
	// running sums over the positions and their group's statistic, in
	// float64, and the forward pass's (gnScratch).
	acc, acc2, stat, stat2 []float64
	scratch                gnScratch
}

func init() {
	register("groupnorm", rule{first: gnLinearFirst, build: func(ls []model.Layer, _ bool) (stage, int) {
		return &groupNormStage{l: ls[0], groups: ls[0].Kind.(model.GroupNormSpec).Groups}, 1
	}})
}

func (s *groupNormStage) layer() model.Layer { return s.l }
func (s *groupNormStage) ghost() bool        { return false }
func (s *groupNormStage) exampleFloats() int { return s.l.InSize() + 2*s.l.Out + 2*s.groups }
func (s *groupNormStage) newBuffers(chunk int) any {
	l := s.l
	C := l.In
	return &groupNormBuffers{xhat: make([]float32, chunk*l.InSize()), rstd: make([]float64, chunk*s.groups), g: make([]float32, chunk*2*l.Out),
		acc: make([]float64, C), acc2: make([]float64, C), stat: make([]float64, C), stat2: make([]float64, C), scratch: newGNScratch(C)}
}

func (s *groupNormStage) prepare(p []float32) {
	l := s.l
	s.gamma = p[l.WeightOffset : l.WeightOffset+l.Out]
	s.beta = p[l.BiasOffset : l.BiasOffset+l.Out]
}

// groupMeans writes to dst[c] the sum of acc over c's group of cg
// channels divided by M, the values of one group (acc holds per-channel
// sums over the positions, so this is the group's mean).
func groupMeans(acc []float64, cg int, M float64, dst []float64) {
	for lo := 0; lo < len(acc); lo += cg {
		var t float64
		for _, v := range acc[lo : lo+cg] {
			t += v
		}
		t /= M
		for c := lo; c < lo+cg; c++ {
			dst[c] = t
		}
	}
}

func (s *groupNormStage) forward(buf any, n int, in, out []float32) {
	b, l := buf.(*groupNormBuffers), s.l
	C, G, P := l.In, s.groups, l.InH*l.InW
	for e := 0; e < n; e++ {
		x, xh, y := in[e*P*C:(e+1)*P*C], b.xhat[e*P*C:(e+1)*P*C], out[e*P*C:(e+1)*P*C]
		s.normalize(x, xh, &b.scratch, b.rstd[e*G:(e+1)*G])
		for p := 0; p < P; p++ {
			vec.MulAddTo(y[p*C:(p+1)*C], xh[p*C:(p+1)*C], s.gamma, s.beta)
		}
	}
}

// gnScratch is the per-channel scratch ([C] each) of normalising one
// example: its channels' sums over the positions (Σ_p x, then
// Σ_p (x − μ)²), and each channel's group mean and 1/√(σ² + ε) broadcast
// to the group's channels, so that every loop runs along a contiguous row,
// eight channels an instruction.
type gnScratch struct {
	sum, dev, mean, rstd []float32
}

func newGNScratch(C int) gnScratch {
	return gnScratch{sum: make([]float32, C), dev: make([]float32, C), mean: make([]float32, C), rstd: make([]float32, C)}
}

// normalize writes x̂ of one example's x ([P, C]) to xh and its groups'
// 1/√(σ² + ε) to rstd ([Groups]), in two passes: the per-channel sums over
// the positions in float32, their sums over a group in float64. It leaves
// the per-channel sums and group statistics in sc.
func (s *groupNormStage) normalize(x, xh []float32, sc *gnScratch, rstd []float64) {
	l := s.l
	C, G := l.In, s.groups
	P, cg := l.InH*l.InW, l.In/s.groups
	M := float64(P * cg)
	sum, dev, mean, r32 := sc.sum[:C], sc.dev[:C], sc.mean[:C], sc.rstd[:C]
	clear(sum)
	for p := 0; p < P; p++ {
		vec.Add(sum, x[p*C:(p+1)*C])
	}
	for g := 0; g < G; g++ {
		fill(mean[g*cg:(g+1)*cg], float32(groupSum(sum[g*cg:(g+1)*cg])/M))
	}
	clear(dev)
	for p := 0; p < P; p++ {
		vec.SubSqAdd(dev, x[p*C:(p+1)*C], mean)
	}
	for g := 0; g < G; g++ {
		r := float32(1 / math.Sqrt(groupSum(dev[g*cg:(g+1)*cg])/M+model.GroupNormEpsilon))
		rstd[g] = float64(r)
		fill(r32[g*cg:(g+1)*cg], r)
	}
	for p := 0; p < P; p++ {
		vec.SubMul(xh[p*C:(p+1)*C], x[p*C:(p+1)*C], mean, r32)
	}
}

// groupSum is Σ v over one group's per-channel sums, in float64.
func groupSum(v []float32) float64 {
	var t float64
	for _, x := range v {
		t += float64(x)
	}
	return t
}

func fill(v []float32, x float32) {
	for i := range v {
		v[i] = x
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
	a1, a2, m1, m2 := b.acc[:C], b.acc2[:C], b.stat[:C], b.stat2[:C]
	gamma := s.gamma[:C]
	for e := 0; e < n; e++ {
		g, xh, dx := gOut[e*P*C:(e+1)*P*C], b.xhat[e*P*C:(e+1)*P*C], gIn[e*P*C:(e+1)*P*C]
		clear(a1)
		clear(a2)
		for p := 0; p < P; p++ {
			xhr := xh[p*C : (p+1)*C]
			for c, v := range g[p*C : (p+1)*C] {
				d := float64(v) * float64(gamma[c])
				a1[c] += d
				a2[c] += d * float64(xhr[c])
			}
		}
		groupMeans(a1, cg, M, m1)
		groupMeans(a2, cg, M, m2)
		rstd := b.rstd[e*G : (e+1)*G]
		for p := 0; p < P; p++ {
			xhr, dxr := xh[p*C:(p+1)*C], dx[p*C:(p+1)*C]
			for c, v := range g[p*C : (p+1)*C] {
				d := float64(v) * float64(gamma[c])
				dxr[c] = float32(rstd[c/cg] * (d - m1[c] - float64(xhr[c])*m2[c]))
			}
		}
	}
}

// grads writes example e's [∂γ, ∂β] to dst (2C).
func (s *groupNormStage) grads(b *groupNormBuffers, e int, gOut, dst []float32) {
	l := s.l
	C, P := l.In, l.InH*l.InW
	clear(dst)
	dg, db := dst[:C], dst[C:2*C]
	g, xh := gOut[e*P*C:(e+1)*P*C], b.xhat[e*P*C:(e+1)*P*C]
	for p := 0; p < P; p++ {
		vec.MulAdd(dg, g[p*C:(p+1)*C], xh[p*C:(p+1)*C])
		vec.Add(db, g[p*C:(p+1)*C])
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
	addAffineGrads(s.l, buf.(*groupNormBuffers).g, f[:n], acc)
}

// addAffineGrads adds Σ_k f[k]·g_k to the group norm l's [γ, β] slots of
// acc, where g holds each example's [∂γ, ∂β] ([len(f), 2C]); an example
// with factor 0 is skipped (its gradients may not be finite).
func addAffineGrads(l model.Layer, g []float32, f []float64, acc []float32) {
	C := l.Out
	for k, fk := range f {
		if fk == 0 {
			continue
		}
		gk := g[k*2*C : (k+1)*2*C]
		axpy(acc[l.WeightOffset:l.WeightOffset+C], fk, gk[:C])
		axpy(acc[l.BiasOffset:l.BiasOffset+C], fk, gk[C:])
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
