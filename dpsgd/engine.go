package dpsgd

import (
	"fmt"
	"math"

	"github.com/dptune/dptune/model"
)

// Engine computes the sum of clipped per-example gradients of a batch.
type Engine interface {
	// ClippedSum runs the network on the examples idx of x ([N, C, H, W]) with
	// labels y and adds Σ_i g_i·clip.Factor(‖g_i‖₂) to sum (len = number of
	// parameters), where g_i is example i's gradient of its cross-entropy
	// loss: flat clipping's min(1, C/(‖g_i‖₂ + 10⁻⁶)), or automatic
	// clipping's 1/(‖g_i‖₂ + γ) (see Clip). FlatClip(+Inf) adds the
	// unclipped sum. It returns the batch's summed loss (nats).
	ClippedSum(x []float32, y []uint8, idx []int, clip Clip, sum []float32) (float64, error)
}

// Clip is the rule an Engine bounds each example's gradient g by before
// the sum: flat clipping to L2 norm Norm (Abadi et al. 2016, Algorithm 1:
// g·min(1, C/(‖g‖ + 10⁻⁶)), ClipFactor) when Gamma is 0, or automatic
// clipping with stability constant Gamma (AutoClipFactor: g/(‖g‖ + γ)).
// Config.Clip makes it from a run's settings. Either way every clipped
// gradient has norm at most Sensitivity(), the L2 sensitivity of the sum
// under add/remove adjacency, to which the noise σ·Sensitivity() is scaled.
type Clip struct {
	// Norm is flat clipping's C > 0 (+Inf: no clipping), and 1 under
	// automatic clipping: the bound of every clipped gradient's norm.
	Norm float64
	// Gamma, if positive, selects automatic clipping with stability
	// constant γ = Gamma.
	Gamma float64
}

// FlatClip is flat clipping to norm c (+Inf: none).
func FlatClip(c float64) Clip { return Clip{Norm: c} }

// AutoClip is automatic clipping (AUTO-S) with stability constant gamma > 0.
func AutoClip(gamma float64) Clip { return Clip{Norm: 1, Gamma: gamma} }

// Automatic reports whether c is automatic clipping.
func (c Clip) Automatic() bool { return c.Gamma > 0 }

// Sensitivity is the bound on every clipped gradient's L2 norm: C for flat
// clipping, 1 for automatic clipping.
func (c Clip) Sensitivity() float64 { return c.Norm }

// Factor is the number an example's gradient of L2 norm norm is scaled by:
// AutoClipFactor(norm, γ) under automatic clipping, else ClipFactor(norm, C).
func (c Clip) Factor(norm float64) float32 {
	if c.Gamma > 0 {
		return AutoClipFactor(norm, c.Gamma)
	}
	return ClipFactor(norm, c.Norm)
}

// check returns an error unless c is a rule an engine can apply: Norm
// positive (+Inf allowed for flat clipping), Gamma 0 or positive and
// finite with Norm 1.
func (c Clip) check() error {
	switch {
	case !(c.Norm > 0):
		return fmt.Errorf("dpsgd: clipping norm %v must be positive", c.Norm)
	case !(c.Gamma >= 0) || math.IsInf(c.Gamma, 1) || (c.Gamma > 0 && c.Gamma < MinAutoClipGamma):
		return fmt.Errorf("dpsgd: automatic clipping's stability constant %v must be finite and at least %g", c.Gamma, MinAutoClipGamma)
	case c.Gamma > 0 && c.Norm != 1:
		return fmt.Errorf("dpsgd: automatic clipping bounds every gradient's norm by 1, not %v", c.Norm)
	}
	return nil
}

// ClipFactor is Opacus's clipping factor min(1, C/(‖g‖ + 10⁻⁶)) for an
// example whose gradient has L2 norm ‖g‖ = norm, C = clipNorm: every
// engine scales each example's gradient by it before the sum, and the
// audit's canary (package audit) goes through it too. An example whose
// gradient is not finite (overflow) gets factor 0: it is dropped from the
// sum rather than turning it into NaN; dropping depends on that example
// alone, so the sum's sensitivity stays C. clipNorm = +Inf gives 1.
//
// Floating point (review 45, L4). The bound ‖f·g‖ ≤ C holds against the
// computed norm through Opacus's 10⁻⁶, and what is added is f·g rounded to
// float32, so one example's contribution has norm at most C·(1 + 2⁻²²)
// (f's rounding and two products' at 2⁻²⁴ each, beyond the 10⁻⁶/‖g‖
// margin, which covers them only while ‖g‖ ≲ 5): a sensitivity 2.4·10⁻⁷
// above C, the same as σ smaller by that fraction, far below anything ε
// is reported to. The slack automatic clipping takes (clipSlack) would
// make it strict, but it moves the factor of every clipped example with
// ‖g‖ ≳ 1 by an ulp, and with it every seeded flat-clipping run's bytes
// (TestOpacusMNISTBitForBit and every recorded result): flat clipping's
// factor stays Opacus's, and the 2⁻²² is stated here instead.
func ClipFactor(norm, clipNorm float64) float32 {
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return 0
	}
	if math.IsInf(clipNorm, 1) || plantedNoClip {
		return 1
	}
	return float32(math.Min(1, clipNorm/(norm+1e-6)))
}

