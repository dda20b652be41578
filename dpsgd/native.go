package dpsgd

import (
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/dptune/dptune/internal/gemm"
	"github.com/dptune/dptune/model"
)

// chunkSize is the number of examples a worker carries through the network
// at once: small enough that a chunk's activations stay in the core's cache.
const chunkSize = 8

// nativeEngine is the default engine: the network of model.Arch evaluated
// and differentiated by hand in Go, on float32 GEMMs (internal/gemm), with
// the per-example work Opacus's grad samplers do. See NewEngine.
type nativeEngine struct {
	net                    *model.Net
	conv1, conv2, fc1, fc2 model.Layer
	q1H, q1W, q2H, q2W     int // max-pool output sizes
	feat                   int // fc1 inputs: q2H·q2W·conv2.Out

	// Weights in the layouts the GEMMs want, rebuilt from net.Params on every
	// call (they are small).
	w1T  []float32 // conv1 [K1, C1]
	w2p  []float32 // conv2 [C2, k, k, C1]
	w2pT []float32 // conv2 [k·k·C1, C2]
	w3p  []float32 // fc1 [O3, F] with F in (h, w, c) order
	w3T  []float32 // fc1 [F, O3]
	w4T  []float32 // fc2 [O3, O4]

	reduced []float32 // the workers' summed gradient in PyTorch's layouts

	workers []*worker
	jobs    []chan job
	done    chan jobResult
	timings Timings
}

type job struct {
	x    []float32
	y    []uint8
	idx  []int
	clip float64
}

type jobResult struct{ loss float64 }

// worker holds one worker's buffers for a chunk of examples, and its share of
// the clipped sum in the engine's internal layouts.
type worker struct {
	e                          *nativeEngine
	xs                         [][]float32
	cols1, a1, p1, ga1, gp1    []float32
	cols2, a2, p2, ga2, gp2    []float32
	dcols2, a3, g3, logits, g4 []float32
	arg1, arg2                 []int32
	g1, g2                     []float32 // per-example conv gradients [chunk, Out·FanIn]
	gb1, gb2                   []float32 // per-example conv bias gradients [chunk, Out]
	norm2, factor              []float64
	acc                        []float32 // clipped sum, internal layouts, len = NumParams
	t                          Timings
}

// NewEngine returns the default per-sample gradient engine for net.
//
// It runs the network of model.Arch natively: activations positions-major
// ([examples·positions, channels]), each convolution one GEMM over the
// unfolded input, each layer's backward pass one GEMM, all on
// internal/gemm's AVX2/FMA kernel; the gorgonia graph of the model package
// defines the network and is this engine's test oracle
// (NewReferenceEngine). Per-example gradients follow Opacus's grad samplers:
// for a convolution, one small GEMM per example of its output gradient and
// unfolded input (Goodfellow 2015, Rochette et al. 2019); for a linear layer
// only the norm ‖a_i‖²·‖g_i‖² + ‖g_i‖² ("ghost clipping", Li et al. 2022, Bu
// et al. 2023) and the clipped sum is one GEMM of the scaled output
// gradients. With clipNorm = +Inf (non-private SGD) the per-example
// gradients are skipped and every weight gradient is one GEMM.
//
// The batch is split between GOMAXPROCS workers (persistent goroutines), each
// carrying chunks of 8 examples through the whole network, so a step's only
// synchronisation is the final sum. Buffers are allocated once: a step
// allocates nothing. batchSize is a hint and may be 0.
func NewEngine(net *model.Net, batchSize int) (Engine, error) {
	e, err := newNative(net)
	if err != nil {
		return nil, err
	}
	nw := max(1, runtime.GOMAXPROCS(0))
	e.done = make(chan jobResult, nw)
	for w := 0; w < nw; w++ {
		e.workers = append(e.workers, e.newWorker())
	}
	for w := 1; w < nw; w++ {
		ch := make(chan job)
		e.jobs = append(e.jobs, ch)
		go runWorker(e.workers[w], ch, e.done)
	}
	// Stop the helper goroutines when the engine is garbage.
	runtime.AddCleanup(e, func(chs []chan job) {
		for _, ch := range chs {
			close(ch)
		}
	}, e.jobs)
	return e, nil
}

