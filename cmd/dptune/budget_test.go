package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/budget"
)

// runBudgetCLI executes `dptune budget args…` in-process through
// newBudgetCmd alone and returns its exit status and output.
func runBudgetCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := newBudgetCmd()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	if err != nil {
		out.WriteString("dptune: " + err.Error() + "\n")
	}
	return exitCode(err), out.String()
}

func TestBudgetInitAndShow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mnist.budget")
	code, out := runBudgetCLI(t, "init", path, "--epsilon", "3", "--delta", "1e-5", "--dataset", "mnist")
	if code != 0 || !strings.Contains(out, path) || !strings.Contains(out, "20 fixed orders") {
		t.Fatalf("init: exit %d: %s", code, out)
	}
	var worst accounting.Ledger
	worst.Add("training", accounting.DPSGD(1.1, 0.01, 1000))
	res, err := budget.Reserve(path, "mnist", "train", "lr=0.5", worst)
	if err != nil {
		t.Fatal(err)
	}

	code, out = runBudgetCLI(t, "show", path)
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, out)
	}
	for _, want := range []string{res.ID()[:8], "train", "lr=0.5", "reserved (worst case)", "RDP filter", "remaining", "informational only"} {
		if !strings.Contains(out, want) {
			t.Errorf("show does not print %q:\n%s", want, out)
		}
	}

	code, out = runBudgetCLI(t, "show", path, "--json")
	if code != 0 {
		t.Fatalf("show --json: exit %d: %s", code, out)
	}
	var m struct {
		Dataset   string  `json:"dataset"`
		Epsilon   float64 `json:"epsilon"`
		Spent     float64 `json:"spent"`
		Remaining float64 `json:"remaining"`
		Releases  []struct {
			ID      string  `json:"id"`
			Status  string  `json:"status"`
			Epsilon float64 `json:"epsilon"`
		} `json:"releases"`
		PLD struct {
			Available bool    `json:"available"`
			Epsilon   float64 `json:"epsilon"`
			Note      string  `json:"note"`
		} `json:"pld"`
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	b, err := budget.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Dataset != "mnist" || m.Epsilon != 3 || m.Spent != b.Spent() || m.Remaining != b.Remaining() ||
		len(m.Releases) != 1 || m.Releases[0].ID != res.ID() || m.Releases[0].Status != "reserved" ||
		m.Releases[0].Epsilon != b.Releases[0].Epsilon {
		t.Errorf("show --json: %+v", m)
	}
	pld, err := accounting.PLD{}.Epsilon(accounting.Composed{Events: []accounting.Event{worst.Event()}}, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if !m.PLD.Available || math.Abs(m.PLD.Epsilon-pld.Epsilon) > 1e-12 || !strings.Contains(m.PLD.Note, "informational only") {
		t.Errorf("PLD %+v, want %v", m.PLD, pld.Epsilon)
	}
}

// Impossible requests exit 2 with one line; an existing file is never
// overwritten.
func TestBudgetBadRequestsExit2(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing")
	if code, out := runBudgetCLI(t, "init", existing, "--epsilon", "1", "--delta", "1e-5", "--dataset", "mnist"); code != 0 {
		t.Fatalf("init: exit %d: %s", code, out)
	}
	before, err := os.ReadFile(existing)
	if err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh")
	cases := [][]string{
		{"init", existing, "--epsilon", "2", "--delta", "1e-6", "--dataset", "mnist"},
		{"init", fresh, "--epsilon", "0", "--delta", "1e-5", "--dataset", "mnist"},
		{"init", fresh, "--epsilon", "-1", "--delta", "1e-5", "--dataset", "mnist"},
		{"init", fresh, "--epsilon", "1", "--delta", "1", "--dataset", "mnist"},
		{"init", fresh, "--epsilon", "1", "--delta", "0", "--dataset", "mnist"},
		{"init", fresh, "--epsilon", "1", "--delta", "1e-5", "--dataset", "imagenet"},
		{"init", fresh, "--epsilon", "1", "--delta", "1e-5"},
		{"init", fresh, "--delta", "1e-5", "--dataset", "mnist"},
		{"init", fresh, "--epsilon", "1", "--dataset", "mnist"},
		{"init", "--epsilon", "1", "--delta", "1e-5", "--dataset", "mnist"},
		{"init", fresh, fresh, "--epsilon", "1", "--delta", "1e-5", "--dataset", "mnist"},
		{"init", fresh, "--epsilon", "one", "--delta", "1e-5", "--dataset", "mnist"},
		{"show"},
		{"show", existing, "--bogus"},
	}
	for _, args := range cases {
		code, out := runBudgetCLI(t, args...)
		if code != 2 || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("%v: exit %d, output %q; want 2 and one line", args, code, out)
		}
	}
	if _, err := os.Stat(fresh); err == nil {
		t.Error("a refused init created the file")
	}
	after, err := os.ReadFile(existing)
	if err != nil || !bytes.Equal(before, after) {
		t.Errorf("init changed an existing file (%v)", err)
	}
}

