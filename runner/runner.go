// Package runner runs dptune's independent tasks — the K runs of a
// random-stop tuning, the doubling tuner's partition runs, landscape points,
// blocks of audit trials — either in this process (Local, the default) or on
// workers elsewhere (package runner/temporalrunner).
//
// A task is data, not a closure: a registered kind and its JSON input, so
// that any process holding the same binary and the data can run it. Each
// input carries everything the task's randomness comes from (a per-task seed,
// or a per-task secret 256-bit key derived from a Keyed runner's invocation
// key, fixed by the caller before the task is scheduled), so running a task
// twice gives the same output, and a retried task is the same task.
package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

// Task is one unit of independent work: a registered kind and its input.
type Task struct {
	// ID names the task within one invocation (e.g. "run 3"); a resumed
	// invocation submits the same IDs and gets the finished tasks' outputs
	// back without running them again.
	ID string `json:"id"`
	// Kind is a name passed to Register.
	Kind string `json:"kind"`
	// Input is the task's JSON input.
	Input []byte `json:"input"`
}

// Runner runs independent tasks.
type Runner interface {
	// Run runs every task and calls done(i, output) once for each task i
	// that finished, one call at a time, in any order. It returns the first
	// error: a task's, done's or ctx's (the other tasks are then stopped).
	Run(ctx context.Context, tasks []Task, done func(i int, output []byte) error) error
}

// Keyed is a runner whose invocation has a secret 256-bit key fixed when
// the invocation first started (a durable runner): a caller without a seed
// derives all its randomness from Key (HMAC-SHA256 streams and subkeys,
// internal/randsrc.Key), so that an invocation resumed by a new process
// draws the same number of runs, the same candidates and the same noise as
// the first, and no task is charged twice. Resumed is true only for an
// invocation this curator started with these settings and has not closed.
type Keyed interface {
	Runner
	// Key is the invocation's secret 256-bit key.
	Key() [32]byte
	// Resumed reports whether the invocation existed before this process
	// attached to it.
	Resumed() bool
}

// Remote is a Keyed runner whose tasks run in other processes: workers
// that read the data a task names from their own copies
// (runner/temporalrunner). A caller names that data by a digest of its
// content keyed from Key (package job), carried inside the task's input,
// and a worker whose copy differs refuses the task with ErrInvalidInput.
// A runner in this process (Local, or a Keyed one that journals Local's
// outputs) is not Remote: its tasks read the caller's own data.
type Remote interface {
	Keyed
	// OnWorkers marks the runner as running its tasks on workers.
	OnWorkers()
}

// Func runs one task of a kind: input in, output out. It reports progress
// with Progress(ctx, …). Errors wrapping ErrInvalidInput are not retried.
type Func func(ctx context.Context, input []byte) ([]byte, error)

// ErrInvalidInput marks a task whose input can never work (malformed, an
// unknown kind, data the task refuses): a durable runner fails it at once
// instead of retrying it.
var ErrInvalidInput = errors.New("invalid job input")

var (
	mu    sync.RWMutex
	kinds = map[string]Func{}
)

// Register makes kind runnable by Do in this process. Kinds are registered
// by the packages that define them, in init; registering a kind twice
// panics (a programming error, like http.Handle's).
func Register(kind string, f Func) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := kinds[kind]; dup || f == nil {
		panic("runner: kind " + kind + " registered twice or nil")
	}
	kinds[kind] = f
}

// Kinds lists the registered kinds, sorted.
func Kinds() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Do runs one task in this process. It returns an error wrapping
// ErrInvalidInput for an unregistered kind.
func Do(ctx context.Context, kind string, input []byte) ([]byte, error) {
	mu.RLock()
	f := kinds[kind]
	mu.RUnlock()
	if f == nil {
		return nil, fmt.Errorf("runner: unknown task kind %q (this binary knows %v): %w", kind, Kinds(), ErrInvalidInput)
	}
	return f(ctx, input)
}

type progressKey struct{}

// WithProgress returns ctx carrying f, which Progress calls.
func WithProgress(ctx context.Context, f func(done, total int)) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

// Progress reports a running task's progress (e.g. DP-SGD steps done of
// total): counts only, never a score. A durable runner sends it in the
// task's heartbeats; without a receiver it does nothing.
func Progress(ctx context.Context, done, total int) {
	if f, ok := ctx.Value(progressKey{}).(func(done, total int)); ok && f != nil {
		f(done, total)
	}
}

// DecodeInput decodes a task's JSON input b into v strictly: a field v has
// no place for, or anything after the one JSON value, fails with an error
// wrapping ErrInvalidInput. A worker built before a field was added (a new
// clipping rule, a default candidate) thus refuses the task before it reads
// any data, instead of running something other than what the curator
// planned and reports.
func DecodeInput(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		var extra json.RawMessage
		if e := dec.Decode(&extra); e != io.EOF {
			err = errors.New("data after the input's JSON value")
		}
	}
	switch {
	case err != nil && strings.HasPrefix(err.Error(), "json: unknown field"):
		return fmt.Errorf("the job input has a field this worker does not know (%v): the curator's binary is newer than this worker's; run workers of the curator's version: %w", err, ErrInvalidInput)
	case err != nil:
		return fmt.Errorf("malformed job input: %v: %w", err, ErrInvalidInput)
	}
	return nil
}
