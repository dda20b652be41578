package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The settings' digest — in the workflow ID and bound into the wrapped
// invocation key — changes with every setting that affects the release and
// with none of the flags that only say where the jobs run: a second tuning
// into the same --out with another ε (or tuner, space, δ, runs
// distribution, data) is another workflow with a fresh key, while a rerun
// with the same settings resumes.
func TestSettingsDigest(t *testing.T) {
	base := []string{"--tuner", "randomstop", "--dataset", "mnist", "--epsilon", "8", "--out", "o"}
	digest := func(extra ...string) [32]byte {
		t.Helper()
		cmd := newTuneCmd()
		if err := cmd.ParseFlags(append(append([]string(nil), base...), extra...)); err != nil {
			t.Fatal(err)
		}
		return settingsDigest(cmd, "tune")
	}
	first := digest()
	if digest() != first {
		t.Fatal("the same settings gave two digests")
	}
	for _, other := range [][]string{{"--epsilon", "4"}, {"--delta", "1e-6"}, {"--tuner", "gp"}, {"--mean-runs", "7"},
		{"--runs-dist", "poisson"}, {"--space", "other.json"}, {"--data-dir", "/elsewhere"}, {"--seed", "3"}} {
		if digest(other...) == first {
			t.Errorf("%v did not change the digest", other)
		}
	}
	for _, same := range [][]string{{"--runner", "temporal"}, {"--temporal-address", "h:1"}, {"--task-queue", "q"},
		{"--temporal-key", "k"}, {"--heartbeat-timeout", "5s"}, {"--temporal-namespace", "n"}} {
		if digest(same...) != first {
			t.Errorf("the runner flag %v changed the digest", same)
		}
	}
	cmd := newTuneCmd()
	cmd.ParseFlags(base)
	if settingsDigest(cmd, "audit") == first {
		t.Error("the command is not in the digest")
	}
}

// The settings' digest covers what the files the flags name hold: an edited
// --space (or --model) file, or a data file of --data-dir or
// --public-val-dir rewritten with another size, is another workflow with
// another key, though every flag's value is the same; the same content
// rewritten gives the same digest.
func TestSettingsDigestFileContents(t *testing.T) {
	dir := t.TempDir()
	space := filepath.Join(dir, "space.json")
	data := filepath.Join(dir, "data")
	val := filepath.Join(dir, "val")
	for _, d := range []string{data, val} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(space, `{"name": "s", "learning_rate": [0.1]}`)
	write(filepath.Join(data, "train.bin"), "abc")
	write(filepath.Join(val, "train.bin"), "abc")
	digest := func() [32]byte {
		t.Helper()
		cmd := newTuneCmd()
		if err := cmd.ParseFlags([]string{"--tuner", "randomstop", "--space", space, "--data-dir", data, "--validation", "public", "--public-val-dir", val, "--out", "o"}); err != nil {
			t.Fatal(err)
		}
		return settingsDigest(cmd, "tune")
	}
	first := digest()
	write(space, `{"name": "s", "learning_rate": [0.1]}`)
	if digest() != first {
		t.Fatal("the same space content gave another digest")
	}
	write(space, `{"name": "s", "learning_rate": [0.2]}`)
	second := digest()
	if second == first {
		t.Error("an edited --space file kept the digest")
	}
	write(filepath.Join(data, "train.bin"), "abcd")
	third := digest()
	if third == second {
		t.Error("a rewritten --data-dir file kept the digest")
	}
	write(filepath.Join(val, "train.bin"), "abcde")
	if digest() == third {
		t.Error("a rewritten --public-val-dir file kept the digest")
	}
}
