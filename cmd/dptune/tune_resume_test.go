package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dptune/dptune/job"
)

// A seeded tuning killed with SIGKILL after its first finished run and
// resumed with tune --resume ends as the tuning never stopped: the same
// report.json (selection, score, ε, ledger), model.json and params.bin,
// byte for byte. --resume takes no other flag, a new tuning over the
// unfinished one is refused, and once the resume finishes nothing is left
// to resume.
func TestTuneResumeAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("tunes twice")
	}
	data := writeMNISTDir(t, 600, 100, -1)
	net := writeFile(t, "linear.json", `{"name": "linear", "layers": [{"type": "flatten"}, {"type": "linear", "out": 10}]}`)
	space := writeFile(t, "space.json", `{"name": "lrs", "dims": [{"name": "learning_rate", "values": [0.02, 0.05, 0.1, 0.2, 0.5, 1], "log": true}]}`)
	args := []string{"tune", "--tuner", "grid", "--space", space, "--model", net, "--data-dir", data, "--nominal-size", "600",
		"--batch-size", "50", "--epochs", "40", "--val-size", "100", "--epsilon", "8", "--seed", "3"}
	whole := filepath.Join(t.TempDir(), "whole")
	if code, out := run(t, append(args, "--out", whole)...); code != 0 {
		t.Fatalf("uninterrupted tuning: exit %d: %s", code, out)
	}
	killed := filepath.Join(t.TempDir(), "killed")
	killAfterFirstRun(t, killed, append(args, "--out", killed)...)
	if _, err := os.Stat(filepath.Join(killed, "report.json")); err == nil {
		t.Skip("the tuning finished before it was killed")
	}
	kept, _ := filepath.Glob(filepath.Join(job.TuneCheckpointPath(killed), "*.run"))
	t.Logf("killed with %d of 6 runs kept", len(kept))
	if code, out := run(t, "tune", "--resume", killed, "--epochs", "3"); code != 2 || !strings.Contains(out, "--resume takes no other flag") {
		t.Errorf("--resume with another flag: exit %d, %q", code, out)
	}
	if code, out := run(t, append(args, "--out", killed)...); code != 2 || !strings.Contains(out, "unfinished tuning") {
		t.Errorf("a new tuning over an unfinished one: exit %d, %q", code, out)
	}
	if code, out := run(t, "tune", "--resume", killed); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, out)
	}
	for _, name := range []string{"report.json", "model.json", "params.bin"} {
		a, err := os.ReadFile(filepath.Join(whole, name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(killed, name))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("the resumed tuning's %s differs from the uninterrupted one's (%v)", name, err)
		}
	}
	if job.TuneCheckpointOf(killed) {
		t.Error("the finished tuning left its state")
	}
	if code, out := run(t, "tune", "--resume", killed); code != 2 || !strings.Contains(out, "no unfinished tuning") || strings.Count(out, "\n") != 1 {
		t.Errorf("resuming a finished tuning: exit %d, %q", code, out)
	}
}

// A vote tuning killed while it ran cannot be resumed: tune --resume says
// so on one line with exit status 2, before any work, and keeps its mark.
func TestTuneResumeRefusesAVote(t *testing.T) {
	out := filepath.Join(t.TempDir(), "vote")
	if _, err := job.MarkVoteTuning(out, "vote"); err != nil { // never ended: killed
		t.Fatal(err)
	}
	code, text := run(t, "tune", "--resume", out)
	if code != 2 || !strings.Contains(text, "cannot be resumed") || strings.Count(text, "\n") != 1 {
		t.Errorf("exit %d, %q", code, text)
	}
	if !job.TuneCheckpointOf(out) {
		t.Error("the vote's mark is gone")
	}
}

// killAfterFirstRun starts dptune with args in a child process, waits for
// the first run it keeps in out's curator directory, kills it with SIGKILL
// and waits for it to end.
func killAfterFirstRun(t *testing.T, out string, args ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "DPTUNE_TEST_MAIN=1")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(job.TuneCheckpointPath(out), "*.run")
	for deadline := time.Now().Add(120 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if m, _ := filepath.Glob(runs); len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no finished run after 120 s: %s", log.String())
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
}
