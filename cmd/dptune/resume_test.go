package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/budget"
)

// A seeded run killed with SIGKILL after a checkpoint and resumed with
// --resume ends with the same params.bin bytes and the same ledger as the
// run never stopped; --resume takes no other flag; the checkpoint is gone
// once the run finishes.
func TestResumeAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("trains twice")
	}
	data := writeMNISTDir(t, 600, 100, -1)
	args := []string{"train", "--data-dir", data, "--nominal-size", "600", "--batch-size", "50", "--epochs", "40",
		"--epsilon", "8", "--seed", "3", "--lr-schedule", "cosine", "--momentum", "0.9"}
	whole := filepath.Join(t.TempDir(), "whole")
	if code, out := run(t, append(args, "--out", whole)...); code != 0 {
		t.Fatalf("uninterrupted run: exit %d: %s", code, out)
	}
	killed := filepath.Join(t.TempDir(), "killed")
	stopAfterCheckpoint(t, killed, syscall.SIGKILL, append(args, "--out", killed)...)
	if _, err := os.Stat(filepath.Join(killed, "report.json")); err == nil {
		t.Skip("the run finished before it was killed")
	}
	if code, out := run(t, "train", "--resume", killed, "--epochs", "3"); code != 2 || !strings.Contains(out, "--resume takes no other flag") {
		t.Errorf("--resume with another flag: exit %d, %q", code, out)
	}
	if code, out := run(t, append(args, "--out", killed)...); code != 2 || !strings.Contains(out, "unfinished run") {
		t.Errorf("a new run over an unfinished one: exit %d, %q", code, out)
	}
	if code, out := run(t, "train", "--resume", killed); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, out)
	}
	a, err := os.ReadFile(filepath.Join(whole, "params.bin"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(killed, "params.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("the resumed run's params.bin differs from the uninterrupted run's")
	}
	ledger := func(dir string) string {
		var rep struct {
			Ledger  json.RawMessage `json:"ledger"`
			Steps   int             `json:"steps"`
			Epsilon float64         `json:"epsilon"`
		}
		js, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(js, &rep); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s steps %d ε %v", rep.Ledger, rep.Steps, rep.Epsilon)
	}
	if la, lb := ledger(whole), ledger(killed); la != lb {
		t.Errorf("ledgers differ:\n%s\n%s", la, lb)
	}
	if _, err := os.Stat(killed + "-curator"); err == nil {
		t.Error("the checkpoint outlived the finished run")
	}
	if code, out := run(t, "train", "--resume", killed); code != 2 {
		t.Errorf("resuming a finished run: exit %d, %q", code, out)
	}
}

// An unseeded run charged to a budget file, killed and resumed: the killed
// run's reservation is settled at its worst case (the whole plan: it may
// have run past its checkpoint, with its loss shown live), the resume
// charges the steps it runs from the checkpoint as a release of its own,
// and the resumed model's report states both.
func TestResumeChargesWhatRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	out, file := stoppedBudgetRun(t, syscall.SIGKILL)
	if _, err := os.Stat(filepath.Join(out, "report.json")); err == nil {
		t.Skip("the run finished before it was killed")
	}
	before, err := budget.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Releases) != 1 || before.Releases[0].Status != budget.Reserved {
		t.Fatalf("after the kill: %+v, want one reservation", before.Releases)
	}
	if code, text := run(t, "train", "--resume", out); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, text)
	}
	b, err := budget.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Releases) != 2 || b.Releases[0].Status != budget.Done || b.Releases[1].Status != budget.Done {
		t.Fatalf("budget releases %+v, want the killed run's and the resume's, settled", b.Releases)
	}
	if got, want := b.Releases[0].Epsilon, before.Releases[0].Epsilon; got != want {
		t.Errorf("the killed run settled at ε %v, below its reservation's %v", got, want)
	}
	ck := b.Releases[1].Ledger.Entries
	if len(ck) != 1 || !strings.Contains(b.Releases[1].Label, "(resumed)") {
		t.Fatalf("the resume's charge: %+v", b.Releases[1])
	}
	var rep struct {
		Ledger  json.RawMessage `json:"ledger"`
		Steps   int             `json:"steps"`
		Epsilon float64         `json:"epsilon"`
	}
	js, _ := os.ReadFile(filepath.Join(out, "report.json"))
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Steps != 480 {
		t.Errorf("the resumed run ends at step %d, want 480", rep.Steps)
	}
	// The report's ledger is the two charges, in order.
	var both accounting.Ledger
	both.Entries = append(append(both.Entries, b.Releases[0].Ledger.Entries...), b.Releases[1].Ledger.Entries...)
	charged, err := json.Marshal(both)
	if err != nil {
		t.Fatal(err)
	}
	events := func(raw []byte) string {
		var l struct {
			Entries []struct {
				Event any `json:"event"`
			} `json:"entries"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(l.Entries)
	}
	if a, b := events(rep.Ledger), events(charged); a != b {
		t.Errorf("the report's ledger holds %s, the budget charged %s", a, b)
	}
	if !(rep.Epsilon > b.Releases[0].Epsilon) {
		t.Errorf("the report states ε %v, not above the killed run's %v alone", rep.Epsilon, b.Releases[0].Epsilon)
	}
}

// A run stopped with Ctrl-C settles its charge and keeps a checkpoint of
// exactly the steps it took; resuming it charges the steps it still runs
// as a second release, so the budget never counts fewer steps than ran.
func TestResumeAfterInterruptCharges(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	out, file := stoppedBudgetRun(t, os.Interrupt)
	steps := func() int {
		var r struct {
			Steps int `json:"steps"`
		}
		js, err := os.ReadFile(filepath.Join(out, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(js, &r); err != nil {
			t.Fatal(err)
		}
		return r.Steps
	}
	if _, err := os.Stat(filepath.Join(out, "report.json")); err != nil {
		t.Skip("the run did not stop with a release")
	}
	if steps() == 480 {
		t.Skip("the run finished before it was interrupted")
	}
	// The release directory holds the release alone: the checkpoint (with
	// the realised batch sizes and absolute paths) is in OUT-curator.
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); n != "model.json" && n != "params.bin" && n != "report.json" {
			t.Errorf("the interrupted run's release directory holds %s", n)
		}
	}
	if _, err := os.Stat(checkpointFileOf(out)); err != nil {
		t.Fatalf("no checkpoint in the curator directory: %v", err)
	}
	if code, text := run(t, "train", "--resume", out); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, text)
	}
	b, err := budget.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Releases) != 2 || b.Releases[0].Status != budget.Done || b.Releases[1].Status != budget.Done {
		t.Fatalf("budget releases %+v, want the stopped run's and the resume's", b.Releases)
	}
	if s := steps(); s != 480 {
		t.Errorf("the resumed run ends at step %d, want 480", s)
	}
	if !strings.Contains(b.Releases[1].Label, "(resumed)") || !(b.Releases[1].Epsilon > 0) {
		t.Errorf("the resume's charge: %+v", b.Releases[1])
	}
}

// stopAfterCheckpoint starts dptune with args in a child process, waits for
// its first checkpoint in out, sends sig and waits for it to end.
func stopAfterCheckpoint(t *testing.T, out string, sig os.Signal, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "DPTUNE_TEST_MAIN=1")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(out+"-curator", "checkpoint", "state.ckpt")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(ckpt); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no checkpoint after 60 s: %s", log.String())
		}
	}
	cmd.Process.Signal(sig)
	cmd.Wait()
	return log.String()
}

// stoppedBudgetRun starts an unseeded run charged to a new budget file,
// stops it with sig after its first checkpoint and returns its --out and
// the budget file.
func stoppedBudgetRun(t *testing.T, sig os.Signal) (out, file string) {
	t.Helper()
	out, file, _ = stoppedBudgetRunOn(t, sig)
	return out, file
}

// stoppedBudgetRunOn is stoppedBudgetRun that also returns the run's data
// directory.
func stoppedBudgetRunOn(t *testing.T, sig os.Signal) (out, file, data string) {
	t.Helper()
	data = writeMNISTDir(t, 600, 100, -1)
	file = filepath.Join(t.TempDir(), "mnist.budget")
	if code, text := run(t, "budget", "init", file, "--epsilon", "50", "--delta", "1e-5", "--dataset", "mnist"); code != 0 {
		t.Fatalf("budget init: exit %d: %s", code, text)
	}
	out = filepath.Join(t.TempDir(), "stopped")
	stopAfterCheckpoint(t, out, sig, "train", "--data-dir", data, "--nominal-size", "600", "--batch-size", "50", "--epochs", "40",
		"--epsilon", "8", "--budget", file, "--out", out)
	return out, file, data
}
