//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// The first interrupt cancels the context; the second exits at once with
// status 130.
func TestSecondInterruptExits(t *testing.T) {
	sigs := make(chan os.Signal)
	exited := make(chan int, 1)
	var log strings.Builder
	ctx := interruptible(context.Background(), sigs, &log, func(code int) { exited <- code })
	sigs <- os.Interrupt
	<-ctx.Done()
	select {
	case code := <-exited:
		t.Fatalf("exited with %d after one interrupt", code)
	default:
	}
	sigs <- os.Interrupt
	if code := <-exited; code != 130 {
		t.Fatalf("second interrupt: exit %d, want 130", code)
	}
}

// runPrompt is run that fails the test if the command blocks.
func runPrompt(t *testing.T, args ...string) (int, string) {
	t.Helper()
	type result struct {
		code int
		out  string
	}
	done := make(chan result, 1)
	go func() { c, o := run(t, args...); done <- result{c, o} }()
	select {
	case r := <-done:
		return r.code, r.out
	case <-time.After(10 * time.Second):
		t.Fatalf("%v blocked", args)
		return 0, ""
	}
}

// A FIFO or a link to /dev/zero where a file is expected is refused at
// once with one line and status 2: the budget file, a spec, a model's
// params.bin, a JSON under bench report --from.
func TestNonRegularFilesRefusedCLI(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	m := t.TempDir()
	net, err := model.New(model.MNIST, randsrc.Seeded(1, "init"))
	if err != nil {
		t.Fatal(err)
	}
	if err := net.Save(m, model.Metadata{}); err != nil {
		t.Fatal(err)
	}
	params := filepath.Join(m, "params.bin")
	os.Remove(params)
	if err := syscall.Mkfifo(params, 0o600); err != nil {
		t.Fatal(err)
	}
	from := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(from, "compare.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"budget", "show", fifo},
		{"budget", "show", zero},
		{"train", "--budget", fifo, "--out", t.TempDir()},
		{"train", "--budget", zero, "--out", t.TempDir()},
		{"train", "--model", fifo, "--out", t.TempDir()},
		{"eval", "--model", m},
		{"bench", "report", "--from", from, "--out", t.TempDir()},
	} {
		code, out := runPrompt(t, args...)
		if code != 2 || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, "not a regular file") {
			t.Errorf("%v: exit %d, output %q; want 2 and one line saying it is not a regular file", args, code, out)
		}
	}
}
