package dpsgd

import (
	"context"
	"runtime/debug"
	"slices"
	"sync"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/model"
)

// cacheRun is a scatterGNLinear network on n random examples with a
// seeded DP-SGD config of steps steps at sampling rate q, and a fresh copy
// of the network for each run.
func cacheRun(t *testing.T, n, steps int, q float64, seed uint64) (*data.Dataset, Config, func() *model.Net) {
	net0, x, y := randomData(t, scatterGNLinear, n, seed)
	train := &data.Dataset{Name: "cache", X: x, Y: y, N: n, C: scatterGNLinear.C, H: scatterGNLinear.H, W: scatterGNLinear.W, Classes: 10}
	cfg := Config{NoiseMultiplier: 1, ClipNorm: 1, SamplingRate: q, Steps: steps, LearningRate: 0.5, Seed: &seed}
	return train, cfg, func() *model.Net {
		return &model.Net{Arch: net0.Arch, Layers: net0.Layers, Params: slices.Clone(net0.Params), Buffers: slices.Clone(net0.Buffers)}
	}
}

// heldCaches is the number of first-stage caches some run holds.
func heldCaches() int {
	firstStageCaches.Lock()
	defer firstStageCaches.Unlock()
	return len(firstStageCaches.m)
}

// plainEngine hides the native engine's type from Train, which then
// caches nothing: the path without firstStageCache.
type plainEngine struct{ Engine }

// With the first stage's cache, a clipped sum is the same float values as
// without it, for the cached slice only: an equal copy of the inputs, then
// changed, is normalised afresh.
func TestFirstStageCacheSameSums(t *testing.T) {
	const n = 60
	net, x, y := randomData(t, scatterGNLinear, n, 9)
	perturbNorms(net, 3)
	idx := []int{3, 17, 17, 42, 0, 59, 8, 21, 33, 34, 35}
	sum := func(e *nativeEngine, x []float32) ([]float32, float64) {
		s := make([]float32, net.NumParams())
		loss, err := e.ClippedSum(x, y, idx, FlatClip(0.7), s)
		if err != nil {
			t.Fatal(err)
		}
		return s, loss
	}
	e, err := newEngineWorkers(net, 2)
	if err != nil {
		t.Fatal(err)
	}
	want, wantLoss := sum(e, x)
	if ok, err := e.cacheFirstStage(context.Background(), x, n); !ok || err != nil {
		t.Fatalf("cacheFirstStage = %v, %v", ok, err)
	}
	defer e.dropFirstStage()
	got, loss := sum(e, x)
	if !slices.Equal(got, want) || loss != wantLoss {
		t.Fatalf("cached: loss %v, want %v; sums equal: %v", loss, wantLoss, slices.Equal(got, want))
	}
	other := slices.Clone(x)
	size := len(x) / n
	for k := range size {
		other[17*size+k] += 0.5
	}
	fresh, _ := newEngineWorkers(net, 1)
	want, _ = sum(fresh, other)
	if got, _ := sum(e, other); !slices.Equal(got, want) {
		t.Fatal("another slice's sum came from the cache")
	}
}

// Train caches the first stage for a run of two epochs or more, and trains
// the same parameters as without the cache.
func TestTrainWithFirstStageCache(t *testing.T) {
	train, cfg, fresh := cacheRun(t, 200, 25, 0.1, 4)
	var params [2][]float32
	for k := range params {
		net := fresh()
		e, err := newEngineWorkers(net, 2)
		if err != nil {
			t.Fatal(err)
		}
		var engine Engine = e
		if k == 1 {
			engine = plainEngine{e}
		}
		if _, err := Train(context.Background(), net, train, cfg, engine, func(Progress) {
			if (e.cache != nil) != (k == 0) {
				t.Fatalf("run %d: cache %v during training", k, e.cache != nil)
			}
		}); err != nil {
			t.Fatal(err)
		}
		if e.cache != nil {
			t.Error("the cache outlived Train")
		}
		params[k] = net.Params
	}
	if !slices.Equal(params[0], params[1]) {
		t.Error("the cached run trained other parameters")
	}
}

