package temporalrunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/dptune/dptune/internal/cpus"
	"github.com/dptune/dptune/runner"
)

// NewWorker returns a worker of taskQueue that runs the Invocation
// workflow and its tasks — any kind registered with runner.Register in this
// binary — at most concurrency at once (0: one), each with an equal share
// of the cores (max(1, GOMAXPROCS/concurrency), as runner.Local gives its
// tasks). log, if not nil, gets one line as each task starts and ends
// (its ID, attempt and duration: nothing of its output). Start it with Run
// or Start.
func NewWorker(c client.Client, taskQueue string, concurrency int, log io.Writer) worker.Worker {
	if concurrency < 1 {
		concurrency = 1
	}
	w := worker.New(c, taskQueue, worker.Options{MaxConcurrentActivityExecutionSize: concurrency})
	w.RegisterWorkflowWithOptions(Invocation, workflow.RegisterOptions{Name: WorkflowName})
	share := max(1, runtime.GOMAXPROCS(0)/concurrency)
	w.RegisterActivityWithOptions(Tasks{Log: log, CPUs: share}.Task, activity.RegisterOptions{Name: ActivityName})
	return w
}

// Tasks is the activity's receiver.
type Tasks struct {
	Log  io.Writer // nil: silent
	CPUs int       // the cores each task may use (0: every core)
}

func (j Tasks) logf(format string, a ...any) {
	if j.Log != nil {
		fmt.Fprintf(j.Log, format+"\n", a...)
	}
}

// heartbeatEvery is how often a running task heartbeats when its timeout
// allows (the SDK also throttles heartbeats to 80% of the timeout).
const heartbeatEvery = time.Second

// Task is the activity: it runs one task in this process (runner.Do),
// returns its output bound to the task (its ID and a digest of its kind and
// input, which Runner.Run checks before using it), and heartbeats its
// progress — steps done and planned, never a score — so that a task whose
// worker dies is retried on another. An input the task refuses
// (runner.ErrInvalidInput) fails it without a retry.
func (j Tasks) Task(ctx context.Context, t runner.Task) ([]byte, error) {
	info := activity.GetInfo(ctx)
	start := time.Now()
	j.logf("running %s (%s), attempt %d", t.ID, t.Kind, info.Attempt)
	var done, total atomic.Int64
	jctx := runner.OnWorker(ctx)
	if j.CPUs > 0 {
		jctx = cpus.With(jctx, j.CPUs)
	}
	jctx = runner.WithProgress(jctx, func(d, n int) { done.Store(int64(d)); total.Store(int64(n)) })
	every := heartbeatEvery
	if hb := info.HeartbeatTimeout; hb > 0 && hb/4 < every {
		every = hb / 4
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			activity.RecordHeartbeat(ctx, done.Load(), total.Load())
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	out, err := runner.Do(jctx, t.Kind, t.Input)
	if err != nil {
		j.logf("failed %s after %.1f s", t.ID, time.Since(start).Seconds())
	} else {
		j.logf("finished %s in %.1f s", t.ID, time.Since(start).Seconds())
	}
	if errors.Is(err, runner.ErrDataDiffers) {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), errDataDiffers, err)
	}
	if errors.Is(err, runner.ErrInvalidInput) {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), errInvalidInput, err)
	}
	if err != nil {
		return nil, err
	}
	return bindOutput(t, out)
}
