package temporalrunner

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/dptune/dptune/runner"
)

// Runner is a runner.Keyed on Temporal: Open starts or attaches to one
// invocation's workflow.
type Runner struct {
	c       client.Client
	id, run string
	key     [32]byte
	resumed bool
	rec     record
	codec   *Codec
	// Poll is how often Run asks the workflow for finished tasks.
	Poll time.Duration

	cursor  int
	fetched map[string]Result
}

// OpenOptions configure Open.
type OpenOptions struct {
	// WorkflowID names the invocation: the same ID attaches to the same
	// running invocation (derive it from the output directory and the
	// settings' digest).
	WorkflowID string
	TaskQueue  string
	// Codec is the client's (Dial's): it wraps the invocation key.
	Codec *Codec
	// Settings is a digest of every setting of the invocation that affects
	// what it releases; the wrapped key is bound to it and to WorkflowID.
	Settings [32]byte
	// Record is the file where the curator records the invocations it has
	// started and not closed (e.g. beside its key file).
	Record string
	// HeartbeatTimeout, MaxPending and MaxAttempts go to Start (zero:
	// its defaults). They are fixed when the invocation first starts.
	HeartbeatTimeout time.Duration
	MaxPending       int
	MaxAttempts      int32
}

// Open starts the invocation's workflow with a fresh 256-bit key from
// crypto/rand, wrapped (Codec.WrapKey) for the workflow ID and settings, or
// attaches to it if it is running (then the first start's key and settings
// hold, and Resumed is true). A workflow with the same ID that has finished
// is not reused: Open starts a new invocation.
//
// The key the workflow answers is trusted only if this curator wrapped it
// for this workflow ID and these settings and has not closed its
// invocation (Close): a key the server chose, another invocation's, or a
// closed invocation's replayed is refused with an error wrapping
// ErrForeignKey, and only a key this curator recorded open makes Resumed
// true: the key of an earlier Open that failed before it completed (its
// workflow started, its key query failed) is taken, but is not a resume,
// since nothing ran or was reserved under it.
func Open(ctx context.Context, c client.Client, o OpenOptions) (*Runner, error) {
	if o.WorkflowID == "" || o.TaskQueue == "" || o.Codec == nil || o.Record == "" {
		return nil, errors.New("temporalrunner: a workflow ID, a task queue, a codec and a record file are needed")
	}
	rec := record{o.Record}
	prev, err := rec.open(o.WorkflowID)
	if err != nil {
		return nil, err
	}
	var key [32]byte
	rand.Read(key[:]) // crypto/rand.Read never returns an error (Go ≥ 1.24).
	blob, err := o.Codec.WrapKey(key, o.WorkflowID, o.Settings)
	if err != nil {
		return nil, err
	}
	// Recorded before the server sees it, as started and not opened, and
	// kept so if Open fails: a workflow started with it is this curator's
	// on the next attempt, but nothing ran and nothing was reserved under
	// it, so that attempt is not a resume.
	mine := blobID(blob)
	if err := rec.set(o.WorkflowID, append(prev, startedPrefix+mine)...); err != nil {
		return nil, err
	}
	in := Start{Key: blob, HeartbeatTimeout: o.HeartbeatTimeout, MaxPending: o.MaxPending, MaxAttempts: o.MaxAttempts}
	run, err := c.ExecuteWorkflow(WithExecution(ctx, o.WorkflowID, ""), client.StartWorkflowOptions{
		ID:                       o.WorkflowID,
		TaskQueue:                o.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, WorkflowName, in)
	if err != nil {
		return nil, fmt.Errorf("temporalrunner: starting workflow %s: %w", o.WorkflowID, err)
	}
	r := &Runner{c: c, id: run.GetID(), run: run.GetRunID(), rec: rec, codec: o.Codec, Poll: 200 * time.Millisecond, fetched: map[string]Result{}}
	if r.id != o.WorkflowID {
		return nil, fmt.Errorf("temporalrunner: asked to start workflow %s, the server answered for %s", o.WorkflowID, r.id)
	}
	var got KeyBlob
	if err := r.query(ctx, queryKey, &got); err != nil {
		return nil, fmt.Errorf("temporalrunner: workflow %s (is a `dptune worker` serving task queue %s?): %w", o.WorkflowID, o.TaskQueue, err)
	}
	if r.key, err = o.Codec.UnwrapKey(got, o.WorkflowID, o.Settings); err != nil {
		return nil, fmt.Errorf("%w; terminate that workflow or use another output directory", err)
	}
	switch id := blobID(got); {
	case id == mine, slices.Contains(prev, startedPrefix+id):
	case slices.Contains(prev, id):
		r.resumed = true
	default:
		return nil, fmt.Errorf("%w: workflow %s holds a key this curator wrapped for an invocation it has closed (a replay); terminate that workflow or use another output directory", ErrForeignKey, o.WorkflowID)
	}
	if err := rec.set(o.WorkflowID, blobID(got)); err != nil {
		return nil, err
	}
	return r, nil
}

// startedPrefix marks, in the record, a key blob whose Open has not
// completed: its workflow may have started, but no job was submitted and
// no budget reserved under it.
const startedPrefix = "started "

// Key implements runner.Keyed.
func (r *Runner) Key() [32]byte { return r.key }

// Resumed implements runner.Keyed.
func (r *Runner) Resumed() bool { return r.resumed }

var _ runner.Remote = (*Runner)(nil)

// OnWorkers implements runner.Remote: the tasks run on `dptune worker`
// processes, which read the data from their own copies.
func (r *Runner) OnWorkers() {}

// WorkflowID is the invocation's workflow ID.
func (r *Runner) WorkflowID() string { return r.id }

// submitChunk caps the tasks of one signal, to keep it under Temporal's
// payload limit.
const submitChunk = 256

// Run implements runner.Runner: it submits the tasks to the workflow and
// polls its results. Tasks the invocation has already run (a resumed
// curator) are not run again; their outputs come back at once. When ctx is
// cancelled Run returns at once, and the tasks go on: a curator that
// attaches again gets them.
func (r *Runner) Run(ctx context.Context, tasks []runner.Task, done func(i int, output []byte) error) error {
	// A task's ID in the workflow carries a digest of its kind and input,
	// so that a curator resumed with other settings never gets the old
	// settings' outputs.
	wire := make([]runner.Task, len(tasks))
	index := make(map[string]int, len(tasks))
	for i, t := range tasks {
		t.ID += " #" + inputDigest(t)[:16]
		if _, dup := index[t.ID]; dup {
			return fmt.Errorf("temporalrunner: two tasks have the ID %q", t.ID)
		}
		index[t.ID], wire[i] = i, t
	}
	tasks = wire
	bctx := WithExecution(ctx, r.id, r.run)
	for lo := 0; lo < len(tasks); lo += submitChunk {
		if err := r.c.SignalWorkflow(bctx, r.id, r.run, signalSubmit, tasks[lo:min(lo+submitChunk, len(tasks))]); err != nil {
			return fmt.Errorf("temporalrunner: submitting tasks to %s: %w", r.id, err)
		}
	}
	left := len(tasks)
	tick := time.NewTicker(r.Poll)
	defer tick.Stop()
	for {
		for id, res := range r.fetched {
			i, ok := index[id]
			if !ok {
				continue
			}
			delete(r.fetched, id)
			delete(index, id)
			if res.Err != "" {
				return &runner.TaskError{ID: id, Remote: true, Prefix: "temporalrunner", Err: workerError(res)}
			}
			// Every output of this run is sealed to the same workflow,
			// run and role: the server could move one job's output into
			// another's result. The output must be bound to this job.
			out, err := openOutput(tasks[i], res.Output)
			if err != nil {
				return err
			}
			if err := done(i, out); err != nil {
				return err
			}
			left--
		}
		if left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		var got resultsAnswer
		if err := r.query(ctx, queryResults, &got, r.cursor); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("temporalrunner: asking %s for results: %w", r.id, err)
		}
		// An earlier answer replayed would move the cursor past results
		// never seen.
		if got.From != r.cursor {
			return fmt.Errorf("temporalrunner: %s answered the results from position %d when asked from %d (a replayed answer): %w", r.id, got.From, r.cursor, ErrUnsealed)
		}
		for _, res := range got.Results {
			r.fetched[res.ID] = res
		}
		r.cursor += len(got.Results)
	}
}

