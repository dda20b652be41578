package dpsgd

import (
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/dptune/dptune/internal/vec"
	"github.com/dptune/dptune/model"
)

// chunkSize is the most examples a worker carries through the network at
// once; chunkFloats bounds the buffer space of a chunk (3 MiB of float32),
// so that a chunk's activations stay in the core's cache: 8 examples of
// the MNIST networks, 1 of tb-cifar10.
const (
	chunkSize   = 8
	chunkFloats = 3 << 18
)

// stage is one step of the native plan: a layer of the Arch, or a layer
// with the elementwise activation after it fused in (fused); a layer that
// is free in the engine's layout has no stage. Buffers are per worker (newBuffers); the stage
// itself holds the weights in the layouts its GEMMs want (prepare).
type stage interface {
	layer() model.Layer
	// exampleFloats is the buffer space one example of a chunk needs.
	exampleFloats() int
	newBuffers(chunk int) any
	// prepare rebuilds the stage's weight layouts from the parameters.
	prepare(params []float32)
	// forward computes n examples' outputs from their inputs.
	forward(b any, n int, in, out []float32)
	// backward turns gOut, the gradient of the summed loss with respect to
	// the outputs, into the gradient with respect to the layer before any
	// fused activation (in place) and, when gIn is not nil, with respect
	// to the inputs.
	backward(b any, n int, in, out, gOut, gIn []float32)
}

// paramStage is a stage with parameters. Its methods run after backward,
// with the same in and gOut.
type paramStage interface {
	stage
	// ghost reports whether norms works without per-example gradients.
	ghost() bool
	// norms adds each example's squared gradient norm to norm2 ([n]).
	norms(b any, n int, in, gOut []float32, norm2 []float64)
	// clippedSum adds Σ_k f[k]·(example k's gradient) to acc (the whole
	// parameter vector, in the stage's internal layouts). It may scale
	// gOut.
	clippedSum(b any, n int, in, gOut []float32, f []float64, acc []float32)
	// sum adds the unclipped gradient sum to acc.
	sum(b any, n int, in, gOut []float32, acc []float32)
	// export writes the stage's parameters' part of acc in PyTorch's
	// layouts to out.
	export(acc, out []float32)
}

// inputLayout is how a worker lays out the examples it reads.
type inputLayout int

const (
	inputRaw  inputLayout = iota // [C, H, W] as stored: for a first layer whose rule says raw
	inputNHWC                    // transposed to positions-major for any other first layer
)

// nativeEngine is the default engine: any model.Arch evaluated and
// differentiated by hand in Go, layer by layer, on float32 GEMMs
// (internal/gemm), with the per-example work Opacus's grad samplers do.
// See NewEngine.
type nativeEngine struct {
	*plan
	reduced []float32 // the workers' summed gradient in PyTorch's layouts
	// shards[s] and shardLoss[s] are shard s's clipped sum (internal
	// layouts) and summed loss, allocated up to the most shards a step
	// has used; see shardsFor.
	shards    [][]float32
	shardLoss []float64
	cache     *firstStageCache // nil: the first stage computes everything
	release   func()           // lets go of cache

	workers []*worker
	jobs    []chan job
	done    chan jobResult
	timings Timings
}

// plan is what the workers share: the network's stages and layout. The
// helper goroutines reference it and not the engine, so that an engine
// nobody holds is collected and its cleanup stops them.
type plan struct {
	net    *model.Net
	stages []stage
	slot   []int // per stage: the index of its layer with parameters, for Timings
	input  inputLayout
	chunk  int
}

// A step's batch of n examples is cut into shardsFor(n) fixed shards:
// shard s of S is examples [n·s/S, n·(s+1)/S) of the batch, summed from
// zero in chunks from its own start, and the shards' sums are added in
// shard order. Workers take shards w, w+nw, …, so the float32 sum — and
// with it a seeded run's model — is the same whatever the number of
// workers (at most maxShards of them). S depends on n alone: 8 up to a
// batch of 575 (as when it was fixed at 8), then one shard per 64
// examples up to maxShards, so that a large batch has work for more than
// 8 cores and a small one keeps shards of several chunks.
const (
	minShards     = 8
	maxShards     = 64
	shardExamples = 64
)

// shardsFor is the number of fixed shards of a batch of n examples.
func shardsFor(n int) int { return min(max(minShards, n/shardExamples), maxShards) }

// job is a worker's part of a step: shards first, first+step, … of the
// batch idx, written to acc[s] and loss[s].
type job struct {
	x           []float32
	y           []uint8
	idx         []int
	clip        Clip
	first, step int
	acc         [][]float32
	loss        []float64
	cache       *firstStageCache // x's, or nil
}

type jobResult struct{}

