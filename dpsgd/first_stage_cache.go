package dpsgd

import (
	"context"
	"runtime/debug"
	"sync"
	"time"
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
// available to ClippedSum, when that stage is the fused group norm +
// linear stage and the cache fits firstStageCacheBytes; it reports whether
// it did. A run already holding the same cache shares it; else it is
// computed on the engine's workers. Until dropFirstStage, ClippedSum on
// the same slice x reads the cache instead of normalising; x must not
// change meanwhile. It stops with ctx's error if cancelled, caching
// nothing.
func (e *nativeEngine) cacheFirstStage(ctx context.Context, x []float32, n int) (bool, error) {
	if len(e.stages) == 0 || e.cache != nil {
		return false, nil
	}
	st, ok := e.stages[0].(*gnLinearStage)
	if !ok {
		return false, nil
	}
	l := st.gn.l
	F, C := l.InSize(), l.In
	size := int64(n) * int64(4*F+8*C)
	if n < 1 || len(x) != n*F || size > firstStageCacheBytes || size > debug.SetMemoryLimit(-1)/4 {
		return false, nil
	}
	start := time.Now()
	key := cacheKey{&x[0], len(x), l.In, l.InH, l.InW, st.gn.groups, e.input}
	reg := &firstStageCaches
	reg.Lock()
	sh, shared := reg.m[key]
	if !shared {
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
			return false, ctx.Err()
		}
	} else {
		sh.cache = e.buildFirstStage(ctx, st, x, n)
		if sh.cache == nil { // cancelled: the next run builds afresh
			reg.Lock()
			delete(reg.m, key)
			reg.Unlock()
		}
		close(sh.ready)
	}
	if sh.cache == nil {
		release()
		return false, ctx.Err()
	}
	e.cache, e.release = sh.cache, release
	e.timings.Phase[PhaseForward] += time.Since(start)
	return true, nil
}

// buildFirstStage computes st's cache of the n examples of x on the
// engine's workers; nil if ctx was cancelled.
func (e *nativeEngine) buildFirstStage(ctx context.Context, st *gnLinearStage, x []float32, n int) *firstStageCache {
	l := st.gn.l
	F, C, P := l.InSize(), l.In, l.InH*l.InW
	c := &firstStageCache{src: x, xhat: make([]float32, n*F), vars: make([]float64, n*C)}
	nw := len(e.workers)
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
				if e.input == inputNHWC {
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
