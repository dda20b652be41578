package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dptune/dptune/privacy/budget"
)

func init() {
	childSetup = func() {
		// DPTUNE_TEST_FSIZE limits the size of the files the child may
		// write: the budget file fits in 64 KiB; params.bin (about
		// 100 kB) does not.
		if v := os.Getenv("DPTUNE_TEST_FSIZE"); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			var old syscall.Rlimit
			if err == nil {
				err = syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old)
			}
			if err == nil {
				err = syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: old.Max})
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "DPTUNE_TEST_FSIZE:", err)
				os.Exit(3)
			}
		}
	}
}

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
	// The limit is set in a child running dptune, not in the test binary,
	// whose own test log may grow past it.
	cmd := exec.Command(os.Args[0], "train", "--data-dir", data, "--nominal-size", "200", "--batch-size", "50", "--epochs", "1",
		"--noise-multiplier", "1", "--budget", file, "--out", out)
	cmd.Env = append(os.Environ(), "DPTUNE_TEST_MAIN=1", "DPTUNE_TEST_FSIZE=65536")
	b, err := cmd.CombinedOutput()
	text, code := string(b), cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatal(err)
	}
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
	bud, err := budget.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(bud.Releases) != 1 || bud.Releases[0].Status != budget.Done {
		t.Errorf("budget releases %+v, want one done", bud.Releases)
	}
}
