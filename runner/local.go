package runner

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dptune/dptune/internal/cpus"
)

// Local runs tasks in this process on a pool of goroutines: the default
// runner, with nothing to install. Each task gets an equal share of the
// cores Run may use (the context's, see below): with two cores and two
// tasks at once each DP-SGD engine a task builds has one worker, which on
// the small networks of fixed features runs twice the runs an hour that
// one two-worker engine at a time does.
type Local struct {
	// Workers is the number of tasks run at once; 0 means one per core
	// Run may use (GOMAXPROCS, or the share of an enclosing Local's task).
	Workers int
}

// Run implements Runner. Tasks start in index order, each with its share
// of the cores (ForEach).
func (l Local) Run(ctx context.Context, tasks []Task, done func(i int, output []byte) error) error {
	var mu sync.Mutex // serialises done
	return ForEach(ctx, l.Workers, len(tasks), func(ctx context.Context, i int) error {
		t := tasks[i]
		out, err := Do(ctx, t.Kind, t.Input)
		if err != nil {
			return &TaskError{ID: t.ID, Prefix: "runner", Err: err}
		}
		mu.Lock()
		defer mu.Unlock()
		return done(i, out)
	})
}

// ForEach calls f(ctx, i) for every i in [0, n) on workers goroutines (0:
// one per core ctx allows — GOMAXPROCS, or the share of an enclosing
// ForEach's call), starting them in index order. Each call's ctx gives it
// an equal share of those cores, max(1, cores/min(workers, n)), which the
// DP-SGD engine it builds takes as its workers (internal/cpus). The first
// error cancels the ctx the other calls get and is returned; errors after
// a cancellation are dropped, and ForEach then returns ctx's error. It
// returns an error for workers < 0.
func ForEach(ctx context.Context, workers, n int, f func(ctx context.Context, i int) error) error {
	if workers < 0 {
		return fmt.Errorf("runner: the number of workers must be ≥ 0 (0: one per core), have %d", workers)
	}
	cores := cpus.Of(ctx)
	if workers == 0 {
		workers = cores
	}
	workers = min(workers, n)
	run, cancel := context.WithCancel(cpus.With(ctx, cores/max(1, workers)))
	defer cancel()
	var (
		next     atomic.Int64
		failOnce sync.Once
		failErr  error
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || run.Err() != nil {
					return
				}
				if err := f(run, i); err != nil {
					if run.Err() == nil {
						failOnce.Do(func() { failErr = err; cancel() })
					}
					return
				}
			}
		})
	}
	wg.Wait()
	if failErr != nil {
		return failErr
	}
	return ctx.Err()
}
