package dpsgd

import (
	"github.com/dptune/dptune/internal/gemm"
	"github.com/dptune/dptune/model"
)

// gnLinearStage is a group norm that is the network's first stage,
// followed by flatten and a linear layer (with the activation after it
// fused in): the ScatterNet + group norm + linear networks of Tramèr &
// Boneh (ICLR 2021) on their fixed features. Being first, it needs no input
// gradient, and the group norm's normalised input x̂ ([P, C] per example)
// does not depend on the parameters; so the affine output
// a = γ⊙x̂ + β and the input gradient of the linear layer are never formed.
//
// With W the linear weight in PyTorch's (o, c, p) order, the per-channel
// partial products A[c, o] = Σ_p W[o, c, p]·x̂[p, c] (one small GEMM per
// channel) give both the forward pass and the affine parameters'
// per-example gradients:
//
//	z_o = Σ_c γ_c·A[c, o] + Σ_c β_c·S[c, o] + b_o,  S[c, o] = Σ_p W[o, c, p]
//	∂γ_c = Σ_o g_o·A[c, o],  ∂β_c = Σ_o g_o·S[c, o],  ∂b = g,
//	∂W[o, c, p] = g_o·(γ_c·x̂[p, c] + β_c)
//
// for an example whose logit gradient is g. The weight gradient's squared
// norm is ‖g‖²·‖a‖² (the ghost norm, as linearStage), where
// ‖a‖² = Σ_c P·(β_c + γ_c·m_c)² + γ_c²·Σ_p (x̂ − m_c)², m_c the mean of x̂
// over channel c's positions, is a sum of non-negative terms from the x̂
// actually stored (its channel sums come out of the GEMM for A, its sums
// of squares from the group norm's own differences) — never from the raw
// inputs' float32 sums, whose rounding at a large offset is larger than
// the spread the norm depends on; the clipped sum of the weight gradients is
// γ_c·(Σ_k f_k·g_k ⊗ x̂_k) + β_c·Σ_k f_k·g_k, one GEMM of the scaled logit
// gradients with x̂ (the γ and β terms added when exported). x̂ is kept
// channels-major, transposed from the group norm's positions-major rows,
// so that each channel's GEMM reads contiguous rows.
type gnLinearStage struct {
	gn  groupNormStage
	fc  model.Layer
	act activation // fused after the linear layer, or nil

	// wT is [C, P, q]: Wᵀ, wT[(c·P+p)·q+o] = W[o, c·P+p], then a column
	// of ones, so that A's column Out is Σ_p x̂[p, c], the channel's sum of
	// the x̂ actually stored, then zeros: q = Out+1 rounded up to the GEMM
	// kernel's 16 columns, which it computes unmasked (masked loads of B
	// took 4 times the time of the unmasked kernel here, Out+1 = 11).
	wT   []float32
	q    int
	s    []float32 // [C, Out]: S
	k    []float32 // [Out]: b + Σ_c β_c·S[c, ·], the logits' constant term
	bias []float32 // in Net.Params
}

type gnLinearBuffers struct {
	xhat    []float32 // [n, C, P]: channels-major, PyTorch's flatten order
	row     []float32 // [P, C]: one example's x̂ positions-major, as normalize writes it
	a       []float32 // [n, C, q]: A, Σ_p x̂ in column Out, then zeros
	rstd    []float64 // [Groups]: one example's, as normalize writes them
	mean    []float64 // [n, C]: m_c = Σ_p x̂/P, of the x̂ stored
	vars    []float64 // [n, C]: Σ_p (x̂ − m_c)²
	g       []float32 // per-example [∂γ, ∂β], [n, 2C]
	scratch gnScratch
}

// gnLinearFirst builds the fused stage when ls is group norm, flatten and
// linear (then maybe an activation), else nil.
func gnLinearFirst(ls []model.Layer) (stage, int) {
	if len(ls) < 3 {
		return nil, 0
	}
	_, flat := ls[1].Kind.(model.FlattenSpec)
	_, linear := ls[2].Kind.(model.LinearSpec)
	if !flat || !linear {
		return nil, 0
	}
	gn, fc := ls[0], ls[2]
	act, used := fused(ls[2:])
	q := (fc.Out + 1 + 15) &^ 15
	return &gnLinearStage{gn: groupNormStage{l: gn, groups: gn.Kind.(model.GroupNormSpec).Groups}, fc: fc, act: act,
		wT: make([]float32, gn.In*gn.InH*gn.InW*q), q: q, s: make([]float32, gn.In*fc.Out), k: make([]float32, fc.Out)}, 2 + used
}

func (s *gnLinearStage) layer() model.Layer { return s.fc }
func (s *gnLinearStage) ghost() bool        { return false }
func (s *gnLinearStage) exampleFloats() int {
	C := s.gn.l.In
	return s.gn.l.InSize() + C*s.q + 2*C + 2*(2*C)
}

