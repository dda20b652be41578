package dpsgd

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	"github.com/dptune/dptune/internal/cpus"
	"github.com/dptune/dptune/model"
)

// firstStageCache holds, for every example of one dataset, what a first
// fused group norm + linear stage (gnLinearStage) computes before any
// parameter enters: the normalised input x̂, channels-major, and Σ_p x̂²
// per channel. A group norm's normalisation has no parameters, so on fixed
// features (ScatterNet) it is the same at every step and in every run; a
// run of several epochs reads it instead of normalising at every visit,
// and the float operations that made it are those of the stage, so the
// clipped sums are the same values. Runs side by side on the same dataset
// share one (firstStageCaches).
type firstStageCache struct {
	src  []float32 // the inputs it was computed from (their identity)
	xhat []float32 // [N, C, P]
	vars []float64 // [N, C]
}

// firstStageCacheBytes bounds a cache's size, as does a quarter of the Go
// runtime's soft memory limit: above either the stage normalises on every
// visit, as without a cache.
const firstStageCacheBytes = 4 << 30

// holds reports whether c was computed from the very slice x (the same
// first element and length), not merely from equal values.
func (c *firstStageCache) holds(x []float32) bool {
	return c != nil && len(x) > 0 && len(x) == len(c.src) && &x[0] == &c.src[0]
}

// cacheKey names what a cache depends on: the inputs' identity and the
// stage's normalisation (its shape, groups and input layout).
type cacheKey struct {
	x              *float32
	n              int
	c, h, w, group int
	layout         inputLayout
}

// sharedCache is one cache and the runs holding it.
type sharedCache struct {
	refs  int
	ready chan struct{}    // closed once built or failed
	cache *firstStageCache // nil: the build failed
}

// firstStageCaches are the caches runs hold now, one per key; the last run
// to let go of one frees it, so a cache never outlives the runs that
// promise not to change its inputs.
var firstStageCaches = struct {
	sync.Mutex
	m map[cacheKey]*sharedCache
}{m: map[cacheKey]*sharedCache{}}

// cacheFirstStage makes the first stage's cache of the n examples of x
// available to ClippedSum (acquireFirstStage, computed on the engine's
// workers if no run holds it) and reports whether it did. Until
// dropFirstStage, ClippedSum on the same slice x reads the cache instead
// of normalising; x must not change meanwhile. It stops with ctx's error
// if cancelled, caching nothing.
func (e *nativeEngine) cacheFirstStage(ctx context.Context, x []float32, n int) (bool, error) {
	if e.cache != nil {
		return false, nil
	}
	start := time.Now()
	c, release, err := e.acquireFirstStage(ctx, len(e.workers), x, n, true)
	if c == nil {
		return false, err
	}
	e.cache, e.release = c, release
	e.timings.Phase[PhaseForward] += time.Since(start)
	return true, nil
}

// HoldInputs keeps the normalised inputs of arch's first stage for the n
// examples of x, when that stage is a group norm followed by flatten and a
// linear layer (the ScatterNet + group norm networks on their features),
// until release: Train and Evaluate of such a network on the very slice x
// then read them instead of normalising x again — the same values — and
// runs side by side share them. x must not change until release. The
// inputs take n·(4·C·H·W + 8·C) bytes, computed on as many goroutines as
// ctx gives cores (see runner.ForEach); above 4 GiB or a quarter of the
// soft memory limit, and for any other first layer, HoldInputs holds
// nothing and release does nothing. It returns ctx's error if cancelled,
// or an error for an invalid arch.
func HoldInputs(ctx context.Context, arch model.Arch, x []float32, n int) (release func(), err error) {
	net, err := model.NewZero(arch)
	if err != nil {
		return nil, err
	}
	e, err := newNative(net)
	if err != nil {
		return nil, err
	}
	c, release, err := e.acquireFirstStage(ctx, cpus.Of(ctx), x, n, true)
	if c == nil {
		return func() {}, err
	}
	return release, nil
}

// acquireFirstStage returns the cache of the n examples of x for p's first
// stage, and the function that lets go of it: the one a run holds now, or,
// with build, one computed on workers goroutines. It returns nil (and ctx's
// error if cancelled) when that stage is not the fused group norm + linear
// stage, the cache would exceed firstStageCacheBytes or a quarter of the
// soft memory limit, or no run holds one and build is false.
func (p *plan) acquireFirstStage(ctx context.Context, workers int, x []float32, n int, build bool) (*firstStageCache, func(), error) {
	if len(p.stages) == 0 {
		return nil, nil, nil
	}
	st, ok := p.stages[0].(*gnLinearStage)
	if !ok {
		return nil, nil, nil
	}
	l := st.gn.l
	F, C := l.InSize(), l.In
	size := int64(n) * int64(4*F+8*C)
	if n < 1 || len(x) != n*F || size > firstStageCacheBytes || size > debug.SetMemoryLimit(-1)/4 {
		return nil, nil, nil
	}
	key := cacheKey{&x[0], len(x), l.In, l.InH, l.InW, st.gn.groups, p.input}
	reg := &firstStageCaches
	reg.Lock()
	sh, shared := reg.m[key]
	if !shared {
		if !build {
			reg.Unlock()
			return nil, nil, nil
		}
		sh = &sharedCache{ready: make(chan struct{})}
		reg.m[key] = sh
	}
	sh.refs++
	reg.Unlock()
	release := func() {
		reg.Lock()
		defer reg.Unlock()
		if sh.refs--; sh.refs == 0 && reg.m[key] == sh {
			delete(reg.m, key)
		}
	}
	if shared {
		select {
		case <-sh.ready:
		case <-ctx.Done():
			release()
			return nil, nil, ctx.Err()
		}
	} else {
		sh.cache = p.buildFirstStage(ctx, st, workers, x, n)
		if sh.cache == nil { // cancelled: the next run builds afresh
			reg.Lock()
			delete(reg.m, key)
			reg.Unlock()
		}
		close(sh.ready)
	}
	if sh.cache == nil {
		release()
		return nil, nil, ctx.Err()
	}
	return sh.cache, release, nil
}

// buildFirstStage computes st's cache of the n examples of x on nw
// goroutines; nil if ctx was cancelled.
func (p *plan) buildFirstStage(ctx context.Context, st *gnLinearStage, nw int, x []float32, n int) *firstStageCache {
	l := st.gn.l
	F, C, P := l.InSize(), l.In, l.InH*l.InW
	c := &firstStageCache{src: x, xhat: make([]float32, n*F), vars: make([]float64, n*C)}
	nw = max(1, nw)
	var wg sync.WaitGroup
	for w := range nw {
		wg.Go(func() {
			nhwc, row := make([]float32, F), make([]float32, F)
			sc, rstd := newGNScratch(C), make([]float64, st.gn.groups)
			for i := n * w / nw; i < n*(w+1)/nw; i++ {
				if i%1024 == 0 && ctx.Err() != nil {
					return
				}
				in := x[i*F : (i+1)*F]
				if p.input == inputNHWC {
					transpose(C, P, in, nhwc)
					in = nhwc
				}
				st.normalizeExample(in, c.xhat[i*F:(i+1)*F], c.vars[i*C:(i+1)*C], row, &sc, rstd)
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return c
}

// dropFirstStage lets go of the engine's cache.
func (e *nativeEngine) dropFirstStage() {
	if e.release != nil {
		e.release()
	}
	e.cache, e.release = nil, nil
}