// newNative checks that net is the conv, conv, linear, linear CNN whose
// shapes chain, and allocates the weight layouts; it starts no workers.
func newNative(net *model.Net) (*nativeEngine, error) {
	ls := net.Layers
	if len(ls) != 4 || ls[0].Kind != model.ConvLayer || ls[1].Kind != model.ConvLayer ||
		ls[2].Kind != model.LinearLayer || ls[3].Kind != model.LinearLayer {
		return nil, fmt.Errorf("dpsgd: the native engine needs conv, conv, linear, linear layers")
	}
	e := &nativeEngine{net: net, conv1: ls[0], conv2: ls[1], fc1: ls[2], fc2: ls[3]}
	e.q1H, e.q1W = e.conv1.OutH-1, e.conv1.OutW-1
	e.q2H, e.q2W = e.conv2.OutH-1, e.conv2.OutW-1
	e.feat = e.q2H * e.q2W * e.conv2.Out
	if e.conv2.InH != e.q1H || e.conv2.InW != e.q1W || e.conv2.In != e.conv1.Out || e.fc1.In != e.feat || e.fc2.In != e.fc1.Out {
		return nil, fmt.Errorf("dpsgd: layer shapes do not chain")
	}
	c1, c2 := e.conv1, e.conv2
	e.w1T = make([]float32, c1.WeightSize())
	e.w2p = make([]float32, c2.WeightSize())
	e.w2pT = make([]float32, c2.WeightSize())
	e.w3p = make([]float32, e.fc1.WeightSize())
	e.w3T = make([]float32, e.fc1.WeightSize())
	e.w4T = make([]float32, e.fc2.WeightSize())
	e.reduced = make([]float32, net.NumParams())
	return e, nil
}

func runWorker(w *worker, jobs <-chan job, done chan<- jobResult) {
	for j := range jobs {
		done <- jobResult{w.run(j)}
	}
}

func (e *nativeEngine) newWorker() *worker {
	c1, c2, n := e.conv1, e.conv2, chunkSize
	w := &worker{e: e, xs: make([][]float32, n)}
	f := func(k int) []float32 { return make([]float32, n*k) }
	w.cols1, w.a1, w.ga1 = f(c1.Positions()*c1.FanIn()), f(c1.Positions()*c1.Out), f(c1.Positions()*c1.Out)
	w.p1, w.gp1 = f(e.q1H*e.q1W*c1.Out), f(e.q1H*e.q1W*c1.Out)
	w.cols2, w.dcols2 = f(c2.Positions()*c2.FanIn()), f(c2.Positions()*c2.FanIn())
	w.a2, w.ga2 = f(c2.Positions()*c2.Out), f(c2.Positions()*c2.Out)
	w.p2, w.gp2 = f(e.feat), f(e.feat)
	w.a3, w.g3 = f(e.fc1.Out), f(e.fc1.Out)
	w.logits, w.g4 = f(e.fc2.Out), f(e.fc2.Out)
	w.arg1 = make([]int32, n*e.q1H*e.q1W*c1.Out)
	w.arg2 = make([]int32, n*e.feat)
	w.g1, w.g2 = f(c1.WeightSize()), f(c2.WeightSize())
	w.gb1, w.gb2 = f(c1.Out), f(c2.Out)
	w.norm2, w.factor = make([]float64, n), make([]float64, n)
	w.acc = make([]float32, e.net.NumParams())
	return w
}