// worker holds one worker's buffers for a chunk of examples, and its share of
// the clipped sum in the engine's internal layouts.
type worker struct {
	e             *plan
	raw, nhwc     []float32   // the chunk's inputs
	acts, grads   [][]float32 // per stage: outputs and gradients, [chunk, OutSize]
	bufs          []any       // per stage
	norm2, ghost2 []float64
	factor        []float64
	acc           []float32        // the current shard's clipped sum, internal layouts, len = NumParams
	cache         *firstStageCache // the current job's
	t             Timings
}

// NewEngine returns the default per-sample gradient engine for net.
//
// It runs any model.Arch natively, layer by layer, built from the same
// Spec as the model package's gorgonia graph (which is its test oracle,
// NewReferenceEngine): activations positions-major ([examples·positions,
// channels]), every matrix product on internal/gemm's kernel. Every layer
// kind has its own file, layer_<type>.go, with its forward pass, backward
// pass and per-example gradient or norm rule, registered under the kind's
// type name (register), as Opacus's grad_sample/ registers one grad
// sampler per layer type; NewEngine returns an error naming the first
// layer whose type has no rules. With FlatClip(+Inf) (non-private SGD) the per-example work is skipped and
// every weight gradient is one GEMM. The clipping factor of each example
// (Clip.Factor: flat or automatic clipping) is computed in one place, once
// its per-example norm is known from every layer (worker.chunk), and every
// layer kind's clipped sum — the fused stages' too — scales by it.
//
// The batch is cut into 8 to 64 fixed shards (shardsFor: more for a
// larger batch), shared between GOMAXPROCS workers (persistent
// goroutines, at most 64), each carrying chunks of up to 8
// examples through the whole network, so a step's only synchronisation is
// the final sum; that sum is the same float32 values whatever the number of
// workers. Buffers are allocated once (the shards' on the first step
// that needs them): a step allocates nothing. batchSize is a hint and may be 0.
func NewEngine(net *model.Net, batchSize int) (Engine, error) {
	return newEngineWorkers(net, max(1, runtime.GOMAXPROCS(0)))
}

// NewEngineWorkers is NewEngine with workers workers (at least one)
// instead of GOMAXPROCS: for runs side by side, each on its share of the
// cores (Train uses the share its context gives, see runner.Local).
func NewEngineWorkers(net *model.Net, batchSize, workers int) (Engine, error) {
	return newEngineWorkers(net, workers)
}