// clipSlack keeps an automatically clipped gradient's norm strictly below
// 1 in floating point: the factor f is chosen with f·‖g‖ < 1 − 2⁻²⁰
// against the computed norm ‖g‖ (a float64 sum of squares of the float32
// entries that are added: every stage's norm is that of what it adds, see
// convStage), and what is added is f·g rounded to float32 — each entry by
// at most a few float32 roundings (2⁻²⁴ each; a linear layer's f·g_o then
// ·a_j is two), far inside the 2⁻²⁰ slack. So one example's contribution
// alone (a batch of one) has norm strictly below 1 (review 45, L4). Within
// a batch the sum's own float32 rounding is not any one example's.
const clipSlack = 1 - 0x1p-20

// DefaultAutoClipGamma is automatic clipping's default stability constant
// γ = 0.01, the value of Bu et al.'s Algorithm 1 and their experiments.
const DefaultAutoClipGamma = 0.01

// AutoClipFactor is automatic clipping's factor 1/(‖g‖ + γ) for an example
// whose gradient has L2 norm ‖g‖ = norm, γ = gamma > 0: AUTO-S of Bu,
// Wang, Zha & Karypis, "Automatic Clipping: Differentially Private Deep
// Learning Made Easier and Stronger" (NeurIPS 2023; Algorithm 1, line 4:
// ĝ_i = g_i/(‖g_i‖₂ + 0.01)). Every engine scales each example's gradient
// by it before the sum under automatic clipping, and the audit's canary
// goes through it too.
//
// Sensitivity. The clipped gradient has norm ‖g‖/(‖g‖ + γ) < 1 for every
// g, whatever its size, since γ > 0. Under add/remove adjacency the sum
// Σ_i ĝ_i of two neighbouring batches differs by one example's ĝ, so its
// L2 sensitivity is 1, and adding N(0, σ²I) is the Gaussian mechanism with
// noise multiplier σ — exactly flat clipping's mechanism at C = 1 (Bu et
// al. state the same: automatic clipping is as private as Abadi et al.'s
// under any accountant for the same σ, sampling rate and steps). So the
// ledger's event is accounting.DPSGD(σ, q, T), Sensitivity 1, and ε is
// flat clipping's. To keep the bound strict in floating point the factor
// is (1 − 2⁻²⁰)/(‖g‖ + γ) rounded to a float32 f with f·‖g‖ < 1 − 2⁻²⁰ (one
// step towards 0 while it rounded up past that), which leaves room for the
// float32 rounding of the products that follow (clipSlack): one example's
// contribution has norm strictly below 1, not only against the computed
// norm. The factor is finite for every finite norm, a zero one included
// (at most 1/γ ≤ 10⁶ at γ ≥ MinAutoClipGamma). An example whose gradient
// is not finite gets factor 0 (dropped, as ClipFactor does).
//
// The learning rate. When every gradient is large beside γ, g/(‖g‖ + γ) ≈
// g/‖g‖, and flat clipping at C clips every example to C·g/‖g‖: DP-SGD
// with automatic clipping at learning rate η then takes the steps of flat
// clipping at C with learning rate η/C — the same update and the same
// noise, σ·C·(η/C) = σ·η. Bu et al. make this exact for their R-dependent
// variant (R·g/(‖g‖ + γ) at η equals R = 1 at η·R for SGD, with momentum
// or not) and fix R = 1; their γ keeps small gradients from being blown up
// to norm 1 (AUTO-V's g/‖g‖), shrinking them towards g/γ instead. So the
// flat settings η, C carry over as η·C: scatter-linear-mnist's η = 4 at
// C = 0.1 becomes η = 0.4.
func AutoClipFactor(norm, gamma float64) float32 {
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return 0
	}
	if plantedNoClip {
		return 1
	}
	// At most 1/γ ≤ 10⁶ for γ ≥ MinAutoClipGamma; a smaller γ (refused by
	// CheckAutoClipGamma and Clip's check, but not by this function) still
	// gets a finite factor, even for a zero gradient, never +Inf (whose
	// product with a zero gradient is NaN: review 45, M1).
	f := float32(math.Min(clipSlack/(norm+gamma), math.MaxFloat32))
	for float64(f)*norm >= clipSlack {
		f = math.Nextafter32(f, 0)
	}
	return f
}

