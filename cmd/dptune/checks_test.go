package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Requests refused before any work with one line, exit 2, saying what is
// wrong.
func TestRefusedWithTheRightReason(t *testing.T) {
	dir := t.TempDir()
	mnistBudget := filepath.Join(dir, "mnist.budget")
	if code, out := run(t, "budget", "init", mnistBudget, "--epsilon", "3", "--delta", "1e-5", "--dataset", "mnist"); code != 0 {
		t.Fatalf("budget init: exit %d: %s", code, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"budget", "init", filepath.Join(dir, "a"), "--epsilon", "1", "--delta", "0.5", "--dataset", "mnist"}, "below 1/N"},
		// 1/60000 ≈ 1.67e-5: δ = 2e-5 is in (0, 1) but not below 1/N.
		{[]string{"budget", "init", filepath.Join(dir, "b"), "--epsilon", "1", "--delta", "2e-5", "--dataset", "mnist"}, "below 1/N"},
		{[]string{"train", "--dataset", "cifar10", "--data-dir", dir, "--budget", mnistBudget, "--out", t.TempDir()}, `budget of dataset "mnist", not "cifar10"`},
		{[]string{"bench", "tuners", "--score-noise", "NaN"}, "--score-noise NaN must be a finite non-negative number"},
		{[]string{"bench", "tuners", "--score-noise", "+Inf"}, "must be a finite non-negative number"},
		{[]string{"tune", "--tuner", "randomstop", "--score-noise", "NaN", "--out", t.TempDir()}, "score noise multiplier NaN must be a number in (0, "},
		{[]string{"tune", "--diagnostics", "/proc/x.csv", "--data-dir", filepath.Join(dir, "none"), "--out", t.TempDir()}, "--diagnostics: /proc/x.csv: cannot create a file in /proc"},
		{[]string{"tune", "--diagnostics", dir, "--data-dir", filepath.Join(dir, "none"), "--out", t.TempDir()}, "is a directory, not a file"},
		{[]string{"bench", "persample", "--plot", "/proc/x.png", "--data-dir", filepath.Join(dir, "none")}, "--plot: /proc/x.png: cannot create a file in /proc"},
		{[]string{"bench", "persample", "--json", dir, "--data-dir", filepath.Join(dir, "none")}, "--json: " + dir + " is a directory, not a file"},
		{[]string{"bench", "doubling", "--out", "/proc/x"}, "--out: /proc/x is not a writable directory"},
		{[]string{"bench", "compare", "--data-dir", dir, "--nominal-size", "1000", "--out", t.TempDir()}, "--val-size 5000 must be at least 1 and below the nominal training-set size 1000"},
	} {
		code, out := run(t, c.args...)
		if code != 2 || !strings.Contains(out, c.want) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("%v: exit %d, output %q; want 2 and one line containing %q", c.args, code, out, c.want)
		}
	}
	if code, out := run(t, "budget", "init", filepath.Join(dir, "c"), "--epsilon", "1", "--delta", "1e-5", "--dataset", "cifar10"); code != 0 {
		t.Errorf("δ = 1e-5 < 1/50000 for cifar10: exit %d: %s", code, out)
	}
}
