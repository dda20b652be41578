package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/dptune/dptune/internal/cpus"
)

func init() {
	Register("test.double", func(ctx context.Context, in []byte) ([]byte, error) {
		var n int
		if err := json.Unmarshal(in, &n); err != nil {
			return nil, fmt.Errorf("%v: %w", err, ErrInvalidInput)
		}
		if n < 0 {
			return nil, errors.New("negative")
		}
		Progress(ctx, 1, 1)
		return json.Marshal(2 * n)
	})
	Register("test.cpus", func(ctx context.Context, _ []byte) ([]byte, error) {
		return json.Marshal(cpus.Of(ctx))
	})
}

// Each task gets cores/workers of the cores its caller allows, at least
// one, with no more workers counted than there are tasks.
func TestLocalSharesCores(t *testing.T) {
	for _, c := range []struct{ cores, workers, tasks, want int }{
		{4, 0, 10, 1}, {4, 1, 10, 4}, {4, 2, 10, 2}, {4, 3, 2, 2}, {4, 8, 10, 1}, {1, 2, 3, 1},
	} {
		ts := make([]Task, c.tasks)
		for i := range ts {
			ts[i] = Task{ID: fmt.Sprint("t", i), Kind: "test.cpus", Input: []byte("null")}
		}
		err := Local{Workers: c.workers}.Run(cpus.With(context.Background(), c.cores), ts, func(i int, out []byte) error {
			var got int
			json.Unmarshal(out, &got)
			if got != c.want {
				t.Errorf("%d cores, %d workers, %d tasks: task %d got %d cores, want %d", c.cores, c.workers, c.tasks, i, got, c.want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func tasks(vals ...int) []Task {
	out := make([]Task, len(vals))
	for i, v := range vals {
		b, _ := json.Marshal(v)
		out[i] = Task{ID: fmt.Sprint("t", i), Kind: "test.double", Input: b}
	}
	return out
}

// Every task's output reaches done once, under its own index.
func TestLocalRunsEveryTaskOnce(t *testing.T) {
	for _, w := range []int{0, 1, 3, 50} {
		ts := tasks(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
		seen := make([]int, len(ts))
		err := Local{Workers: w}.Run(context.Background(), ts, func(i int, out []byte) error {
			var v int
			json.Unmarshal(out, &v)
			if v != 2*i {
				t.Errorf("workers %d: task %d gave %d", w, i, v)
			}
			seen[i]++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range seen {
			if n != 1 {
				t.Errorf("workers %d: task %d done %d times", w, i, n)
			}
		}
	}
}

// A failing task, a failing done and an unknown kind are errors; a
// malformed input wraps ErrInvalidInput; a cancelled context stops Run.
func TestLocalErrors(t *testing.T) {
	noop := func(int, []byte) error { return nil }
	if err := (Local{}).Run(context.Background(), tasks(1, -1, 2), noop); err == nil || err.Error() != "runner: task t1: negative" {
		t.Errorf("failing task: %v", err)
	}
	var te *TaskError
	if err := (Local{}).Run(context.Background(), tasks(1, -1, 2), noop); !errors.As(err, &te) || te.ID != "t1" || te.Remote {
		t.Errorf("failing task: %v is not this process's TaskError of t1", err)
	}
	stop := errors.New("stop")
	if err := (Local{}).Run(context.Background(), tasks(1, 2), func(int, []byte) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("failing done: %v", err)
	}
	bad := []Task{{ID: "x", Kind: "no such kind"}, {ID: "y", Kind: "test.double", Input: []byte("{")}}
	for _, b := range bad {
		if err := (Local{}).Run(context.Background(), []Task{b}, noop); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("task %s: %v, want ErrInvalidInput", b.ID, err)
		}
	}
	if err := (Local{Workers: -1}).Run(context.Background(), tasks(1), noop); err == nil {
		t.Error("negative workers accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (Local{}).Run(ctx, tasks(1, 2, 3), noop); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestProgress(t *testing.T) {
	var got [2]int
	ctx := WithProgress(context.Background(), func(d, n int) { got = [2]int{d, n} })
	if _, err := Do(ctx, "test.double", []byte("3")); err != nil {
		t.Fatal(err)
	}
	if got != [2]int{1, 1} {
		t.Errorf("progress %v", got)
	}
	Progress(context.Background(), 1, 2) // no receiver: nothing happens
}

// ForEach's default is one call per core its context allows, and a nested
// ForEach divides its call's share again: 4 cores, 2 outer calls of 2
// cores, each running its inner calls 2 at a time on 1 core.
func TestForEachNestedShares(t *testing.T) {
	var mu sync.Mutex
	var outer, inner []int
	err := ForEach(cpus.With(context.Background(), 4), 0, 2, func(ctx context.Context, _ int) error {
		mu.Lock()
		outer = append(outer, cpus.Of(ctx))
		mu.Unlock()
		return ForEach(ctx, 0, 5, func(ctx context.Context, _ int) error {
			mu.Lock()
			defer mu.Unlock()
			inner = append(inner, cpus.Of(ctx))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(outer, []int{2, 2}) || len(inner) != 10 || slices.Max(inner) != 1 {
		t.Errorf("outer calls' cores %v, inner calls' %v", outer, inner)
	}
}
