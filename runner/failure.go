package runner

import (
	"context"
	"fmt"
)

// TaskError is a runner's error for one task that failed: its ID (which
// may hold a secret, such as a run index of a random-stop tuning) and the
// task's own error (on a worker, its text, which may name the worker's
// paths and counts). Its text is for the caller's own terminal only: a
// caller that releases anything about a failure releases a fixed string
// for its class (errors.Is with ErrDataDiffers, Remote), never Error().
type TaskError struct {
	ID string
	// Remote is true when the task ran on a worker (its Err is the
	// worker's text).
	Remote bool
	// Prefix starts the message ("runner", "temporalrunner").
	Prefix string
	Err    error
}

func (e *TaskError) Error() string {
	if e.Remote {
		return fmt.Sprintf("%s: task %s failed: %v", e.Prefix, e.ID, e.Err)
	}
	return fmt.Sprintf("%s: task %s: %v", e.Prefix, e.ID, e.Err)
}

func (e *TaskError) Unwrap() error { return e.Err }

// ErrDataDiffers marks a task a worker refused because its copy of the
// task's data differs from the caller's (the keyed content digest the
// task carries, package job). It wraps ErrInvalidInput, so the task is
// not retried; its own text is ErrInvalidInput's.
var ErrDataDiffers error = dataDiffers{}

type dataDiffers struct{}

func (dataDiffers) Error() string { return ErrInvalidInput.Error() }
func (dataDiffers) Unwrap() error { return ErrInvalidInput }

type onWorkerKey struct{}

// OnWorker returns ctx marked as the context of a task running on a
// remote worker (runner/temporalrunner's activity), where a task must
// check the data it reads against the caller's digest.
func OnWorker(ctx context.Context) context.Context {
	return context.WithValue(ctx, onWorkerKey{}, true)
}

// IsOnWorker reports whether ctx is a task's on a remote worker (OnWorker).
func IsOnWorker(ctx context.Context) bool {
	v, _ := ctx.Value(onWorkerKey{}).(bool)
	return v
}