// A missing or damaged file is a failed read: exit 1, naming the file.
func TestBudgetShowBadFileExit1(t *testing.T) {
	dir := t.TempDir()
	damaged := filepath.Join(dir, "damaged")
	if err := os.WriteFile(damaged, []byte(`{"version": 1, "dataset": "mn`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing"), damaged} {
		code, out := runBudgetCLI(t, "show", path)
		if code != 1 || !strings.Contains(out, path) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("show %s: exit %d, output %q; want 1 and one line naming the file", path, code, out)
		}
	}
}

// N23: an image folder's runs are charged to a budget file of its own
// dataset name, folder:NAME (NAME the data directory's last element, as
// its reports name it): budget init takes it with the folder's nominal
// size, a folder run charges it, and a budget file of another dataset
// (MNIST's) is refused for a folder run, as a folder's is for an MNIST run.
func TestBudgetFolderDataset(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "photos")
	writeMNISTFolder(t, dir, 300, 100)
	path := filepath.Join(base, "photos.budget")
	for _, args := range [][]string{
		{"init", path, "--epsilon", "20", "--delta", "1e-5", "--dataset", "folder:photos"},                          // no nominal size
		{"init", path, "--epsilon", "20", "--delta", "1e-2", "--dataset", "folder:photos", "--nominal-size", "300"}, // δ ≥ 1/300
		{"init", path, "--epsilon", "20", "--delta", "1e-5", "--dataset", "folder:", "--nominal-size", "300"},
		{"init", path, "--epsilon", "20", "--delta", "1e-5", "--dataset", "folder:a/b", "--nominal-size", "300"},
		{"init", path, "--epsilon", "20", "--delta", "1e-5", "--dataset", "folder:esc\x1b[2J", "--nominal-size", "300"},
		{"init", path, "--epsilon", "20", "--delta", "1e-5", "--dataset", "folder:photos", "--nominal-size", "0"},
	} {
		if code, out := runBudgetCLI(t, args...); code != 2 || strings.Count(strings.TrimSpace(out), "\n") != 0 || strings.Contains(out, "\x1b") {
			t.Errorf("%q: exit %d, %q; want 2 and one line", args, code, out)
		}
	}
	if code, out := runBudgetCLI(t, "init", path, "--epsilon", "20", "--delta", "1e-5", "--dataset", "folder:photos", "--nominal-size", "300"); code != 0 || !strings.Contains(out, "folder:photos") {
		t.Fatalf("init folder:photos: exit %d: %s", code, out)
	}
	train := func(dataset, dir, budgetFile string) (int, string) {
		args := []string{"train", "--dataset", dataset, "--nominal-size", "300", "--epochs", "1", "--batch-size", "100", "--epsilon", "2",
			"--budget", budgetFile, "--out", filepath.Join(t.TempDir(), "m")}
		if dir != "" {
			args = append(args, "--data-dir", dir)
		}
		if dataset == "folder" {
			args = append(args, "--mean", "0.1307", "--std", "0.3081")
		}
		return run(t, args...)
	}
	if code, text := train("folder", dir, path); code != 0 {
		t.Fatalf("folder run with its budget: exit %d: %s", code, text)
	}
	b, err := budget.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if b.Dataset != "folder:photos" || len(b.Releases) != 1 || b.Releases[0].Status == budget.Reserved || b.Releases[0].Command != "train" || !(b.Spent() > 0) {
		t.Errorf("budget after the folder run: dataset %s, releases %+v, spent %v; want one settled train release", b.Dataset, b.Releases, b.Spent())
	}
	mnist := filepath.Join(base, "mnist.budget")
	if code, out := runBudgetCLI(t, "init", mnist, "--epsilon", "20", "--delta", "1e-5", "--dataset", "mnist"); code != 0 {
		t.Fatalf("init mnist: exit %d: %s", code, out)
	}
	if code, text := train("folder", dir, mnist); code != 2 || !strings.Contains(text, `budget of dataset "mnist", not "folder:photos"`) {
		t.Errorf("folder run with MNIST's budget: exit %d: %s", code, text)
	}
	mnistDir := writeMNISTDir(t, 300, 100, -1)
	if code, text := train("mnist", mnistDir, path); code != 2 || !strings.Contains(text, `budget of dataset "folder:photos", not "mnist"`) {
		t.Errorf("MNIST run with the folder's budget: exit %d: %s", code, text)
	}
	if b, err := budget.Load(path); err != nil || len(b.Releases) != 1 {
		t.Errorf("a refused run changed the folder's budget: %v", err)
	}
}
