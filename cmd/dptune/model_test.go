package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A user's own spec file trains privately, and model.json records its
// layers; eval reads the model back.
func TestTrainOwnSpec(t *testing.T) {
	dir := writeMNISTDir(t, 200, 50, -1)
	out := filepath.Join(t.TempDir(), "run")
	spec, _ := filepath.Abs("../../examples/small-cnn.json")
	code, text := run(t, "train", "--model", spec, "--data-dir", dir, "--nominal-size", "200", "--epsilon", "3",
		"--batch-size", "50", "--epochs", "2", "--seed", "1", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, text)
	}
	b, _ := os.ReadFile(filepath.Join(out, "model.json"))
	var h struct {
		Arch struct {
			Name   string            `json:"name"`
			Layers []json.RawMessage `json:"layers"`
		} `json:"arch"`
	}
	if err := json.Unmarshal(b, &h); err != nil || h.Arch.Name != "small-cnn" || len(h.Arch.Layers) != 11 {
		t.Fatalf("model.json arch %+v (%v)", h.Arch, err)
	}
	if code, text := run(t, "eval", "--model", out, "--data-dir", dir); code != 0 {
		t.Fatalf("eval: exit %d: %s", code, text)
	}
}

// A spec that is not a network, or whose shapes do not fit the data, is
// refused before any work with one line and exit 2.
func TestBadSpecIsUsageError(t *testing.T) {
	dir := writeMNISTDir(t, 200, 50, -1)
	tmp := t.TempDir()
	for _, c := range []struct{ js, want string }{
		{`{"name":"x","layers":[{"type":"conv2d","out":4,"kernel":3},{"type":"linear","out":10}]}`, "add a flatten layer"},
		{`{"name":"x","layers":[{"type":"flatten"},{"type":"linear","out":3}]}`, "must end in 10 features"},
		{`{"name":"x","layers":[{"type":"linear","out":-1}]}`, "out -1 is outside"},
		{`not json`, "spec"},
	} {
		path := filepath.Join(tmp, "net.json")
		os.WriteFile(path, []byte(c.js), 0o644)
		code, text := run(t, "train", "--model", path, "--data-dir", dir, "--nominal-size", "200", "--epsilon", "3", "--out", filepath.Join(tmp, "o"))
		if code != 2 || !strings.Contains(text, c.want) || strings.Count(strings.TrimSpace(text), "\n") != 0 {
			t.Errorf("%s: exit %d, %q", c.js, code, text)
		}
		if _, err := os.Stat(filepath.Join(tmp, "o")); err == nil {
			t.Errorf("%s: output written", c.js)
		}
	}
	if code, text := run(t, "train", "--model", "no-such-net", "--data-dir", dir, "--nominal-size", "200"); code != 2 || !strings.Contains(text, "tb-mnist") {
		t.Errorf("unknown name: exit %d, %q", code, text)
	}
}
