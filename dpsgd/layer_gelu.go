package dpsgd

import (
	"math"

	"github.com/dptune/dptune/model"
)

// geluStage is the exact GELU y = x·Φ(x) = ½x(1 + erf(x/√2))
// (model.GELUSpec), elementwise, in float64 per value (math.Erf). Its
// derivative, Φ(x) + x·φ(x) with φ the standard normal density, needs the
// input x, so it is a stage of its own, never fused.
type geluStage struct {
	l model.Layer
}

func init() {
	register("gelu", rule{build: func(ls []model.Layer, _ bool) (stage, int) { return &geluStage{l: ls[0]}, 1 }})
}

func (s *geluStage) layer() model.Layer { return s.l }
func (s *geluStage) newBuffers(int) any { return nil }
func (s *geluStage) prepare([]float32)  {}
func (s *geluStage) exampleFloats() int { return 0 }

func (s *geluStage) forward(_ any, n int, in, out []float32) {
	m := n * s.l.OutSize()
	for i, v := range in[:m] {
		x := float64(v)
		out[i] = float32(0.5 * x * (1 + math.Erf(x/math.Sqrt2)))
	}
}

func (s *geluStage) backward(_ any, n int, in, out, gOut, gIn []float32) {
	if gIn == nil {
		return
	}
	m := n * s.l.OutSize()
	const invSqrt2Pi = 0.3989422804014327 // 1/√(2π)
	for i, v := range in[:m] {
		x := float64(v)
		d := 0.5*(1+math.Erf(x/math.Sqrt2)) + x*invSqrt2Pi*math.Exp(-0.5*x*x)
		gIn[i] = float32(float64(gOut[i]) * d)
	}
}