// query asks the workflow query name with args and decodes its answer
// into out. The SDK's client converts query payloads without a context, so
// the arguments are sealed here, bound to this run and their roles, and the
// answer comes back still sealed (converter.RawValue) and is opened here,
// bound to this run and out's role.
func (r *Runner) query(ctx context.Context, name string, out any, args ...any) error {
	dc := NewDataConverter(r.codec).(sealedConverter).WithContext(WithExecution(ctx, r.id, r.run))
	raw := make([]any, len(args))
	for i, a := range args {
		p, err := dc.ToPayload(a)
		if err != nil {
			return err
		}
		raw[i] = converter.NewRawValue(p)
	}
	v, err := r.c.QueryWorkflow(ctx, r.id, r.run, name, raw...)
	if err != nil {
		return err
	}
	var answer converter.RawValue
	if err := v.Get(&answer); err != nil {
		return err
	}
	return dc.FromPayload(answer.Payload(), out)
}

// Close ends the invocation: it records it closed first (from then on its
// key never resumes an invocation), then signals its workflow to end. Call
// it once the invocation has all it needs; it returns every error.
func (r *Runner) Close(ctx context.Context) error {
	err := r.rec.set(r.id)
	return errors.Join(err, r.c.SignalWorkflow(WithExecution(ctx, r.id, r.run), r.id, r.run, signalClose, closeRequest{Close: true}))
}

// workerError is a failed task's error as its result holds it: the
// worker's text (which the server relays, and could change), wrapping
// runner.ErrDataDiffers or runner.ErrInvalidInput when the worker refused
// the task.
func workerError(res Result) error {
	var kind error
	switch res.Refused {
	case errDataDiffers:
		kind = runner.ErrDataDiffers
	case errInvalidInput:
		kind = runner.ErrInvalidInput
	}
	return remoteError{res.Err, kind}
}

// remoteError is a worker's error text, wrapping kind (nil: none).
type remoteError struct {
	text string
	kind error
}

func (e remoteError) Error() string { return e.text }
func (e remoteError) Unwrap() error { return e.kind }
