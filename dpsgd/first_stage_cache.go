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
// features (ScatterNet) it is the same at every step; a run of several
// epochs computes it once per example instead of once per visit, with the
// same float operations, so the clipped sums are the same values.
type firstStageCache struct {
	src  []float32 // the inputs it was computed from (their identity)
	xhat []float32 // [N, C, P]
	vars []float64 // [N, C]
}

// firstStageCacheBytes bounds a cache's size, as does a quarter of the Go
// runtime's soft memory limit (runs side by side each hold one): above
// either the stage normalises on every visit, as without a cache.
const firstStageCacheBytes = 4 << 30

// holds reports whether c was computed from the very slice x (the same
// first element and length), not merely from equal values.
func (c *firstStageCache) holds(x []float32) bool {
	return c != nil && len(x) > 0 && len(x) == len(c.src) && &x[0] == &c.src[0]
}

// cacheFirstStage computes the first stage's cache for the n examples of
// x, on the engine's workers, when that stage is the fused group norm +
// linear stage and the cache fits firstStageCacheBytes; it reports whether
// it did. Until dropFirstStage, ClippedSum on the same slice x reads the
// cache instead of normalising; x must not change meanwhile. It stops with
// ctx's error if cancelled, caching nothing.
func (e *nativeEngine) cacheFirstStage(ctx context.Context, x []float32, n int) (bool, error) {
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
	c := &firstStageCache{src: x, xhat: make([]float32, n*F), vars: make([]float64, n*C)}
	P := l.InH * l.InW
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
	if err := ctx.Err(); err != nil {
		return false, err
	}
	e.cache = c
	e.timings.Phase[PhaseForward] += time.Since(start)
	return true, nil
}

// dropFirstStage forgets the cache.
func (e *nativeEngine) dropFirstStage() { e.cache = nil }
