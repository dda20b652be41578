package runner

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// Local runs jobs in this process on a pool of goroutines: the default
// runner, with nothing to install.
type Local struct {
	// Workers is the number of jobs run at once; 0 means GOMAXPROCS.
	Workers int
}

// Run implements Runner. Tasks start in index order.
func (l Local) Run(ctx context.Context, tasks []Task, done func(i int, output []byte) error) error {
	if l.Workers < 0 {
		return fmt.Errorf("runner: the number of workers must be ≥ 0 (0: GOMAXPROCS), have %d", l.Workers)
	}
	workers := l.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(tasks))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex // serialises done
		next     atomic.Int64
		failOnce sync.Once
		failErr  error
		wg       sync.WaitGroup
	)
	fail := func(err error) { failOnce.Do(func() { failErr = err; cancel() }) }
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(tasks) || ctx.Err() != nil {
					return
				}
				t := tasks[i]
				out, err := Do(ctx, t.Kind, t.Input)
				if err != nil {
					if ctx.Err() == nil {
						fail(fmt.Errorf("runner: job %s: %w", t.ID, err))
					}
					return
				}
				mu.Lock()
				err = done(i, out)
				mu.Unlock()
				if err != nil {
					fail(err)
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
