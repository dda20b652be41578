package dpsgd

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/dptune/dptune/model"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
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

// clipFactor is Opacus's clipping factor min(1, C/(‖g‖ + 10⁻⁶)). An example
// whose gradient is not finite (overflow) gets factor 0: it is dropped from
// the sum rather than turning it into NaN; dropping depends on that example
// alone, so the sum's sensitivity stays C.
func clipFactor(norm, clipNorm float64) float32 {
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return 0
	}
	if math.IsInf(clipNorm, 1) {
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

// hookEngine is the default Engine: one batched LayerGrads pass per chunk,
// per-example gradients built from the trace.
type hookEngine struct {
	net  *model.Net
	pool *graphPool
	// convParams is the number of conv weights and biases; convOff[l] where
	// layer l's per-example gradient starts inside an example's row of perEx.
	convParams int
	convOff    []int
	perEx      []float32 // [largest batch, convParams]
	factor     []float32
	scaled     []float32 // [largest batch, widest linear output]
	workers    int
	cols       [][]float32 // per worker: im2col buffer
}

// NewEngine returns the default engine for net, sized for batches of up to
// batchSize examples per pass; larger batches are split into passes, and a
// batch's remainder runs on graphs of 64 or 16 examples padded with
// zero-gradient rows. It uses every core (GOMAXPROCS) for the per-example work.
func NewEngine(net *model.Net, batchSize int) (Engine, error) {
	pool, err := newGraphPool(net, batchSize, model.LayerGrads)
	if err != nil {
		return nil, err
	}
	e := &hookEngine{net: net, pool: pool, workers: runtime.GOMAXPROCS(0)}
	maxCol, maxOut := 0, 0
	for _, l := range net.Layers {
		e.convOff = append(e.convOff, e.convParams)
		if l.Kind == model.ConvLayer {
			e.convParams += l.WeightSize() + l.Out
			maxCol = max(maxCol, l.Positions()*l.FanIn())
		} else {
			maxOut = max(maxOut, l.Out)
		}
	}
	for li, l := range net.Layers {
		// perEx rows mirror the front of Params: the conv layers' weights and
		// biases must come first, in layer order.
		if l.Kind == model.ConvLayer && e.convOff[li] != l.WeightOffset {
			return nil, fmt.Errorf("dpsgd: layer %s: convolutions must precede linear layers", l.Name)
		}
	}
	e.perEx = make([]float32, batchSize*e.convParams)
	e.factor = make([]float32, batchSize)
	e.scaled = make([]float32, batchSize*maxOut)
	for w := 0; w < e.workers; w++ {
		e.cols = append(e.cols, make([]float32, maxCol))
	}
	return e, nil
}

func (e *hookEngine) ClippedSum(x []float32, y []uint8, idx []int, clipNorm float64, sum []float32) (float64, error) {
	var loss float64
	err := e.pool.each(idx, func(g *model.Graph, chunk []int) error {
		l, err := e.pass(g, x, y, chunk, clipNorm, sum)
		loss += l
		return err
	})
	return loss, err
}

// parallel runs f(w, lo, hi) over a split of [0, n) into one range per worker.
func (e *hookEngine) parallel(n int, f func(w, lo, hi int)) {
	var wg sync.WaitGroup
	for w := 0; w < e.workers; w++ {
		lo, hi := n*w/e.workers, n*(w+1)/e.workers
		if lo == hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(w, lo, hi)
		}()
	}
	wg.Wait()
}

