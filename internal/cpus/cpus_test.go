package cpus

import (
	"context"
	"runtime"
	"testing"
)

func TestOf(t *testing.T) {
	ctx := context.Background()
	if got, want := Of(ctx), runtime.GOMAXPROCS(0); got != want {
		t.Errorf("Of(background) = %d, want GOMAXPROCS %d", got, want)
	}
	if got := Of(With(ctx, 3)); got != 3 {
		t.Errorf("Of(With(3)) = %d, want 3", got)
	}
	if got := Of(With(With(ctx, 3), 0)); got != 1 {
		t.Errorf("Of(With(With(3), 0)) = %d, want 1 (at least one core)", got)
	}
}
