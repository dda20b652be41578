package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/privacy/budget"
)

// killedSeededRun starts a seeded run without a budget, kills it with
// SIGKILL after its first checkpoint and returns its --out and data
// directory; it skips the test if the run finished first.
func killedSeededRun(t *testing.T) (out, data string) {
	t.Helper()
	data = writeMNISTDir(t, 600, 100, -1)
	out = filepath.Join(t.TempDir(), "killed")
	stopAfterCheckpoint(t, out, syscall.SIGKILL, "train", "--data-dir", data, "--nominal-size", "600", "--batch-size", "50",
		"--epochs", "40", "--epsilon", "8", "--seed", "5", "--out", out)
	if _, err := os.Stat(filepath.Join(out, "report.json")); err == nil {
		t.Skip("the run finished before it was killed")
	}
	return out, data
}

// checkpointFileOf is the checkpoint file of a run into out.
func checkpointFileOf(out string) string {
	return filepath.Join(out+"-curator", "checkpoint", "state.ckpt")
}

// A resume that fails before its first step leaves the killed run charged
// at its worst case (the reservation it took over is settled first), and
// its own reservation at its worst case too; the checkpoint stays, and a
// later resume still charges the steps it runs.
func TestFailedResumeKeepsTheCharge(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	out, file, data := stoppedBudgetRunOn(t, syscall.SIGKILL)
	if _, err := os.Stat(filepath.Join(out, "report.json")); err == nil {
		t.Skip("the run finished before it was killed")
	}
	before, err := budget.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	away := data + ".away"
	if err := os.Rename(data, away); err != nil {
		t.Fatal(err)
	}
	if code, text := run(t, "train", "--resume", out); code == 0 {
		t.Fatalf("a resume without its data: exit 0: %s", text)
	}
	b, err := budget.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Releases) != 2 {
		t.Fatalf("after the failed resume: %+v", b.Releases)
	}
	if r := b.Releases[0]; r.Status != budget.Done || r.Epsilon != before.Releases[0].Epsilon {
		t.Errorf("the killed run's charge fell from ε %v to %v (%s)", before.Releases[0].Epsilon, r.Epsilon, r.Status)
	}
	if r := b.Releases[1]; r.Status != budget.Done || !(r.Epsilon > 0) {
		t.Errorf("the failed resume's charge: %+v", r)
	}
	if _, err := os.Stat(checkpointFileOf(out)); err != nil {
		t.Fatalf("the failed resume lost the checkpoint: %v", err)
	}
	if err := os.Rename(away, data); err != nil {
		t.Fatal(err)
	}
	if code, text := run(t, "train", "--resume", out); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, text)
	}
	if b, err = budget.Load(file); err != nil {
		t.Fatal(err)
	}
	if len(b.Releases) != 3 || b.Releases[2].Status != budget.Done || b.Releases[0].Epsilon != before.Releases[0].Epsilon {
		t.Errorf("after the second resume: %+v", b.Releases)
	}
}

// A checkpoint edited after it was written (its noise multiplier raised
// tenfold, which would state a smaller ε) is refused before any work with
// exit 2, and kept; so is every checkpoint when the curator's key is
// missing. The checkpoint is never in the release directory.
func TestEditedCheckpointIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	out, _ := killedSeededRun(t)
	if _, err := os.Stat(filepath.Join(out, "checkpoint")); err == nil {
		t.Error("the release directory holds a checkpoint")
	}
	path := checkpointFileOf(out)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.IndexByte(orig, '\n')
	head := string(orig[:i])
	k := strings.Index(head, `"noise_multiplier":`)
	if k < 0 {
		t.Fatalf("no noise multiplier in the header %s", head)
	}
	edited := head[:k] + `"noise_multiplier":14.0,"x":` + head[k+len(`"noise_multiplier":`):]
	if err := os.WriteFile(path, append([]byte(edited), orig[i:]...), 0o600); err != nil {
		t.Fatal(err)
	}
	code, text := run(t, "train", "--resume", out)
	if code != 2 || !strings.Contains(text, "authentication code does not match") {
		t.Errorf("an edited checkpoint: exit %d: %s", code, text)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the edited checkpoint was removed: %v", err)
	}
	if err := os.WriteFile(path, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DPTUNE_CHECKPOINT_KEY", filepath.Join(t.TempDir(), "other.key"))
	if code, text := run(t, "train", "--resume", out); code != 2 || !strings.Contains(text, "is missing") {
		t.Errorf("without the key: exit %d: %s", code, text)
	}
}

// A resume on data other than the checkpointed run's (the labels of one
// training example changed) is refused with exit 2, and the checkpoint
// kept; a second resume while the checkpoint is in use is refused at once.
func TestResumeRefusesOtherDataAndASecondProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	out, data := killedSeededRun(t)
	unlock, err := fsx.TryLock(filepath.Join(out+"-curator", "checkpoint", "lock"))
	if err != nil {
		t.Fatal(err)
	}
	code, text := run(t, "train", "--resume", out)
	unlock()
	if code != 2 || !strings.Contains(text, "in use by another dptune process") {
		t.Errorf("a resume beside another process: exit %d: %s", code, text)
	}
	labels := filepath.Join(data, "train-labels-idx1-ubyte")
	b, err := os.ReadFile(labels)
	if err != nil {
		t.Fatal(err)
	}
	b[8] = (b[8] + 1) % 10
	if err := os.WriteFile(labels, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, text := run(t, "train", "--resume", out); code != 2 || !strings.Contains(text, "not the data the checkpointed run read") {
		t.Errorf("a resume on other data: exit %d: %s", code, text)
	}
	if _, err := os.Stat(checkpointFileOf(out)); err != nil {
		t.Errorf("the refused resume lost the checkpoint: %v", err)
	}
}

// A checkpoint directory that is a symbolic link is refused before any
// work: nothing is charged, nothing trained.
func TestCheckpointLinkRefusedBeforeWork(t *testing.T) {
	data := writeMNISTDir(t, 200, 50, -1)
	dir := t.TempDir()
	file := filepath.Join(dir, "mnist.budget")
	if code, text := run(t, "budget", "init", file, "--epsilon", "50", "--delta", "1e-5", "--dataset", "mnist"); code != 0 {
		t.Fatalf("budget init: exit %d: %s", code, text)
	}
	out := filepath.Join(dir, "run")
	if err := os.MkdirAll(out+"-curator", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(out+"-curator", "checkpoint")); err != nil {
		t.Fatal(err)
	}
	code, text := run(t, "train", "--data-dir", data, "--nominal-size", "200", "--batch-size", "50", "--epochs", "2",
		"--epsilon", "8", "--budget", file, "--out", out)
	if code != 2 || !strings.Contains(text, "not a directory") {
		t.Errorf("a linked checkpoint directory: exit %d: %s", code, text)
	}
	b, err := budget.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Releases) != 0 {
		t.Errorf("charged before the refusal: %+v", b.Releases)
	}
}
