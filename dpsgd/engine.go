package dpsgd

import (
	"fmt"
	"math"

	"github.com/dptune/dptune/model"
)

// Engine computes the sum of clipped per-example gradients of a batch.
type Engine interface {
	// ClippedSum runs the network on the examples idx of x ([N, C, H, W]) with
	// labels y and adds Σ_i g_i·min(1, clipNorm/(‖g_i‖₂ + 10⁻⁶)) to sum
	// (len = number of parameters), where g_i is example i's gradient of its
	// cross-entropy loss. clipNorm = +Inf adds the unclipped sum. It returns
	// the batch's summed loss (nats).
	ClippedSum(x []float32, y []uint8, idx []int, clipNorm float64, sum []float32) (float64, error)
}

// ClipFactor is Opacus's clipping factor min(1, C/(‖g‖ + 10⁻⁶)) for an
// example whose gradient has L2 norm ‖g‖ = norm, C = clipNorm: every
// engine scales each example's gradient by it before the sum, and the
// audit's canary (package audit) goes through it too. An example whose
// gradient is not finite (overflow) gets factor 0: it is dropped from the
// sum rather than turning it into NaN; dropping depends on that example
// alone, so the sum's sensitivity stays C. clipNorm = +Inf gives 1.
func ClipFactor(norm, clipNorm float64) float32 {
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return 0
	}
	if math.IsInf(clipNorm, 1) || plantedNoClip {
		return 1
	}
	return float32(math.Min(1, clipNorm/(norm+1e-6)))
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
// ClippedSum returns an error unless clipNorm is +Inf. Train uses it for
// non-private runs; it is the baseline DP-SGD's cost is measured against.
func NewBatchGradEngine(net *model.Net, batchSize int) (Engine, error) {
	pool, err := newGraphPool(net, batchSize, model.ParamGrads)
	if err != nil {
		return nil, err
	}
	return &batchGradEngine{pool: pool}, nil
}

func (e *batchGradEngine) ClippedSum(x []float32, y []uint8, idx []int, clipNorm float64, sum []float32) (float64, error) {
	if !math.IsInf(clipNorm, 1) {
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

func (e *referenceEngine) ClippedSum(x []float32, y []uint8, idx []int, clipNorm float64, sum []float32) (float64, error) {
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
		f := float64(ClipFactor(math.Sqrt(sq(grad)), clipNorm))
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