// pass handles one chunk of m ≤ g.B examples.
func (e *hookEngine) pass(g *model.Graph, x []float32, y []uint8, idx []int, clipNorm float64, sum []float32) (float64, error) {
	if err := g.SetBatch(x, y, idx); err != nil {
		return 0, err
	}
	if err := g.Run(); err != nil {
		return 0, err
	}
	tr := g.Trace()
	m, P := len(idx), e.convParams
	layers := e.net.Layers

	// Per-example conv gradients into perEx; per-example norms; clip factors.
	e.parallel(m, func(w, lo, hi int) {
		col := e.cols[w]
		for i := lo; i < hi; i++ {
			row := e.perEx[i*P : (i+1)*P]
			var norm2 float64
			for li, l := range layers {
				if l.Kind == model.ConvLayer {
					in := tr.In[li][i*l.In*l.InH*l.InW : (i+1)*l.In*l.InH*l.InW]
					og := tr.OutGrad[li][i*l.Out*l.Positions() : (i+1)*l.Out*l.Positions()]
					K, Pn := l.FanIn(), l.Positions()
					im2col(l, in, col)
					gw := row[e.convOff[li] : e.convOff[li]+l.WeightSize()]
					blas32.Gemm(blas.NoTrans, blas.NoTrans, 1,
						blas32.General{Rows: l.Out, Cols: Pn, Stride: Pn, Data: og},
						blas32.General{Rows: Pn, Cols: K, Stride: K, Data: col[:Pn*K]},
						0, blas32.General{Rows: l.Out, Cols: K, Stride: K, Data: gw})
					gb := row[e.convOff[li]+l.WeightSize() : e.convOff[li]+l.WeightSize()+l.Out]
					for o := range gb {
						var s float32
						for _, v := range og[o*Pn : (o+1)*Pn] {
							s += v
						}
						gb[o] = s
					}
				} else if !math.IsInf(clipNorm, 1) {
					a := tr.In[li][i*l.In : (i+1)*l.In]
					gz := tr.OutGrad[li][i*l.Out : (i+1)*l.Out]
					an, gn := sq(a), sq(gz)
					norm2 += an*gn + gn
				}
			}
			if !math.IsInf(clipNorm, 1) {
				norm2 += sq(row)
			}
			e.factor[i] = clipFactor(math.Sqrt(norm2), clipNorm) // 1 when not clipping (norm2 = 0)
		}
	})

	// Conv parameters: sum += perExᵀ · factor, split over parameters.
	e.parallel(P, func(_, lo, hi int) {
		out := sum[:P]
		for i := 0; i < m; i++ {
			f := e.factor[i]
			if f == 0 {
				continue
			}
			row := e.perEx[i*P : (i+1)*P]
			for k := lo; k < hi; k++ {
				out[k] += f * row[k]
			}
		}
	})
	// Linear layers: W += (diag(f)·G)ᵀ·A, b += Σ_i f_i g_i.
	for li, l := range layers {
		if l.Kind != model.LinearLayer {
			continue
		}
		a := tr.In[li][:m*l.In]
		gz := tr.OutGrad[li][:m*l.Out]
		sc := e.scaled[:m*l.Out]
		for i := 0; i < m; i++ {
			f, row := e.factor[i], sc[i*l.Out:(i+1)*l.Out]
			if f == 0 {
				clear(row)
				continue
			}
			for o := range row {
				row[o] = f * gz[i*l.Out+o]
			}
		}
		blas32.Gemm(blas.Trans, blas.NoTrans, 1,
			blas32.General{Rows: m, Cols: l.Out, Stride: l.Out, Data: sc},
			blas32.General{Rows: m, Cols: l.In, Stride: l.In, Data: a},
			1, blas32.General{Rows: l.Out, Cols: l.In, Stride: l.In, Data: sum[l.WeightOffset : l.WeightOffset+l.WeightSize()]})
		b := sum[l.BiasOffset : l.BiasOffset+l.Out]
		for i := 0; i < m; i++ {
			for o := range b {
				b[o] += sc[i*l.Out+o]
			}
		}
	}
	return float64(g.Loss()), nil
}

// sq is Σ v², accumulated in float64.
func sq(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return s
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
		f := float64(clipFactor(math.Sqrt(sq(grad)), clipNorm))
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