// graphPool holds graphs of one mode for a batch size and the smaller chunk
// sizes, and splits batches into passes over them.
type graphPool struct {
	graphs []*model.Graph // batch sizes, descending
}

// chunkSizes are the smaller graphs a batch's remainder is run on.
var chunkSizes = []int{64, 16}

func newGraphPool(net *model.Net, batchSize int, mode model.Mode) (*graphPool, error) {
	if batchSize < 1 {
		return nil, fmt.Errorf("dpsgd: batch size %d < 1", batchSize)
	}
	p := &graphPool{}
	sizes := []int{batchSize}
	for _, s := range chunkSizes {
		if s < batchSize {
			sizes = append(sizes, s)
		}
	}
	for _, s := range sizes {
		g, err := net.NewGraph(s, mode)
		if err != nil {
			return nil, err
		}
		p.graphs = append(p.graphs, g)
	}
	return p, nil
}

// each runs f on successive passes over idx: the largest graph while the
// remaining examples fill it, then the smallest graph that holds the rest
// (padded with zero-gradient rows), or the largest one again.
func (p *graphPool) each(idx []int, f func(g *model.Graph, chunk []int) error) error {
	for len(idx) > 0 {
		g := p.graphs[0]
		if len(idx) < g.B {
			for i := len(p.graphs) - 1; i >= 0; i-- {
				if p.graphs[i].B >= len(idx) {
					g = p.graphs[i]
					break
				}
			}
		}
		m := min(len(idx), g.B)
		if err := f(g, idx[:m]); err != nil {
			return err
		}
		idx = idx[m:]
	}
	return nil
}

// batchGradEngine is plain (non-private) backpropagation: the gradient of
// the summed loss from gorgonia's autodiff, no per-example work.
type batchGradEngine struct {
	pool *graphPool
}

// NewBatchGradEngine returns the non-private engine: one ParamGrads pass of
// gorgonia's autodiff per chunk of up to batchSize examples, giving the
// unclipped sum of the batch's gradients directly. It cannot clip: its
// ClippedSum returns an error unless clip is FlatClip(+Inf). Train uses it for
// non-private runs; it is the baseline DP-SGD's cost is measured against.
func NewBatchGradEngine(net *model.Net, batchSize int) (Engine, error) {
	pool, err := newGraphPool(net, batchSize, model.ParamGrads)
	if err != nil {
		return nil, err
	}
	return &batchGradEngine{pool: pool}, nil
}

func (e *batchGradEngine) ClippedSum(x []float32, y []uint8, idx []int, clip Clip, sum []float32) (float64, error) {
	if !math.IsInf(clip.Norm, 1) || clip.Automatic() {
		return 0, fmt.Errorf("dpsgd: the batch-gradient engine cannot clip per-example gradients")
	}
	var loss float64
	err := e.pool.each(idx, func(g *model.Graph, chunk []int) error {
		if err := g.SetBatch(x, y, chunk); err != nil {
			return err
		}
		if err := g.Run(); err != nil {
			return err
		}
		for k, v := range g.ParamGrad() {
			sum[k] += v
		}
		loss += float64(g.Loss())
		return nil
	})
	return loss, err
}

// referenceEngine computes every example's gradient with its own
// batch-of-one ParamGrads graph (gorgonia's autodiff). Slow; the oracle.
type referenceEngine struct {
	net *model.Net
	g   *model.Graph
}

// NewReferenceEngine returns the batch-of-one engine: for each example, one
// forward and backward pass of gorgonia's own autodiff with respect to the
// parameters, then clipping and summing in float64. It is the test oracle of
// the fast engine.
func NewReferenceEngine(net *model.Net) (Engine, error) {
	g, err := net.NewGraph(1, model.ParamGrads)
	if err != nil {
		return nil, err
	}
	return &referenceEngine{net: net, g: g}, nil
}

func (e *referenceEngine) ClippedSum(x []float32, y []uint8, idx []int, clip Clip, sum []float32) (float64, error) {
	if err := clip.check(); err != nil {
		return 0, err
	}
	acc := make([]float64, len(sum))
	var loss float64
	for _, i := range idx {
		if err := e.g.SetBatch(x, y, []int{i}); err != nil {
			return 0, err
		}
		if err := e.g.Run(); err != nil {
			return 0, err
		}
		grad := e.g.ParamGrad()
		f := float64(clip.Factor(math.Sqrt(sq(grad))))
		if f == 0 {
			continue
		}
		for k, v := range grad {
			acc[k] += f * float64(v)
		}
		loss += float64(e.g.Loss())
	}
	for k := range sum {
		sum[k] += float32(acc[k])
	}
	return loss, nil
}
