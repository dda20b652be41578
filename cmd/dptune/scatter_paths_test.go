package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
)

// A tuning of a built-in ScatterNet network takes the network's own
// epochs, batch size and momentum for each flag not given; a flag given
// keeps its value, and another network keeps the flags' defaults.
func TestTuneUsesNetworkDefaults(t *testing.T) {
	d, ok := job.NetworkDefaults(model.ScatterLinearMNIST)
	if !ok {
		t.Fatal("scatter-linear-mnist has no defaults")
	}
	for _, c := range []struct {
		spec          model.Spec
		epochs, batch int
		momentum      float64
	}{{model.ScatterLinearMNIST, 2, d.BatchSize, d.Momentum}, {model.TBMNIST, 2, 256, 0}} {
		cmd := newTuneCmd()
		if err := cmd.ParseFlags([]string{"--epochs", "2"}); err != nil {
			t.Fatal(err)
		}
		arch, err := model.NewArch(c.spec, 1, 28, 28, 10)
		if err != nil {
			t.Fatal(err)
		}
		spec := job.TuneSpec{Data: job.Source{Arch: arch}, Epochs: 2, BatchSize: 256}
		networkDefaults(cmd, &spec)
		if spec.Epochs != c.epochs || spec.BatchSize != c.batch || spec.Momentum != c.momentum {
			t.Errorf("%s: epochs %d, batch %d, momentum %v; want %d, %d, %v", c.spec.Name, spec.Epochs, spec.BatchSize, spec.Momentum, c.epochs, c.batch, c.momentum)
		}
	}
}

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
