package model

import (
	"fmt"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// GroupNormSpec is group normalisation, torch.nn.GroupNorm: the channels
// fall into Groups groups of consecutive channels (Groups must divide
// them), each normalised per example by its mean and biased variance over
// its channels and positions (ε = GroupNormEpsilon), then channel c is
// scaled by weight[c] (initialised to 1) and shifted by bias[c] (0). The
// normalisation Opacus recommends in place of BatchNorm, which couples
// the examples of a batch and so has no per-example gradient.
type GroupNormSpec struct {
	Groups int `json:"groups,omitempty"`
}

// GroupNorm is the LayerSpec of a group norm.
func GroupNorm(groups int) LayerSpec { return layerOf(GroupNormSpec{Groups: groups}) }

// GroupNormEpsilon is the ε added to the variance by a group norm, PyTorch's.
const GroupNormEpsilon = 1e-5

func init() { RegisterLayer(GroupNormSpec{}) }

func (GroupNormSpec) Type() string   { return "groupnorm" }
func (GroupNormSpec) prefix() string { return "gn" }
func (GroupNormSpec) role() role     { return roleNorm }

func (p GroupNormSpec) check() error { return inRange("groups", p.Groups, 1, MaxWidth) }

func (p GroupNormSpec) shape(in Shape, _ bool) (Shape, error) {
	if in.FlatC > 0 {
		return Shape{}, fmt.Errorf("cannot follow the flatten of a feature map (normalise before the flatten)")
	}
	if in.C%p.Groups != 0 {
		return Shape{}, fmt.Errorf("%d groups do not divide %d channels", p.Groups, in.C)
	}
	return in, nil
}

func (GroupNormSpec) params(l Layer) (weight, bias []int) { return []int{l.In}, []int{l.In} }

func (GroupNormSpec) init(_ Layer, w, b []float32, _ *rand.Rand) {
	for i := range w {
		w[i], b[i] = 1, 0
	}
}

// random draws groups of at least 4 channels: with fewer values per group
// the normalisation is ill-conditioned (two values normalise to ±1
// whatever they are), and float32 rounding alone moves its input gradient
// by more than the 10⁻⁵ dpsgd's engine is held to.
func (GroupNormSpec) random(rng *rand.Rand, c int) (LayerSpec, bool) {
	var divs []int
	for g := 1; g*4 <= c; g++ {
		if c%g == 0 {
			divs = append(divs, g)
		}
	}
	if len(divs) == 0 {
		return LayerSpec{}, false
	}
	return GroupNorm(divs[rng.IntN(len(divs))]), true
}

// node builds the normalisation of h ([B, C, H, W], or [B, C] on a flat
// input): each group one row of graphCtx.standardize, then the scale and
// shift, broadcast by products with constant vectors of ones.
func (p GroupNormSpec) node(c *graphCtx, l Layer, h, w, b *G.Node) *G.Node {
	B, P := c.B, l.InH*l.InW
	rows, M := B*p.Groups, l.In/p.Groups*P
	xhat := c.standardize(l.Name, G.Must(G.Reshape(h, tensor.Shape{rows, M})), M, GroupNormEpsilon)
	// Per-channel scale and shift, spread over examples and positions.
	perChannel := func(v *G.Node) *G.Node {
		rowsOf := G.Must(G.Mul(c.constant(l.Name+".batch", B, 1, 1), G.Must(G.Reshape(v, tensor.Shape{1, l.In})))) // [B, C]
		return G.Must(G.Mul(G.Must(G.Reshape(rowsOf, tensor.Shape{B * l.In, 1})), c.constant(l.Name+".positions", 1, P, 1)))
	}
	flat := tensor.Shape{B * l.In, P}
	out := G.Must(G.Add(G.Must(G.HadamardProd(G.Must(G.Reshape(xhat, flat)), perChannel(w))), perChannel(b)))
	if l.Flat {
		return G.Must(G.Reshape(out, tensor.Shape{B, l.In}))
	}
	return G.Must(G.Reshape(out, tensor.Shape{B, l.In, l.InH, l.InW}))
}

// onnx writes the group norm as [N, G, C/G·H·W] normalised along its last
// axis by ONNX's LayerNormalization (unit scale, zero shift), reshaped back
// to the input's shape, then scaled and shifted per channel.
func (p GroupNormSpec) onnx(g *onnxGraph, l Layer, in string) (string, error) {
	m := l.In / p.Groups * l.InH * l.InW
	grouped := g.node("Reshape", l.Name+"_groups", []string{in, g.int64s(l.Name+"_gshape", 0, int64(p.Groups), -1)})
	ones, zeros := make([]float32, m), make([]float32, m)
	for i := range ones {
		ones[i] = 1
	}
	norm := g.node("LayerNormalization", l.Name+"_norm", []string{grouped, g.constant(l.Name+".unit", []int{m}, ones), g.constant(l.Name+".zero", []int{m}, zeros)},
		attrInt("axis", 2), attrFloat("epsilon", GroupNormEpsilon))
	shape := g.node("Shape", l.Name+"_shape", []string{in})
	back := g.node("Reshape", l.Name+"_back", []string{norm, shape})
	p0 := g.net.Params
	w := g.perChannel(l.Name+".weight", l.Flat, p0[l.WeightOffset:l.WeightOffset+l.WeightSize()])
	b := g.perChannel(l.Name+".bias", l.Flat, p0[l.BiasOffset:l.BiasOffset+l.BiasSize()])
	return g.node("Add", l.Name, []string{g.node("Mul", l.Name+"_scale", []string{back, w}), b}), nil
}
