// Package cpus carries in a context how many cores the work under it may
// use, so that a runner running tasks side by side can give each its share
// (runner.Local) and the engine a task builds uses that many workers
// instead of every core.
package cpus

import (
	"context"
	"runtime"
)

type key struct{}

// With returns a copy of ctx whose work may use n cores (n < 1 counts as 1).
func With(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, key{}, max(1, n))
}

// Of returns the cores the work under ctx may use: n of the innermost With,
// or GOMAXPROCS when there is none.
func Of(ctx context.Context) int {
	if n, ok := ctx.Value(key{}).(int); ok {
		return n
	}
	return max(1, runtime.GOMAXPROCS(0))
}
