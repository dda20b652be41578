package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
)

func TestNetworkDefaultsOnlyForTheBuiltin(t *testing.T) {
	if _, ok := job.NetworkDefaults(model.OpacusMNIST); ok {
		t.Error("opacus-mnist has scatter defaults")
	}
	changed := model.ScatterLinearMNIST
	changed.Layers = []model.LayerSpec{model.Scatter(2, 8), model.Flatten(), model.Linear(10)}
	if _, ok := job.NetworkDefaults(changed); ok {
		t.Error("a different network under the built-in's name takes its defaults")
	}
	if _, ok := job.NetworkDefaults(model.ScatterCNNMNIST); !ok {
		t.Error("scatter-cnn-mnist has no defaults")
	}
}

// A scatter layer the images cannot take is refused with one line and
// status 2, before any data is read.
func TestScatterSpecRefusedExit2(t *testing.T) {
	dir := t.TempDir()
	for name, js := range map[string]string{
		"sides.json":  `{"name":"s","layers":[{"type":"scatter","j":3,"l":8},{"type":"flatten"},{"type":"linear","out":10}]}`,
		"second.json": `{"name":"s","layers":[{"type":"flatten"},{"type":"scatter","j":2,"l":8},{"type":"linear","out":10}]}`,
		"range.json":  `{"name":"s","layers":[{"type":"scatter","j":2,"l":0},{"type":"flatten"},{"type":"linear","out":10}]}`,
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(js), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out := run(t, "train", "--model", p, "--data-dir", filepath.Join(dir, "absent"), "--out", filepath.Join(dir, "out"))
		if code != 2 || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("%s: exit %d, %q", name, code, out)
		}
	}
}
