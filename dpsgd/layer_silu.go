package dpsgd

import (
	"math"

	"github.com/dptune/dptune/model"
)

// siluStage is the SiLU y = x·σ(x), σ(x) = 1/(1 + e⁻ˣ) (model.SiLUSpec),
// elementwise, in float64 per value. Its derivative,
// σ(x)·(1 + x·(1 − σ(x))), needs the input x, not only y, so it is never
// fused into the layer before it: it is a stage of its own, which reads
// its input in the backward pass.
type siluStage struct {
	l model.Layer
}

func init() {
	register("silu", rule{build: func(ls []model.Layer, _ bool) (stage, int) { return &siluStage{l: ls[0]}, 1 }})
}

func (s *siluStage) layer() model.Layer { return s.l }
func (s *siluStage) newBuffers(int) any { return nil }
func (s *siluStage) prepare([]float32)  {}
func (s *siluStage) exampleFloats() int { return 0 }

func (s *siluStage) forward(_ any, n int, in, out []float32) {
	m := n * s.l.OutSize()
	for i, v := range in[:m] {
		x := float64(v)
		out[i] = float32(x / (1 + math.Exp(-x)))
	}
}

func (s *siluStage) backward(_ any, n int, in, out, gOut, gIn []float32) {
	if gIn == nil {
		return
	}
	m := n * s.l.OutSize()
	for i, v := range in[:m] {
		x := float64(v)
		sg := 1 / (1 + math.Exp(-x))
		gIn[i] = float32(float64(gOut[i]) * sg * (1 + x*(1-sg)))
	}
}
