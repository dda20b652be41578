package temporalrunner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/dptune/dptune/runner"
)

var flakyCalls, invalidCalls, differsCalls atomic.Int64

func init() {
	runner.Register("test.square", func(_ context.Context, in []byte) ([]byte, error) {
		var n int
		if err := json.Unmarshal(in, &n); err != nil {
			return nil, fmt.Errorf("%v: %w", err, runner.ErrInvalidInput)
		}
		return json.Marshal(n * n)
	})
	// test.flaky fails its first attempt, as a task whose worker died.
	runner.Register("test.flaky", func(_ context.Context, in []byte) ([]byte, error) {
		if flakyCalls.Add(1) == 1 {
			return nil, errors.New("worker lost")
		}
		return in, nil
	})
	runner.Register("test.differs", func(ctx context.Context, _ []byte) ([]byte, error) {
		differsCalls.Add(1)
		if !runner.IsOnWorker(ctx) {
			return nil, errors.New("not marked as on a worker")
		}
		return nil, fmt.Errorf("copy differs: %w", runner.ErrDataDiffers)
	})
	runner.Register("test.invalid", func(context.Context, []byte) ([]byte, error) {
		invalidCalls.Add(1)
		return nil, fmt.Errorf("never works: %w", runner.ErrInvalidInput)
	})
}

func task(id, kind string, v any) runner.Task {
	b, _ := json.Marshal(v)
	return runner.Task{ID: id, Kind: kind, Input: b}
}

// TestInvocation runs the workflow in the SDK's in-memory environment: each
// submitted task runs once (a resubmitted ID is not run again), a failed
// attempt is retried into one result, an invalid input is not retried, and
// the key query returns the start's key.
func TestInvocation(t *testing.T) {
	flakyCalls.Store(0)
	invalidCalls.Store(0)
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Invocation, workflow.RegisterOptions{Name: WorkflowName})
	env.RegisterActivityWithOptions(Tasks{}.Task, activity.RegisterOptions{Name: ActivityName})
	differsCalls.Store(0)
	batch := []runner.Task{task("a", "test.square", 3), task("b", "test.square", 4), task("c", "test.flaky", "x"), task("d", "test.invalid", 0), task("f", "test.differs", 0)}
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(signalSubmit, batch) }, time.Second)
	// A resumed curator submits the same tasks again, and one more.
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(signalSubmit, append(batch[:2:2], task("e", "test.square", 5)))
	}, time.Hour)
	var results []Result
	var key KeyBlob
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(queryResults, 0)
		if err != nil {
			t.Fatal(err)
		}
		var a resultsAnswer
		if err := v.Get(&a); err != nil {
			t.Fatal(err)
		}
		results = a.Results
		v, err = env.QueryWorkflow(queryKey)
		if err != nil {
			t.Fatal(err)
		}
		_ = v.Get(&key)
		env.SignalWorkflow(signalClose, nil)
	}, 2*time.Hour)
	env.ExecuteWorkflow(Invocation, Start{Key: KeyBlob("k42"), HeartbeatTimeout: time.Minute})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if string(key) != "k42" {
		t.Errorf("key query: %q, want k42", key)
	}
	got := map[string]Result{}
	for _, r := range results {
		if _, dup := got[r.ID]; dup {
			t.Errorf("task %s has two results", r.ID)
		}
		got[r.ID] = r
	}
	want := map[string]string{"a": "9", "b": "16", "c": `"x"`, "e": "25"}
	tasks := map[string]runner.Task{"a": batch[0], "b": batch[1], "c": batch[2], "e": task("e", "test.square", 5)}
	for id, w := range want {
		r := got[id]
		out, err := openOutput(tasks[id], r.Output)
		if err != nil || string(out) != w || r.Err != "" {
			t.Errorf("task %s: output %q (%v) error %q, want %s", id, out, err, r.Err, w)
		}
	}
	if r := got["d"]; r.Err != "never works: invalid job input" {
		t.Errorf("the invalid task's result: %+v, want its own error alone", r)
	}
	if r := got["d"]; r.Refused != errInvalidInput || !errors.Is(workerError(r), runner.ErrInvalidInput) || errors.Is(workerError(r), runner.ErrDataDiffers) {
		t.Errorf("the invalid task's result: %+v, want refused as invalid input", r)
	}
	// A task refused on a worker (marked as such) whose copy of the data
	// differs: not retried, and the curator's error says which class.
	if r := got["f"]; r.Err != "copy differs: invalid job input" || r.Refused != errDataDiffers || !errors.Is(workerError(r), runner.ErrDataDiffers) {
		t.Errorf("the refused task's result: %+v, want refused as data differs", r)
	}
	if n := differsCalls.Load(); n != 1 {
		t.Errorf("the refused task ran %d times, want 1 (not retried)", n)
	}
	if n := invalidCalls.Load(); n != 1 {
		t.Errorf("the invalid task ran %d times, want 1 (not retried)", n)
	}
	if n := flakyCalls.Load(); n != 2 {
		t.Errorf("the flaky task ran %d times, want 2 (one retry)", n)
	}
	if len(got) != 6 {
		t.Errorf("%d results, want 6", len(got))
	}
}
