package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dptune/dptune/bench"
)

// runWithin is run with a deadline: a command still working after d ends
// with the context's error (exit 1) instead of hanging the test.
func runWithin(t *testing.T, d time.Duration, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil {
		out.WriteString("dptune: " + err.Error() + "\n")
	}
	return exitCode(err), out.String()
}

// The vote benchmarks' repetition counts are bounded, as audit's --trials
// is, and checked before any work: a count past bench.MaxVoteReps (the
// largest int, which made a slice of that length panic after the
// simulation's work, or 10¹², which ran for ever) ends with one line and
// exit 2 within seconds and writes nothing, while the bound itself is
// accepted by the check.
func TestBenchVoteRepsBounded(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-dir")
	huge := "9223372036854775807"
	over := fmt.Sprint(bench.MaxVoteReps + 1)
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"bench", "vote", "--reps", huge, "--data-dir", missing}, "--reps"},
		{[]string{"bench", "vote", "--reps", over, "--data-dir", missing}, "--reps"},
		{[]string{"bench", "vote", "--sim-only", "--sim-reps", huge}, "--sim-reps"},
		{[]string{"bench", "vote", "--sim-only", "--sim-reps", "1000000000000"}, "--sim-reps"},
		{[]string{"bench", "compare", "--vote-reps", huge, "--data-dir", missing}, "--vote-reps"},
		{[]string{"bench", "compare", "--vote-reps", "1000000000000", "--data-dir", missing}, "--vote-reps"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		args := append(c.args, "--out", out)
		start := time.Now()
		code, text := runWithin(t, 20*time.Second, args...)
		if code != 2 || strings.Count(strings.TrimSpace(text), "\n") != 0 || !strings.Contains(text, c.flag) ||
			!strings.Contains(text, fmt.Sprint(bench.MaxVoteReps)) {
			t.Errorf("%v: exit %d after %v, want 2 and one line naming %s and its bound:\n%.500s", c.args, code, time.Since(start), c.flag, text)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: --out %s was created: work began", c.args, out)
		}
	}
	// The library refuses them too, before the simulation runs.
	sim := bench.DefaultVoteSim
	sim.Reps = bench.MaxVoteReps + 1
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := bench.VoteFigure2(ctx, sim, t.TempDir()); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("VoteFigure2 with %d repetitions: %v, want a refusal before any work", sim.Reps, err)
	}
	for _, n := range []int{1, bench.MaxVoteReps} {
		if err := bench.CheckVoteReps("reps", n); err != nil {
			t.Errorf("CheckVoteReps(%d): %v", n, err)
		}
	}
}