// prepare rebuilds the GEMM layouts of the weights from net.Params.
func (e *nativeEngine) prepare() {
	p := e.net.Params
	c1, c2, f1, f2 := e.conv1, e.conv2, e.fc1, e.fc2
	transpose(c1.Out, c1.FanIn(), p[c1.WeightOffset:c1.WeightOffset+c1.WeightSize()], e.w1T)
	permuteKernel(c2, p[c2.WeightOffset:c2.WeightOffset+c2.WeightSize()], e.w2p, false)
	transpose(c2.Out, c2.FanIn(), e.w2p, e.w2pT)
	// fc1's inputs are PyTorch's flatten of [C, H, W]; ours are [H, W, C].
	permuteFeatures(f1.Out, c2.Out, e.q2H*e.q2W, p[f1.WeightOffset:f1.WeightOffset+f1.WeightSize()], e.w3p, false)
	transpose(f1.Out, e.feat, e.w3p, e.w3T)
	transpose(f2.Out, f2.In, p[f2.WeightOffset:f2.WeightOffset+f2.WeightSize()], e.w4T)
}

func (e *nativeEngine) ClippedSum(x []float32, y []uint8, idx []int, clipNorm float64, sum []float32) (float64, error) {
	if len(sum) != e.net.NumParams() {
		return 0, fmt.Errorf("dpsgd: gradient sum has %d entries, the network %d parameters", len(sum), e.net.NumParams())
	}
	if !(clipNorm > 0) {
		return 0, fmt.Errorf("dpsgd: clipping norm %v must be positive", clipNorm)
	}
	a := e.net.Arch
	size := a.C * a.H * a.W
	for _, i := range idx {
		if i < 0 || (i+1)*size > len(x) || i >= len(y) || int(y[i]) >= a.Classes {
			return 0, fmt.Errorf("dpsgd: example %d is out of range or has label out of range", i)
		}
	}
	e.prepare()
	nw := len(e.workers)
	for w := 1; w < nw; w++ {
		lo, hi := len(idx)*w/nw, len(idx)*(w+1)/nw
		e.jobs[w-1] <- job{x, y, idx[lo:hi], clipNorm}
	}
	loss := e.workers[0].run(job{x, y, idx[:len(idx)/nw], clipNorm})
	for w := 1; w < nw; w++ {
		loss += (<-e.done).loss
	}
	// Reduce the workers' sums, then write them in PyTorch's layouts.
	start := time.Now()
	acc := e.workers[0].acc
	for _, w := range e.workers[1:] {
		for k, v := range w.acc {
			acc[k] += v
		}
	}
	c2, f1 := e.conv2, e.fc1
	out := e.reduced
	copy(out, acc)
	c2w := func(v []float32) []float32 { return v[c2.WeightOffset : c2.WeightOffset+c2.WeightSize()] }
	f1w := func(v []float32) []float32 { return v[f1.WeightOffset : f1.WeightOffset+f1.WeightSize()] }
	permuteKernel(c2, c2w(acc), c2w(out), true)
	permuteFeatures(f1.Out, c2.Out, e.q2H*e.q2W, f1w(acc), f1w(out), true)
	for k, v := range out {
		sum[k] += v
	}
	e.timings.Phase[PhaseClip] += time.Since(start)
	// Engine phases: wall time averaged over workers.
	for _, w := range e.workers {
		for i := range w.t.Phase {
			e.timings.Phase[i] += w.t.Phase[i] / time.Duration(nw)
		}
		for i := range w.t.Forward {
			e.timings.Forward[i] += w.t.Forward[i] / time.Duration(nw)
			e.timings.Backward[i] += w.t.Backward[i] / time.Duration(nw)
		}
		w.t = Timings{}
	}
	return loss, nil
}

// TakeTimings implements Timed.
func (e *nativeEngine) TakeTimings(t *Timings) {
	t.Add(&e.timings)
	e.timings = Timings{}
}

