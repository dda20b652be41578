package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The audits that train no network of the user's refuse the natural
// audit's data and network flags (the tuner audit takes all but --lr, for
// Xiang et al.'s NTCV) with one line and status 2, before any trial.
func TestAuditRefusesNaturalFlagsElsewhere(t *testing.T) {
	for _, args := range [][]string{
		{"audit", "dpsgd", "--model", "scatter-linear-mnist"},
		{"audit", "gp", "--repeat", "poisson", "--mean-runs", "2", "--dataset", "cifar10"},
		{"audit", "tuner", "--repeat", "poisson", "--mean-runs", "2", "--lr", "0.1"},
		{"audit", "score", "--lr", "2"},
	} {
		out := filepath.Join(t.TempDir(), "audit")
		code, text := run(t, append(args, "--trials", "100", "--out", out)...)
		if code != 2 || strings.Count(strings.TrimSpace(text), "\n") != 0 || !strings.Contains(text, "applies to audit natural (and, but for --lr, tuner) only") {
			t.Errorf("%v: exit %d, %q", args, code, text)
		}
	}
}

// bench persample times a network with a scatter front end on its
// features, computed into the feature cache (by default the user's), as
// train trains it.
func TestBenchPerSampleOfAScatterNetwork(t *testing.T) {
	dir := writeMNIST(t, 120)
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", home)
	cache := filepath.Join(home, "dptune", "features")
	code, text := run(t, "bench", "persample", "--data-dir", dir, "--model", "scatter-linear-mnist",
		"--steps", "1", "--warmup", "0", "--batch-size", "16")
	if code != 0 || !strings.Contains(text, "scatter-linear-mnist") {
		t.Fatalf("exit %d: %s", code, text)
	}
	if files, _ := filepath.Glob(filepath.Join(cache, "*.feat")); len(files) != 2 {
		t.Errorf("feature cache files %v, want the training and test sets'", files)
	}
}
