package temporalrunner

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/dptune/dptune/runner"
)

// Names of the workflow, its activity, signals and queries. They are
// recorded in Temporal's histories, so they never change: the activity
// that runs one task keeps its first name, "dptune.Job", and invocations
// started by earlier binaries still resume.
const (
	WorkflowName = "dptune.Invocation"
	ActivityName = "dptune.Job"

	signalSubmit = "submit"
	signalClose  = "close"
	queryKey     = "key"
	queryResults = "results"

	// errInvalidInput is the application error type of a task whose
	// input can never work: not retried.
	errInvalidInput = "InvalidInput"
	// errDataDiffers is the application error type of a task refused
	// because the worker's copy of its data differs from the curator's
	// (runner.ErrDataDiffers): not retried either.
	errDataDiffers = "DataDiffers"
)

// Start is the workflow's input: fixed when the invocation first starts.
type Start struct {
	// Key is the invocation's secret 256-bit key (runner.Keyed), wrapped by
	// the curator (WrapKey): a caller without a seed draws all its
	// randomness from it. The workflow only keeps it and answers it.
	Key KeyBlob
	// HeartbeatTimeout: a task whose worker sends no heartbeat for this long
	// is retried on another worker.
	HeartbeatTimeout time.Duration
	// MaxPending caps the tasks scheduled at once (Temporal refuses more than
	// 2,000 pending activities per workflow); the rest wait in the queue.
	MaxPending int
	// MaxAttempts caps each task's attempts (a task that fails for good stops
	// the invocation).
	MaxAttempts int32
}

// Result is one finished task: its output, or the error of its last attempt.
type Result struct {
	ID     string
	Output []byte
	Err    string
	// Refused is the error type of a task the worker refused
	// (errInvalidInput, errDataDiffers); empty otherwise.
	Refused string `json:",omitempty"`
}

// maxQueryBytes caps the outputs one results query returns (Temporal's
// payload limit is 2 MB by default); a query returns at least one result.
const maxQueryBytes = 1 << 20

// Invocation is the workflow of one invocation of a tuning, a bench or an
// audit: it runs each task submitted to it (signal "submit", a
// []runner.Task; an ID it has seen is ignored, so a resumed curator can
// submit again) as one activity, keeps every result, and answers the
// "results" query (from an index into the results in the order they
// finished; the answer names that index) and the "key" query (the wrapped key of its Start). Signal
// "close" ends it. Under a client dialled with Dial every payload is sealed
// to the workflow, its run and its role, and a signal that does not open is
// dropped.
//
// Every task's input fixes its randomness, so the retries of an activity —
// after its worker died, its heartbeats stopped, or it failed — repeat the
// same run with the same noise: one task is one charge, however many
// attempts it took. Heartbeats carry step counts only.
func Invocation(ctx workflow.Context, in Start) error {
	var (
		queue   []runner.Task
		known   = map[string]bool{}
		results []Result
		running int
		closed  bool
	)
	if in.MaxPending < 1 {
		in.MaxPending = 1000
	}
	if in.HeartbeatTimeout <= 0 {
		in.HeartbeatTimeout = time.Minute
	}
	if in.MaxAttempts < 1 {
		in.MaxAttempts = 10
	}
	if err := workflow.SetQueryHandler(ctx, queryKey, func() (KeyBlob, error) { return in.Key, nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, queryResults, func(from int) (resultsAnswer, error) {
		out := resultsAnswer{From: from}
		size := 0
		for i := max(from, 0); i < len(results) && (len(out.Results) == 0 || size+len(results[i].Output) <= maxQueryBytes); i++ {
			out.Results = append(out.Results, results[i])
			size += len(results[i].Output)
		}
		return out, nil
	}); err != nil {
		return err
	}
	submit := workflow.GetSignalChannel(ctx, signalSubmit)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var ts []runner.Task
			submit.Receive(ctx, &ts)
			for _, t := range ts {
				if !known[t.ID] {
					known[t.ID] = true
					queue = append(queue, t)
				}
			}
		}
	})
	workflow.Go(ctx, func(ctx workflow.Context) {
		// A close that does not open as the curator's (a forged or
		// replayed signal) is dropped by the SDK: Receive waits on.
		var req closeRequest
		workflow.GetSignalChannel(ctx, signalClose).Receive(ctx, &req)
		closed = true
	})
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 7 * 24 * time.Hour,
		HeartbeatTimeout:    in.HeartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
			MaximumAttempts: in.MaxAttempts, NonRetryableErrorTypes: []string{errInvalidInput, errDataDiffers}},
	})
	for {
		if err := workflow.Await(ctx, func() bool { return closed || (len(queue) > 0 && running < in.MaxPending) }); err != nil {
			return err
		}
		if closed {
			return nil
		}
		t := queue[0]
		queue = queue[1:]
		running++
		workflow.Go(ctx, func(ctx workflow.Context) {
			var out []byte
			err := workflow.ExecuteActivity(actx, ActivityName, t).Get(ctx, &out)
			r := Result{ID: t.ID, Output: out}
			var refused *temporal.ApplicationError
			switch {
			case errors.As(err, &refused) && (refused.Type() == errInvalidInput || refused.Type() == errDataDiffers):
				// The task's own one-line refusal, without the SDK's
				// wrapping (its event IDs and the cause repeated).
				r.Err, r.Refused = refused.Message(), refused.Type()
			case err != nil:
				r.Err = err.Error()
			}
			results = append(results, r)
			running--
		})
	}
}