// Only the fused first stage has a cache, within a quarter of the soft
// memory limit; a cancelled build caches nothing.
func TestFirstStageCacheRefusals(t *testing.T) {
	net, x, _ := randomData(t, model.MNIST, 4, 1)
	e, _ := newEngineWorkers(net, 1)
	if ok, err := e.cacheFirstStage(context.Background(), x, 4); ok || err != nil {
		t.Errorf("a convolutional first stage: %v, %v", ok, err)
	}
	net, x, _ = randomData(t, scatterGNLinear, 4, 1)
	e, _ = newEngineWorkers(net, 1)
	// 4 examples of 81×7×7 take 4·(4·3969 + 8·81) = 66,096 bytes. The
	// limit is the process's: no test of this package runs in parallel.
	limit := debug.SetMemoryLimit(4*66096 - 4) // a quarter: one byte short
	ok, err := e.cacheFirstStage(context.Background(), x, 4)
	debug.SetMemoryLimit(limit)
	if ok || err != nil {
		t.Errorf("a cache above a quarter of the memory limit: %v, %v", ok, err)
	}
	if ok, err := e.cacheFirstStage(context.Background(), x, 4); !ok || err != nil {
		t.Errorf("within the limit: %v, %v", ok, err)
	}
	e.dropFirstStage()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ok, err := e.cacheFirstStage(ctx, x, 4); ok || err == nil || e.cache != nil {
		t.Errorf("cancelled: %v, %v", ok, err)
	}
}

// Engines on the same inputs share one cache, which the last to let go
// frees; another stage shape, or other inputs, get their own.
func TestFirstStageCacheShared(t *testing.T) {
	net, x, _ := randomData(t, scatterGNLinear, 6, 2)
	var es [3]*nativeEngine
	for k := range es {
		es[k], _ = newEngineWorkers(net, 1)
	}
	other := slices.Clone(x)
	for k, in := range [][]float32{x, x, other} {
		if ok, err := es[k].cacheFirstStage(context.Background(), in, 6); !ok || err != nil {
			t.Fatalf("engine %d: %v, %v", k, ok, err)
		}
	}
	if es[0].cache != es[1].cache || es[2].cache == es[0].cache {
		t.Fatal("the same inputs' caches are not one, or other inputs share it")
	}
	if n := heldCaches(); n != 2 {
		t.Fatalf("%d caches held, want 2", n)
	}
	es[0].dropFirstStage()
	es[2].dropFirstStage()
	if n := heldCaches(); n != 1 {
		t.Fatalf("%d caches held after two of three let go, want 1", n)
	}
	es[1].dropFirstStage()
	if n := heldCaches(); n != 0 {
		t.Fatalf("%d caches held after all let go", n)
	}
}

// Runs that start at once on the same inputs build the cache once and
// train as they would alone (run with -race).
func TestFirstStageCacheConcurrentRuns(t *testing.T) {
	train, cfg, fresh := cacheRun(t, 120, 12, 0.2, 6)
	var params [4][]float32
	var wg sync.WaitGroup
	for k := range params {
		wg.Go(func() {
			net := fresh()
			if _, err := Train(context.Background(), net, train, cfg, nil, nil); err != nil {
				t.Error(err)
			}
			params[k] = net.Params
		})
	}
	wg.Wait()
	for k := 1; k < len(params); k++ {
		if !slices.Equal(params[k], params[0]) {
			t.Errorf("run %d trained other parameters than run 0", k)
		}
	}
	if n := heldCaches(); n != 0 {
		t.Errorf("%d caches held after the runs", n)
	}
}

// Held inputs give Logits the same values as normalising afresh, and
// Logits alone holds nothing; HoldInputs of another first layer holds
// nothing either.
func TestHoldInputs(t *testing.T) {
	net, x, _ := randomData(t, scatterGNLinear, 30, 7)
	perturbNorms(net, 1)
	want, err := Logits(context.Background(), net, x)
	if err != nil {
		t.Fatal(err)
	}
	if n := heldCaches(); n != 0 {
		t.Fatalf("Logits left %d caches", n)
	}
	release, err := HoldInputs(context.Background(), net.Arch, x, 30)
	if err != nil || heldCaches() != 1 {
		t.Fatalf("HoldInputs: %v, %d caches", err, heldCaches())
	}
	got, err := Logits(context.Background(), net, x)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if !slices.Equal(got, want) || heldCaches() != 0 {
		t.Errorf("held: logits equal %v, %d caches after release", slices.Equal(got, want), heldCaches())
	}
	_, xm, _ := randomData(t, model.MNIST, 3, 1)
	release, err = HoldInputs(context.Background(), model.MNIST, xm, 3)
	if err != nil || heldCaches() != 0 {
		t.Errorf("a convolution first: %v, %d caches", err, heldCaches())
	}
	release()
}
