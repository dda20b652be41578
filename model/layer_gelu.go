package model

import (
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
)

// GELUSpec is the Gaussian error linear unit x·Φ(x) = ½x(1 + erf(x/√2)),
// Φ the standard normal CDF (Hendrycks & Gimpel 2016), elementwise: the
// exact form, torch.nn.GELU's default approximate='none' (not its
// approximation). No hyperparameters.
type GELUSpec struct{}

// GELU is the LayerSpec of a GELU.
func GELU() LayerSpec { return layerOf(GELUSpec{}) }

func init() { RegisterLayer(GELUSpec{}) }

func (GELUSpec) Type() string                          { return "gelu" }
func (GELUSpec) prefix() string                        { return "gelu" }
func (GELUSpec) check() error                          { return nil }
func (GELUSpec) shape(in Shape, _ bool) (Shape, error) { return in, nil }
func (GELUSpec) role() role                            { return roleActivation }
func (GELUSpec) random(*rand.Rand, int) (LayerSpec, bool) {
	return GELU(), true
}

// node builds the GELU from the operators gorgonia v0.9.18 has (it has no
// erf): since x·erf(x/√2) = |x|·erf(|x|/√2),
//
//	GELU(x) = ½x + ½|x|·(1 − erfc(|x|/√2)),
//
// with erfc(a) = (a₁t + a₂t² + a₃t³ + a₄t⁴ + a₅t⁵)·e^(−a²), t = 1/(1 + p·a),
// for a ≥ 0 (Abramowitz & Stegun, Handbook of Mathematical Functions,
// 7.1.26: |error| ≤ 1.5·10⁻⁷, below float32's resolution of erf). Only |x|
// is not smooth, and its kink at 0 meets a factor that vanishes there.
func (GELUSpec) node(c *graphCtx, _ Layer, h, _, _ *G.Node) *G.Node {
	k := func(v float64) *G.Node { return c.g.AddNode(G.NewConstant(float32(v))) }
	ax := G.Must(G.Abs(h))
	a := G.Must(G.Mul(ax, k(1/math.Sqrt2)))
	t := G.Must(G.Inverse(G.Must(G.Add(G.Must(G.Mul(a, k(0.3275911))), k(1)))))
	poly := k(1.061405429)
	for _, coef := range []float64{-1.453152027, 1.421413741, -0.284496736, 0.254829592} {
		poly = G.Must(G.Add(G.Must(G.HadamardProd(t, poly)), k(coef)))
	}
	erfc := G.Must(G.HadamardProd(G.Must(G.HadamardProd(t, poly)), G.Must(G.Exp(G.Must(G.Neg(G.Must(G.Square(a))))))))
	erf := G.Must(G.Sub(k(1), erfc))
	return G.Must(G.Mul(G.Must(G.Add(h, G.Must(G.HadamardProd(ax, erf)))), k(0.5)))
}

// onnx writes ½x(1 + erf(x/√2)) with ONNX's Erf (exact; the engine's
// polynomial erf is within 1.5·10⁻⁷ of it).
func (GELUSpec) onnx(g *onnxGraph, l Layer, in string) (string, error) {
	r := g.node("Mul", l.Name+"_scaled", []string{in, g.constant(l.Name+".inv_sqrt2", nil, []float32{float32(1 / math.Sqrt2)})})
	e := g.node("Erf", l.Name+"_erf", []string{r})
	one := g.node("Add", l.Name+"_1p", []string{e, g.constant(l.Name+".one", nil, []float32{1})})
	h := g.node("Mul", l.Name+"_half", []string{in, g.constant(l.Name+".half", nil, []float32{0.5})})
	return g.node("Mul", l.Name, []string{h, one}), nil
}
