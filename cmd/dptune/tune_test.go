package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dptune/dptune/privacy/accounting"
)

// An empty search space is refused before any training.
func TestTuneEmptySpaceExit2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.json")
	os.WriteFile(path, []byte(`{"name": "empty", "dims": []}`), 0o644)
	if code, out := run(t, "tune", "--space", path); code != 2 || !strings.Contains(out, "no dimensions") {
		t.Fatalf("exit %d: %s", code, out)
	}
	os.WriteFile(path, []byte(`{"name": "e", "dims": [{"name": "learning_rate", "values": []}]}`), 0o644)
	if code, out := run(t, "tune", "--space", path); code != 2 || !strings.Contains(out, "no values") {
		t.Fatalf("exit %d: %s", code, out)
	}
}

// A short GP tuning on real MNIST over a 2×2 space: the report has the
// documented keys and no number of runs, its ε is Theorem 1's for the
// pipeline and meets the budget, and the released model is evaluated.
func TestTuneEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	dir := t.TempDir()
	space := filepath.Join(dir, "space.json")
	os.WriteFile(space, []byte(`{"name": "small", "dims": [
		{"name": "learning_rate", "values": [0.5, 1], "log": true},
		{"name": "clip_norm", "min": 0.5, "max": 1, "count": 2}]}`), 0o644)
	out := filepath.Join(dir, "t")
	code, text := run(t, "tune", "--tuner", "gp", "--space", space, "--epochs", "1", "--mean-runs", "2",
		"--epsilon", "8", "--seed", "3", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, text)
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tuner", "selected", "test_accuracy", "epsilon", "delta", "base_noise_multiplier", "ledger"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("report.json lacks %q", k)
		}
	}
	for _, k := range []string{"k", "K", "runs", "diagnostics"} {
		if _, ok := rep[k]; ok {
			t.Errorf("report.json has %q", k)
		}
	}
	var ledger accounting.Ledger
	lb, _ := json.Marshal(rep["ledger"])
	if err := json.Unmarshal(lb, &ledger); err != nil {
		t.Fatal(err)
	}
	g, err := ledger.Spent(accounting.RDP{}, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if eps := rep["epsilon"].(float64); eps != g.Epsilon || eps > 8 || eps < 7.99 {
		t.Errorf("reported ε %v, ledger %v", eps, g.Epsilon)
	}
	if _, ok := ledger.Entries[0].Event.(accounting.AdaptiveRepeatAndSelect); !ok || len(ledger.Entries) != 1 {
		t.Errorf("ledger %+v", ledger)
	}
	if acc := rep["test_accuracy"].(float64); acc < 0.5 {
		t.Errorf("released model's test accuracy %v", acc)
	}
}

// Hostile or impossible search spaces end with one line and status 2 before
// any data is read: an empty space, contradictory dimensions, a network
// that names nothing, a network behind another front end, a batch size above the
// training set, a schedule that does not exist, and the vote's clients
// asked to train a categorical dimension.
func TestImpossibleSpacesExit2(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct{ space, extra string }{
		"empty":          {`{"name":"e","dims":[]}`, ""},
		"contradictory":  {`{"dims":[{"name":"network","choices":["tb-mnist"],"values":[0]}]}`, ""},
		"no network":     {`{"dims":[{"name":"network","choices":["tb-mnist","resnet-9000"]}]}`, ""},
		"scatter inputs": {`{"dims":[{"name":"network","choices":["tb-mnist","scatter-linear-mnist"]}]}`, ""},
		"batch":          {`{"dims":[{"name":"batch_size","values":[256,70000]}]}`, ""},
		"schedule":       {`{"dims":[{"name":"lr_schedule","choices":["constant","warmup"]}]}`, ""},
		"vote":           {`{"dims":[{"name":"learning_rate","values":[0.1]},{"name":"network","choices":["tb-mnist"]}]}`, "vote"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		if err := os.WriteFile(path, []byte(c.space), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"tune", "--space", path, "--epsilon", "8", "--out", filepath.Join(dir, "out")}
		if c.extra != "" {
			args = append(args, "--tuner", c.extra)
		}
		t.Run(name, func(t *testing.T) { expectExit2(t, 2*time.Second, "", args...) })
	}
}

// A tuning of a network with published settings says, before its first
// run, that one `dptune train` of those settings at the same ε is what it
// must beat, and its report records that baseline beside the selection.
func TestTuneNamesItsBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	data := writeMNISTDir(t, 600, 100, -1)
	dir := t.TempDir()
	space := filepath.Join(dir, "space.json")
	os.WriteFile(space, []byte(`{"name": "two", "dims": [{"name": "learning_rate", "values": [4, 2]}]}`), 0o644)
	out := filepath.Join(dir, "t")
	code, text := run(t, "tune", "--tuner", "grid", "--dataset", "fashion-mnist", "--data-dir", data, "--nominal-size", "600",
		"--space", space, "--epochs", "1", "--batch-size", "50", "--val-size", "100", "--epsilon", "8", "--seed", "3", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, text)
	}
	want := "dptune train --dataset fashion-mnist --data-dir DIR --model tb-mnist --epsilon 8 --delta 1e-05"
	if i, j := strings.Index(text, "baseline "), strings.Index(text, "tuning fashion-mnist"); i < 0 || j < i || !strings.Contains(text, want) {
		t.Errorf("no baseline before the tuning started:\n%s", text)
	}
	var rep struct {
		Baseline *struct {
			BatchSize          int     `json:"batch_size"`
			LearningRate       float64 `json:"learning_rate"`
			Command            string  `json:"command"`
			SelectedIsBaseline *bool   `json:"selected_is_baseline"`
		} `json:"baseline"`
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	// Tramèr & Boneh's Fashion-MNIST CNN settings; the runs here took batch
	// 50, so whatever was selected is not them.
	if r := rep.Baseline; r == nil || r.BatchSize != 2048 || r.LearningRate != 4 || r.Command != want || r.SelectedIsBaseline == nil || *r.SelectedIsBaseline {
		t.Errorf("report's baseline %+v", rep.Baseline)
	}
}