func (s *gnLinearStage) newBuffers(n int) any {
	l := s.gn.l
	C := l.In
	return &gnLinearBuffers{xhat: make([]float32, n*l.InSize()), row: make([]float32, l.InSize()), a: make([]float32, n*C*s.q), rstd: make([]float64, s.gn.groups),
		mean: make([]float64, n*C), vars: make([]float64, n*C), g: make([]float32, n*2*C), scratch: newGNScratch(C)}
}

func (s *gnLinearStage) prepare(p []float32) {
	s.gn.prepare(p)
	fc := s.fc
	C, O := s.gn.l.In, fc.Out
	P := fc.In / C
	w := p[fc.WeightOffset : fc.WeightOffset+fc.WeightSize()]
	for f := 0; f < fc.In; f++ {
		row := s.wT[f*s.q : f*s.q+O+1]
		for o := 0; o < O; o++ {
			row[o] = w[o*fc.In+f]
		}
		row[O] = 1
	}
	s.bias = p[fc.BiasOffset : fc.BiasOffset+O]
	for o := 0; o < O; o++ {
		k := float64(s.bias[o])
		for c := 0; c < C; c++ {
			var t float64
			for _, v := range w[o*fc.In+c*P : o*fc.In+(c+1)*P] {
				t += float64(v)
			}
			s.s[c*O+o] = float32(t)
			k += float64(s.gn.beta[c]) * t
		}
		s.k[o] = float32(k)
	}
}

func (s *gnLinearStage) forward(buf any, n int, in, out []float32) {
	b, l := buf.(*gnLinearBuffers), s.gn.l
	F, C := l.InSize(), l.In
	for e := 0; e < n; e++ {
		s.normalizeExample(in[e*F:(e+1)*F], b.xhat[e*F:(e+1)*F], b.vars[e*C:(e+1)*C], b.row, &b.scratch, b.rstd)
	}
	s.products(b, n, out)
}

// forwardCached is forward for the examples idx of a dataset whose x̂ and
// Σ_p x̂² the cache holds (firstStageCache): the same outputs and buffers,
// without normalising again.
func (s *gnLinearStage) forwardCached(buf any, idx []int, cache *firstStageCache, out []float32) {
	b, l := buf.(*gnLinearBuffers), s.gn.l
	F, C := l.InSize(), l.In
	for k, i := range idx {
		copy(b.xhat[k*F:(k+1)*F], cache.xhat[i*F:(i+1)*F])
		copy(b.vars[k*C:(k+1)*C], cache.vars[i*C:(i+1)*C])
	}
	s.products(b, len(idx), out)
}

// normalizeExample writes one example's x̂ (channels-major, [C, P]) from
// its input x ([P, C]) to xhat, and to vars its Σ_p x̂² per channel: the
// group norm's Σ_p (x − μ)² times r², the same differences the stored x̂
// scales. row, sc and rstd are scratch.
func (s *gnLinearStage) normalizeExample(x, xhat []float32, vars []float64, row []float32, sc *gnScratch, rstd []float64) {
	l := s.gn.l
	C, P := l.In, l.InH*l.InW
	s.gn.normalize(x, row, sc, rstd)
	transpose(P, C, row, xhat)
	cg := C / s.gn.groups
	for c := range C {
		r := rstd[c/cg]
		vars[c] = r * r * float64(sc.dev[c])
	}
}

// products computes the logits of n examples whose x̂ and Σ_p x̂² are in b,
// and leaves A, the channel means m_c and the sums of squares about them
// in b.
func (s *gnLinearStage) products(b *gnLinearBuffers, n int, out []float32) {
	l := s.gn.l
	C, P, O := l.In, l.InH*l.InW, s.fc.Out
	// A, one channel at a time: x̂'s row c of every example times W's
	// [P, q] block of the channel.
	Q := s.q
	a := b.a[:n*C*Q]
	clear(a)
	for c := 0; c < C; c++ {
		gemm.Mul(n, Q, P, b.xhat[c*P:], P*C, 1, s.wT[c*P*Q:], Q, a[c*Q:], C*Q)
	}
	z := out[:n*O]
	clear(z)
	for e := 0; e < n; e++ {
		gemm.Mul(1, O, C, s.gn.gamma, 0, 1, a[e*C*Q:], Q, z[e*O:], O)
		// Per channel, the mean m_c of the stored x̂ over the positions
		// and the sum of squares about it, Σ_p x̂² − P·m_c² (never
		// negative).
		mean, vars := b.mean[e*C:(e+1)*C], b.vars[e*C:(e+1)*C]
		for c := range C {
			m := float64(a[(e*C+c)*Q+O]) / float64(P)
			mean[c], vars[c] = m, max(0, vars[c]-float64(P)*m*m)
		}
	}
	biasAct(z, s.k, s.act)
}

// backward leaves gOut the gradient before the fused activation; as the
// network's first stage the fused layers have no input gradient to give.
func (s *gnLinearStage) backward(_ any, _ int, _, out, gOut, gIn []float32) {
	if gIn != nil {
		panic("dpsgd: the fused group norm and linear stage is only built first")
	}
	maskAct(s.act, gOut, out)
}