// newEngineWorkers is NewEngine with nw workers (clamped to [1,
// maxShards]).
func newEngineWorkers(net *model.Net, nw int) (*nativeEngine, error) {
	e, err := newNative(net)
	if err != nil {
		return nil, err
	}
	nw = min(max(1, nw), maxShards)
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

// rule is the engine's part of a layer kind, registered by the kind's
// file (layer_<type>.go) under the kind's type name.
type rule struct {
	// build returns the stage of ls[0], or nil for a layer with nothing to
	// do in the engine's layout, and how many layers of ls the stage takes
	// (2 when it fuses the activation after it, fused). raw: ls[0] reads
	// the network's input in the dataset's [C, H, W] layout.
	build func(ls []model.Layer, raw bool) (stage, int)
	// raw: as the first layer, the kind reads the dataset's [C, H, W]
	// layout; for any other kind the engine first transposes the input
	// positions-major.
	raw bool
	// first, if not nil, builds the network's first stage (the first
	// layer with one, after a front end's), whose input gradient nobody
	// needs, in place of build, and returns a nil stage where it does not
	// apply.
	first func(ls []model.Layer) (stage, int)
	// spend, if not nil, makes the kind a privacy-spending stage (Stage):
	// it returns the mechanism by which a layer of kind k estimates its
	// buffers from the training set before the first step, with that
	// estimate's event. PlannedEvent and Train ask it through Stages.
	spend func(k model.LayerKind) Mechanism
}

var rules = map[string]rule{}

// register makes r the rules of layer type typ; registering a type twice
// panics (a programming error).
func register(typ string, r rule) {
	if _, dup := rules[typ]; dup {
		panic(fmt.Sprintf("dpsgd: rules for layer type %q registered twice", typ))
	}
	rules[typ] = r
}

// newNative builds the plan of net's layers; it starts no workers. It
// returns an error naming the first layer whose type has no rules.
func newNative(net *model.Net) (*nativeEngine, error) {
	ls := net.Layers
	if len(ls) == 0 {
		return nil, fmt.Errorf("dpsgd: network %s has no layers", net.Arch.Name)
	}
	for _, l := range ls {
		if _, ok := rules[l.Kind.Type()]; !ok {
			return nil, fmt.Errorf("dpsgd: layer %s: the native engine has no rules for layer type %q", l.Name, l.Kind.Type())
		}
	}
	e := &nativeEngine{plan: &plan{net: net}, reduced: make([]float32, net.NumParams())}
	ic, ih, iw := net.Arch.Input()
	if !rules[ls[0].Kind.Type()].raw && ic > 1 && ih*iw > 1 {
		e.input = inputNHWC
	}
	slot := -1
	for i := 0; i < len(ls); {
		r := rules[ls[i].Kind.Type()]
		var st stage
		var used int
		if len(e.stages) == 0 && r.first != nil {
			st, used = r.first(ls[i:])
		}
		if st == nil {
			st, used = r.build(ls[i:], i == 0 && e.input == inputRaw)
		}
		// A stage's time goes to the last of its layers with parameters.
		for _, l := range ls[i : i+used] {
			if l.HasParams() {
				slot++
			}
		}
		i += used
		if st == nil {
			continue
		}
		e.stages = append(e.stages, st)
		e.slot = append(e.slot, min(max(slot, 0), MaxLayers-1))
	}
	per := ic * ih * iw * 2
	for _, st := range e.stages {
		per += 2*st.layer().OutSize() + st.exampleFloats()
	}
	e.chunk = max(1, min(chunkSize, chunkFloats/per))
	return e, nil
}

func runWorker(w *worker, jobs <-chan job, done chan<- jobResult) {
	for j := range jobs {
		w.run(j)
		done <- jobResult{}
	}
}

func (e *nativeEngine) newWorker() *worker {
	n := e.chunk
	c, h, wd := e.net.Arch.Input()
	w := &worker{e: e.plan, raw: make([]float32, n*c*h*wd)}
	if e.input == inputNHWC {
		w.nhwc = make([]float32, n*c*h*wd)
	}
	for _, st := range e.stages {
		size := n * st.layer().OutSize()
		w.acts = append(w.acts, make([]float32, size))
		w.grads = append(w.grads, make([]float32, size))
		w.bufs = append(w.bufs, st.newBuffers(n))
	}
	w.norm2, w.ghost2, w.factor = make([]float64, n), make([]float64, n), make([]float64, n)
	return w
}

// bufferStage is a stage of a layer with buffers (model.Net.Buffers).
type bufferStage interface {
	// prepareBuffers rebuilds what the stage derives from the buffers.
	prepareBuffers(buffers []float32)
}

// prepare rebuilds the stages' weight layouts from net.Params, and what
// they derive from net.Buffers.
func (e *nativeEngine) prepare() {
	for _, st := range e.stages {
		st.prepare(e.net.Params)
		if bs, ok := st.(bufferStage); ok {
			bs.prepareBuffers(e.net.Buffers)
		}
	}
}

func (e *nativeEngine) ClippedSum(x []float32, y []uint8, idx []int, clip Clip, sum []float32) (float64, error) {
	if len(sum) != e.net.NumParams() {
		return 0, fmt.Errorf("dpsgd: gradient sum has %d entries, the network %d parameters", len(sum), e.net.NumParams())
	}
	if err := clip.check(); err != nil {
		return 0, err
	}
	a := e.net.Arch
	c, h, w := a.Input()
	size := c * h * w
	for _, i := range idx {
		if i < 0 || (i+1)*size > len(x) || i >= len(y) || int(y[i]) >= a.Classes {
			return 0, fmt.Errorf("dpsgd: example %d is out of range or has label out of range", i)
		}
	}
	e.prepare()
	nw := len(e.workers)
	var cache *firstStageCache
	if e.cache.holds(x) {
		cache = e.cache
	}
	ns := shardsFor(len(idx))
	e.growShards(ns)
	acc, losses := e.shards[:ns], e.shardLoss[:ns]
	for w := 1; w < nw; w++ {
		e.jobs[w-1] <- job{x, y, idx, clip, w, nw, acc, losses, cache}
	}
	e.workers[0].run(job{x, y, idx, clip, 0, nw, acc, losses, cache})
	for w := 1; w < nw; w++ {
		<-e.done
	}
	// Add the shards' sums in shard order, then write them in PyTorch's
	// layouts.
	start := time.Now()
	sum0, loss := acc[0], losses[0]
	for s := 1; s < ns; s++ {
		vec.Add(sum0, acc[s])
		loss += losses[s]
	}
	for _, st := range e.stages {
		if ps, ok := st.(paramStage); ok {
			ps.export(sum0, e.reduced)
		}
	}
	for k, v := range e.reduced {
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

// growShards allocates the shards' buffers up to ns.
func (e *nativeEngine) growShards(ns int) {
	for len(e.shards) < ns {
		e.shards = append(e.shards, make([]float32, e.net.NumParams()))
		e.shardLoss = append(e.shardLoss, 0)
	}
}

// TakeTimings implements Timed.
func (e *nativeEngine) TakeTimings(t *Timings) {
	t.Add(&e.timings)
	e.timings = Timings{}
}

// run computes the worker's shards: for each it resets j.acc[s], fills it
// with the clipped sum of the shard's examples and sets j.loss[s] to their
// summed loss.
func (w *worker) run(j job) {
	w.cache = j.cache
	defer func() { w.cache = nil }()
	n, ns := len(j.idx), len(j.acc)
	for s := j.first; s < ns; s += j.step {
		lo, hi := n*s/ns, n*(s+1)/ns
		w.acc = j.acc[s]
		clear(w.acc)
		var loss float64
		for c := lo; c < hi; c += w.e.chunk {
			loss += w.chunk(j.x, j.y, j.idx[c:min(c+w.e.chunk, hi)], j.clip)
		}
		j.loss[s] = loss
	}
}

// input returns the input of stage i for n examples.
func (w *worker) input(i, n int) []float32 {
	if i > 0 {
		return w.acts[i-1]
	}
	if w.e.input == inputNHWC {
		return w.nhwc
	}
	return w.raw
}

// forward runs up to chunk examples through the network, leaving every
// stage's outputs in w.acts, and returns the summed loss; the gradient of
// each example's loss with respect to its logits is left in the last
// stage's w.grads. fw receives the time per layer with parameters.
func (w *worker) forward(x []float32, y []uint8, idx []int, fw *[MaxLayers]time.Duration) float64 {
	e := w.e
	a := e.net.Arch
	c, h, wd := a.Input()
	n, size := len(idx), c*h*wd
	var sw stopwatch
	sw.start()
	if w.cache == nil {
		for k, i := range idx {
			copy(w.raw[k*size:(k+1)*size], x[i*size:(i+1)*size])
		}
		if e.input == inputNHWC {
			P := h * wd
			for k := 0; k < n; k++ {
				transpose(c, P, w.raw[k*size:(k+1)*size], w.nhwc[k*size:(k+1)*size])
			}
		}
	}
	for i, st := range e.stages {
		if i == 0 && w.cache != nil {
			st.(*gnLinearStage).forwardCached(w.bufs[0], idx, w.cache, w.acts[0])
		} else {
			st.forward(w.bufs[i], n, w.input(i, n), w.acts[i])
		}
		fw[e.slot[i]] += sw.lap()
	}
	last := len(e.stages) - 1
	loss := softmaxCrossEntropy(w.acts[last], a.Classes, y, idx, w.grads[last])
	fw[e.slot[last]] += sw.lap()
	return loss
}

// chunk runs forward, backward, per-example norms, clipping and the sum for
// up to chunk examples, and returns their summed loss.
func (w *worker) chunk(x []float32, y []uint8, idx []int, clip Clip) float64 {
	e := w.e
	n := len(idx)
	var fw, bw [MaxLayers]time.Duration
	loss := w.forward(x, y, idx, &fw)
	var sw stopwatch
	sw.start()
	// Backward to every stage's output gradient (the summed loss's; each
	// example's rows are its own gradient).
	for i := len(e.stages) - 1; i >= 0; i-- {
		var gIn []float32
		if i > 0 {
			gIn = w.grads[i-1]
		}
		e.stages[i].backward(w.bufs[i], n, w.input(i, n), w.acts[i], w.grads[i], gIn)
		bw[e.slot[i]] += sw.lap()
	}
	var perSample, clipTime time.Duration
	if math.IsInf(clip.Norm, 1) && !clip.Automatic() {
		for i, st := range e.stages {
			if ps, ok := st.(paramStage); ok {
				ps.sum(w.bufs[i], n, w.input(i, n), w.grads[i], w.acc)
				bw[e.slot[i]] += sw.lap()
			}
		}
	} else {
		// Per-example norms: instantiated layers add to norm2, ghost
		// layers to ghost2, in layer order; then the clip factors (flat
		// or automatic clipping: the one place that tells them apart).
		norm2, ghost2, f := w.norm2[:n], w.ghost2[:n], w.factor[:n]
		clear(norm2)
		clear(ghost2)
		for i, st := range e.stages {
			if ps, ok := st.(paramStage); ok {
				dst := norm2
				if ps.ghost() {
					dst = ghost2
				}
				ps.norms(w.bufs[i], n, w.input(i, n), w.grads[i], dst)
				t := sw.lap()
				bw[e.slot[i]] += t
				perSample += t
			}
		}
		for k := range f {
			norm2[k] += ghost2[k]
			f[k] = float64(clip.Factor(math.Sqrt(norm2[k])))
		}
		for i, st := range e.stages {
			if ps, ok := st.(paramStage); ok {
				ps.clippedSum(w.bufs[i], n, w.input(i, n), w.grads[i], f, w.acc)
			}
		}
		clipTime = sw.lap()
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
	w.t.Phase[PhaseClip] += clipTime
	return loss
}
