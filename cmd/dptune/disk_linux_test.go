package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dptune/dptune/privacy/budget"
)

// A training run whose release cannot be written (the disk fills during
// the last write: here a file size limit) still prints its results and its
// charge, exits 1, and leaves no partial file in --out.
func TestTrainLateWriteFailure(t *testing.T) {
	data := writeMNISTDir(t, 200, 20, -1)
	file := filepath.Join(t.TempDir(), "mnist.budget")
	if code, out := run(t, "budget", "init", file, "--epsilon", "50", "--delta", "1e-5", "--dataset", "mnist"); code != 0 {
		t.Fatalf("budget init: exit %d: %s", code, out)
	}
	out := filepath.Join(t.TempDir(), "out")
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skip(err)
	}
	// The budget file fits; params.bin (about 100 kB) does not.
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 64 << 10, Max: old.Max}); err != nil {
		t.Skip(err)
	}
	code, text := run(t, "train", "--data-dir", data, "--nominal-size", "200", "--batch-size", "50", "--epochs", "1",
		"--noise-multiplier", "1", "--budget", file, "--out", out)
	syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old)
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, text)
	}
	for _, want := range []string{"test accuracy", "privacy        ε = ", "charged to " + file, "could not be saved", "file too large"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		t.Errorf("left in --out: %s", e.Name())
	}
	b, err := budget.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Releases) != 1 || b.Releases[0].Status != budget.Done {
		t.Errorf("budget releases %+v, want one done", b.Releases)
	}
}