// run computes the worker's share: it resets acc and fills it with the
// clipped sum of its examples, and returns their summed loss.
func (w *worker) run(j job) float64 {
	clear(w.acc)
	var loss float64
	for lo := 0; lo < len(j.idx); lo += chunkSize {
		hi := min(lo+chunkSize, len(j.idx))
		loss += w.chunk(j.x, j.y, j.idx[lo:hi], j.clip)
	}
	return loss
}

// forward runs up to chunkSize examples through the network, leaving every
// layer's activations in w's buffers and the logits in w.logits, and returns
// the summed loss; the gradient of each example's loss with respect to its
// logits is left in w.g4. fw receives the time per layer.
func (w *worker) forward(x []float32, y []uint8, idx []int, fw *[4]time.Duration) float64 {
	e := w.e
	p := e.net.Params
	c1, c2, f1, f2 := e.conv1, e.conv2, e.fc1, e.fc2
	n := len(idx)
	size := c1.In * c1.InH * c1.InW
	var sw stopwatch
	sw.start()
	xs := w.xs[:n]
	for k, i := range idx {
		xs[k] = x[i*size : (i+1)*size]
	}
	P1, P2, K1, K2 := c1.Positions(), c2.Positions(), c1.FanIn(), c2.FanIn()
	C1, C2, O := c1.Out, c2.Out, f2.Out
	cols1, a1 := w.cols1[:n*P1*K1], w.a1[:n*P1*C1]
	im2colNCHW(c1, xs, cols1)
	clear(a1)
	gemm.Mul(n*P1, C1, K1, cols1, K1, 1, e.w1T, C1, a1, C1)
	biasReLU(a1, p[c1.BiasOffset:c1.BiasOffset+C1])
	p1 := w.p1[:n*e.q1H*e.q1W*C1]
	maxPool2(n, c1.OutH, c1.OutW, C1, a1, p1, w.arg1)
	fw[0] = sw.lap()

	cols2, a2 := w.cols2[:n*P2*K2], w.a2[:n*P2*C2]
	im2colNHWC(c2, n, p1, cols2)
	clear(a2)
	gemm.Mul(n*P2, C2, K2, cols2, K2, 1, e.w2pT, C2, a2, C2)
	biasReLU(a2, p[c2.BiasOffset:c2.BiasOffset+C2])
	p2 := w.p2[:n*e.feat]
	maxPool2(n, c2.OutH, c2.OutW, C2, a2, p2, w.arg2)
	fw[1] = sw.lap()

	a3 := w.a3[:n*f1.Out]
	clear(a3)
	gemm.Mul(n, f1.Out, e.feat, p2, e.feat, 1, e.w3T, f1.Out, a3, f1.Out)
	biasReLU(a3, p[f1.BiasOffset:f1.BiasOffset+f1.Out])
	fw[2] = sw.lap()

	logits, g4 := w.logits[:n*O], w.g4[:n*O]
	clear(logits)
	gemm.Mul(n, O, f2.In, a3, f2.In, 1, e.w4T, O, logits, O)
	loss := softmaxCrossEntropy(logits, p[f2.BiasOffset:f2.BiasOffset+O], y, idx, g4)
	fw[3] = sw.lap()
	return loss
}