// affineGrads writes example e's [∂γ, ∂β] to dst (2C): A·g and S·g,
// C dot products of length Out each (plain loops: a GEMM call per example
// costs more than the products).
func (s *gnLinearStage) affineGrads(b *gnLinearBuffers, e int, gOut, dst []float32) {
	C, O := s.gn.l.In, s.fc.Out
	g := gOut[e*O : (e+1)*O]
	Q := s.q
	a := b.a[e*C*Q : (e+1)*C*Q]
	dg, db := dst[:C], dst[C:2*C]
	for c := range C {
		ar, sr := a[c*Q:c*Q+O:c*Q+O], s.s[c*O:(c+1)*O:(c+1)*O]
		var t, u float32
		for o, v := range g {
			t += ar[o] * v
			u += sr[o] * v
		}
		dg[c], db[c] = t, u
	}
}

func (s *gnLinearStage) norms(buf any, n int, _, gOut []float32, norm2 []float64) {
	b := buf.(*gnLinearBuffers)
	C, O, P := s.gn.l.In, s.fc.Out, float64(s.gn.l.InH*s.gn.l.InW)
	gamma, beta := s.gn.gamma, s.gn.beta
	for e := 0; e < n; e++ {
		g := b.g[e*2*C : (e+1)*2*C]
		s.affineGrads(b, e, gOut, g)
		// ‖γ⊙x̂ + β‖² as a sum of non-negative terms, channel by channel
		// P·(β_c + γ_c·m_c)² + γ_c²·Σ_p (x̂ − m_c)², so that rounding cannot
		// cancel it below the true norm by more than its own size.
		mean, vars := b.mean[e*C:(e+1)*C], b.vars[e*C:(e+1)*C]
		var a2 float64
		for c := range C {
			gm, bt := float64(gamma[c]), float64(beta[c])
			u := bt + gm*mean[c]
			a2 += P*u*u + gm*gm*vars[c]
		}
		norm2[e] += sq(gOut[e*O:(e+1)*O])*(a2+1) + sq(g)
	}
}

func (s *gnLinearStage) clippedSum(buf any, n int, _, gOut []float32, f []float64, acc []float32) {
	b := buf.(*gnLinearBuffers)
	O := s.fc.Out
	addAffineGrads(s.gn.l, b.g, f[:n], acc)
	for e := 0; e < n; e++ {
		scale(gOut[e*O:(e+1)*O], f[e])
	}
	// An example left out (factor 0) may have non-finite inputs, and
	// 0·∞ is NaN: the product runs over the others only.
	kept(f[:n], func(lo, hi int) { s.weightSum(b, lo, hi, gOut, acc) })
}

// weightSum adds Σ_k g_k ⊗ x̂_k over examples [lo, hi) to the linear
// weight's slot of acc (PyTorch's (o, c, p) order) and Σ_k g_k to its
// bias's.
func (s *gnLinearStage) weightSum(b *gnLinearBuffers, lo, hi int, gOut, acc []float32) {
	fc, O, F := s.fc, s.fc.Out, s.fc.In
	gemm.Mul(O, F, hi-lo, gOut[lo*O:], 1, O, b.xhat[lo*F:], F, acc[fc.WeightOffset:], F)
	sumRows(gOut[lo*O:hi*O], acc[fc.BiasOffset:fc.BiasOffset+O], false)
}

func (s *gnLinearStage) sum(buf any, n int, _, gOut []float32, acc []float32) {
	b := buf.(*gnLinearBuffers)
	C := s.gn.l.In
	gn := s.gn.l
	g := b.g[:2*C]
	for e := 0; e < n; e++ {
		s.affineGrads(b, e, gOut, g)
		axpy(acc[gn.WeightOffset:gn.WeightOffset+C], 1, g[:C])
		axpy(acc[gn.BiasOffset:gn.BiasOffset+C], 1, g[C:])
	}
	s.weightSum(b, 0, n, gOut, acc)
}

// export writes the group norm's gradients as they are, and the linear
// weight's as γ_c·(Σ g ⊗ x̂)[o, c, p] + β_c·(Σ g)[o] in PyTorch's order.
func (s *gnLinearStage) export(acc, out []float32) {
	s.gn.export(acc, out)
	fc := s.fc
	C, O, F := s.gn.l.In, fc.Out, fc.In
	P := F / C
	w, bo := fc.WeightOffset, fc.BiasOffset
	for o := 0; o < O; o++ {
		gb := acc[bo+o]
		for c := 0; c < C; c++ {
			gm, bt := s.gn.gamma[c], s.gn.beta[c]
			src, dst := acc[w+o*F+c*P:w+o*F+(c+1)*P], out[w+o*F+c*P:w+o*F+(c+1)*P]
			for p, v := range src {
				dst[p] = gm*v + bt*gb
			}
		}
	}
	copy(out[bo:bo+O], acc[bo:bo+O])
}