// chunk runs forward, backward, per-example norms, clipping and the sum for
// up to chunkSize examples, and returns their summed loss.
func (w *worker) chunk(x []float32, y []uint8, idx []int, clipNorm float64) float64 {
	e := w.e
	p := e.net.Params
	c1, c2, f1, f2 := e.conv1, e.conv2, e.fc1, e.fc2
	n := len(idx)
	var fw, bw [4]time.Duration
	loss := w.forward(x, y, idx, &fw)
	var sw stopwatch
	sw.start()
	P1, P2, K1, K2 := c1.Positions(), c2.Positions(), c1.FanIn(), c2.FanIn()
	C1, C2, O := c1.Out, c2.Out, f2.Out
	cols1, a1, cols2, a2 := w.cols1[:n*P1*K1], w.a1[:n*P1*C1], w.cols2[:n*P2*K2], w.a2[:n*P2*C2]
	p2, a3, g4 := w.p2[:n*e.feat], w.a3[:n*f1.Out], w.g4[:n*O]

	// Backward to every layer's output gradient (the summed loss's; each
	// example's rows are its own gradient).
	g3 := w.g3[:n*f1.Out]
	clear(g3)
	gemm.Mul(n, f1.Out, O, g4, O, 1, p[f2.WeightOffset:f2.WeightOffset+f2.WeightSize()], f2.In, g3, f2.In)
	maskReLU(g3, a3)
	bw[3] = sw.lap()

	gp2, ga2 := w.gp2[:n*e.feat], w.ga2[:n*P2*C2]
	clear(gp2)
	gemm.Mul(n, e.feat, f1.Out, g3, f1.Out, 1, e.w3p, e.feat, gp2, e.feat)
	clear(ga2)
	unpool(gp2, w.arg2, ga2)
	maskReLU(ga2, a2)
	bw[2] = sw.lap()

	dcols2, gp1, ga1 := w.dcols2[:n*P2*K2], w.gp1[:n*e.q1H*e.q1W*C1], w.ga1[:n*P1*C1]
	clear(dcols2)
	gemm.Mul(n*P2, K2, C2, ga2, C2, 1, e.w2p, K2, dcols2, K2)
	clear(gp1)
	col2imNHWC(c2, n, dcols2, gp1)
	clear(ga1)
	unpool(gp1, w.arg1, ga1)
	maskReLU(ga1, a1)
	bw[1] = sw.lap()

	// Per-example gradients and norms, clip factors, and the (clipped) sum
	// of weight gradients.
	var perSample, clip time.Duration
	acc := w.acc
	if !math.IsInf(clipNorm, 1) {
		norm2 := w.norm2[:n]
		for k := 0; k < n; k++ {
			g, gb := w.g1[k*c1.WeightSize():(k+1)*c1.WeightSize()], w.gb1[k*C1:(k+1)*C1]
			clear(g)
			gemm.Mul(C1, K1, P1, ga1[k*P1*C1:], 1, C1, cols1[k*P1*K1:], K1, g, K1)
			sumRows(ga1[k*P1*C1:(k+1)*P1*C1], gb, true)
			norm2[k] = sq(g) + sq(gb)
		}
		t := sw.lap()
		bw[0] += t
		perSample += t
		for k := 0; k < n; k++ {
			g, gb := w.g2[k*c2.WeightSize():(k+1)*c2.WeightSize()], w.gb2[k*C2:(k+1)*C2]
			clear(g)
			gemm.Mul(C2, K2, P2, ga2[k*P2*C2:], 1, C2, cols2[k*P2*K2:], K2, g, K2)
			sumRows(ga2[k*P2*C2:(k+1)*P2*C2], gb, true)
			norm2[k] += sq(g) + sq(gb)
		}
		t = sw.lap()
		bw[1] += t
		perSample += t
		for k := 0; k < n; k++ {
			gn3, gn4 := sq(g3[k*f1.Out:(k+1)*f1.Out]), sq(g4[k*O:(k+1)*O])
			norm2[k] += gn3*(sq(p2[k*e.feat:(k+1)*e.feat])+1) + gn4*(sq(a3[k*f1.Out:(k+1)*f1.Out])+1)
		}
		perSample += sw.lap()

		for k := 0; k < n; k++ {
			f := float64(clipFactor(math.Sqrt(norm2[k]), clipNorm))
			scale(g3[k*f1.Out:(k+1)*f1.Out], f)
			scale(g4[k*O:(k+1)*O], f)
			if f == 0 {
				continue // a non-finite gradient is left out
			}
			axpy(acc[c1.WeightOffset:c1.WeightOffset+c1.WeightSize()], f, w.g1[k*c1.WeightSize():(k+1)*c1.WeightSize()])
			axpy(acc[c1.BiasOffset:c1.BiasOffset+C1], f, w.gb1[k*C1:(k+1)*C1])
			axpy(acc[c2.WeightOffset:c2.WeightOffset+c2.WeightSize()], f, w.g2[k*c2.WeightSize():(k+1)*c2.WeightSize()])
			axpy(acc[c2.BiasOffset:c2.BiasOffset+C2], f, w.gb2[k*C2:(k+1)*C2])
		}
	} else {
		// Non-private: each convolution's weight gradient is one GEMM.
		gemm.Mul(C1, K1, n*P1, ga1, 1, C1, cols1, K1, acc[c1.WeightOffset:], K1)
		sumRows(ga1, acc[c1.BiasOffset:c1.BiasOffset+C1], false)
		bw[0] += sw.lap()
		gemm.Mul(C2, K2, n*P2, ga2, 1, C2, cols2, K2, acc[c2.WeightOffset:], K2)
		sumRows(ga2, acc[c2.BiasOffset:c2.BiasOffset+C2], false)
		bw[1] += sw.lap()
	}
	// Linear layers: W += (scaled g)ᵀ·a, b += Σ scaled g.
	gemm.Mul(f1.Out, e.feat, n, g3, 1, f1.Out, p2, e.feat, acc[f1.WeightOffset:], e.feat)
	sumRows(g3, acc[f1.BiasOffset:f1.BiasOffset+f1.Out], false)
	gemm.Mul(O, f2.In, n, g4, 1, O, a3, f2.In, acc[f2.WeightOffset:], f2.In)
	sumRows(g4, acc[f2.BiasOffset:f2.BiasOffset+O], false)
	if t := sw.lap(); math.IsInf(clipNorm, 1) {
		bw[2] += t // without clipping, the weight gradients are backward work
	} else {
		clip += t
	}

	var ft, bt time.Duration
	for l := range fw {
		w.t.Forward[l] += fw[l]
		w.t.Backward[l] += bw[l]
		ft += fw[l]
		bt += bw[l]
	}
	w.t.Phase[PhaseForward] += ft
	w.t.Phase[PhaseBackward] += bt - perSample
	w.t.Phase[PhasePerSample] += perSample
	w.t.Phase[PhaseClip] += clip
	return loss
}

// softmaxCrossEntropy adds bias to each row of logits ([n, O]), writes each
// example's gradient softmax − onehot(label) to g and returns the summed
// cross-entropy (computed in float64).
func softmaxCrossEntropy(logits, bias []float32, y []uint8, idx []int, g []float32) float64 {
	O := len(bias)
	var loss float64
	for k, i := range idx {
		z, gk := logits[k*O:(k+1)*O], g[k*O:(k+1)*O]
		m := math.Inf(-1)
		for o := range z {
			z[o] += bias[o]
			m = math.Max(m, float64(z[o]))
		}
		var s float64
		for _, v := range z {
			s += math.Exp(float64(v) - m)
		}
		lse := m + math.Log(s)
		loss += lse - float64(z[y[i]])
		for o, v := range z {
			gk[o] = float32(math.Exp(float64(v) - lse))
		}
		gk[y[i]]--
	}
	return loss
}

// sumRows adds (or, with overwrite, writes) the column sums of m ([rows,
// len(out)]) to out.
func sumRows(m, out []float32, overwrite bool) {
	if overwrite {
		clear(out)
	}
	C := len(out)
	for r := 0; r+C <= len(m); r += C {
		for c, v := range m[r : r+C] {
			out[c] += v
		}
	}
}

// scale multiplies v by f in place; f = 0 zeroes v (even NaNs).
func scale(v []float32, f float64) {
	if f == 1 {
		return
	}
	if f == 0 {
		clear(v)
		return
	}
	s := float32(f)
	for i := range v {
		v[i] *= s
	}
}

// axpy adds f·x to y.
func axpy(y []float32, f float64, x []float32) {
	s := float32(f)
	for i, v := range x[:len(y)] {
		y[i] += s * v
	}
}
